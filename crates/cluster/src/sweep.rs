//! `fabricsim sweep PLAN.toml`: a scenario run over the cartesian product of some of its keys'
//! values, each point over seeds, one table row per point, seed and job.
//!
//! A plan:
//!
//! ```toml
//! scenario = "../scenarios/default.toml"   # relative to the plan; absent: the built-in default
//! seeds = 2                                # runs per point, with routing.seed = 0, 1, …
//! metrics = ["iteration_ms", "mfu"]        # fields of a job's JSON summary (docs/outputs.md)
//!
//! [vary]                                   # scenario keys, as `run --set` names them
//! "routing.policy" = ["ecmp", "eecmp", "spray"]
//! "job.llama3-8b.llm.tp" = [4, 8]
//! ```
//!
//! Keys vary in the order the table sorts them (alphabetical), the last fastest. The runs are
//! independent and run in parallel (rayon); the rows come back in point order, so the table is
//! the same for any number of threads. A `[design]` table makes it a design search
//! ([`crate::design`]).

use std::path::{Path, PathBuf};

use fabricsim_topology::inventory::{inventory, Inventory};
use rayon::prelude::*;
use serde::Deserialize;
use toml::Value;

use crate::overrides::Override;
use crate::scenario::{Scenario, DEFAULT};
use crate::simulate::{simulate, SimError};
use crate::whatif::Progress;
use crate::RunOptions;

/// The most points a plan may ask for (a typo such as a range of a million values would
/// otherwise run for days).
pub const MAX_POINTS: usize = 100_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    scenario: Option<String>,
    #[serde(default = "one")]
    seeds: u32,
    metrics: Vec<String>,
    vary: toml::Table,
    design: Option<crate::design::DesignFile>,
}

fn one() -> u32 {
    1
}

/// A checked plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The scenario file, or `None` for the built-in default.
    pub scenario: Option<PathBuf>,
    pub seeds: u32,
    pub metrics: Vec<String>,
    /// Each key with its values.
    pub vary: Vec<(String, Vec<Value>)>,
    /// A design search: each point's fabric priced, and the Pareto front of cost against a
    /// metric ([`crate::design`]).
    pub design: Option<crate::design::Design>,
}

/// A point's value as a table cell: strings bare, the rest as TOML writes them.
pub fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// One row: a point (its values in `Plan::vary` order), a seed, a job and its metrics (`None`
/// where the job did not finish or has no such figure).
#[derive(Clone, Debug, PartialEq)]
pub struct SweepRow {
    pub point: Vec<Value>,
    pub seed: u32,
    pub job: String,
    pub metrics: Vec<Option<f64>>,
    /// Why the run failed, if it did.
    pub error: Option<String>,
    /// With a design search: what the point's fabric is built from, and its cost.
    pub inventory: Option<Inventory>,
    pub cost: Option<f64>,
    /// With a design search over the whole plan (not a shard): whether the point is on the
    /// job's Pareto front of cost against the objective (its median over seeds).
    pub pareto: Option<bool>,
}

impl Plan {
    /// Reads a plan file; errors name the file and the key.
    pub fn read(path: &Path) -> Result<Plan, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Plan::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Plan, String> {
        let at = |what: String| format!("{}: {what}", path.display());
        let raw: PlanFile =
            toml::from_str(text).map_err(|e| at(e.to_string().trim_end().into()))?;
        if raw.seeds == 0 || raw.seeds > 1000 {
            return Err(at(format!("seeds = {}: expected 1 to 1000", raw.seeds)));
        }
        if raw.metrics.is_empty() {
            return Err(at("metrics: expected at least one".into()));
        }
        let mut vary = Vec::new();
        let mut points = 1usize;
        for (key, values) in raw.vary {
            let values = match values {
                Value::Array(v) if !v.is_empty() => v,
                _ => return Err(at(format!("vary.\"{key}\": expected a non-empty list"))),
            };
            points = points.saturating_mul(values.len());
            vary.push((key, values));
        }
        if points.saturating_mul(raw.seeds as usize) > MAX_POINTS {
            return Err(at(format!(
                "{points} points × {} seeds: at most {MAX_POINTS} runs",
                raw.seeds
            )));
        }
        let scenario = raw.scenario.map(|s| {
            let p = PathBuf::from(s);
            if p.is_relative() {
                path.parent().unwrap_or(Path::new(".")).join(p)
            } else {
                p
            }
        });
        let design = match raw.design {
            Some(d) => Some(d.check(&raw.metrics).map_err(at)?),
            None => None,
        };
        Ok(Plan {
            scenario,
            seeds: raw.seeds,
            metrics: raw.metrics,
            vary,
            design,
        })
    }

    /// The points, each a value per key, the last key fastest.
    pub fn points(&self) -> Vec<Vec<Value>> {
        let mut out = vec![Vec::new()];
        for (_, values) in &self.vary {
            out = out
                .into_iter()
                .flat_map(|p| {
                    values.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push(v.clone());
                        q
                    })
                })
                .collect();
        }
        out
    }

    /// Runs every point over every seed; `progress` is called as each run finishes.
    pub fn run(&self, progress: Progress<'_>) -> Result<Vec<SweepRow>, String> {
        let mut rows = self.run_shard((0, 1), progress)?;
        if let Some(d) = &self.design {
            crate::design::mark_fronts(d, &self.metrics, &mut rows);
        }
        Ok(rows)
    }

    /// How many runs the plan makes: points times seeds.
    pub fn run_count(&self) -> usize {
        self.points().len() * self.seeds as usize
    }

    /// Runs shard `k` of `n`: the runs whose index in the plan's order (points, then seeds)
    /// is `k` modulo `n`, in that order. The shards of a plan together make its whole table,
    /// so they can run on different machines (the Python package's `sweep(ray=True)`).
    pub fn run_shard(
        &self,
        (k, n): (usize, usize),
        progress: Progress<'_>,
    ) -> Result<Vec<SweepRow>, String> {
        let (text, file) = match &self.scenario {
            Some(p) => (
                std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
                p.clone(),
            ),
            None => (DEFAULT.to_string(), PathBuf::from("scenarios/default.toml")),
        };
        let runs: Vec<(Vec<Value>, u32)> = self
            .points()
            .into_iter()
            .flat_map(|p| (0..self.seeds).map(move |s| (p.clone(), s)))
            .enumerate()
            .filter(|(i, _)| n > 0 && i % n == k)
            .map(|(_, run)| run)
            .collect();
        let results: Vec<Result<Vec<SweepRow>, String>> = runs
            .par_iter()
            .map(|(point, seed)| {
                let mut sets: Vec<Override> = self
                    .vary
                    .iter()
                    .zip(point)
                    .map(|((key, _), value)| Override {
                        key: key.clone(),
                        value: value.clone(),
                    })
                    .collect();
                sets.push(Override {
                    key: "routing.seed".into(),
                    value: Value::Integer(i64::from(*seed)),
                });
                let rows = self.run_point(&text, &file, &sets, point, *seed);
                progress();
                rows
            })
            .collect();
        let mut out = Vec::new();
        for r in results {
            out.extend(r?);
        }
        Ok(out)
    }

    /// One run; a scenario the point makes invalid is an error of the plan, a run that fails
    /// (a job cut off) rows with the error.
    fn run_point(
        &self,
        text: &str,
        file: &Path,
        sets: &[Override],
        point: &[Value],
        seed: u32,
    ) -> Result<Vec<SweepRow>, String> {
        let name = |p: &[Value]| {
            self.vary
                .iter()
                .zip(p)
                .map(|((k, _), v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut sc = Scenario::parse_with(text, file, sets)
            .map_err(|e| format!("point {}: {e}", name(point)))?;
        sc.json = None;
        sc.trace = None;
        let topo = sc
            .fabric
            .load()
            .map_err(|e| format!("point {}: {e}", name(point)))?;
        let inventory = self.design.as_ref().map(|_| inventory(&topo));
        let cost = self
            .design
            .as_ref()
            .zip(inventory.as_ref())
            .map(|(d, inv)| d.prices.cost(inv));
        let row = |job: String, report: Option<&crate::JobReport>, error: Option<String>| {
            let json = report.map(|r| serde_json::to_value(r).expect("a report serializes"));
            SweepRow {
                point: point.to_vec(),
                seed,
                job,
                metrics: self
                    .metrics
                    .iter()
                    .map(|m| {
                        json.as_ref()
                            .and_then(|j| j.get(m))
                            .and_then(|v| v.as_f64())
                    })
                    .collect(),
                error,
                inventory,
                cost,
                pareto: None,
            }
        };
        Ok(
            match simulate(&sc, &topo, RunOptions::default(), |_, _, _| {}) {
                Ok(run) => run
                    .reports
                    .iter()
                    .map(|r| row(r.name.clone(), Some(r), None))
                    .collect(),
                Err(SimError::Run(e)) => sc
                    .jobs
                    .iter()
                    .map(|j| row(j.name.clone(), None, Some(e.to_string())))
                    .collect(),
                Err(e) => return Err(format!("point {}: {e}", name(point))),
            },
        )
    }
}
