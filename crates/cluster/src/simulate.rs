//! A scenario, end to end: load the fabric, build or read each job's workload, place it, run
//! every job on one network, report.

use fabricsim_netsim::{FlowEngine, Network};
use fabricsim_routing::{Policy, Router};
use fabricsim_te::{Routing, TrafficMatrix};
use fabricsim_topology::{LoadError, Topology};
use fabricsim_workload::chakra::{import, ChakraError};
use fabricsim_workload::llm::{generate, LlmError};
use fabricsim_workload::{ComputeModel, Workload};

use crate::control::{TeConfig, TeController};
use crate::demand::job_traffic;
use crate::job::JobSpec;
use crate::layout::{by_communicators, split_communicator, RankLayout};
use crate::orchestrator::{Orchestrator, RunError, RunOptions, RunOutput};
use crate::placement::{place, PlacementError};
use crate::report::JobReport;
use crate::scenario::{Scenario, WorkloadSource};

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("fabric: {0}")]
    Fabric(#[from] LoadError),
    #[error("job `{job}`: {error}")]
    Llm { job: String, error: LlmError },
    #[error("job `{job}`: {error}")]
    Chakra { job: String, error: ChakraError },
    #[error("job `{job}`: placement: {error}")]
    Placement { job: String, error: PlacementError },
    #[error("event {index}: {error}")]
    Event { index: usize, error: String },
    #[error(transparent)]
    Run(#[from] RunError),
}

impl SimError {
    /// Whether the error is the input's fault (exit 2) rather than the run's.
    pub fn is_input(&self) -> bool {
        !matches!(self, SimError::Run(RunError::Stalled { .. }))
    }
}

/// A job's workload, before placement.
pub fn build_workload(
    name: &str,
    source: &WorkloadSource,
) -> Result<(Workload, Vec<String>), SimError> {
    match source {
        WorkloadSource::Llm(t) => {
            generate(t)
                .map(|w| (w, Vec::new()))
                .map_err(|error| SimError::Llm {
                    job: name.to_string(),
                    error,
                })
        }
        WorkloadSource::Chakra {
            prefix,
            groups,
            strict,
            ..
        } => {
            let failed = |error| SimError::Chakra {
                job: name.to_string(),
                error,
            };
            let (w, warnings) =
                import(&prefix.to_string_lossy(), groups.as_deref()).map_err(failed)?;
            if *strict && !warnings.is_empty() {
                return Err(failed(ChakraError::Strict(warnings)));
            }
            Ok((
                w,
                warnings
                    .iter()
                    .map(|w| format!("job `{name}`: {w}"))
                    .collect(),
            ))
        }
    }
}

pub struct ScenarioRun {
    pub reports: Vec<JobReport>,
    pub output: RunOutput,
    pub warnings: Vec<String>,
}

/// Runs `s` on `topo` (loaded from `s.fabric` by the caller, who may want its figures).
pub fn simulate(
    s: &Scenario,
    topo: &Topology,
    options: RunOptions,
    progress: impl FnMut(u64, u64, u64),
) -> Result<ScenarioRun, SimError> {
    let mut used = vec![false; topo.node_count()];
    let mut jobs = Vec::new();
    let mut warnings = Vec::new();
    for j in &s.jobs {
        let (workload, w) = build_workload(&j.name, &j.workload)?;
        warnings.extend(w);
        let mut gpus =
            place(topo, &mut used, workload.rank_count(), &j.placement).map_err(|error| {
                SimError::Placement {
                    job: j.name.clone(),
                    error,
                }
            })?;
        if let WorkloadSource::Chakra { ranks, .. } = j.workload {
            match ranks {
                RankLayout::Communicators => gpus = by_communicators(topo, &workload, &gpus),
                RankLayout::Trace => warnings.extend(
                    split_communicator(topo, &workload, &gpus)
                        .map(|w| format!("job `{}`: {w}", j.name)),
                ),
            }
        }
        jobs.push(JobSpec {
            name: j.name.clone(),
            workload,
            gpus,
            compute: ComputeModel {
                gpu: j.gpu,
                efficiency: j.efficiency,
            },
            comm: j.comm,
        });
    }
    let mut events = Vec::new();
    for (i, e) in s.events.iter().enumerate() {
        events.push(e.resolve(topo).map_err(|error| SimError::Event {
            index: i + 1,
            error,
        })?);
    }
    let (policy, te) = match s.routing {
        Routing::Hashed(policy) => (policy, None),
        Routing::Te(solver) => {
            let mut rows = Vec::new();
            for job in &jobs {
                rows.extend(job_traffic(topo, job)?);
            }
            let config = TeConfig {
                solver,
                period: s.te_period,
                detection: s.te_detection,
            };
            let demand = TrafficMatrix::from_bytes(topo, rows);
            // The underlay until the controller programs its first table, at time 0.
            (
                Policy::Ecmp,
                Some(TeController::new(config, demand, s.hash)),
            )
        }
    };
    let mut net = Network::new(
        topo,
        Router::new(topo, policy, s.hash),
        FlowEngine::new(topo),
    );
    net.set_path_selection(s.path_selection);
    let mut options = options;
    if options.full_detail.is_none() && (!events.is_empty() || te.is_some()) {
        options.full_detail = Some("the fabric changes during the run".into());
    }
    let output = Orchestrator::new(net, jobs, options)
        .with_fabric_control(events, te)
        .run(progress)?;
    Ok(ScenarioRun {
        reports: output.jobs.iter().map(JobReport::new).collect(),
        output,
        warnings,
    })
}
