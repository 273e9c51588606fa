//! The figures a collective runs on, shared by the executor (which simulates with them) and the
//! tuner (which predicts with them), so that the two agree wherever nothing is congested.
//!
//! - [`Platform`]: what a GPU of the collective reaches — the payload rate of its NVLink port, of
//!   its PCIe link to its NIC and of the NIC ([`crate::hardware`]), and the path latencies of an
//!   NVLink hop and of the network between the collective's hosts.
//! - [`Costing`]: how the collective's algorithm and protocol turn payload into wire bytes, what
//!   each step and the whole collective cost in latency, and NCCL's cap on LL's bandwidth.

use fabricsim_netsim::{Engine, Leg, Legs, Network, NetworkError, Strand};
use fabricsim_routing::FlowKey;
use fabricsim_topology::{Nanos, NodeKind, Topology};

use crate::algo::Algorithm;
use crate::hardware::{roce_efficiency, Generation, PCIE_EFFICIENCY};
use crate::layout::Ranks;
use crate::protocol::{Family, HopKind, Protocol};
use crate::schedule::Group;

/// What one GPU of a collective reaches (bytes/s of payload, and path latencies).
#[derive(Clone, Debug, PartialEq)]
pub struct Platform {
    pub gpu: Generation,
    /// The GPU's NVLink port into its NVSwitch.
    pub nvlink: f64,
    /// The GPU's PCIe link to its NIC.
    pub pcie: f64,
    /// The NIC's port into the fabric.
    pub nic: f64,
    /// GPU → NVSwitch → GPU.
    pub nvlink_path: Nanos,
    /// The longest route between GPUs of two hosts of the collective under one leaf switch,
    /// and under different leaves (0 on one host, or when no network was at hand to route on:
    /// see [`Platform::with_network_path`]).
    pub network_path_near: Nanos,
    pub network_path: Nanos,
    /// Per host of the collective (in [`Ranks::hosts`] order), the switch its first GPU's NIC
    /// attaches to (empty until routed).
    leaf: Vec<u32>,
}

impl Platform {
    /// Read off the fabric at `ranks`' first GPU, at `gpu`'s efficiencies.
    pub fn of(topo: &Topology, ranks: &Ranks, gpu: Generation) -> Platform {
        let first = ranks.gpu(0);
        let mut p = Platform {
            gpu,
            nvlink: 0.0,
            pcie: 0.0,
            nic: 0.0,
            nvlink_path: Nanos(0),
            network_path_near: Nanos(0),
            network_path: Nanos(0),
            leaf: Vec::new(),
        };
        for &l in topo.out_links(first) {
            let link = topo.link(l);
            let rate = link.capacity.0 as f64;
            match topo.kind(link.dst) {
                NodeKind::NvSwitch if rate * gpu.nvlink_efficiency() > p.nvlink => {
                    p.nvlink = rate * gpu.nvlink_efficiency();
                    p.nvlink_path = Nanos(2 * link.latency.0);
                }
                NodeKind::Nic => {
                    p.pcie = p.pcie.max(rate * PCIE_EFFICIENCY);
                    for &u in topo.out_links(link.dst) {
                        let up = topo.link(u);
                        if matches!(topo.kind(up.dst), NodeKind::Switch(_)) {
                            p.nic = p.nic.max(up.capacity.0 as f64 * roce_efficiency());
                        }
                    }
                }
                _ => {}
            }
        }
        p
    }

    /// The same, with the network path latencies routed on `net`: per pair of consecutive
    /// hosts (a ring's inter-host edges) and from the first host to every host under another
    /// leaf, the longest route between their first GPUs, kept apart for hosts under one leaf
    /// switch and under different ones.
    pub fn with_network_path<E: Engine>(
        mut self,
        net: &mut Network<'_, E>,
        ranks: &Ranks,
    ) -> Result<Platform, NetworkError> {
        let hosts = ranks.hosts();
        if hosts.len() < 2 {
            return Ok(self);
        }
        let topo = net.topology();
        self.leaf = hosts
            .iter()
            .map(|local| leaf_of(topo, ranks.gpu(local[0])))
            .collect();
        let mut pairs: Vec<(usize, usize)> = (0..hosts.len())
            .map(|h| (h, (h + 1) % hosts.len()))
            .collect();
        pairs.extend(
            (1..hosts.len())
                .filter(|&h| self.leaf[h] != self.leaf[0])
                .map(|h| (0, h)),
        );
        for (a, b) in pairs {
            let key = FlowKey::connection(ranks.gpu(hosts[a][0]), ranks.gpu(hosts[b][0]), 0, 0);
            let strand = Strand {
                legs: Legs::from_iter([Leg::Routed(key)]),
                weight: 1.0,
            };
            let latency = net.strand_latency(&strand)?;
            let slot = if self.leaf[a] == self.leaf[b] {
                &mut self.network_path_near
            } else {
                &mut self.network_path
            };
            *slot = (*slot).max(latency);
        }
        if self.network_path.0 == 0 {
            self.network_path = self.network_path_near;
        }
        Ok(self)
    }

    /// The network path latency between the hosts of ranks `a` and `b`.
    pub fn network_path_between(&self, ranks: &Ranks, a: u32, b: u32) -> Nanos {
        match (
            self.leaf.get(ranks.host(a) as usize),
            self.leaf.get(ranks.host(b) as usize),
        ) {
            (Some(x), Some(y)) if x == y => self.network_path_near,
            _ => self.network_path,
        }
    }

    /// The payload rate from a GPU to the network: the slower of its PCIe link and its NIC.
    pub fn network(&self) -> f64 {
        self.pcie.min(self.nic)
    }

    /// The payload rate of a hop of `kind`.
    pub fn rate(&self, kind: HopKind) -> f64 {
        match kind {
            HopKind::NvLink => self.nvlink,
            HopKind::Network => self.network(),
        }
    }
}

/// How one collective's transfers are costed under its algorithm and protocol.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costing {
    pub family: Family,
    pub protocol: Protocol,
    /// Payload per wire byte ([`Protocol::efficiency`]).
    pub efficiency: f64,
    /// Wire bytes an NVLS transfer weighs on its NVLink port per byte (1 / NCCL's NVLS
    /// efficiency).
    pub nvls_weight: f64,
    /// Whether the collective spans hosts (NVLink steps then pay the network proxy's overhead).
    pub multi_host: bool,
    /// NCCL's cap on LL (ring and tree), as a wire-byte rate per group: `llMaxBws` is a bus
    /// bandwidth, which a ring's channels share (a ring's bus bandwidth is its channels' edge
    /// rate) and a tree's channels share twice over (its bus bandwidth is twice its edge rate).
    pub group_cap: Option<f64>,
}

impl Costing {
    /// Wire bytes an NVLS transfer weighs on its NVLink port per byte on `gpu`: 1 / NCCL's NVLS
    /// efficiency (1 where the generation has no NVLS).
    pub fn nvls_weight(gpu: Generation) -> f64 {
        1.0 / gpu.nvls_efficiency().unwrap_or(1.0)
    }

    pub fn new(
        algorithm: Algorithm,
        protocol: Protocol,
        ranks: &Ranks,
        channels: u32,
        gpu: Generation,
    ) -> Costing {
        let family = algorithm.family();
        let hosts = ranks.hosts().len();
        let efficiency = protocol.efficiency(family, hosts == 1);
        let group_cap = match (algorithm, protocol) {
            (Algorithm::Ring | Algorithm::Tree, Protocol::Ll) => {
                let per_bus = if algorithm == Algorithm::Tree {
                    2.0
                } else {
                    1.0
                };
                let payload =
                    gpu.ll_max_busbw_gbps(hosts) * 1e9 / per_bus / f64::from(channels.max(1));
                Some(payload / efficiency)
            }
            _ => None,
        };
        Costing {
            family,
            protocol,
            efficiency,
            nvls_weight: Costing::nvls_weight(gpu),
            multi_host: hosts > 1,
            group_cap,
        }
    }

    /// Wire bytes of `payload`.
    pub fn wire(&self, payload: u64) -> u64 {
        Protocol::wire_bytes(payload, self.efficiency)
    }

    /// NCCL's base latency, charged once per collective.
    pub fn base_latency(&self) -> Nanos {
        self.protocol.base_latency(self.family)
    }

    /// The per-step latency of a step of `hop` kind.
    pub fn step_latency(&self, hop: HopKind) -> Nanos {
        match hop {
            HopKind::Network => self.protocol.step_latency(self.family, hop),
            HopKind::NvLink => self
                .protocol
                .intra_step_latency(self.family, self.multi_host),
        }
    }

    /// The latency `group` adds after its bytes drain: its steps, each at its kind's per-step
    /// latency plus its kind's path latency (`nvlink_path`, `network_path`). A group none of
    /// whose edges crosses the network has only NVLink steps.
    pub fn group_latency(
        &self,
        group: &Group,
        crosses_network: bool,
        nvlink_path: Nanos,
        network_path: Nanos,
    ) -> Nanos {
        let inter = if crosses_network {
            group.inter_steps.min(group.steps)
        } else {
            0
        };
        let intra = group.steps - inter;
        let net = self.step_latency(HopKind::Network).0 + network_path.0;
        let nv = self.step_latency(HopKind::NvLink).0 + nvlink_path.0;
        Nanos(u64::from(inter) * net + u64::from(intra) * nv)
    }

    /// The pipeline fill of `group`: `fill` chunk times, a chunk time being the mean over its
    /// edges (wire bytes, hop kind) of a chunk at the hop's payload rate.
    pub fn fill_time(
        &self,
        group: &Group,
        edges: impl ExactSizeIterator<Item = (u64, HopKind)>,
        platform: &Platform,
    ) -> Nanos {
        if group.fill == 0 {
            return Nanos(0);
        }
        let count = edges.len().max(1) as f64;
        let chunks = f64::from(group.chunks.max(1));
        let mean = edges
            .map(|(wire, hop)| wire as f64 / chunks / platform.rate(hop).max(1.0) * 1e9)
            .sum::<f64>()
            / count;
        Nanos((f64::from(group.fill) * mean).round() as u64)
    }
}

/// The switch `gpu`'s first NIC attaches to (`u32::MAX` for none).
fn leaf_of(topo: &Topology, gpu: fabricsim_topology::NodeId) -> u32 {
    topo.out_links(gpu)
        .iter()
        .map(|&l| topo.link(l).dst)
        .filter(|&n| topo.kind(n) == NodeKind::Nic)
        .flat_map(|nic| topo.out_links(nic).iter().map(|&u| topo.link(u).dst))
        .find(|&n| matches!(topo.kind(n), NodeKind::Switch(_)))
        .map_or(u32::MAX, |n| n.0)
}
