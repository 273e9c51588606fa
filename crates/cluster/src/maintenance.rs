//! A maintenance plan: every element of a set must be drained once, at most `at_once` at a time,
//! each batch out for a given number of hours. The plan orders them in batches so the jobs lose
//! as few GPU-hours as possible, keeps every job connected, and is compared with draining them
//! in the order given.
//!
//! The search is greedy. The single drains are costed once ([`crate::whatif::what_if_in_order`]). Each batch then starts
//! from the cheapest element left and grows one element at a time: every candidate is costed
//! together with the batch so far, and the cheapest is taken. Costing the batch as a whole, not
//! as a sum of single costs, is what finds interactions: two switches whose loss the fabric
//! absorbs apart but not together. When costs add up, every order costs the same and greedy is
//! optimal. When they interact, greedy can miss the best partition, and nothing bounds how far.
//! The naive order is costed too, and the plan is never worse than it: if the naive order is
//! cheaper, it is returned instead.

use fabricsim_topology::Topology;

use crate::scenario::Scenario;
use crate::simulate::SimError;
use crate::whatif::{what_if_in_order, Action, Progress};

/// One batch of the plan and what it costs.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Batch {
    pub elements: Vec<String>,
    /// GPU-hours the jobs lose per day while the batch is out (median over seeds, summed over
    /// jobs).
    pub gpu_hours_lost_per_day: f64,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MaintenancePlan {
    pub batches: Vec<Batch>,
    /// GPU-hours lost over the whole plan (each batch out for the hours given).
    pub gpu_hours_lost: f64,
    /// The same for the order given, `at_once` at a time.
    pub naive: Vec<Batch>,
    pub naive_gpu_hours_lost: f64,
    /// Whether the naive order was cheaper than the greedy search and is returned as the plan.
    pub naive_kept: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error("no batch with `{element}` keeps every job connected: {why}")]
    CutsOff { element: String, why: String },
}

/// The combined action of some elements.
fn together(elements: &[&Action]) -> Action {
    Action {
        label: elements
            .iter()
            .map(|a| a.label.as_str())
            .collect::<Vec<_>>()
            .join(" + "),
        events: elements.iter().flat_map(|a| a.events.clone()).collect(),
    }
}

/// Costs `batches` in one what-if run: GPU-hours lost per day of each, and the first reason
/// one cannot be taken.
fn cost(
    s: &Scenario,
    topo: &Topology,
    batches: &[Action],
    seeds: u32,
    progress: Progress<'_>,
) -> Result<Vec<(f64, Option<String>)>, SimError> {
    let report = what_if_in_order(s, topo, batches, seeds, progress)?;
    Ok(report
        .actions
        .into_iter()
        .map(|a| (a.gpu_hours_lost_per_day, a.error))
        .collect())
}

/// Plans draining every element of `elements` (each an action on one element), `at_once` at a
/// time, each batch out for `hours` (module docs), calling `progress` as each simulation run
/// finishes (how many the search takes depends on what it finds).
pub fn plan(
    s: &Scenario,
    topo: &Topology,
    elements: &[Action],
    at_once: usize,
    hours: f64,
    seeds: u32,
    progress: Progress<'_>,
) -> Result<MaintenancePlan, PlanError> {
    let at_once = at_once.max(1);
    let singles = cost(s, topo, elements, seeds, progress)?;
    let mut left: Vec<usize> = (0..elements.len()).collect();
    // Cheapest single first; ties in the order given.
    left.sort_by(|&a, &b| singles[a].0.total_cmp(&singles[b].0).then(a.cmp(&b)));
    let mut batches = Vec::new();
    while let Some(&first) = left.first() {
        if let Some(why) = &singles[first].1 {
            return Err(PlanError::CutsOff {
                element: elements[first].label.clone(),
                why: why.clone(),
            });
        }
        left.remove(0);
        let mut batch = vec![first];
        let mut batch_cost = singles[first].0;
        while batch.len() < at_once && !left.is_empty() {
            let candidates: Vec<Action> = left
                .iter()
                .map(|&c| {
                    let mut members: Vec<&Action> = batch.iter().map(|&i| &elements[i]).collect();
                    members.push(&elements[c]);
                    together(&members)
                })
                .collect();
            let costs = cost(s, topo, &candidates, seeds, progress)?;
            let best = (0..left.len())
                .filter(|&k| costs[k].1.is_none())
                .min_by(|&x, &y| costs[x].0.total_cmp(&costs[y].0).then(x.cmp(&y)));
            // Nothing more fits without cutting a job off: the batch stays smaller.
            let Some(k) = best else { break };
            batch_cost = costs[k].0;
            batch.push(left.remove(k));
        }
        batches.push(Batch {
            elements: batch.iter().map(|&i| elements[i].label.clone()).collect(),
            gpu_hours_lost_per_day: batch_cost,
        });
    }
    // The order given, `at_once` at a time.
    let naive_actions: Vec<Action> = elements
        .chunks(at_once)
        .map(|c| together(&c.iter().collect::<Vec<_>>()))
        .collect();
    let naive_costs = cost(s, topo, &naive_actions, seeds, progress)?;
    // A naive batch that cuts a job off costs infinitely much (what_if's cost of an error), so
    // the naive order is then never kept.
    let naive: Vec<Batch> = elements
        .chunks(at_once)
        .zip(&naive_costs)
        .map(|(c, (g, _))| Batch {
            elements: c.iter().map(|a| a.label.clone()).collect(),
            gpu_hours_lost_per_day: *g,
        })
        .collect();
    let total =
        |b: &[Batch]| b.iter().map(|x| x.gpu_hours_lost_per_day).sum::<f64>() * hours / 24.0;
    let (planned, naive_total) = (total(&batches), total(&naive));
    let naive_kept = naive_total < planned;
    Ok(MaintenancePlan {
        batches: if naive_kept { naive.clone() } else { batches },
        gpu_hours_lost: planned.min(naive_total),
        naive,
        naive_gpu_hours_lost: naive_total,
        naive_kept,
    })
}
