//! The validation table: published measurements of real hardware next to what fabricsim gives
//! for the same setting, generated into `docs/validation.md` by `fabricsim validate`.
//!
//! A measurement file (`validation/*.toml`) lists `[[measurement]]`s: where the figure was
//! published, what was measured, the published value, the tolerance and why, the model inputs
//! the row depends on, and how fabricsim reproduces the setting — a `[measurement.bench]`
//! (one size of a collective, as `fabricsim bench` runs it) or a `[measurement.run]` (a
//! scenario, as `fabricsim run` runs it). Every fabricsim figure is an output of the model:
//! nothing in a measurement file reaches the simulation but the setting.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use fabricsim_collectives::bench::{run_size, Bench, Routing};
use fabricsim_collectives::placement::{place, Placement};
use fabricsim_collectives::{Algorithm, Collective, Generation, Protocol, Ranks};
use fabricsim_topology::{presets, Bytes};
use serde::Deserialize;

use crate::orchestrator::RunOptions;
use crate::scenario::Scenario;
use crate::simulate::simulate;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    measurement: Vec<Measurement>,
}

/// A published value: a number, or a choice (an algorithm/protocol pair such as `nvls/Simple`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Value {
    Number(f64),
    Choice(String),
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measurement {
    /// Short name of the source (`NVIDIA/nccl#1455`, `Llama 3 paper, Table 4`).
    pub source: String,
    pub url: String,
    pub what: String,
    pub published: Value,
    pub unit: String,
    /// Relative tolerance of a number.
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// Why the tolerance, and where the row is outside it, the modelling reason.
    pub why: String,
    /// The model inputs the row depends on.
    pub inputs: String,
    #[serde(default)]
    pub bench: Option<BenchSpec>,
    #[serde(default)]
    pub run: Option<RunSpec>,
}

/// One size of a collective, as `fabricsim bench` runs it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchSpec {
    pub preset: String,
    #[serde(default)]
    pub set: BTreeMap<String, String>,
    pub gpus: usize,
    #[serde(default = "contiguous")]
    pub placement: String,
    pub collective: String,
    #[serde(default)]
    pub algo: Option<String>,
    #[serde(default)]
    pub proto: Option<String>,
    /// With units: `4GiB`.
    pub size: String,
    #[serde(default = "h100")]
    pub gpu: String,
    /// `busbw`, `algbw` (GB/s), `time` (µs), `per-nic` (Gb/s: algbw over the NICs the ranks
    /// use, for point-to-point rows), or `choice` (the tuner's algorithm/protocol).
    pub metric: String,
}

/// A scenario, as `fabricsim run` runs it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// Relative to the measurement file.
    pub scenario: PathBuf,
    /// `model-tflops` (per GPU), `mfu` (%), `hfu` (%: hardware FLOPs over peak),
    /// `tokens-per-s`, `iteration-ms`.
    pub metric: String,
}

fn contiguous() -> String {
    "contiguous".into()
}

fn h100() -> String {
    "H100".into()
}

#[derive(Debug, thiserror::Error)]
#[error("{file}: measurement {index} ({what}): {message}")]
pub struct ValidationError {
    pub file: String,
    pub index: usize,
    pub what: String,
    pub message: String,
}

/// One row of the table.
#[derive(Clone, Debug)]
pub struct Row {
    pub m: Measurement,
    /// fabricsim's value.
    pub value: Value,
    /// Relative error of a number, signed (fabricsim over published, minus one).
    pub error: Option<f64>,
    pub within: bool,
}

/// Every measurement of the `*.toml` files in `dir` (in file-name order), evaluated; `progress`
/// is called after each.
pub fn validate(
    dir: &Path,
    progress: crate::whatif::Progress<'_>,
) -> Result<Vec<Row>, ValidationError> {
    let top = |message: String| ValidationError {
        file: dir.display().to_string(),
        index: 0,
        what: "-".into(),
        message,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| top(e.to_string()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(top("no measurement files (*.toml)".into()));
    }
    let mut rows = Vec::new();
    for path in files {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|e| ValidationError {
            file: name.clone(),
            index: 0,
            what: "-".into(),
            message: e.to_string(),
        })?;
        let file: File = toml::from_str(&text).map_err(|e| ValidationError {
            file: name.clone(),
            index: 0,
            what: "-".into(),
            message: e.to_string(),
        })?;
        for (i, m) in file.measurement.into_iter().enumerate() {
            let fail = |message: String| ValidationError {
                file: name.clone(),
                index: i + 1,
                what: m.what.clone(),
                message,
            };
            let value = match (&m.bench, &m.run) {
                (Some(b), None) => bench_value(b).map_err(fail)?,
                (None, Some(r)) => {
                    let base = path.parent().unwrap_or(Path::new("."));
                    run_value(r, base).map_err(fail)?
                }
                _ => {
                    return Err(fail(
                        "needs one of [measurement.bench] or [measurement.run]".into(),
                    ))
                }
            };
            progress();
            rows.push(Row::new(m, value).map_err(|e| ValidationError {
                file: name.clone(),
                index: i + 1,
                what: e.0,
                message: e.1,
            })?);
        }
    }
    Ok(rows)
}

impl Row {
    fn new(m: Measurement, value: Value) -> Result<Row, (String, String)> {
        let (error, within) = match (&m.published, &value) {
            (Value::Number(p), Value::Number(v)) => {
                let Some(tol) = m.tolerance else {
                    return Err((m.what.clone(), "a number needs a tolerance".into()));
                };
                let e = v / p - 1.0;
                (Some(e), e.abs() <= tol)
            }
            (Value::Choice(p), Value::Choice(v)) => (None, p == v),
            _ => {
                return Err((
                    m.what.clone(),
                    "the published value and the metric are not of one kind".into(),
                ))
            }
        };
        Ok(Row {
            m,
            value,
            error,
            within,
        })
    }
}

fn bench_value(b: &BenchSpec) -> Result<Value, String> {
    let overrides: Vec<(String, String)> =
        b.set.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let topo = presets::build(&b.preset, &overrides).map_err(|e| e.to_string())?;
    let placement = Placement::parse(&b.placement, 0).ok_or_else(|| {
        format!(
            "placement `{}`: contiguous, random, fragmented or per-host",
            b.placement
        )
    })?;
    let gpus = place(&topo, b.gpus, placement).map_err(|e| e.to_string())?;
    let ranks = Ranks::new(&topo, gpus).map_err(|e| e.to_string())?;
    let op = Collective::parse(&b.collective)
        .ok_or_else(|| format!("collective `{}` is not known", b.collective))?;
    let mut bench = Bench::new(op);
    bench.algorithm = match &b.algo {
        Some(a) => Some(Algorithm::parse(a).ok_or_else(|| format!("algo `{a}` is not known"))?),
        None => None,
    };
    bench.protocol = match &b.proto {
        Some(p) => Some(Protocol::parse(p).ok_or_else(|| format!("proto `{p}` is not known"))?),
        None => None,
    };
    bench.transport.gpu =
        Generation::parse(&b.gpu).ok_or_else(|| format!("gpu `{}` is not known", b.gpu))?;
    bench.routing = Routing::Hashed(fabricsim_routing::Policy::Ecmp);
    let size: Bytes = b.size.parse().map_err(|e| format!("size: {e}"))?;
    let row = run_size(&topo, &ranks, &bench, size.0).map_err(|e| e.to_string())?;
    Ok(match b.metric.as_str() {
        "busbw" => Value::Number(row.busbw_gbps),
        "algbw" => Value::Number(row.algbw_gbps),
        "time" => Value::Number(row.time_us),
        "per-nic" => Value::Number(row.algbw_gbps * 8.0),
        "choice" => Value::Choice(format!("{}/{}", row.algorithm, row.protocol)),
        other => {
            return Err(format!(
                "metric `{other}`: busbw, algbw, time, per-nic or choice"
            ))
        }
    })
}

fn run_value(r: &RunSpec, base: &Path) -> Result<Value, String> {
    let path = base.join(&r.scenario);
    let scenario = Scenario::load(&path).map_err(|e| e.to_string())?;
    let topo = scenario.fabric.load().map_err(|e| e.to_string())?;
    let run = simulate(&scenario, &topo, RunOptions::default(), |_, _, _| {})
        .map_err(|e| e.to_string())?;
    let job = run.reports.first().ok_or("the scenario has no job")?;
    Ok(Value::Number(match r.metric.as_str() {
        "model-tflops" => job.model_tflops_per_gpu,
        "mfu" => job.mfu * 100.0,
        "hfu" if job.model_tflops_per_gpu > 0.0 => {
            job.hardware_tflops_per_gpu * job.mfu / job.model_tflops_per_gpu * 100.0
        }
        "tokens-per-s" => job.tokens_per_s,
        "iteration-ms" => job.iteration_ms,
        other => {
            return Err(format!(
                "metric `{other}`: model-tflops, mfu, hfu, tokens-per-s or iteration-ms"
            ))
        }
    }))
}

fn show(v: &Value, unit: &str) -> String {
    let value = match v {
        Value::Number(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Value::Number(x) => format!("{x:.1}"),
        Value::Choice(c) => c.clone(),
    };
    if unit.is_empty() {
        value
    } else {
        format!("{value} {unit}")
    }
}

/// The table as `docs/validation.md` shows it; `command` is how it was generated.
pub fn render(rows: &[Row], command: &str) -> String {
    let sources: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r.m.source.as_str()).collect();
    let within = rows.iter().filter(|r| r.within).count();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Validation: fabricsim against published measurements\n\n\
         Generated by `{command}` from the measurement files in\n\
         `validation/`; do not edit it by hand: a test regenerates it and fails when the two\n\
         differ. Every fabricsim figure is an output of the model for the published setting (the\n\
         *inputs* column names the model's constants the row depends on, each cited in the code\n\
         next to it, and in docs/hardware.md); no published value is an input. A row outside its\n\
         tolerance stays, marked ✗, with the modelling reason.\n\n\
         {} rows from {} source{}; {within} within tolerance, {} outside.\n",
        rows.len(),
        sources.len(),
        if sources.len() == 1 { "" } else { "s" },
        rows.len() - within
    );
    out += "| # | source | what was measured | published | fabricsim | error | tolerance | | inputs |\n";
    out += "|---|---|---|---|---|---|---|---|---|\n";
    for (i, r) in rows.iter().enumerate() {
        let error = r
            .error
            .map_or_else(|| "-".to_string(), |e| format!("{:+.1} %", e * 100.0));
        let tolerance =
            r.m.tolerance
                .map_or_else(|| "same".to_string(), |t| format!("±{:.0} %", t * 100.0));
        let _ = writeln!(
            out,
            "| {} | [{}]({}) | {} | {} | {} | {error} | {tolerance} | {} | {} |",
            i + 1,
            r.m.source,
            r.m.url,
            r.m.what,
            show(&r.m.published, &r.m.unit),
            show(&r.value, &r.m.unit),
            if r.within { "✓" } else { "✗" },
            r.m.inputs
        );
    }
    out += "\n## Why each tolerance, and what is off\n\n";
    for (i, r) in rows.iter().enumerate() {
        let _ = writeln!(out, "{}. {}", i + 1, r.m.why);
    }
    out
}
