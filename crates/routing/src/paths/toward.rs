//! The shortest-path DAG toward one destination, one node at a time: a node's cost (links to
//! the destination) and its equal-cost next hops under the forwarding rule.

use std::cell::RefCell;

use fabricsim_topology::{LinkId, NodeId, NodeKind, Topology};

use super::cache::{Distances, HopPool, AT_DST, FAR, NOT_YET};
use super::graph::{End, Graph, NOT_A_SWITCH};
use crate::link_state::LinkState;

/// A node's next hops: the links, in link-id order, and where each leads.
#[derive(Default)]
pub(super) struct Hops {
    pub links: Vec<LinkId>,
    pub ends: Vec<End>,
}

impl Hops {
    pub fn clear(&mut self) {
        self.links.clear();
        self.ends.clear();
    }

    pub fn push(&mut self, link: LinkId, end: End) {
        self.links.push(link);
        self.ends.push(end);
    }

    /// Adds a hop where link-id order puts it (no allocation beyond the buffers' own).
    pub fn insert_sorted(&mut self, link: LinkId, end: End) {
        let at = self.links.partition_point(|&l| l < link);
        self.links.insert(at, link);
        self.ends.insert(at, end);
    }
}

/// Where [`Toward::next_hops_into`] left a node's next hops: in the caller's buffer, or in a
/// list of the hop pool (a wide switch's, read in place rather than copied per walk).
#[derive(Clone, Copy)]
pub(super) enum Found {
    InBuffer,
    Pooled(u32),
}

impl Found {
    /// The next hops where they were left: in `buffer`, or in `pool`.
    pub fn read<'a>(self, buffer: &'a Hops, pool: &'a HopPool) -> (&'a [LinkId], &'a [End]) {
        match self {
            Found::InBuffer => (&buffer.links, &buffer.ends),
            Found::Pooled(at) => pool.list(at),
        }
    }
}

pub(super) struct Toward<'a> {
    pub topo: &'a Topology,
    pub state: &'a LinkState,
    pub src: NodeId,
    pub dst: NodeId,
    pub graph: &'a Graph,
    pub pool: &'a RefCell<HopPool>,
    pub dist: &'a Distances,
}

impl Toward<'_> {
    fn up_targets(&self, u: NodeId) -> impl Iterator<Item = (LinkId, End)> + '_ {
        self.graph
            .targets(u)
            .iter()
            .copied()
            .filter(|&(l, _)| self.state.is_up(l))
    }

    fn links_to_dst(&self, nic: NodeId) -> bool {
        self.up_targets(nic).any(|(_, e)| e.node == self.dst)
    }

    fn switch_cost(&self, sw: u32) -> Option<u32> {
        let d = self.dist.dist[sw as usize];
        (d != FAR).then(|| u32::from(d) + 2)
    }

    /// Links from `u` to the destination; `None` when the destination is not reachable from
    /// `u`.
    pub fn cost(&self, u: NodeId) -> Option<u32> {
        self.cost_of(End {
            node: u,
            sw: self.graph.switch_index[u.index()],
            latency: 0,
        })
    }

    fn cost_of(&self, e: End) -> Option<u32> {
        if e.sw != NOT_A_SWITCH {
            return self.switch_cost(e.sw);
        }
        let u = e.node;
        if u == self.dst {
            return Some(0);
        }
        match self.topo.kind(u) {
            NodeKind::Nic if self.links_to_dst(u) => Some(1),
            NodeKind::Nic if self.is_src_nic(u) => self
                .up_targets(u)
                .filter(|(_, v)| v.sw != NOT_A_SWITCH)
                .filter_map(|(_, v)| self.switch_cost(v.sw))
                .min()
                .map(|c| c + 1),
            NodeKind::Gpu if u == self.src => self
                .up_targets(u)
                .filter(|(_, v)| self.topo.kind(v.node) == NodeKind::Nic)
                .filter_map(|(_, v)| self.cost_of(v))
                .min()
                .map(|c| c + 1),
            _ => None,
        }
    }

    fn is_src_nic(&self, nic: NodeId) -> bool {
        self.graph
            .targets(self.src)
            .iter()
            .any(|&(_, e)| e.node == nic)
    }

    /// The equal-cost next hops of `u` (switch index `ui`, cost `c`: a walk knows it, one less
    /// than the node before), in link-id order, into a reused buffer or found in the hop pool
    /// (the routing hot path allocates and copies nothing). Hosts never forward for others: a
    /// switch hands traffic only to switches or to the destination's NICs.
    pub fn next_hops_into(&self, u: NodeId, ui: u32, c: u32, hops: &mut Hops) -> Found {
        hops.clear();
        if ui != NOT_A_SWITCH {
            return self.switch_next_hops(ui, u, hops);
        }
        if c > 0 {
            for (l, e) in self.up_targets(u) {
                if self.forwards_to(e) && self.cost_of(e) == Some(c - 1) {
                    hops.push(l, e);
                }
            }
        }
        Found::InBuffer
    }

    /// From a host's node: on to a switch, a NIC, or the destination itself.
    fn forwards_to(&self, e: End) -> bool {
        e.sw != NOT_A_SWITCH
            || match self.topo.kind(e.node) {
                NodeKind::Nic => true,
                NodeKind::Gpu => e.node == self.dst,
                NodeKind::NvSwitch | NodeKind::Switch(_) => false,
            }
    }

    /// The source GPU's cost and next hops, in one pass over its links: [`Self::cost`] and
    /// [`Self::next_hops_into`] of the source together, each neighbour's cost found once.
    pub fn source_hops_into(&self, hops: &mut Hops) -> Option<u32> {
        hops.clear();
        let mut nic_best: Option<u32> = None;
        let mut found: [(LinkId, End, u32); 8] = [(LinkId(0), End::NONE, 0); 8];
        let mut n = 0;
        for (l, e) in self.up_targets(self.src) {
            if !self.forwards_to(e) {
                continue;
            }
            let Some(ce) = self.cost_of(e) else { continue };
            if e.sw == NOT_A_SWITCH && self.topo.kind(e.node) == NodeKind::Nic {
                nic_best = Some(nic_best.map_or(ce, |b| b.min(ce)));
            }
            if n == found.len() {
                // More candidate links than kept here: the general path (a host's node's
                // next hops are always found in the buffer).
                let c = self.cost(self.src)?;
                self.next_hops_into(self.src, NOT_A_SWITCH, c, hops);
                return Some(c);
            }
            found[n] = (l, e, ce);
            n += 1;
        }
        let c = nic_best? + 1;
        for &(l, e, ce) in &found[..n] {
            if ce + 1 == c {
                hops.push(l, e);
            }
        }
        Some(c)
    }

    /// The next hops switch `ui` would have toward the destination if none of its links to
    /// other switches were down (distances as they are): what a static assignment, such as
    /// path pinning, was computed over. Empty where `ui` is not a switch or is next to the
    /// destination.
    pub fn planned_hops_into(&self, ui: u32, hops: &mut Vec<LinkId>) {
        hops.clear();
        if ui == NOT_A_SWITCH {
            return;
        }
        let d = self.dist.dist[ui as usize];
        if d != FAR && d > 0 {
            self.closer_switches(ui, d, false, |l, _| hops.push(l));
        }
    }

    /// The links from switch `ui` (at distance `d > 0`) to the switches at distance `d - 1`,
    /// only those that are up if `up_only`, to `push` with where each leads.
    fn closer_switches(&self, ui: u32, d: u16, up_only: bool, mut push: impl FnMut(LinkId, End)) {
        let up_only = up_only && !self.state.all_up();
        for n in self.graph.neighbours(ui) {
            // The adjacency holds `s -> u`; the hop is its reverse, `u -> s`.
            let hop = n.inbound.reverse();
            if self.dist.dist[n.sw as usize] == d - 1 && (!up_only || self.state.is_up(hop)) {
                let end = End {
                    node: self.graph.switch_nodes[n.sw as usize],
                    sw: n.sw,
                    latency: n.out_latency,
                };
                push(hop, end);
            }
        }
    }

    /// How many switch neighbours the attachment switches have in all.
    fn sources_degree(&self) -> usize {
        let sources = self.dist.sources.iter();
        sources.map(|&s| self.graph.neighbours(s).len()).sum()
    }

    /// [`Self::closer_switches`] of a switch next to an attachment switch, found from the
    /// attachment switches' side: a cluster switch over a hundred racks has one or two links
    /// to the destination's, which has a few switch neighbours. In link-id order, as the scan
    /// finds them; a link's latency is its cable's, the same both ways.
    fn hops_to_sources(&self, ui: u32, hops: &mut Hops) {
        let all_up = self.state.all_up();
        for &s in self.dist.sources.iter() {
            for n in self.graph.neighbours(s) {
                // The adjacency holds `ui -> s`, the hop itself.
                if n.sw == ui && (all_up || self.state.is_up(n.inbound)) {
                    let end = End {
                        node: self.graph.switch_nodes[s as usize],
                        sw: s,
                        latency: n.out_latency,
                    };
                    hops.insert_sorted(n.inbound, end);
                }
            }
        }
    }

    /// `next_hops` for a switch, over the compact switch adjacency; a wide switch's from the
    /// cache.
    fn switch_next_hops(&self, ui: u32, u: NodeId, hops: &mut Hops) -> Found {
        let wi = self.graph.wide[ui as usize];
        if wi == u32::MAX {
            match self.dist.dist[ui as usize] {
                FAR => {}
                0 => self.hops_to_dst_nics(u, hops),
                d => self.closer_switches(ui, d, true, |l, e| hops.push(l, e)),
            }
            return Found::InBuffer;
        }
        let mut at = self.dist.hops.borrow_mut();
        if at.is_empty() {
            *at = vec![NOT_YET; self.graph.wide_count];
        }
        let mut pool = self.pool.borrow_mut();
        if at[wi as usize] == NOT_YET {
            at[wi as usize] = match self.dist.dist[ui as usize] {
                0 => AT_DST,
                d => {
                    let mut list = std::mem::take(&mut pool.scratch);
                    list.clear();
                    if d == 1 && self.sources_degree() < self.graph.neighbours(ui).len() {
                        self.hops_to_sources(ui, &mut list);
                    } else if d != FAR {
                        self.closer_switches(ui, d, true, |l, e| list.push(l, e));
                    }
                    let at = pool.intern(&list.links, &list.ends);
                    pool.scratch = list;
                    at
                }
            };
        }
        match at[wi as usize] {
            AT_DST => {
                self.hops_to_dst_nics(u, hops);
                Found::InBuffer
            }
            start => Found::Pooled(start),
        }
    }

    /// From an attachment switch `u` down to the destination's NICs that can deliver to it.
    fn hops_to_dst_nics(&self, u: NodeId, hops: &mut Hops) {
        for &(_, nic) in self.graph.targets(self.dst) {
            let nic = nic.node;
            if self.topo.kind(nic) != NodeKind::Nic || !self.links_to_dst(nic) {
                continue;
            }
            for &(l, e) in self.graph.targets(nic) {
                let down = l.reverse();
                if e.node == u && self.state.is_up(down) {
                    let end = End {
                        node: nic,
                        sw: NOT_A_SWITCH,
                        // Both directions of a cable have the same latency.
                        latency: e.latency,
                    };
                    hops.insert_sorted(down, end);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use fabricsim_topology::presets;

    use super::*;
    use crate::link_state::LinkCondition;
    use crate::paths::PathFinder;

    /// A switch next to the destination's finds from the destination's side the hops a scan
    /// of its own neighbours finds, in the same order with the same ends: with every link up
    /// and with one switch-to-switch cable in seven and one into the first GPU's switch down;
    /// on fabrics whose cluster switches are wide, one of them with two cables to each rack
    /// (one down, the other kept), and on one whose hosts are dual-homed.
    #[test]
    fn hops_found_from_the_attachment_switches_are_the_scans() {
        for (preset, settings) in [
            (
                "meta-cluster",
                [("zones", "2"), ("racks", "72"), ("ctsws", "16")],
            ),
            (
                "meta-cluster",
                [("zones", "2"), ("racks", "72"), ("ctsws", "8")],
            ),
            (
                "hpn",
                [
                    ("segments", "2"),
                    ("hosts_per_segment", "4"),
                    ("dual_tor", "true"),
                ],
            ),
        ] {
            let settings = settings.map(|(k, v)| (k.to_string(), v.to_string()));
            let topo = presets::build(preset, &settings).unwrap();
            let mut paths = PathFinder::new(&topo);
            let gpus = topo.gpus();
            let mut down = LinkState::new(&topo);
            let first = paths.distances(&down, gpus[0]);
            let g = &paths.graph;
            let s0 = paths.dist_sets[first].sources[0];
            for s in (0..g.switch_count() as u32).step_by(7).chain([s0]) {
                down.set_cable(g.neighbours(s)[0].inbound, LinkCondition::Down);
            }
            let mut compared = 0;
            for state in [LinkState::new(&topo), down] {
                for &dst in gpus.iter().step_by(gpus.len() / 24) {
                    let i = paths.distances(&state, dst);
                    let t = paths.toward(&state, gpus[0], dst, i);
                    for ui in 0..paths.graph.switch_count() as u32 {
                        if t.dist.dist[ui as usize] != 1 {
                            continue;
                        }
                        let (mut found, mut scanned) = (Hops::default(), Hops::default());
                        t.hops_to_sources(ui, &mut found);
                        t.closer_switches(ui, 1, true, |l, e| scanned.push(l, e));
                        assert_eq!(found.links, scanned.links, "{preset}: {dst:?} at {ui}");
                        assert_eq!(found.ends, scanned.ends, "{preset}: {dst:?} at {ui}");
                        compared += 1;
                    }
                }
            }
            assert!(compared > 100, "{preset}: switches compared: {compared}");
        }
    }
}
