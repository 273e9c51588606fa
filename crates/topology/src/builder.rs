//! The one way to make a [`Topology`]: add nodes and cables to a [`TopologyBuilder`], then
//! [`TopologyBuilder::build`] checks every invariant and freezes the graph.

use std::collections::HashMap;

use crate::ids::{HostId, LinkId, NodeId};
use crate::model::{Host, Link, NodeKind, SwitchRole, Topology};
use crate::names::{NameIndex, Names};
use crate::units::{Bandwidth, Nanos};

/// Ids are `u32` and every cable is two links; this bounds what a builder accepts so that ids
/// and counts can never overflow (it is ~20x the largest published fabric).
pub const MAX_NODES: usize = 4_000_000;
pub const MAX_CABLES: usize = 16_000_000;

/// Why a set of nodes and cables is not a valid fabric.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("the fabric has no GPUs")]
    NoGpus,
    #[error("the fabric is too large: {what} (at most {limit})")]
    TooLarge { what: String, limit: usize },
    #[error("node name `{name}` is used twice")]
    DuplicateName { name: String },
    #[error("node name `{name}` is not usable: {why}")]
    BadName { name: String, why: &'static str },
    #[error("host name `{name}` is used twice")]
    DuplicateHost { name: String },
    #[error("switch `{node}` is in tier {tier}, but the fabric has tiers 1..={tiers}")]
    BadTier {
        node: String,
        tier: u8,
        tiers: usize,
    },
    #[error("cable {index} ({a} -- {b}): {why}")]
    BadLink {
        index: usize,
        a: String,
        b: String,
        why: String,
    },
    #[error("node `{node}` has no links")]
    Isolated { node: String },
    #[error("`{gpu}` cannot reach `{other}`: {why}")]
    Unreachable {
        gpu: String,
        other: String,
        why: &'static str,
    },
}

/// Collects nodes, hosts and cables; see the module docs.
#[derive(Clone, Debug)]
pub struct TopologyBuilder {
    name: String,
    tiers: Vec<String>,
    kinds: Vec<NodeKind>,
    names: Names,
    node_host: Vec<Option<HostId>>,
    hosts: Vec<Host>,
    links: Vec<Link>,
}

impl TopologyBuilder {
    /// A new fabric whose switch tiers are named `tiers`, lowest (leaf) first.
    pub fn new(name: impl Into<String>, tiers: Vec<String>) -> Self {
        TopologyBuilder {
            name: name.into(),
            tiers,
            kinds: Vec::new(),
            names: Names::default(),
            node_host: Vec::new(),
            hosts: Vec::new(),
            links: Vec::new(),
        }
    }

    pub fn node_count(&self) -> usize {
        self.kinds.len()
    }

    pub fn add_switch(&mut self, name: impl AsRef<str>, tier: u8, plane: u8) -> NodeId {
        self.push_node(
            NodeKind::Switch(SwitchRole { tier, plane }),
            name.as_ref(),
            None,
        )
    }

    pub fn add_host(&mut self, name: String) -> HostId {
        let id = HostId(self.hosts.len() as u32);
        self.hosts.push(Host {
            name,
            gpus: Vec::new(),
            nics: Vec::new(),
            nvswitches: Vec::new(),
        });
        id
    }

    /// Adds a GPU, NIC or NVSwitch to `host`. A switch is not part of a host: use
    /// [`Self::add_switch`]; passing one here is a programming error and panics.
    pub fn add_host_node(&mut self, host: HostId, kind: NodeKind, name: impl AsRef<str>) -> NodeId {
        let name = name.as_ref();
        let id = NodeId(self.kinds.len() as u32);
        let h = &mut self.hosts[host.index()];
        match kind {
            NodeKind::Gpu => h.gpus.push(id),
            NodeKind::Nic => h.nics.push(id),
            NodeKind::NvSwitch => h.nvswitches.push(id),
            NodeKind::Switch(_) => panic!("switch `{name}` cannot belong to a host"),
        }
        self.push_node(kind, name, Some(host))
    }

    fn push_node(&mut self, kind: NodeKind, name: &str, host: Option<HostId>) -> NodeId {
        let id = NodeId(self.kinds.len() as u32);
        self.kinds.push(kind);
        self.names.push(name);
        self.node_host.push(host);
        id
    }

    /// Adds a cable: two directed links of the same capacity and latency, `a -> b` (returned)
    /// then `b -> a`.
    pub fn connect(&mut self, a: NodeId, b: NodeId, capacity: Bandwidth, latency: Nanos) -> LinkId {
        let id = LinkId(self.links.len() as u32);
        self.links.push(Link {
            src: a,
            dst: b,
            capacity,
            latency,
        });
        self.links.push(Link {
            src: b,
            dst: a,
            capacity,
            latency,
        });
        id
    }

    /// Checks every invariant and returns the frozen fabric:
    /// - at least one GPU; sizes within [`MAX_NODES`] / [`MAX_CABLES`];
    /// - node names unique, non-empty, without whitespace or quotes; host names unique;
    /// - switch tiers within the declared tiers;
    /// - every cable joins two existing, distinct nodes, with positive capacity and latency,
    ///   and is one the hardware has: GPU–NVSwitch, GPU–GPU and GPU–NIC inside one host,
    ///   NIC–switch, switch–switch;
    /// - every node has a link;
    /// - every GPU reaches every other: inside a host over NVLink, or through a NIC of its own
    ///   and the switches (hosts never forward for others).
    pub fn build(self) -> Result<Topology, TopologyError> {
        if self.kinds.len() > MAX_NODES {
            return Err(TopologyError::TooLarge {
                what: format!("{} nodes", self.kinds.len()),
                limit: MAX_NODES,
            });
        }
        if self.links.len() / 2 > MAX_CABLES {
            return Err(TopologyError::TooLarge {
                what: format!("{} cables", self.links.len() / 2),
                limit: MAX_CABLES,
            });
        }
        let by_name = self.check_names()?;
        self.check_tiers()?;
        self.check_links()?;
        let (out_offsets, out_links) = csr(self.kinds.len(), &self.links);
        let gpus: Vec<NodeId> = (0..self.kinds.len() as u32)
            .map(NodeId)
            .filter(|n| self.kinds[n.index()] == NodeKind::Gpu)
            .collect();
        if gpus.is_empty() {
            return Err(TopologyError::NoGpus);
        }
        if let Some(n) = (0..self.kinds.len()).find(|&n| out_offsets[n] == out_offsets[n + 1]) {
            return Err(TopologyError::Isolated {
                node: self.names.get(n).to_string(),
            });
        }
        let topo = Topology {
            name: self.name,
            tiers: self.tiers,
            kinds: self.kinds,
            names: self.names,
            node_host: self.node_host,
            hosts: self.hosts,
            links: self.links,
            out_offsets,
            out_links,
            by_name,
            gpus,
        };
        crate::reach::check_gpus_reach_each_other(&topo)?;
        Ok(topo)
    }

    fn check_names(&self) -> Result<NameIndex, TopologyError> {
        let mut by_name = NameIndex::with_capacity(self.names.len());
        for (i, name) in self.names.iter().enumerate() {
            let why = if name.is_empty() {
                Some("it is empty")
            } else if name
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '"')
            {
                Some("names may not contain whitespace, control characters or quotes")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(TopologyError::BadName {
                    name: name.to_string(),
                    why,
                });
            }
            if !by_name.insert(&self.names, NodeId(i as u32)) {
                return Err(TopologyError::DuplicateName {
                    name: name.to_string(),
                });
            }
        }
        let mut host_names = HashMap::with_capacity(self.hosts.len());
        for h in &self.hosts {
            if host_names.insert(h.name.as_str(), ()).is_some() {
                return Err(TopologyError::DuplicateHost {
                    name: h.name.clone(),
                });
            }
        }
        Ok(by_name)
    }

    fn check_tiers(&self) -> Result<(), TopologyError> {
        for (i, kind) in self.kinds.iter().enumerate() {
            if let NodeKind::Switch(role) = kind {
                if role.tier == 0 || usize::from(role.tier) > self.tiers.len() {
                    return Err(TopologyError::BadTier {
                        node: self.names.get(i).to_string(),
                        tier: role.tier,
                        tiers: self.tiers.len(),
                    });
                }
            }
        }
        Ok(())
    }

    fn check_links(&self) -> Result<(), TopologyError> {
        let n = self.kinds.len();
        for (index, link) in self.links.iter().step_by(2).enumerate() {
            let name = |id: NodeId| {
                if id.index() < self.names.len() {
                    self.names.get(id.index()).to_string()
                } else {
                    format!("#{}", id.0)
                }
            };
            let bad = |why: String| TopologyError::BadLink {
                index,
                a: name(link.src),
                b: name(link.dst),
                why,
            };
            if link.src.index() >= n || link.dst.index() >= n {
                return Err(bad(format!(
                    "refers to a node that does not exist ({n} nodes)"
                )));
            }
            if link.src == link.dst {
                return Err(bad("a cable cannot join a node to itself".into()));
            }
            if link.capacity.0 == 0 {
                return Err(bad("capacity must be positive".into()));
            }
            if link.latency.0 == 0 {
                return Err(bad("latency must be positive".into()));
            }
            let (ka, kb) = (self.kinds[link.src.index()], self.kinds[link.dst.index()]);
            let same_host = self.node_host[link.src.index()] == self.node_host[link.dst.index()];
            if let Some(why) = link_rule(ka, kb, same_host) {
                return Err(bad(why.into()));
            }
        }
        Ok(())
    }
}

/// Which cables the hardware has; `None` if `a -- b` is allowed.
fn link_rule(a: NodeKind, b: NodeKind, same_host: bool) -> Option<&'static str> {
    use NodeKind::*;
    match (a, b) {
        (Switch(_), Switch(_)) | (Nic, Switch(_)) | (Switch(_), Nic) => None,
        (Gpu, Gpu) | (Gpu, NvSwitch) | (NvSwitch, Gpu) | (Gpu, Nic) | (Nic, Gpu) => {
            (!same_host).then_some("NVLink and PCIe links stay inside one host")
        }
        (Gpu, Switch(_)) | (Switch(_), Gpu) => {
            Some("a GPU cannot link to a switch directly; put a NIC between them")
        }
        (NvSwitch, _) | (_, NvSwitch) => Some("an NVSwitch links only to the GPUs of its host"),
        (Nic, Nic) => Some("NICs link to switches and to GPUs of their host, not to each other"),
    }
}

/// Out-adjacency in compressed sparse rows, each node's links in link-id order.
fn csr(nodes: usize, links: &[Link]) -> (Vec<u32>, Vec<LinkId>) {
    let mut offsets = vec![0u32; nodes + 1];
    for l in links {
        offsets[l.src.index() + 1] += 1;
    }
    for i in 0..nodes {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut out = vec![LinkId(0); links.len()];
    for (i, l) in links.iter().enumerate() {
        let slot = &mut fill[l.src.index()];
        out[*slot as usize] = LinkId(i as u32);
        *slot += 1;
    }
    (offsets, out)
}
