//! The capacity buffer: how each job's iteration slows down as more elements of one kind fail
//! (CTSWs, RTSW–CTSW cables), and how many failures each job tolerates before a given slowdown,
//! under each routing policy.
//!
//! Each point of the curve is `draws` random sets of `k` failed elements, each run over `seeds`
//! seeds ([`crate::whatif::what_if_in_order`]). The draws depend only on `k` and the draw's index, so every routing
//! policy meets the same failures and the policies are compared pair by pair. A draw that cuts
//! a job off counts as an infinite slowdown of that job, and only of that job.

use fabricsim_routing::key::mix;
use fabricsim_te::Routing;
use fabricsim_topology::{NodeKind, Topology};

use crate::control::LinkEvent;
use crate::scenario::Scenario;
use crate::simulate::SimError;
use crate::whatif::{what_if_in_order, Action, Progress};

/// One job at one number of failures, over every draw and seed.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct JobPoint {
    pub job: String,
    /// The median change of the iteration against the baseline of the same seed; infinite
    /// (JSON `null`) when most draws cut the job off.
    pub median_change: f64,
    /// The largest change seen (infinite when a draw cut the job off).
    pub max_change: f64,
    /// Draws that cut the job off.
    pub cut_off: u32,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Point {
    pub failed: usize,
    pub jobs: Vec<JobPoint>,
}

/// The curve of one routing policy.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Curve {
    pub routing: String,
    /// Each job's iteration without failures (ms, median over seeds).
    pub baseline_ms: Vec<(String, f64)>,
    pub points: Vec<Point>,
    /// Per job, the most failures it tolerates: every count up to it keeps the median
    /// slowdown at or under the limit.
    pub tolerates: Vec<(String, usize)>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BufferReport {
    pub kind: String,
    /// How many elements of the kind the fabric has.
    pub candidates: usize,
    pub draws: u32,
    pub seeds: u32,
    pub slowdown: f64,
    pub curves: Vec<Curve>,
}

/// The elements of `kind`: a tier's switches (`ctsw`), or the cables between two tiers
/// (`rtsw-ctsw`; `nic` is the tier of the hosts' NICs), named as link events name them.
pub fn elements_of_kind(topo: &Topology, kind: &str) -> Result<Vec<String>, String> {
    let tier_of = |n| match topo.kind(n) {
        NodeKind::Switch(role) => Some(topo.tier_name(role.tier)),
        NodeKind::Nic => Some("nic"),
        _ => None,
    };
    let mut tiers: Vec<&str> = topo.tiers().iter().map(String::as_str).collect();
    tiers.push("nic");
    let known = |t: &str| {
        if tiers.contains(&t) {
            Ok(())
        } else {
            Err(format!(
                "`{t}` is no tier of fabric `{}`: expected one of {}",
                topo.name(),
                tiers.join(", ")
            ))
        }
    };
    let found: Vec<String> = match kind.split_once('-') {
        None => {
            known(kind)?;
            topo.nodes()
                .filter(|&n| topo.kind(n).is_switch() && tier_of(n) == Some(kind))
                .map(|n| topo.node_name(n).to_string())
                .collect()
        }
        Some((a, b)) => {
            known(a)?;
            known(b)?;
            topo.links()
                .iter()
                .filter(|l| tier_of(l.src) == Some(a) && tier_of(l.dst) == Some(b))
                .map(|l| format!("{}--{}", topo.node_name(l.src), topo.node_name(l.dst)))
                .collect()
        }
    };
    if found.is_empty() {
        return Err(format!(
            "fabric `{}` has no element of kind `{kind}`",
            topo.name()
        ));
    }
    Ok(found)
}

/// `k` distinct elements drawn for draw `d` (a partial Fisher–Yates shuffle on a SplitMix64
/// stream seeded by `k` and `d` alone).
fn draw(elements: &[String], k: usize, d: u32) -> Vec<String> {
    let mut order: Vec<usize> = (0..elements.len()).collect();
    let mut state = mix(((k as u64) << 32) ^ u64::from(d));
    for i in 0..k.min(order.len()) {
        state = mix(state);
        let j = i + (state % (order.len() - i) as u64) as usize;
        order.swap(i, j);
    }
    order[..k.min(order.len())]
        .iter()
        .map(|&i| elements[i].clone())
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// What to fail and how to measure it.
#[derive(Clone, Debug)]
pub struct BufferSpec {
    /// The kind of element that fails ([`elements_of_kind`]).
    pub kind: String,
    /// The most elements failed at once.
    pub max: usize,
    /// Random sets of failed elements per count.
    pub draws: u32,
    /// Seeds each set runs under.
    pub seeds: u32,
    /// The median slowdown a job tolerates (0.05: 5 %).
    pub slowdown: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum BufferError {
    #[error("--fail {0}")]
    Kind(String),
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// How many simulation runs [`capacity_buffer`] takes for `routings` routing policies.
pub fn buffer_runs(
    topo: &Topology,
    routings: usize,
    spec: &BufferSpec,
) -> Result<u64, BufferError> {
    let elements = elements_of_kind(topo, &spec.kind).map_err(BufferError::Kind)?;
    let max = spec.max.min(elements.len()) as u64;
    let (draws, seeds) = (spec.draws.max(1) as u64, spec.seeds.max(1) as u64);
    Ok(routings as u64 * (max * draws + 1) * seeds)
}

/// The capacity-buffer curves of `s` under each of `routings` (module docs), calling `progress`
/// as each of its runs finishes ([`buffer_runs`] in all).
pub fn capacity_buffer(
    s: &Scenario,
    topo: &Topology,
    routings: &[Routing],
    spec: &BufferSpec,
    progress: Progress<'_>,
) -> Result<BufferReport, BufferError> {
    let elements = elements_of_kind(topo, &spec.kind).map_err(BufferError::Kind)?;
    let max = spec.max.min(elements.len());
    let (draws, seeds) = (spec.draws.max(1), spec.seeds.max(1));
    // Count by count, draw by draw: the costs come back in this order, `draws` a count.
    let actions: Vec<Action> = (1..=max)
        .flat_map(|k| (0..draws).map(move |d| (k, d)))
        .map(|(k, d)| {
            let events = draw(&elements, k, d)
                .into_iter()
                .map(|target| LinkEvent {
                    at: fabricsim_topology::Nanos(0),
                    target,
                    state: "down".into(),
                    gbps: None,
                })
                .collect();
            let label = format!("{k} failed, draw {d}");
            Action { label, events }
        })
        .collect();
    let mut curves = Vec::with_capacity(routings.len());
    for &routing in routings {
        let mut sc = s.clone();
        sc.routing = routing;
        let report = what_if_in_order(&sc, topo, &actions, seeds, progress)?;
        let jobs: Vec<String> = report.baseline.iter().map(|(j, _)| j.clone()).collect();
        let baseline_ms = report
            .baseline
            .iter()
            .map(|(j, ms)| (j.clone(), median(ms.clone())))
            .collect();
        let mut points = vec![Point {
            failed: 0,
            jobs: jobs
                .iter()
                .map(|j| JobPoint {
                    job: j.clone(),
                    median_change: 0.0,
                    max_change: 0.0,
                    cut_off: 0,
                })
                .collect(),
        }];
        for (k, costs) in (1..=max).zip(report.actions.chunks(draws as usize)) {
            let jobs = jobs
                .iter()
                .map(|name| {
                    let mut changes = Vec::new();
                    let mut cut_off = 0;
                    // A job missing from a draw's costs was cut off by it (the others are
                    // costed even then).
                    for c in costs {
                        match c.jobs.iter().find(|cost| cost.job == *name) {
                            Some(cost) => changes.extend(cost.change.iter().copied()),
                            None => {
                                cut_off += 1;
                                changes.extend((0..seeds).map(|_| f64::INFINITY));
                            }
                        }
                    }
                    let max_change = changes.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    JobPoint {
                        job: name.clone(),
                        median_change: median(changes),
                        max_change,
                        cut_off,
                    }
                })
                .collect();
            points.push(Point { failed: k, jobs });
        }
        let tolerates = jobs
            .iter()
            .enumerate()
            .map(|(j, name)| {
                let within = points
                    .iter()
                    .take_while(|p| p.jobs[j].median_change <= spec.slowdown)
                    .count();
                (name.clone(), within.saturating_sub(1))
            })
            .collect();
        curves.push(Curve {
            routing: routing.name(),
            baseline_ms,
            points,
            tolerates,
        });
    }
    Ok(BufferReport {
        kind: spec.kind.clone(),
        candidates: elements.len(),
        draws,
        seeds,
        slowdown: spec.slowdown,
        curves,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_distinct_and_depend_on_k_and_d_only() {
        let elements: Vec<String> = (0..10).map(|i| format!("e{i}")).collect();
        for k in 0..=10 {
            let mut d = draw(&elements, k, 3);
            assert_eq!(d, draw(&elements, k, 3));
            d.sort();
            d.dedup();
            assert_eq!(d.len(), k);
        }
        assert_ne!(draw(&elements, 3, 0), draw(&elements, 3, 1));
    }
}
