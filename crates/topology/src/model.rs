//! The validated, immutable fabric graph.
//!
//! Storage is struct-of-arrays with dense `u32` ids and a CSR out-adjacency, so that routing and
//! the network engines can walk it without hashing or allocating.

use crate::ids::{HostId, LinkId, NodeId};
use crate::names::{NameIndex, Names};
use crate::units::{Bandwidth, Nanos};

/// What a node is. GPUs, NICs and NVSwitches belong to a host; switches form the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    Gpu,
    /// A network interface. A GPU reaches other hosts only through a NIC it is linked to
    /// (over PCIe); a NIC with two ports is one NIC with two links (dual-ToR).
    Nic,
    /// The host's scale-up domain (the NVSwitch chips of an HGX board, as one node).
    NvSwitch,
    Switch(SwitchRole),
}

/// Where a network switch sits: its tier (1 = leaf / ToR / RTSW, counting up) and its plane
/// (0 unless the fabric is built from parallel planes, as Alibaba HPN's tier 2 is).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SwitchRole {
    pub tier: u8,
    pub plane: u8,
}

impl NodeKind {
    pub fn label(self) -> &'static str {
        match self {
            NodeKind::Gpu => "gpu",
            NodeKind::Nic => "nic",
            NodeKind::NvSwitch => "nvswitch",
            NodeKind::Switch(_) => "switch",
        }
    }
    pub fn is_switch(self) -> bool {
        matches!(self, NodeKind::Switch(_))
    }
    /// Whether the node belongs to a host (GPU, NIC, NVSwitch) rather than to the network.
    pub fn in_host(self) -> bool {
        !self.is_switch()
    }
}

/// A directed link: one direction of a cable (or of a PCIe / NVLink connection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub src: NodeId,
    pub dst: NodeId,
    pub capacity: Bandwidth,
    pub latency: Nanos,
}

/// A server: its GPUs, NICs and NVSwitch, in the order they were declared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    pub gpus: Vec<NodeId>,
    pub nics: Vec<NodeId>,
    pub nvswitches: Vec<NodeId>,
}

/// A fabric that exists is valid: see [`crate::TopologyBuilder::build`] for what is checked.
/// Nothing mutates it after construction; link state (down, derated) is an overlay kept by the
/// routing layer.
#[derive(Clone, Debug)]
pub struct Topology {
    pub(crate) name: String,
    pub(crate) tiers: Vec<String>,
    pub(crate) kinds: Vec<NodeKind>,
    pub(crate) names: Names,
    pub(crate) node_host: Vec<Option<HostId>>,
    pub(crate) hosts: Vec<Host>,
    pub(crate) links: Vec<Link>,
    pub(crate) out_offsets: Vec<u32>,
    pub(crate) out_links: Vec<LinkId>,
    pub(crate) by_name: NameIndex,
    pub(crate) gpus: Vec<NodeId>,
}

impl Topology {
    /// The fabric's name (the preset it came from, or the `name` of its file).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Tier names, lowest first; a switch of tier `t` has name `tiers()[t - 1]`.
    pub fn tiers(&self) -> &[String] {
        &self.tiers
    }
    pub fn tier_name(&self, tier: u8) -> &str {
        &self.tiers[usize::from(tier) - 1]
    }
    pub fn node_count(&self) -> usize {
        self.kinds.len()
    }
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = NodeId> + '_ {
        (0..self.kinds.len() as u32).map(NodeId)
    }
    pub fn kind(&self, node: NodeId) -> NodeKind {
        self.kinds[node.index()]
    }
    pub fn node_name(&self, node: NodeId) -> &str {
        self.names.get(node.index())
    }
    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(&self.names, name)
    }
    pub fn host_of(&self, node: NodeId) -> Option<HostId> {
        self.node_host[node.index()]
    }
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }
    pub fn host(&self, host: HostId) -> &Host {
        &self.hosts[host.index()]
    }
    /// All GPUs in id order.
    pub fn gpus(&self) -> &[NodeId] {
        &self.gpus
    }
    pub fn switches(&self) -> impl Iterator<Item = (NodeId, SwitchRole)> + '_ {
        self.kinds.iter().enumerate().filter_map(|(i, k)| match k {
            NodeKind::Switch(role) => Some((NodeId(i as u32), *role)),
            _ => None,
        })
    }
    pub fn link_count(&self) -> usize {
        self.links.len()
    }
    pub fn links(&self) -> &[Link] {
        &self.links
    }
    pub fn link(&self, link: LinkId) -> &Link {
        &self.links[link.index()]
    }
    pub fn link_ids(&self) -> impl ExactSizeIterator<Item = LinkId> {
        (0..self.links.len() as u32).map(LinkId)
    }
    /// The links leaving `node`, in link-id order.
    pub fn out_links(&self, node: NodeId) -> &[LinkId] {
        let (a, b) = (
            self.out_offsets[node.index()],
            self.out_offsets[node.index() + 1],
        );
        &self.out_links[a as usize..b as usize]
    }
    /// The NICs a GPU is linked to (its PCIe-attached NICs), in link order.
    pub fn nics_of_gpu(&self, gpu: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        self.out_links(gpu)
            .iter()
            .map(|&l| self.links[l.index()].dst)
            .filter(|&n| self.kinds[n.index()] == NodeKind::Nic)
    }
}
