//! Cluster plans (TOML, docs/commands/cluster.md): a scenario file whose `[[job]]` entries are
//! the workloads jobs are drawn from (their placement is the scheduler's), and a `[cluster]`
//! table: how long to simulate, the scheduler, spares, checkpoints, the job trace (listed
//! arrivals and/or a synthetic mix) and overrides of the failure model.

use std::collections::BTreeMap;
use std::path::Path;

use fabricsim_cluster::scenario::{Scenario, ScenarioError};
use serde::Deserialize;

use crate::failures::{default_rate, Class, Rate, CLASSES};
use crate::scheduler;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClusterToml {
    days: f64,
    #[serde(default)]
    seed: u64,
    #[serde(default = "topology_aware")]
    scheduler: String,
    /// Whole hosts each zone keeps for jobs restarting after a failure.
    #[serde(default)]
    spares: u32,
    /// Jobs sharing links, directly or through others, are simulated together up to this
    /// many GPUs; a wider chain is cut at the zones' edges (crate::coupling).
    #[serde(default = "exact_group_gpus")]
    exact_group_gpus: u64,
    #[serde(default = "young_daly")]
    checkpoint_every: String,
    #[serde(default = "write_time")]
    checkpoint_write: String,
    #[serde(default = "restart_time")]
    restart: String,
    #[serde(default = "hour")]
    sample_every: String,
    #[serde(default)]
    arrival: Vec<ArrivalToml>,
    synthetic: Option<SyntheticToml>,
    /// Per class: `per_hour` and/or `repair` overrides; `failures = false` turns them off.
    #[serde(default)]
    failures: FailuresToml,
    #[serde(default)]
    outage: Vec<OutageToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutageToml {
    at: String,
    /// Host names; or `rack`, a ToR's name (its single-homed hosts).
    #[serde(default)]
    hosts: Vec<String>,
    rack: Option<String>,
    hours: f64,
    /// A drain: the jobs there checkpoint and move (no work lost). Otherwise a failure of
    /// `class` (default `host`).
    #[serde(default)]
    planned: bool,
    class: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum FailuresToml {
    Enabled(bool),
    Classes(BTreeMap<String, RateToml>),
}

impl Default for FailuresToml {
    fn default() -> Self {
        FailuresToml::Enabled(true)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RateToml {
    per_hour: Option<f64>,
    repair: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArrivalToml {
    job: String,
    name: Option<String>,
    #[serde(default = "zero")]
    at: String,
    hours: Option<f64>,
    iterations: Option<u64>,
    #[serde(default)]
    priority: i32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SyntheticToml {
    jobs: u32,
    /// Mean time between arrivals (Poisson arrivals).
    mean_gap: String,
    mix: Vec<MixToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MixToml {
    job: String,
    share: f64,
    /// Useful hours a job of this kind wants, drawn log-uniformly between the two.
    hours: [f64; 2],
}

fn topology_aware() -> String {
    "topology-aware".into()
}
fn young_daly() -> String {
    "young-daly".into()
}
fn write_time() -> String {
    // Alibaba HPN (SIGCOMM'24, §2): checkpoints of ~30 GB per GPU take ~100 s.
    "100s".into()
}
fn restart_time() -> String {
    // Assumed: relaunch, communicator set-up and checkpoint load (no public figure here).
    "10min".into()
}
/// A cost bound, not a physical figure: a group of 8,192 GPUs takes about 10 s to simulate on
/// one core (docs/commands/cluster.md, performance), and a month re-simulates a group at every
/// start, end or failure among its jobs.
fn exact_group_gpus() -> u64 {
    8192
}
fn hour() -> String {
    "1h".into()
}
fn zero() -> String {
    "0s".into()
}

/// How much work a job wants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Work {
    Iterations(u64),
    /// Useful hours at its reference iteration time (alone, where the topology-aware policy
    /// puts it in an empty cluster).
    Hours(f64),
}

/// One job of the trace.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRequest {
    pub name: String,
    /// Its workload: the index of a `[[job]]` entry of the plan.
    pub template: u32,
    pub arrival: f64,
    pub work: Work,
    pub priority: i32,
}

/// The synthetic part of a trace, drawn by [`crate::trace`].
#[derive(Clone, Debug, PartialEq)]
pub struct Synthetic {
    pub jobs: u32,
    pub mean_gap: f64,
    /// (template, share, hours low, hours high).
    pub mix: Vec<(u32, f64, f64, f64)>,
}

/// Hosts out of service at a given time: planned maintenance (a drain) or a failure.
#[derive(Clone, Debug, PartialEq)]
pub struct Outage {
    pub at: f64,
    pub hosts: Vec<String>,
    pub rack: Option<String>,
    pub duration: f64,
    pub planned: bool,
    pub class: Class,
}

/// When a job checkpoints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Checkpoint {
    /// Every this many seconds of running.
    Every(f64),
    /// Young's interval for the job's own mean time to interruption.
    YoungDaly,
}

/// A checked plan. Times are in seconds.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The fabric, the routing and the workloads (`jobs`, whose placement is ignored).
    pub scenario: Scenario,
    pub duration: f64,
    pub seed: u64,
    pub scheduler: String,
    pub spares: u32,
    /// Groups of jobs sharing links are simulated together up to this many GPUs; wider ones
    /// are cut at the zones' edges ([`crate::coupling`]).
    pub exact_group_gpus: u64,
    pub checkpoint: Checkpoint,
    pub checkpoint_write: f64,
    pub restart: f64,
    pub sample_every: f64,
    pub arrivals: Vec<JobRequest>,
    pub synthetic: Option<Synthetic>,
    pub rates: BTreeMap<Class, Rate>,
    pub outages: Vec<Outage>,
}

/// `1.5h`, `30min`, `100s`, `2d`: seconds.
pub fn seconds(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or_else(|| format!("\"{s}\": expected a number and a unit (s, min, h, d)"))?;
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("\"{s}\": `{}` is not a number", num.trim()))?;
    let scale = match unit {
        "s" => 1.0,
        "min" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        u => return Err(format!("\"{s}\": unit `{u}`, expected s, min, h or d")),
    };
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("\"{s}\": expected a duration of zero or more"));
    }
    Ok(v * scale)
}

impl Plan {
    pub fn load(path: &Path) -> Result<Plan, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: path.display().to_string(),
            what: e.to_string(),
        })?;
        Plan::parse(&text, path)
    }

    pub fn parse(text: &str, file: &Path) -> Result<Plan, ScenarioError> {
        let err = |what: String| ScenarioError {
            file: file.display().to_string(),
            what,
        };
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| err(e.to_string().trim_end().to_string()))?;
        let cluster = table.remove("cluster").ok_or_else(|| {
            err("no [cluster] table: a cluster plan needs one (docs/commands/cluster.md)".into())
        })?;
        let c: ClusterToml = cluster.try_into().map_err(|e: toml::de::Error| {
            err(format!("[cluster]: {}", e.to_string().trim_end()))
        })?;
        let rest = toml::to_string(&table).map_err(|e| err(e.to_string()))?;
        let scenario = Scenario::parse(&rest, file)?;
        if scenario.jobs.is_empty() {
            return Err(err(
                "no [[job]] entries: the plan's workloads are its jobs".into()
            ));
        }
        let at = |key: &str, v: Result<f64, String>| {
            v.map_err(|w| err(format!("[cluster] {key} = {w}")))
        };
        let template = |key: &str, name: &str| -> Result<u32, ScenarioError> {
            scenario
                .jobs
                .iter()
                .position(|j| j.name == name)
                .map(|i| i as u32)
                .ok_or_else(|| {
                    err(format!(
                        "{key} job = \"{name}\": expected one of the [[job]] names: {}",
                        scenario
                            .jobs
                            .iter()
                            .map(|j| j.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
        };
        if !(c.days.is_finite() && c.days > 0.0 && c.days <= 3650.0) {
            return Err(err(format!(
                "[cluster] days = {}: expected more than 0 and at most 3650",
                c.days
            )));
        }
        if !scheduler::NAMES.contains(&c.scheduler.as_str()) {
            return Err(err(format!(
                "[cluster] scheduler = \"{}\": expected one of {}",
                c.scheduler,
                scheduler::NAMES.join(", ")
            )));
        }
        let checkpoint = if c.checkpoint_every == "young-daly" {
            Checkpoint::YoungDaly
        } else {
            let s = at("checkpoint_every", seconds(&c.checkpoint_every))?;
            if s < 60.0 {
                return Err(err(format!(
                    "[cluster] checkpoint_every = \"{}\": expected young-daly or at least 1min",
                    c.checkpoint_every
                )));
            }
            Checkpoint::Every(s)
        };
        let sample_every = at("sample_every", seconds(&c.sample_every))?;
        if sample_every < 60.0 {
            return Err(err(format!(
                "[cluster] sample_every = \"{}\": expected at least 1min",
                c.sample_every
            )));
        }
        if c.days * 86_400.0 / sample_every > 1e6 {
            return Err(err(format!(
                "[cluster] sample_every = \"{}\": {} days would take more than 1,000,000 samples",
                c.sample_every, c.days
            )));
        }
        let mut arrivals = Vec::new();
        for (i, a) in c.arrival.iter().enumerate() {
            let key = format!("[[cluster.arrival]] {}:", i + 1);
            let work = match (a.hours, a.iterations) {
                (Some(h), None) if h.is_finite() && h > 0.0 => Work::Hours(h),
                (None, Some(n)) if n > 0 => Work::Iterations(n),
                _ => {
                    return Err(err(format!(
                        "{key} give one of hours (more than 0) and iterations (at least 1)"
                    )))
                }
            };
            let t = template(&key, &a.job)?;
            arrivals.push(JobRequest {
                name: a
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("{}#{}", a.job, i + 1)),
                template: t,
                arrival: seconds(&a.at).map_err(|w| err(format!("{key} at = {w}")))?,
                work,
                priority: a.priority,
            });
        }
        let synthetic = match &c.synthetic {
            None => None,
            Some(s) => {
                if s.jobs > 100_000 {
                    return Err(err(format!(
                        "[cluster.synthetic] jobs = {}: expected at most 100000",
                        s.jobs
                    )));
                }
                let mut mix = Vec::new();
                for (i, m) in s.mix.iter().enumerate() {
                    let key = format!("[cluster.synthetic] mix {}:", i + 1);
                    let [lo, hi] = m.hours;
                    if !(m.share.is_finite()
                        && m.share > 0.0
                        && lo > 0.0
                        && lo <= hi
                        && hi.is_finite())
                    {
                        return Err(err(format!(
                            "{key} expected share > 0 and hours = [low, high] with 0 < low <= high"
                        )));
                    }
                    mix.push((template(&key, &m.job)?, m.share, lo, hi));
                }
                if mix.is_empty() {
                    return Err(err(
                        "[cluster.synthetic] mix: expected at least one entry".into()
                    ));
                }
                Some(Synthetic {
                    jobs: s.jobs,
                    mean_gap: at("synthetic.mean_gap", seconds(&s.mean_gap))?,
                    mix,
                })
            }
        };
        let mut rates: BTreeMap<Class, Rate> =
            CLASSES.into_iter().map(|k| (k, default_rate(k))).collect();
        match &c.failures {
            FailuresToml::Enabled(true) => {}
            FailuresToml::Enabled(false) => rates.values_mut().for_each(|r| r.per_hour = 0.0),
            FailuresToml::Classes(over) => {
                for (name, o) in over {
                    let class = Class::parse(name).ok_or_else(|| {
                        err(format!(
                            "[cluster.failures.{name}]: expected one of {}",
                            CLASSES
                                .iter()
                                .map(|c| c.name())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })?;
                    let r = rates.get_mut(&class).expect("every class has a rate");
                    if let Some(p) = o.per_hour {
                        if !(p.is_finite() && p >= 0.0) {
                            return Err(err(format!(
                                "[cluster.failures.{name}] per_hour = {p}: expected zero or more"
                            )));
                        }
                        r.per_hour = p;
                    }
                    if let Some(t) = &o.repair {
                        r.repair_hours = seconds(t)
                            .map_err(|w| err(format!("[cluster.failures.{name}] repair = {w}")))?
                            / 3600.0;
                    }
                }
            }
        }
        let mut outages = Vec::new();
        for (i, o) in c.outage.iter().enumerate() {
            let key = format!("[[cluster.outage]] {}:", i + 1);
            if o.hosts.is_empty() == o.rack.is_none() {
                return Err(err(format!("{key} give one of hosts and rack")));
            }
            if !(o.hours.is_finite() && o.hours > 0.0) {
                return Err(err(format!(
                    "{key} hours = {}: expected more than 0",
                    o.hours
                )));
            }
            let class = match &o.class {
                None => Class::Host,
                Some(name) => Class::parse(name).ok_or_else(|| {
                    err(format!(
                        "{key} class = \"{name}\": expected one of {}",
                        CLASSES
                            .iter()
                            .map(|c| c.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?,
            };
            outages.push(Outage {
                at: seconds(&o.at).map_err(|w| err(format!("{key} at = {w}")))?,
                hosts: o.hosts.clone(),
                rack: o.rack.clone(),
                duration: o.hours * 3600.0,
                planned: o.planned,
                class,
            });
        }
        Ok(Plan {
            scenario,
            duration: c.days * 86_400.0,
            seed: c.seed,
            scheduler: c.scheduler,
            spares: c.spares,
            exact_group_gpus: c.exact_group_gpus,
            checkpoint,
            checkpoint_write: at("checkpoint_write", seconds(&c.checkpoint_write))?,
            restart: at("restart", seconds(&c.restart))?,
            sample_every,
            arrivals,
            synthetic,
            rates,
            outages,
        })
    }
}
