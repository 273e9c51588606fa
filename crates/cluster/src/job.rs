//! A job: a workload bound to GPUs, with the GPU model its kernels run at and how its
//! collectives are carried out.

use fabricsim_collectives::{Algorithm, Fidelity, Generation, Protocol, QpMode, DEFAULT_CHUNK};
use fabricsim_topology::NodeId;
use fabricsim_workload::{ComputeModel, Workload};

/// How a job's collectives run (NCCL's knobs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CommConfig {
    /// `None`: NCCL's tuner picks per collective. An algorithm that does not implement an
    /// operation leaves that operation to the tuner.
    pub algorithm: Option<Algorithm>,
    pub protocol: Option<Protocol>,
    pub channels: u32,
    pub chunk: u64,
    pub qps: u32,
    pub qp_mode: QpMode,
    pub fidelity: Fidelity,
    /// Collectives whose ranks share one host run in closed form (NCCL's cost model over
    /// NVLink, [`fabricsim_collectives::tuner::predict`]) instead of as engine flows: NVLink
    /// contention between concurrent collectives inside a host is then not modelled.
    pub host_closed_form: bool,
    pub seed: u64,
}

impl Default for CommConfig {
    fn default() -> Self {
        CommConfig {
            algorithm: None,
            protocol: None,
            channels: 8,
            chunk: DEFAULT_CHUNK,
            qps: 1,
            qp_mode: QpMode::Split,
            fidelity: Fidelity::Pipelined,
            host_closed_form: true,
            seed: 0,
        }
    }
}

#[derive(Clone, Debug)]
pub struct JobSpec {
    pub name: String,
    pub workload: Workload,
    /// Rank `r` runs on `gpus[r]`.
    pub gpus: Vec<NodeId>,
    pub compute: ComputeModel,
    pub comm: CommConfig,
}

impl JobSpec {
    /// The generation of the job's GPUs, which sets its transports' efficiencies (an unknown
    /// GPU model is taken as an H100, the presets' host).
    pub fn generation(&self) -> Generation {
        Generation::parse(self.compute.gpu.name).unwrap_or(Generation::H100)
    }
}
