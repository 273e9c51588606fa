//! # fabricsim-cluster: jobs on a fabric
//!
//! The cluster layer binds workloads ([`fabricsim_workload`]) to GPUs ([`placement`]) as jobs
//! ([`job`]) and runs them over time on one shared fabric ([`orchestrator`]): kernels on each
//! GPU's streams, collectives as executions on the network engine, point-to-point transfers as
//! flows. [`stats`] and [`report`] say what each job took, [`sharing`] which links each job
//! loaded and which jobs it met there; [`trace`] writes a Perfetto trace;
//! [`scenario`] reads the TOML scenario files `fabricsim run` takes, with keys
//! overridden by [`overrides`] (`--set`). [`control`] changes the
//! fabric during a run (link events, the TE controller) and [`demand`] gives the controller the
//! jobs' traffic matrix. [`validation`] runs the published measurements of
//! `validation/*.toml` and renders the table of `docs/validation.md`. [`whatif`] costs
//! operational actions (drains, failures, derates, repairs) per job over several seeds;
//! [`maintenance`] orders a set of drains into batches that cost the jobs least; [`buffer`]
//! draws the curve of each job's slowdown against the number of failed elements of a kind.

pub mod buffer;
pub mod control;
pub mod demand;
pub mod design;
pub mod job;
pub mod layout;
pub mod maintenance;
pub mod orchestrator;
pub mod overrides;
mod p2p;
pub mod placement;
pub mod report;
pub mod scenario;
pub mod sharing;
pub mod simulate;
pub mod stats;
pub mod sweep;
pub mod symmetry;
pub mod trace;
pub mod validation;
pub mod whatif;

pub use job::{CommConfig, JobSpec};
pub use orchestrator::{Orchestrator, RunError, RunOptions, RunOutput};
pub use report::JobReport;
