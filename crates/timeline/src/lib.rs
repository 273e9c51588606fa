//! # fabricsim-timeline: the cluster over days
//!
//! A training cluster is many jobs over weeks, on a fabric whose parts fail. This layer
//! simulates that time scale ([`sim`]): a job trace ([`trace`], from a plan, [`plan`]) arrives;
//! a placement policy ([`scheduler`]) lays each job on hosts, racks and zones
//! ([`hierarchy`]); each running job advances at the iteration time fabricsim's own simulation
//! gives it on its placement with the jobs it shares links with ([`steptime`], cached per
//! shape of placement); components fail and are repaired by the failure model ([`failures`]),
//! jobs checkpoint and restart; [`report`] says what each job and the cluster got.

pub mod coupling;
pub mod failures;
pub mod hierarchy;
pub mod plan;
pub mod report;
mod rng;
pub mod scheduler;
mod sim;
pub mod steptime;
pub mod trace;
mod units;

use fabricsim_cluster::simulate::SimError;
use fabricsim_topology::Topology;

pub use plan::Plan;
pub use report::Outcome;

#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    /// Simulating a group of jobs failed (or a workload could not be built).
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The plan names something the fabric does not have, or asks for what cannot be placed.
    #[error("{0}")]
    Plan(String),
}

impl TimelineError {
    /// Whether the input is at fault (exit 2) rather than the run.
    pub fn is_input(&self) -> bool {
        match self {
            TimelineError::Sim(e) => e.is_input(),
            TimelineError::Plan(_) => true,
        }
    }
}

/// Runs `plan` on `topo` (the plan's fabric, loaded by the caller) for `seed`.
pub fn run(plan: &Plan, topo: &Topology, seed: u64) -> Result<Outcome, TimelineError> {
    run_with_progress(plan, topo, seed, |_| {})
}

/// [`run`], calling `progress` with the simulated hours done at each sample.
pub fn run_with_progress(
    plan: &Plan,
    topo: &Topology,
    seed: u64,
    progress: impl FnMut(f64),
) -> Result<Outcome, TimelineError> {
    let h = hierarchy::Hierarchy::of(topo);
    sim::Sim::new(plan, topo, &h, seed)?.run(progress)
}
