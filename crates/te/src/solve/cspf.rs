//! CSPF-style greedy placement, as Meta's TE controller runs it: demands in order of
//! decreasing rate, each on the candidate path whose busiest link (with the demand added) is
//! least utilized, ties broken by the path's total utilization. One pass, no rerouting.

use super::{by_decreasing_rate, Solution, Solver};
use crate::instance::Instance;

pub(super) fn solve(inst: &Instance<'_>) -> Solution {
    let mut load = vec![0.0; inst.capacity.len()];
    let mut paths = vec![Vec::new(); inst.demands.len()];
    let mut scratch = Vec::new();
    for d in by_decreasing_rate(inst) {
        let rate = inst.demands[d].rate;
        let path = inst
            .dag(d)
            .least_congested(&load, &inst.steer, rate, &mut scratch);
        for l in &path {
            load[l.index()] += rate;
        }
        paths[d] = path;
    }
    Solution {
        solver: Solver::Cspf,
        paths,
        max_utilization: 0.0,
        fractional: None,
        lower_bound: None,
        iterations: 1,
    }
}
