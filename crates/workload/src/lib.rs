//! # fabricsim-workload: what the GPUs run
//!
//! Workloads are per-rank DAGs of compute, memory and communication ops ([`graph`], the Chakra
//! model). They come from Chakra execution traces ([`chakra`], read and written) or from the
//! LLM training generator ([`llm`]: a model, TP/SP, CP, PP with 1F1B or interleaved schedules,
//! DP as DDP or FSDP, EP). [`compute`] says how long a kernel takes on a given GPU (a roofline
//! with per-class efficiencies, fitted to measured kernels: [`calibration`]) and [`llm::memory`]
//! whether a configuration fits in HBM.

pub mod calibration;
pub mod chakra;
pub mod compute;
pub mod graph;
pub mod llm;

pub use compute::{ComputeModel, Efficiency, GpuSpec};
pub use graph::{Accounting, Binding, Compute, Group, Op, OpClass, OpKind, Program, Workload};
