//! Multiplicative weights for the min-congestion multi-commodity flow: Garg and Könemann's
//! algorithm (FOCS 1998), with Fleischer's one-commodity-at-a-time phases (FOCS 1999).
//!
//! Every link starts with length δ / capacity. A phase routes each demand once, in pieces no
//! larger than the capacity of their bottleneck, on its shortest candidate path under the
//! lengths; each piece of `u` bytes/s multiplies the length of each of its links by
//! `1 + ε u / capacity`, so loaded links grow expensive. After `k` whole phases, the flow
//! routed divided by `k` is a routing of the demand (the primal). Lengths also certify a lower
//! bound (weak LP duality): for any lengths `ℓ`, the optimum max utilization is at least
//! `Σ_j rate_j · dist_ℓ(j) / Σ_e capacity_e ℓ_e`. The solver stops when the primal is within
//! `1 + ε` of the best bound seen (checked every few phases), when `Σ_e capacity_e ℓ_e` reaches 1 (where the theory
//! guarantees a (1 + ε)³-approximation for δ = (m / (1 − ε))^(−1/ε)), or at the phase limit.
//!
//! Demands are first scaled by CSPF's max utilization, so the optimum is at most 1 and the
//! number of phases does not depend on the units.

use fabricsim_topology::LinkId;

use super::{add_support, cspf, round, Solution, Solver};
use crate::instance::Instance;

/// Phases between two checks of the stopping rule.
const BOUND_EVERY: u32 = 4;

/// Weak duality: `Σ_j rate_j · dist_ℓ(j) / Σ_e capacity_e ℓ_e` bounds the optimum from below.
fn dual_bound(
    inst: &Instance<'_>,
    rate: &[f64],
    len: &[f64],
    total: f64,
    scratch: &mut Vec<(f64, f64, u32)>,
) -> f64 {
    let routed: f64 = (0..rate.len())
        .map(|j| rate[j] * inst.dag(j).shortest(len, scratch).0)
        .sum();
    routed / total
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MwuOptions {
    /// Accuracy ε, in (0, 0.5].
    pub epsilon: f64,
    pub max_phases: u32,
}

impl Default for MwuOptions {
    fn default() -> Self {
        MwuOptions {
            epsilon: 0.1,
            max_phases: 400,
        }
    }
}

pub(super) fn solve(inst: &Instance<'_>, opts: &MwuOptions) -> Solution {
    let eps = opts.epsilon.clamp(1e-3, 0.5);
    let n = inst.demands.len();
    let cap = &inst.capacity;
    // Only steerable links get lengths (see `Instance`).
    let m = inst.steer.iter().filter(|&&s| s > 0.0).count().max(1) as f64;
    // Scale so that the optimum is at most 1 (CSPF's table is a feasible routing).
    let greedy = cspf::solve(inst);
    let upper = inst.max_utilization(&inst.loads(&greedy.paths));
    if n == 0 || upper <= 0.0 {
        // No link with a choice carries anything: every table is optimal.
        return Solution {
            solver: Solver::Mwu,
            paths: greedy.paths,
            max_utilization: 0.0,
            fractional: Some(0.0),
            lower_bound: Some(0.0),
            iterations: 0,
        };
    }
    let rate: Vec<f64> = inst.demands.iter().map(|d| d.rate / upper).collect();
    let delta = (m / (1.0 - eps)).powf(-1.0 / eps);
    let mut len: Vec<f64> = inst.steer.iter().map(|&s| delta * s).collect();
    let mut total: f64 = m * delta;
    let mut load = vec![0.0; cap.len()];
    let mut support: Vec<Vec<(Vec<LinkId>, f64)>> = vec![Vec::new(); n];
    let mut scratch = Vec::new();
    let mut phases = 0u32;
    let mut primal = f64::INFINITY;
    let mut bound = 0.0f64;
    'phases: while phases < opts.max_phases {
        for j in 0..n {
            let mut rem = rate[j];
            while rem > 0.0 {
                if total >= 1.0 {
                    break 'phases;
                }
                let (_, path) = inst.dag(j).shortest(&len, &mut scratch);
                let bottleneck = path
                    .iter()
                    .filter(|l| inst.steerable(**l))
                    .map(|l| cap[l.index()])
                    .fold(f64::INFINITY, f64::min);
                let u = rem.min(bottleneck);
                rem -= u;
                for l in &path {
                    let l = l.index();
                    load[l] += u;
                    let grown = len[l] * (1.0 + eps * u * inst.steer[l]);
                    total += cap[l] * (grown - len[l]);
                    len[l] = grown;
                }
                add_support(&mut support[j], &path, u);
            }
        }
        phases += 1;
        primal = primal.min(inst.max_utilization(&load) / f64::from(phases));
        // The bound costs a shortest path per demand, as much as routing them: check the
        // stopping rule every few phases.
        if phases.is_multiple_of(BOUND_EVERY) {
            bound = bound.max(dual_bound(inst, &rate, &len, total, &mut scratch));
            if primal <= (1.0 + eps) * bound {
                break;
            }
        }
    }
    bound = bound.max(dual_bound(inst, &rate, &len, total, &mut scratch));
    let paths = round(inst, &support);
    Solution {
        solver: Solver::Mwu,
        paths,
        max_utilization: 0.0,
        fractional: primal.is_finite().then_some(primal * upper),
        lower_bound: Some(bound * upper),
        iterations: phases,
    }
}
