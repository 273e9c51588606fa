//! What an operational action costs each job: a scenario's baseline and the same scenario with
//! the action taken (a switch drained or failed, a cable derated, an element repaired), each
//! simulated over several seeds, compared seed by seed.
//!
//! A seed changes everything that hashing and random draws decide and nothing else: the ECMP
//! hash seed, the jobs' connection seeds (their UDP source ports) and the draws of random
//! placements. One seed's answer can be an accident of one hash (a drain that moves an unlucky
//! collision away makes a job faster); the median and the range over seeds say how much of the
//! answer is the action. An action takes effect at the start of the iteration and lasts all of
//! it: its cost is a steady state, per iteration.
//!
//! The runs are independent and run in parallel (rayon); results are collected in run order,
//! so the report is the same for any number of threads.

use rayon::prelude::*;

use fabricsim_topology::{Nanos, Topology};

use crate::control::LinkEvent;
use crate::orchestrator::{RunError, RunOptions};
use crate::placement::Placement;
use crate::report::JobReport;
use crate::scenario::Scenario;
use crate::simulate::{simulate, SimError};

/// One action: what it is called in the report, and the link events it takes at time 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Action {
    pub label: String,
    pub events: Vec<LinkEvent>,
}

impl Action {
    /// `kind` (`drain`, `fail`, `repair`, `derate`) of the switch, NIC or cable `target`.
    pub fn new(kind: &str, target: &str, gbps: Option<f64>) -> Action {
        let state = match kind {
            "repair" => "up",
            "derate" => "derate",
            _ => "down",
        };
        let label = match gbps {
            Some(g) => format!("{kind} {target} to {g} Gbit/s"),
            None => format!("{kind} {target}"),
        };
        Action {
            label,
            events: vec![LinkEvent {
                at: Nanos(0),
                target: target.to_string(),
                state: state.to_string(),
                gbps,
            }],
        }
    }
}

/// The action file of `fabricsim whatif --action-file` (docs/commands/whatif.md): each
/// `[[action]]` a name and the elements it drains, fails, repairs or derates, all at once.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ActionFile {
    action: Vec<ActionToml>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ActionToml {
    name: String,
    #[serde(default)]
    drain: Vec<String>,
    #[serde(default)]
    fail: Vec<String>,
    #[serde(default)]
    repair: Vec<String>,
    /// `{ target = NAME, gbps = G }` tables.
    #[serde(default)]
    derate: Vec<DerateToml>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DerateToml {
    target: String,
    gbps: f64,
}

/// Reads an action file; errors name the file and, for an action with nothing in it, the
/// action.
pub fn read_actions(text: &str, file: &str) -> Result<Vec<Action>, String> {
    let f: ActionFile = toml::from_str(text).map_err(|e| format!("{file}: {e}"))?;
    f.action
        .into_iter()
        .enumerate()
        .map(|(i, a)| {
            let mut events = Vec::new();
            for (kind, names) in [
                ("drain", &a.drain),
                ("fail", &a.fail),
                ("repair", &a.repair),
            ] {
                for n in names {
                    events.extend(Action::new(kind, n, None).events);
                }
            }
            for d in &a.derate {
                events.extend(Action::new("derate", &d.target, Some(d.gbps)).events);
            }
            if events.is_empty() {
                return Err(format!(
                    "{file}: action {} (`{}`) drains, fails, repairs and derates nothing",
                    i + 1,
                    a.name
                ));
            }
            Ok(Action {
                label: a.name,
                events,
            })
        })
        .collect()
}

/// One job under one action, over the seeds.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct JobCost {
    pub job: String,
    pub gpus: u32,
    /// Iteration time per seed, ms.
    pub iteration_ms: Vec<f64>,
    /// Relative change of the iteration per seed (action over baseline, minus one).
    pub change: Vec<f64>,
    pub median_change: f64,
    pub min_change: f64,
    pub max_change: f64,
    /// Tokens per second lost, median over seeds (negative: gained).
    pub tokens_per_s_lost: f64,
    /// GPU-hours of work lost per day the action lasts, median over seeds: the job's GPUs for
    /// 24 h times the fraction of its throughput lost.
    pub gpu_hours_lost_per_day: f64,
}

/// One group of links (one direction between two tiers) before and after an action: the
/// median over seeds of its busiest link's utilization.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TierChange {
    pub group: String,
    pub before: f64,
    pub after: f64,
}

/// One action's outcome: every job's cost, or why the action cannot be taken.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ActionCost {
    pub action: String,
    /// Set when a run under the action failed (a job cut off by it, say): the first seed's
    /// error.
    pub error: Option<String>,
    /// Every job's cost; with an error, those of the jobs that finished under every seed.
    pub jobs: Vec<JobCost>,
    /// Summed over jobs.
    pub gpu_hours_lost_per_day: f64,
    /// The link groups' highest utilization before and after, busiest after first.
    pub tiers: Vec<TierChange>,
}

/// The baseline's iteration per job and seed, and each action's costs, cheapest first.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct WhatIfReport {
    pub seeds: u32,
    /// (job, iteration ms per seed) of the baseline.
    pub baseline: Vec<(String, Vec<f64>)>,
    pub actions: Vec<ActionCost>,
}

/// One run's jobs: (name, GPUs, iteration ms, tokens per second).
type RunJobs = Vec<(String, u32, f64, f64)>;

/// One run's link groups: (group, highest utilization).
type RunTiers = Vec<(String, f64)>;

/// One run's outcome; a failed run keeps the jobs that did finish.
type RunResult = Result<(RunJobs, RunTiers), (Box<SimError>, RunJobs)>;

/// `s` with seed `k` applied to everything hashing and random draws decide (module docs).
fn seeded(s: &Scenario, k: u32) -> Scenario {
    let mut s = s.clone();
    let k = u64::from(k);
    s.hash.seed = s.hash.seed.wrapping_add(k);
    for j in &mut s.jobs {
        j.comm.seed = j.comm.seed.wrapping_add(k);
        if let Placement::Random { seed } = &mut j.placement {
            *seed = seed.wrapping_add(k);
        }
    }
    s
}

/// Called once per simulation run as it finishes (from the worker threads), for a progress bar;
/// `&|| {}` for none.
pub type Progress<'a> = &'a (dyn Fn() + Sync);

/// Runs the baseline and every action over `seeds` seeds, calling `progress` as each of the
/// `(actions + 1) × seeds` runs finishes; the actions ranked, cheapest first (ties, and
/// failures, infinitely costly, in the order given).
pub fn what_if(
    s: &Scenario,
    topo: &Topology,
    actions: &[Action],
    seeds: u32,
    progress: Progress<'_>,
) -> Result<WhatIfReport, SimError> {
    let mut report = what_if_in_order(s, topo, actions, seeds, progress)?;
    report.actions.sort_by(|a, b| {
        a.gpu_hours_lost_per_day
            .total_cmp(&b.gpu_hours_lost_per_day)
    });
    Ok(report)
}

/// [`what_if`] with the actions' costs in the order the actions were given, for callers that
/// pair them with their actions.
pub fn what_if_in_order(
    s: &Scenario,
    topo: &Topology,
    actions: &[Action],
    seeds: u32,
    progress: Progress<'_>,
) -> Result<WhatIfReport, SimError> {
    let seeds = seeds.max(1);
    // Run r = variant · seeds + seed; variant 0 is the baseline.
    let runs: Vec<(usize, u32)> = (0..=actions.len())
        .flat_map(|v| (0..seeds).map(move |k| (v, k)))
        .collect();
    // A failed run keeps the jobs that did finish (a stall cuts off one job, not all).
    let results: Vec<RunResult> = runs
        .par_iter()
        .map(|&(v, k)| {
            let mut sc = seeded(s, k);
            if v > 0 {
                sc.events.extend(actions[v - 1].events.iter().cloned());
            }
            sc.json = None;
            sc.trace = None;
            let row = |r: &JobReport| (r.name.clone(), r.gpus, r.iteration_ms, r.tokens_per_s);
            let run = simulate(&sc, topo, RunOptions::default(), |_, _, _| {});
            progress();
            let run = run.map_err(|e| {
                let finished = match &e {
                    SimError::Run(RunError::Stalled { finished, .. }) => finished
                        .iter()
                        .map(|stats| row(&JobReport::new(stats)))
                        .collect(),
                    _ => Vec::new(),
                };
                (Box::new(e), finished)
            })?;
            let jobs = run.reports.iter().map(row).collect();
            let tiers = run
                .output
                .tiers
                .iter()
                .map(|g| (g.group.clone(), g.max_load))
                .collect();
            Ok((jobs, tiers))
        })
        .collect();
    let mut results = results.into_iter();
    // The baseline must run: an action's cost is relative to it.
    let mut base = Vec::with_capacity(seeds as usize);
    let mut base_tiers = Vec::with_capacity(seeds as usize);
    for _ in 0..seeds {
        let (jobs, tiers) = results
            .next()
            .expect("one result per run")
            .map_err(|(e, _)| *e)?;
        base.push(jobs);
        base_tiers.push(tiers);
    }
    let baseline: Vec<(String, Vec<f64>)> = base[0]
        .iter()
        .enumerate()
        .map(|(j, (name, ..))| (name.clone(), base.iter().map(|b| b[j].2).collect()))
        .collect();
    let mut costs = Vec::with_capacity(actions.len());
    for action in actions {
        let runs: Vec<_> = (0..seeds)
            .map(|_| results.next().expect("one result per run"))
            .collect();
        if let Some(Err((e, _))) = runs.iter().find(|r| r.is_err()) {
            costs.push(ActionCost {
                action: action.label.clone(),
                error: Some(e.to_string()),
                jobs: finished_costs(&base, &runs),
                gpu_hours_lost_per_day: f64::INFINITY,
                tiers: Vec::new(),
            });
            continue;
        }
        let (runs, tiers): (Vec<RunJobs>, Vec<RunTiers>) =
            runs.into_iter().map(|r| r.expect("checked")).unzip();
        let jobs: Vec<JobCost> = (0..base[0].len())
            .map(|j| job_cost(&base, &runs, j))
            .collect();
        costs.push(ActionCost {
            action: action.label.clone(),
            error: None,
            gpu_hours_lost_per_day: jobs.iter().map(|c| c.gpu_hours_lost_per_day).sum(),
            jobs,
            tiers: tier_changes(&base_tiers, &tiers),
        });
    }
    Ok(WhatIfReport {
        seeds,
        baseline,
        actions: costs,
    })
}

/// Under an action that cuts a job off: the costs of the jobs that finished under every seed.
fn finished_costs(base: &[RunJobs], runs: &[RunResult]) -> Vec<JobCost> {
    let jobs = |r: &RunResult| match r {
        Ok((jobs, _)) => jobs.clone(),
        Err((_, finished)) => finished.clone(),
    };
    let after: Vec<RunJobs> = runs.iter().map(jobs).collect();
    let kept: Vec<&str> = base[0]
        .iter()
        .map(|(name, ..)| name.as_str())
        .filter(|name| after.iter().all(|a| a.iter().any(|(n, ..)| n == name)))
        .collect();
    let only = |rows: &RunJobs| -> RunJobs {
        kept.iter()
            .filter_map(|k| rows.iter().find(|(n, ..)| n == k).cloned())
            .collect()
    };
    let base: Vec<RunJobs> = base.iter().map(only).collect();
    let after: Vec<RunJobs> = after.iter().map(only).collect();
    (0..kept.len())
        .map(|j| job_cost(&base, &after, j))
        .collect()
}

/// Job `j`'s cost, seed by seed against the baseline of the same seed.
fn job_cost(
    base: &[Vec<(String, u32, f64, f64)>],
    runs: &[Vec<(String, u32, f64, f64)>],
    j: usize,
) -> JobCost {
    let (name, gpus, ..) = &base[0][j];
    let change: Vec<f64> = base
        .iter()
        .zip(runs)
        .map(|(b, a)| a[j].2 / b[j].2 - 1.0)
        .collect();
    let lost: Vec<f64> = base
        .iter()
        .zip(runs)
        .map(|(b, a)| b[j].3 - a[j].3)
        .collect();
    // The fraction of throughput lost: 1 − baseline time / action time.
    let fraction: Vec<f64> = change.iter().map(|c| 1.0 - 1.0 / (1.0 + c)).collect();
    JobCost {
        job: name.clone(),
        gpus: *gpus,
        iteration_ms: runs.iter().map(|a| a[j].2).collect(),
        median_change: median(&change),
        min_change: change.iter().copied().fold(f64::INFINITY, f64::min),
        max_change: change.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        change,
        tokens_per_s_lost: median(&lost),
        gpu_hours_lost_per_day: f64::from(*gpus) * 24.0 * median(&fraction),
    }
}

/// Each link group's median highest utilization over the seeds, before and after (0 where a
/// group carried nothing in a run), busiest after first.
fn tier_changes(before: &[RunTiers], after: &[RunTiers]) -> Vec<TierChange> {
    let mut groups: Vec<&str> = before
        .iter()
        .chain(after)
        .flat_map(|t| t.iter().map(|(g, _)| g.as_str()))
        .collect();
    groups.sort_unstable();
    groups.dedup();
    let median_of = |runs: &[RunTiers], group: &str| {
        let v: Vec<f64> = runs
            .iter()
            .map(|t| t.iter().find(|(g, _)| g == group).map_or(0.0, |x| x.1))
            .collect();
        median(&v)
    };
    let mut out: Vec<TierChange> = groups
        .into_iter()
        .map(|g| TierChange {
            group: g.to_string(),
            before: median_of(before, g),
            after: median_of(after, g),
        })
        .collect();
    out.sort_by(|a, b| b.after.total_cmp(&a.after).then(a.group.cmp(&b.group)));
    out
}

/// The median (the mean of the middle two for an even count).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => s[n / 2],
        _ => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}
