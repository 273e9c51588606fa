//! The job trace: the plan's listed arrivals and its synthetic jobs, in arrival order. Synthetic
//! jobs arrive as a Poisson process (exponential gaps of the plan's mean); each draws its kind
//! by the mix's shares and its useful hours log-uniformly in the kind's range (cluster traces
//! are dominated in number by short small jobs and in GPU-hours by long large ones).

use crate::plan::{JobRequest, Plan, Work};
use crate::rng::Rng;

/// Every job of `plan`'s trace for `seed`, by arrival time (ties in the order given).
pub fn jobs(plan: &Plan, seed: u64) -> Vec<JobRequest> {
    let mut out = plan.arrivals.clone();
    if let Some(s) = &plan.synthetic {
        let mut rng = Rng::new(seed, 1);
        let total: f64 = s.mix.iter().map(|m| m.1).sum();
        let mut t = 0.0;
        for i in 0..s.jobs {
            t += rng.exponential(s.mean_gap);
            let mut pick = rng.uniform() * total;
            let &(template, _, lo, hi) = s
                .mix
                .iter()
                .find(|m| {
                    pick -= m.1;
                    pick < 0.0
                })
                .unwrap_or(&s.mix[s.mix.len() - 1]);
            let hours = rng.log_uniform(lo, hi);
            out.push(JobRequest {
                name: format!("{}~{}", plan.scenario.jobs[template as usize].name, i + 1),
                template,
                arrival: t,
                work: Work::Hours(hours),
                priority: 0,
            });
        }
    }
    out.sort_by(|a, b| a.arrival.total_cmp(&b.arrival));
    out
}
