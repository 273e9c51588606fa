//! The JSON topology format: a header, then one node or cable per line, so files diff well
//! and a line number points at one element.
//!
//! ```json
//! {
//!   "format": "fabricsim-topology",
//!   "version": 1,
//!   "name": "two-hosts",
//!   "tiers": ["leaf"],
//!   "nodes": [
//!     {"name":"leaf0","kind":"switch","tier":"leaf","plane":0},
//!     {"name":"host0/gpu0","kind":"gpu","host":"host0"},
//!     {"name":"host0/nic0","kind":"nic","host":"host0"}
//!   ],
//!   "links": [
//!     {"a":"host0/gpu0","b":"host0/nic0","capacity":"512Gbps","latency":"100ns"}
//!   ]
//! }
//! ```
//!
//! Each `links` entry is a cable: two directed links, `a -> b` then `b -> a`. Writing is
//! canonical (ids in order, exact units), so export -> import -> export is byte-identical.

use std::collections::HashMap;
use std::io::Write;

use serde::{Deserialize, Serialize};

use super::FormatError;
use crate::builder::TopologyBuilder;
use crate::ids::{HostId, NodeId};
use crate::model::{NodeKind, SwitchRole, Topology};
use crate::units::{Bandwidth, Nanos};

pub const FORMAT_NAME: &str = "fabricsim-topology";
pub const FORMAT_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRecord {
    format: String,
    version: u32,
    name: String,
    tiers: Vec<String>,
    nodes: Vec<NodeRecord>,
    links: Vec<LinkRecord>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum KindRecord {
    Gpu,
    Nic,
    Nvswitch,
    Switch,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeRecord {
    name: String,
    kind: KindRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    plane: Option<u8>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkRecord {
    a: String,
    b: String,
    capacity: Bandwidth,
    latency: Nanos,
}

/// Writes `topo` in the JSON format.
pub fn write_json(topo: &Topology, out: &mut (impl Write + ?Sized)) -> std::io::Result<()> {
    writeln!(out, "{{")?;
    writeln!(
        out,
        "  \"format\": {},",
        serde_json::to_string(FORMAT_NAME)?
    )?;
    writeln!(out, "  \"version\": {FORMAT_VERSION},")?;
    writeln!(out, "  \"name\": {},", serde_json::to_string(topo.name())?)?;
    writeln!(
        out,
        "  \"tiers\": {},",
        serde_json::to_string(topo.tiers())?
    )?;
    writeln!(out, "  \"nodes\": [")?;
    let n = topo.node_count();
    for node in topo.nodes() {
        let host = topo.host_of(node).map(|h| topo.host(h).name.clone());
        let (kind, tier, plane) = match topo.kind(node) {
            NodeKind::Gpu => (KindRecord::Gpu, None, None),
            NodeKind::Nic => (KindRecord::Nic, None, None),
            NodeKind::NvSwitch => (KindRecord::Nvswitch, None, None),
            NodeKind::Switch(r) => (
                KindRecord::Switch,
                Some(topo.tier_name(r.tier).to_string()),
                Some(r.plane),
            ),
        };
        let rec = NodeRecord {
            name: topo.node_name(node).to_string(),
            kind,
            host,
            tier,
            plane,
        };
        let sep = if node.index() + 1 < n { "," } else { "" };
        writeln!(out, "    {}{sep}", line(&rec)?)?;
    }
    writeln!(out, "  ],")?;
    writeln!(out, "  \"links\": [")?;
    let cables = topo.link_count() / 2;
    for (i, link) in topo.links().iter().step_by(2).enumerate() {
        let rec = LinkRecord {
            a: topo.node_name(link.src).to_string(),
            b: topo.node_name(link.dst).to_string(),
            capacity: link.capacity,
            latency: link.latency,
        };
        let sep = if i + 1 < cables { "," } else { "" };
        writeln!(out, "    {}{sep}", line(&rec)?)?;
    }
    writeln!(out, "  ]")?;
    writeln!(out, "}}")?;
    Ok(())
}

/// One record as one compact JSON line.
fn line<T: Serialize>(record: &T) -> std::io::Result<String> {
    serde_json::to_string(record).map_err(std::io::Error::other)
}

/// Reads a topology from the JSON format, validating it fully.
pub fn read_json(text: &str) -> Result<Topology, FormatError> {
    let file: FileRecord = serde_json::from_str(text).map_err(|e| FormatError::Syntax {
        line: e.line(),
        column: e.column(),
        message: e
            .to_string()
            .split(" at line ")
            .next()
            .unwrap_or_default()
            .to_string(),
    })?;
    let invalid = |at: String, message: String| FormatError::Invalid { at, message };
    if file.format != FORMAT_NAME {
        return Err(invalid(
            "format".into(),
            format!("expected \"{FORMAT_NAME}\", found {:?}", file.format),
        ));
    }
    if file.version != FORMAT_VERSION {
        return Err(invalid(
            "version".into(),
            format!(
                "this fabricsim reads version {FORMAT_VERSION}, not {}",
                file.version
            ),
        ));
    }
    if file.tiers.len() > usize::from(u8::MAX) {
        return Err(invalid("tiers".into(), "at most 255 tiers".into()));
    }
    let mut b = TopologyBuilder::new(file.name, file.tiers.clone());
    let mut ids: HashMap<&str, NodeId> = HashMap::with_capacity(file.nodes.len());
    let mut hosts: HashMap<&str, HostId> = HashMap::new();
    for (i, node) in file.nodes.iter().enumerate() {
        let at = |field: &str| format!("nodes[{i}]{field}");
        let id = match node.kind {
            KindRecord::Switch => {
                let Some(tier) = &node.tier else {
                    return Err(invalid(
                        at(""),
                        format!(
                            "switch `{}` needs a \"tier\", one of {:?}",
                            node.name, file.tiers
                        ),
                    ));
                };
                let Some(level) = file.tiers.iter().position(|t| t == tier) else {
                    return Err(invalid(
                        at(".tier"),
                        format!("`{tier}` is not one of the declared tiers {:?}", file.tiers),
                    ));
                };
                if node.host.is_some() {
                    return Err(invalid(
                        at(".host"),
                        "a switch does not belong to a host".into(),
                    ));
                }
                let role = SwitchRole {
                    tier: level as u8 + 1,
                    plane: node.plane.unwrap_or(0),
                };
                b.add_switch(node.name.clone(), role.tier, role.plane)
            }
            _ => {
                let kind = match node.kind {
                    KindRecord::Gpu => NodeKind::Gpu,
                    KindRecord::Nic => NodeKind::Nic,
                    _ => NodeKind::NvSwitch,
                };
                let Some(host) = &node.host else {
                    return Err(invalid(
                        at(""),
                        format!("{} `{}` needs a \"host\"", kind.label(), node.name),
                    ));
                };
                if node.tier.is_some() || node.plane.is_some() {
                    return Err(invalid(
                        at(""),
                        "only switches have a tier and a plane".into(),
                    ));
                }
                let next = hosts.len();
                let h = *hosts.entry(host.as_str()).or_insert_with(|| {
                    let id = b.add_host(host.clone());
                    debug_assert_eq!(id.index(), next);
                    id
                });
                b.add_host_node(h, kind, node.name.clone())
            }
        };
        if let Some(&prev) = ids.get(node.name.as_str()) {
            return Err(invalid(
                at(".name"),
                format!("`{}` is also the name of nodes[{}]", node.name, prev.0),
            ));
        }
        ids.insert(node.name.as_str(), id);
    }
    for (i, link) in file.links.iter().enumerate() {
        let end = |field: &str, name: &str| {
            ids.get(name).copied().ok_or_else(|| {
                invalid(
                    format!("links[{i}].{field}"),
                    format!("no node is named `{name}`"),
                )
            })
        };
        b.connect(
            end("a", &link.a)?,
            end("b", &link.b)?,
            link.capacity,
            link.latency,
        );
    }
    Ok(b.build()?)
}
