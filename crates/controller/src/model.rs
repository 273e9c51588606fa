//! The documents clients send (a fabric, a link event, a demand set, a job), and their
//! resolution against the fabric. Resolution is where a document is checked: an error names the
//! field and what was expected, and nothing is changed until a document resolves whole.

use std::collections::BTreeMap;

use fabricsim_collectives::bench::{traffic, Bench};
use fabricsim_collectives::{Algorithm, Collective, Ranks};
use fabricsim_routing::{cables_named, event_condition, LinkCondition};
use fabricsim_te::TrafficMatrix;
use fabricsim_topology::format::read_json;
use fabricsim_topology::presets;
use fabricsim_topology::{LinkId, NodeId, NodeKind, Topology};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Most demands one set may hold, and most GPUs one job may place.
pub const MAX_ROWS: usize = 1 << 20;

/// The largest rate a document may give, bytes/s ([`fabricsim_topology::units::MAX_QUANTITY`]).
const MAX_RATE: f64 = fabricsim_topology::units::MAX_QUANTITY as f64;

/// A demand row resolved: source GPU, destination GPU, rate in bytes/s.
pub type Row = (NodeId, NodeId, f64);

/// `POST /topology`: a preset with settings, or a whole topology in fabricsim's JSON format;
/// not both.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FabricSpec {
    /// A preset, as `fabricsim topo list` names them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = "meta-ai-zone")]
    pub preset: Option<String>,
    /// Preset parameters, as `fabricsim topo list` names them; values are strings or numbers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(example = json!({"racks": 8, "uplinks": "1:1"}))]
    pub set: BTreeMap<String, serde_json::Value>,
    /// A topology in fabricsim's JSON format (docs/formats/topology-json.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub topology: Option<serde_json::Value>,
}

impl FabricSpec {
    pub fn build(&self) -> Result<Topology, String> {
        match (&self.preset, &self.topology) {
            (Some(_), Some(_)) => Err("give `preset` or `topology`, not both".into()),
            (None, None) => Err("give `preset` (with optional `set`) or `topology`".into()),
            (None, Some(_)) if !self.set.is_empty() => {
                Err("`set` applies to a preset, not to a `topology` document".into())
            }
            (None, Some(doc)) => read_json(&doc.to_string()).map_err(|e| format!("topology: {e}")),
            (Some(name), None) => {
                let overrides = self
                    .set
                    .iter()
                    .map(|(k, v)| match v {
                        serde_json::Value::String(s) => Ok((k.clone(), s.clone())),
                        serde_json::Value::Number(n) => Ok((k.clone(), n.to_string())),
                        _ => Err(format!("set.{k}: expected a string or a number")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                presets::build(name, &overrides).map_err(|e| e.to_string())
            }
        }
    }
}

/// What a link event does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    Down,
    Up,
    Derate,
}

impl EventKind {
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Down => "down",
            EventKind::Up => "up",
            EventKind::Derate => "derate",
        }
    }
}

/// `POST /events`: a switch, a NIC or a cable (`A--B`) goes down, comes back up, or runs at a
/// reduced capacity. Events apply in the order the controller acknowledged them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkEvent {
    /// A switch or NIC (all its cables), or one cable `A--B`.
    #[schema(example = "zone0/rack0/rtsw--zone0/ctsw3")]
    pub target: String,
    pub state: EventKind,
    /// `derate` only: each affected link's capacity, Gbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gbps: Option<f64>,
}

impl LinkEvent {
    /// The directed links the event touches and the condition they take.
    pub fn resolve(&self, topo: &Topology) -> Result<(Vec<LinkId>, LinkCondition), String> {
        let links = cables_named(topo, &self.target).map_err(|e| format!("target: {e}"))?;
        let condition = event_condition(topo, &links, self.state.name(), self.gbps)?;
        let mut both: Vec<LinkId> = links.iter().flat_map(|&l| [l, l.reverse()]).collect();
        both.sort();
        both.dedup();
        Ok((both, condition))
    }
}

/// One demand of a set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DemandSpec {
    /// Source GPU.
    #[schema(example = "host0/gpu0")]
    pub src: String,
    /// Destination GPU.
    #[schema(example = "host2/gpu0")]
    pub dst: String,
    /// Rate in Gbit/s; at most 2^62 bytes per second.
    #[schema(exclusive_minimum = 0.0, maximum = 36893488147.419106)]
    pub gbps: f64,
}

/// `PUT /demands/{id}`: explicit GPU-to-GPU rates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DemandSet {
    /// The demands, 1 to 2^20 of them.
    #[schema(min_items = 1, max_items = 1048576)]
    pub demands: Vec<DemandSpec>,
}

impl DemandSet {
    pub fn resolve(&self, topo: &Topology) -> Result<Vec<Row>, String> {
        if self.demands.is_empty() || self.demands.len() > MAX_ROWS {
            return Err(format!("demands: expected 1 to {MAX_ROWS} demands"));
        }
        self.demands
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let src = gpu(topo, &d.src).map_err(|e| format!("demands[{i}].src: {e}"))?;
                let dst = gpu(topo, &d.dst).map_err(|e| format!("demands[{i}].dst: {e}"))?;
                if src == dst {
                    return Err(format!(
                        "demands[{i}]: source and destination are the same GPU"
                    ));
                }
                // At most 2^62 bytes per second (37 Ebit/s), as every rate fabricsim reads.
                if !(d.gbps.is_finite() && d.gbps > 0.0 && d.gbps * 1e9 / 8.0 <= MAX_RATE) {
                    return Err(format!(
                        "demands[{i}].gbps: expected a rate above zero and at most {} Gbit/s",
                        MAX_RATE * 8.0 / 1e9
                    ));
                }
                Ok((src, dst, d.gbps * 1e9 / 8.0))
            })
            .collect()
    }
}

fn default_collective() -> String {
    "all-reduce".into()
}
fn default_bytes() -> u64 {
    1 << 30
}
fn default_channels() -> u32 {
    16
}

/// `PUT /jobs/{id}`: a job's placement (its ranks' GPUs, rank order) and the collective whose
/// traffic it puts on the fabric, as `fabricsim bench` would run it. Its demand is that
/// collective's traffic between hosts, scaled so its busiest GPU sends at line rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Job)]
pub struct JobSpec {
    /// The ranks' GPUs, in rank order.
    #[schema(min_items = 2, max_items = 1048576)]
    pub gpus: Vec<String>,
    /// The collective, as `fabricsim bench --collective` names it.
    #[serde(default = "default_collective")]
    #[schema(default = "all-reduce")]
    pub collective: String,
    /// Message size in bytes (it only steers the algorithm the tuner picks).
    #[serde(default = "default_bytes")]
    #[schema(default = 1073741824)]
    pub bytes: u64,
    /// Algorithm (ring, tree, …); NCCL's tuner picks when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algo: Option<String>,
    /// Channels, as NCCL's.
    #[serde(default = "default_channels")]
    #[schema(default = 16, minimum = 1, maximum = 64)]
    pub channels: u32,
}

impl JobSpec {
    pub fn resolve(&self, topo: &Topology) -> Result<Vec<Row>, String> {
        if self.gpus.len() < 2 || self.gpus.len() > MAX_ROWS {
            return Err(format!("gpus: expected 2 to {MAX_ROWS} GPUs"));
        }
        let gpus = self
            .gpus
            .iter()
            .enumerate()
            .map(|(i, g)| gpu(topo, g).map_err(|e| format!("gpus[{i}]: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let op = Collective::parse(&self.collective).ok_or_else(|| {
            let names: Vec<&str> = Collective::ALL.iter().map(|c| c.name()).collect();
            format!("collective: expected one of {}", names.join(", "))
        })?;
        let mut bench = Bench::new(op);
        if let Some(a) = &self.algo {
            let algo = Algorithm::parse(a)
                .filter(|x| x.supports(op))
                .ok_or_else(|| format!("algo: `{a}` does not implement {}", op.name()))?;
            bench.algorithm = Some(algo);
        }
        if self.channels == 0 || self.channels > 64 {
            return Err("channels: expected 1 to 64".into());
        }
        bench.channels = self.channels;
        let ranks = Ranks::new(topo, gpus).map_err(|e| format!("gpus: {e}"))?;
        let bytes = traffic(topo, &ranks, &bench, self.bytes).map_err(|e| e.to_string())?;
        Ok(TrafficMatrix::from_bytes(topo, bytes)
            .demands
            .into_iter()
            .map(|d| (d.src, d.dst, d.rate))
            .collect())
    }
}

fn gpu(topo: &Topology, name: &str) -> Result<NodeId, String> {
    match topo.node_by_name(name) {
        Some(n) if topo.kind(n) == NodeKind::Gpu => Ok(n),
        Some(_) => Err(format!("`{name}` is not a GPU")),
        None => Err(format!("no GPU named `{name}` in {}", topo.name())),
    }
}

/// Whether `id` may name a demand set or a job: 1 to 64 of `A-Z a-z 0-9 . _ -`.
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}
