//! The fabric in the compact form routing reads: a switch-to-switch adjacency by switch index
//! for the distance BFS and the next hops, and every node's out links with where each leads.
//! Built once per topology; the link state is read beside it, never folded in.

use fabricsim_topology::{LinkId, NodeId, Topology};

/// Switches with at most this many switch neighbours (a rack switch's uplinks) find their next
/// hops by a scan as fast as a cache lookup; only the others' (*wide* switches) are cached.
pub(super) const SCAN_DEGREE: u32 = 64;

/// Where a link leads, as a walk needs it: the node, its switch index (`NOT_A_SWITCH` for a
/// host's node), and the link's latency in ns (`u32::MAX`: too long for 32 bits, read it from
/// the topology). Carried in the next-hop lists, so a walk never reads the link table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct End {
    pub node: NodeId,
    pub sw: u32,
    pub latency: u32,
}

pub(super) const NOT_A_SWITCH: u32 = u32::MAX;

impl End {
    /// A placeholder (the slot of a list's length in the hop pool).
    pub const NONE: End = End {
        node: NodeId(u32::MAX),
        sw: NOT_A_SWITCH,
        latency: 0,
    };
}

/// A switch neighbour `s` of switch `t`: the link `s -> t` (whose state decides whether `s`
/// reaches `t`), and the latency of the way back, `t -> s` (its reverse).
#[derive(Clone, Copy)]
pub(super) struct Neighbour {
    pub sw: u32,
    pub inbound: LinkId,
    pub out_latency: u32,
}

pub(super) struct Graph {
    /// Per node: its switch index, or `NOT_A_SWITCH`.
    pub switch_index: Vec<u32>,
    pub switch_nodes: Vec<NodeId>,
    /// Per switch index, its switch neighbours (CSR).
    pub sw_offsets: Vec<u32>,
    pub sw_adj: Vec<Neighbour>,
    /// Per switch index: its index among the wide switches, or `u32::MAX`.
    pub wide: Vec<u32>,
    pub wide_count: usize,
    /// Per node, its out links in the topology's order with where each leads (CSR).
    pub out_offsets: Vec<u32>,
    pub out: Vec<(LinkId, End)>,
}

fn latency_ns(topo: &Topology, l: LinkId) -> u32 {
    u32::try_from(topo.link(l).latency.0).unwrap_or(u32::MAX)
}

impl Graph {
    pub fn new(topo: &Topology) -> Graph {
        let mut switch_index = vec![NOT_A_SWITCH; topo.node_count()];
        let switch_nodes: Vec<NodeId> = topo.switches().map(|(s, _)| s).collect();
        for (i, s) in switch_nodes.iter().enumerate() {
            switch_index[s.index()] = i as u32;
        }
        let mut sw_offsets = Vec::with_capacity(switch_nodes.len() + 1);
        let mut sw_adj = Vec::new();
        sw_offsets.push(0);
        for &t in &switch_nodes {
            for &l in topo.out_links(t) {
                let s = switch_index[topo.link(l).dst.index()];
                if s != NOT_A_SWITCH {
                    sw_adj.push(Neighbour {
                        sw: s,
                        inbound: l.reverse(),
                        out_latency: latency_ns(topo, l),
                    });
                }
            }
            sw_offsets.push(sw_adj.len() as u32);
        }
        let mut wide = vec![u32::MAX; switch_nodes.len()];
        let mut wide_count = 0;
        for (i, w) in wide.iter_mut().enumerate() {
            if sw_offsets[i + 1] - sw_offsets[i] > SCAN_DEGREE {
                *w = wide_count as u32;
                wide_count += 1;
            }
        }
        let mut out_offsets = Vec::with_capacity(topo.node_count() + 1);
        let mut out = Vec::with_capacity(topo.link_count());
        out_offsets.push(0);
        for u in topo.nodes() {
            out.extend(topo.out_links(u).iter().map(|&l| {
                let node = topo.link(l).dst;
                let end = End {
                    node,
                    sw: switch_index[node.index()],
                    latency: latency_ns(topo, l),
                };
                (l, end)
            }));
            out_offsets.push(out.len() as u32);
        }
        Graph {
            switch_index,
            switch_nodes,
            sw_offsets,
            sw_adj,
            wide,
            wide_count,
            out_offsets,
            out,
        }
    }

    pub fn switch_count(&self) -> usize {
        self.switch_nodes.len()
    }

    /// Switch `t`'s switch neighbours.
    pub fn neighbours(&self, t: u32) -> &[Neighbour] {
        &self.sw_adj[self.sw_offsets[t as usize] as usize..self.sw_offsets[t as usize + 1] as usize]
    }

    /// `u`'s out links with where each leads.
    pub fn targets(&self, u: NodeId) -> &[(LinkId, End)] {
        &self.out[self.out_offsets[u.index()] as usize..self.out_offsets[u.index() + 1] as usize]
    }
}
