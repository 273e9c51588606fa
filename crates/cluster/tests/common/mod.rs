//! What the tests that compare a reduced simulation with the full one share.

use fabricsim_cluster::orchestrator::{RunOptions, RunOutput};
use fabricsim_cluster::scenario::Scenario;
use fabricsim_cluster::simulate::simulate;

/// `s` run with `options`.
pub fn run(s: &Scenario, options: RunOptions) -> RunOutput {
    let topo = s.fabric.load().unwrap();
    simulate(s, &topo, options, |_, _, _| {}).unwrap().output
}

/// The jobs' reports, as JSON: two runs that report alike give the same string.
pub fn reports(out: &RunOutput) -> String {
    let jobs: Vec<_> = out
        .jobs
        .iter()
        .map(fabricsim_cluster::JobReport::new)
        .collect();
    serde_json::to_string(&jobs).unwrap()
}
