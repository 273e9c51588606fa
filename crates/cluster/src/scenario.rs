//! Scenario files (TOML, `docs/scenarios.md`): a fabric, its routing, jobs (a workload, GPUs,
//! a placement, collective settings) and outputs. Unknown keys are errors; every error names
//! the file and the key (TOML syntax errors give line and column).

use std::path::{Path, PathBuf};

use fabricsim_collectives::{Algorithm, Fidelity, Protocol, QpMode};
use fabricsim_routing::PathSelection;
use fabricsim_routing::{HashConfig, NicPorts, Policy};
use fabricsim_te::Routing;
use fabricsim_topology::{FabricSource, Nanos};
use fabricsim_workload::llm::{DpMode, ModelSpec, Parallelism, RankOrder, Recompute, Training};
use fabricsim_workload::{Efficiency, GpuSpec};
use serde::Deserialize;

use crate::control::{LinkEvent, TeConfig};
use crate::job::CommConfig;
use crate::layout::RankLayout;
use crate::overrides::Override;
use crate::placement::Placement;

/// The built-in default scenario (`fabricsim run` with no file).
pub const DEFAULT: &str = include_str!("../../../scenarios/default.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    fabric: FabricToml,
    #[serde(default)]
    routing: RoutingToml,
    #[serde(default, rename = "job")]
    jobs: Vec<JobToml>,
    #[serde(default, rename = "event")]
    events: Vec<EventToml>,
    #[serde(default)]
    output: OutputToml,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FabricToml {
    preset: Option<String>,
    file: Option<PathBuf>,
    #[serde(default)]
    set: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoutingToml {
    policy: Option<String>,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    polarized: bool,
    /// The switches' hash function(s), as `--hash` takes them.
    hash: Option<String>,
    /// The header fields they hash, as `--hash-fields` takes them.
    hash_fields: Option<String>,
    /// How multi-port NICs put connections on their ports, as `--nic-ports` takes it.
    nic_ports: Option<String>,
    te_period: Option<String>,
    te_detection: Option<String>,
    /// How hosts put messages on paths, as `bench --path-selection` takes it.
    path_selection: Option<String>,
}

/// A link event (`[[event]]`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventToml {
    at: String,
    target: String,
    state: String,
    gbps: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobToml {
    name: String,
    #[serde(default = "packed")]
    placement: String,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    hosts: Vec<String>,
    #[serde(default = "h100")]
    gpu: String,
    llm: Option<LlmToml>,
    chakra: Option<ChakraToml>,
    #[serde(default)]
    collectives: CollectivesToml,
    #[serde(default)]
    efficiency: EfficiencyToml,
}

/// Overrides of the compute model's efficiencies (what `tools/calibrate/fit.py` fits).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EfficiencyToml {
    gemm: Option<f64>,
    attention: Option<f64>,
    attention_bwd: Option<f64>,
    attention_blocks: Option<f64>,
    attention_bwd_blocks: Option<f64>,
    memory: Option<f64>,
    launch_us: Option<f64>,
}

fn packed() -> String {
    "packed".into()
}

fn h100() -> String {
    "H100".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LlmToml {
    model: String,
    layers: Option<u32>,
    d_model: Option<u32>,
    ffn: Option<u32>,
    heads: Option<u32>,
    kv_heads: Option<u32>,
    vocab: Option<u32>,
    experts: Option<u32>,
    top_k: Option<u32>,
    #[serde(default = "one")]
    tp: u32,
    #[serde(default)]
    sp: bool,
    #[serde(default = "one")]
    cp: u32,
    #[serde(default = "one")]
    pp: u32,
    #[serde(default = "one")]
    vpp: u32,
    #[serde(default = "one")]
    dp: u32,
    #[serde(default = "fsdp")]
    dp_mode: String,
    #[serde(default = "one")]
    ep: u32,
    /// Rank layering, innermost first (`tp-cp-pp-dp`, Megatron's `tp-cp-ep-dp-pp`, ...).
    order: Option<String>,
    seq: u32,
    #[serde(default = "one")]
    micro_batch: u32,
    global_batch: u32,
    #[serde(default = "none")]
    recompute: String,
    #[serde(default = "four")]
    grad_bytes: u32,
}

fn one() -> u32 {
    1
}

fn four() -> u32 {
    4
}

fn fsdp() -> String {
    "fsdp".into()
}

fn none() -> String {
    "none".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChakraToml {
    prefix: PathBuf,
    groups: Option<PathBuf>,
    #[serde(default)]
    strict: bool,
    ranks: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CollectivesToml {
    algorithm: Option<String>,
    protocol: Option<String>,
    channels: Option<u32>,
    qps: Option<u32>,
    qp_mode: Option<String>,
    fidelity: Option<String>,
    host_closed_form: Option<bool>,
    seed: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputToml {
    json: Option<PathBuf>,
    trace: Option<PathBuf>,
    trace_ranks: Option<u32>,
}

/// Where a job's workload comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadSource {
    Llm(Box<Training>),
    Chakra {
        prefix: PathBuf,
        groups: Option<PathBuf>,
        /// Whether the import's warnings (ranks that disagree, repaired dependencies) are
        /// errors.
        strict: bool,
        /// How the trace's ranks go onto the job's GPUs.
        ranks: RankLayout,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct JobEntry {
    pub name: String,
    pub placement: Placement,
    pub gpu: GpuSpec,
    /// The compute model's efficiencies: the calibrated defaults, or the job's overrides.
    pub efficiency: Efficiency,
    pub workload: WorkloadSource,
    pub comm: CommConfig,
}

/// A checked scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub fabric: FabricSource,
    pub routing: Routing,
    pub hash: HashConfig,
    /// The TE controller's period and detection delay (used with routing `te`).
    pub te_period: Nanos,
    pub te_detection: Nanos,
    /// How hosts put collectives' messages on paths (`[routing] path_selection`).
    pub path_selection: PathSelection,
    pub jobs: Vec<JobEntry>,
    pub events: Vec<LinkEvent>,
    pub json: Option<PathBuf>,
    pub trace: Option<PathBuf>,
    pub trace_ranks: u32,
}

#[derive(Debug, thiserror::Error)]
#[error("{file}: {what}")]
pub struct ScenarioError {
    pub file: String,
    pub what: String,
}

fn pick<T: Copy>(
    key: &str,
    value: &str,
    all: &[T],
    name: fn(T) -> &'static str,
) -> Result<T, String> {
    all.iter()
        .copied()
        .find(|&x| name(x) == value)
        .ok_or_else(|| {
            format!(
                "{key} = \"{value}\": expected one of {}",
                all.iter().map(|&x| name(x)).collect::<Vec<_>>().join(", ")
            )
        })
}

impl Scenario {
    /// Parses `text` (the file `file`, whose directory relative paths are taken from).
    pub fn parse(text: &str, file: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::parse_with(text, file, &[])
    }

    /// Parses `text` with some of its keys overridden ([`Override`]).
    pub fn parse_with(
        text: &str,
        file: &Path,
        overrides: &[Override],
    ) -> Result<Scenario, ScenarioError> {
        let err = |what: String| ScenarioError {
            file: file.display().to_string(),
            what,
        };
        let toml_err = |e: &dyn std::fmt::Display| err(e.to_string().trim_end().to_string());
        let raw: File = if overrides.is_empty() {
            toml::from_str(text).map_err(|e| toml_err(&e))?
        } else {
            let mut table: toml::Table = text.parse().map_err(|e| toml_err(&e))?;
            for o in overrides {
                o.apply(&mut table).map_err(err)?;
            }
            toml::Value::Table(table)
                .try_into()
                .map_err(|e| err(format!("with --set: {}", e.to_string().trim_end())))?
        };
        let base = file.parent().unwrap_or(Path::new("."));
        let resolve = |p: &Path| {
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                base.join(p)
            }
        };
        let fabric = match (&raw.fabric.file, &raw.fabric.preset) {
            (Some(_), Some(_)) => {
                return Err(err("[fabric]: give `preset` or `file`, not both".into()))
            }
            (Some(f), None) => FabricSource::File(resolve(f)),
            (None, p) => FabricSource::from_args(p.as_deref(), None, &raw.fabric.set)
                .map_err(|e| err(format!("[fabric] set: {e}")))?,
        };
        let routing = match &raw.routing.policy {
            None => Routing::Hashed(Policy::Ecmp),
            Some(p) => Routing::parse(p).ok_or_else(|| {
                err(format!(
                    "[routing] policy = \"{p}\": expected {}",
                    Routing::expected()
                ))
            })?,
        };
        let duration = |key: &str, v: &Option<String>, default: Nanos| match v {
            None => Ok(default),
            Some(_) if !matches!(routing, Routing::Te(_)) => Err(err(format!(
                "[routing] {key}: only routing `te` has a controller"
            ))),
            Some(v) => v
                .parse::<Nanos>()
                .map_err(|e| err(format!("[routing] {key} = \"{v}\": {e}"))),
        };
        let te_period = duration(
            "te_period",
            &raw.routing.te_period,
            TeConfig::DEFAULT_PERIOD,
        )?;
        if te_period.0 == 0 {
            return Err(err("[routing] te_period: must be above zero".into()));
        }
        let te_detection = duration(
            "te_detection",
            &raw.routing.te_detection,
            TeConfig::DEFAULT_DETECTION,
        )?;
        let mut events = Vec::new();
        for (i, e) in raw.events.iter().enumerate() {
            let at = |what: String| err(format!("event {}: {what}", i + 1));
            events.push(LinkEvent {
                at: e
                    .at
                    .parse()
                    .map_err(|x| at(format!("at = \"{}\": {x}", e.at)))?,
                target: e.target.clone(),
                state: e.state.clone(),
                gbps: e.gbps,
            });
        }
        if raw.jobs.is_empty() {
            return Err(err("no [[job]]: a scenario runs at least one job".into()));
        }
        let mut jobs = Vec::new();
        for (i, j) in raw.jobs.iter().enumerate() {
            let at = |what: String| err(format!("job {} (`{}`): {what}", i + 1, j.name));
            if jobs.iter().any(|x: &JobEntry| x.name == j.name) {
                return Err(at("a second job with this name".into()));
            }
            let gpu = GpuSpec::named(&j.gpu).ok_or_else(|| {
                at(format!(
                    "gpu = \"{}\": expected one of {}",
                    j.gpu,
                    GpuSpec::names().join(", ")
                ))
            })?;
            let placement = match j.placement.as_str() {
                "packed" => Placement::Packed,
                "random" => Placement::Random { seed: j.seed },
                "hosts" if !j.hosts.is_empty() => Placement::Hosts(j.hosts.clone()),
                "hosts" => return Err(at("placement = \"hosts\" needs a `hosts` list".into())),
                p => {
                    return Err(at(format!(
                        "placement = \"{p}\": expected packed, random or hosts"
                    )))
                }
            };
            let workload = match (&j.llm, &j.chakra) {
                (Some(l), None) => {
                    WorkloadSource::Llm(Box::new(llm(l, gpu).map_err(|w| at(format!("llm.{w}")))?))
                }
                (None, Some(c)) => WorkloadSource::Chakra {
                    prefix: resolve(&c.prefix),
                    groups: c.groups.as_deref().map(resolve),
                    strict: c.strict,
                    ranks: match c.ranks.as_deref() {
                        None => RankLayout::Trace,
                        Some(r) => RankLayout::parse(r).ok_or_else(|| {
                            at(format!(
                                "chakra.ranks = \"{r}\": expected trace or communicators"
                            ))
                        })?,
                    },
                },
                _ => return Err(at("give exactly one of [job.llm] and [job.chakra]".into())),
            };
            let comm = collectives(&j.collectives).map_err(|w| at(format!("collectives.{w}")))?;
            let efficiency =
                efficiency(&j.efficiency).map_err(|w| at(format!("efficiency.{w}")))?;
            jobs.push(JobEntry {
                name: j.name.clone(),
                placement,
                gpu,
                efficiency,
                workload,
                comm,
            });
        }
        Ok(Scenario {
            fabric,
            routing,
            hash: HashConfig {
                seed: raw.routing.seed,
                polarized: raw.routing.polarized,
                functions: match &raw.routing.hash {
                    Some(h) => HashConfig::parse_functions(h)
                        .map_err(|what| err(format!("[routing] hash = {what}")))?,
                    None => [None; 3],
                },
                fields: match &raw.routing.hash_fields {
                    Some(f) => HashConfig::parse_fields(f)
                        .map_err(|what| err(format!("[routing] hash_fields = {what}")))?,
                    None => [None; 3],
                },
                nic_ports: match &raw.routing.nic_ports {
                    Some(m) => NicPorts::parse(m).ok_or_else(|| {
                        err(format!(
                            "[routing] nic_ports = \"{m}\": expected one of {}",
                            NicPorts::NAMES.join(", ")
                        ))
                    })?,
                    None => NicPorts::Hash,
                },
            },
            te_period,
            te_detection,
            path_selection: match &raw.routing.path_selection {
                None => PathSelection::Hashed,
                Some(m) => PathSelection::parse(m).ok_or_else(|| {
                    err(format!(
                        "[routing] path_selection = \"{m}\": expected {}",
                        PathSelection::EXPECTED
                    ))
                })?,
            },
            jobs,
            events,
            json: raw.output.json.as_deref().map(resolve),
            trace: raw.output.trace.as_deref().map(resolve),
            trace_ranks: raw.output.trace_ranks.unwrap_or(16),
        })
    }

    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(path, &[])
    }

    /// Reads the scenario file `path` with some of its keys overridden ([`Override`]).
    pub fn load_with(path: &Path, overrides: &[Override]) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: path.display().to_string(),
            what: e.to_string(),
        })?;
        Scenario::parse_with(&text, path, overrides)
    }
}

fn llm(l: &LlmToml, gpu: GpuSpec) -> Result<Training, String> {
    let mut model = ModelSpec::named(&l.model).ok_or_else(|| {
        format!(
            "model = \"{}\": expected one of {}",
            l.model,
            ModelSpec::presets()
                .iter()
                .map(|m| m.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })?;
    for (v, field) in [
        (l.layers, &mut model.layers),
        (l.d_model, &mut model.d_model),
        (l.ffn, &mut model.ffn),
        (l.heads, &mut model.heads),
        (l.kv_heads, &mut model.kv_heads),
        (l.vocab, &mut model.vocab),
        (l.experts, &mut model.experts),
        (l.top_k, &mut model.top_k),
    ] {
        if let Some(v) = v {
            *field = v;
        }
    }
    let dp_mode = match l.dp_mode.as_str() {
        "ddp" => DpMode::Ddp,
        "fsdp" => DpMode::Fsdp,
        m => return Err(format!("dp_mode = \"{m}\": expected ddp or fsdp")),
    };
    let recompute = match l.recompute.as_str() {
        "none" => Recompute::None,
        "selective" => Recompute::Selective,
        "full" => Recompute::Full,
        m => {
            return Err(format!(
                "recompute = \"{m}\": expected none, selective or full"
            ))
        }
    };
    let order = match &l.order {
        Some(o) => RankOrder::parse(o)?,
        None => RankOrder::default(),
    };
    let t = Training {
        model,
        parallel: Parallelism {
            tp: l.tp,
            sp: l.sp,
            cp: l.cp,
            pp: l.pp,
            vpp: l.vpp,
            dp: l.dp,
            dp_mode,
            ep: l.ep,
            order,
        },
        seq: l.seq,
        micro_batch: l.micro_batch,
        global_batch: l.global_batch,
        recompute,
        grad_bytes: l.grad_bytes,
        gpu,
    };
    t.check().map_err(|e| e.to_string())?;
    Ok(t)
}

fn efficiency(e: &EfficiencyToml) -> Result<Efficiency, String> {
    let mut out = Efficiency::default();
    let fractions = [
        ("gemm", e.gemm, &mut out.gemm),
        ("attention", e.attention, &mut out.attention),
        ("attention_bwd", e.attention_bwd, &mut out.attention_bwd),
        ("memory", e.memory, &mut out.memory),
    ];
    for (name, given, field) in fractions {
        if let Some(x) = given {
            if !(x > 0.0 && x <= 1.0) {
                return Err(format!(
                    "{name} = {x}: expected a fraction of peak in (0, 1]"
                ));
            }
            *field = x;
        }
    }
    let blocks = [
        (
            "attention_blocks",
            e.attention_blocks,
            &mut out.attention_blocks,
        ),
        (
            "attention_bwd_blocks",
            e.attention_bwd_blocks,
            &mut out.attention_bwd_blocks,
        ),
    ];
    for (name, given, field) in blocks {
        if let Some(x) = given {
            if !(x.is_finite() && x >= 0.0) {
                return Err(format!(
                    "{name} = {x}: expected a number of blocks, 0 or more"
                ));
            }
            *field = x;
        }
    }
    if let Some(us) = e.launch_us {
        if !(us.is_finite() && (0.0..=1e6).contains(&us)) {
            return Err(format!("launch_us = {us}: expected 0 to 1,000,000 µs"));
        }
        out.launch_ns = (us * 1e3).round() as u64;
    }
    Ok(out)
}

fn collectives(c: &CollectivesToml) -> Result<CommConfig, String> {
    let mut out = CommConfig::default();
    if let Some(a) = c.algorithm.as_deref().filter(|a| *a != "auto") {
        out.algorithm = Some(pick("algorithm", a, &Algorithm::ALL, Algorithm::name)?);
    }
    if let Some(p) = c.protocol.as_deref().filter(|p| *p != "auto") {
        out.protocol = Some(pick("protocol", p, &Protocol::ALL, Protocol::name)?);
    }
    if let Some(ch) = c.channels {
        if ch == 0 || ch > 64 {
            return Err(format!("channels = {ch}: expected 1 to 64"));
        }
        out.channels = ch;
    }
    if let Some(q) = c.qps {
        if q == 0 || q > fabricsim_routing::MAX_QPS {
            return Err(format!(
                "qps = {q}: expected 1 to {}",
                fabricsim_routing::MAX_QPS
            ));
        }
        out.qps = q;
    }
    if let Some(m) = &c.qp_mode {
        out.qp_mode = pick("qp_mode", m, &QpMode::ALL, QpMode::name)?;
    }
    if let Some(f) = &c.fidelity {
        out.fidelity = pick(
            "fidelity",
            f,
            &[Fidelity::Step, Fidelity::Pipelined],
            Fidelity::name,
        )?;
    }
    if let Some(h) = c.host_closed_form {
        out.host_closed_form = h;
    }
    if let Some(s) = c.seed {
        out.seed = s;
    }
    Ok(out)
}
