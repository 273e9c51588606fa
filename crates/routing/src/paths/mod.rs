//! Equal-cost paths without enumerating them. Paths are the equal-cost shortest paths of the
//! forwarding rule (see `fabricsim_topology::reach`): between hosts, source GPU → one of its
//! NICs → switches → a NIC of the destination GPU → destination GPU; inside a host, over the
//! NVSwitch. For each destination, a backward BFS over the switches gives every switch's
//! distance to the destination's NICs (cached per set of attachment switches, so the GPUs of a
//! rack share one BFS, and dropped when the link state changes). A switch's candidate next
//! hops are its up links to switches one step closer, or to the destination's NICs; those of
//! switches with many neighbours are cached with the distances, each distinct list stored
//! once, so a cluster switch filters its two hundred neighbours once per destination rack
//! rather than once per flow. That is the closed form of a Clos (an
//! up-port choice per tier) and works on any graph.
//!
//! The hot path is a walk: per hop, one lookup of the node's next hops, which carry where each
//! leads and its latency, so a route reads neither the link table nor the node table. Each
//! end is one record (`endpoint.rs`); between GPUs with one NIC port each, with every link
//! up, the walk starts at the source's switch and ends at the destination's.
//!
//! - `graph.rs`: the compact adjacency; `cache.rs`: distances and next-hop lists kept between
//!   routes; `toward.rs`: costs and next hops toward one destination; `endpoint.rs`: what a
//!   route reads of its ends.

mod cache;
mod dag;
mod endpoint;
mod graph;
mod spread;
mod toward;

use std::cell::RefCell;
use std::collections::HashMap;

use rustc_hash::FxHashMap;

use fabricsim_topology::{LinkId, Nanos, NodeId, NodeKind, Topology};

use crate::link_state::LinkState;
use crate::router::{Route, RouteError};
use cache::{Distances, HopPool};
use endpoint::{Endpoint, NO_DISTANCES};
use graph::{Graph, NOT_A_SWITCH};
use spread::SwitchSpreads;
use toward::{Found, Hops, Toward};

/// Picks a next hop by index from (node, next hops that are up, planned next hops).
pub type PlannedChooser<'a> = dyn FnMut(NodeId, &[LinkId], &[LinkId]) -> u64 + 'a;

/// The equal-cost path machinery of one topology, shared by every policy: per-destination
/// distances (cached), next hops, hop-by-hop walks, spreads and path enumeration.
pub struct PathFinder<'t> {
    topo: &'t Topology,
    graph: Graph,
    pool: RefCell<HopPool>,
    walk_scratch: WalkScratch,
    /// Per node, what a route reads of its ends (see `endpoint.rs`), with the index of the
    /// distances toward it: one read per end.
    ends: Vec<Endpoint>,
    /// Per node, for a GPU whose one link inside its host is to an NVSwitch: that link and the
    /// NVSwitch, with the link's latency (`NO_PORT` for any other node). Two such GPUs on one
    /// NVSwitch are joined by the first's link and the second's reversed (a cable's two
    /// directions, which the topology builder lays at one latency).
    nv_ports: Vec<NvPort>,
    /// Distances per set of attachment switches (shared by the GPUs of a rack); a node's
    /// index into them is in its [`Endpoint`]. Dropped when the link state changes.
    dist_sets: Vec<Distances>,
    dist_index: FxHashMap<Vec<u32>, u32>,
    /// Levels of the searches from sets of parents (see [`cache::parents`]), by the set: the
    /// sets of attachment switches with these parents take their distances from them.
    parent_levels: FxHashMap<Vec<u32>, Vec<u16>>,
    /// The switch-to-switch part of spreads between single-homed GPUs, by their switches.
    switch_spreads: SwitchSpreads,
    cache_version: u64,
}

/// A GPU's link to its NVSwitch (see `PathFinder::nv_ports`).
#[derive(Clone, Copy)]
struct NvPort {
    link: LinkId,
    nvswitch: NodeId,
    latency: Nanos,
}

/// No NVSwitch port.
const NO_PORT: NvPort = NvPort {
    link: LinkId(u32::MAX),
    nvswitch: NodeId(u32::MAX),
    latency: Nanos(0),
};

/// A walk's buffers, kept between walks so that routing allocates only the path it returns.
#[derive(Default)]
struct WalkScratch {
    links: Vec<LinkId>,
    hops: Hops,
    planned: Vec<LinkId>,
}

/// A path inside a host: a direct link, or two through an NVSwitch (held inline: every
/// NVLink leg of a collective is routed).
#[derive(Clone, Copy, Debug)]
pub struct HostPath {
    links: [LinkId; 2],
    len: usize,
    latency: Nanos,
}

impl HostPath {
    pub fn links(&self) -> &[LinkId] {
        &self.links[..self.len]
    }

    /// Its propagation latency.
    pub fn latency(&self) -> Nanos {
        self.latency
    }
}

impl<'t> PathFinder<'t> {
    pub fn new(topo: &'t Topology) -> Self {
        let graph = Graph::new(topo);
        let mut ends = vec![Endpoint::NONE; topo.node_count()];
        for (i, &g) in topo.gpus().iter().enumerate() {
            ends[g.index()] = Endpoint::gpu(topo, &graph, g, i as u32);
        }
        let mut nv_ports = vec![NO_PORT; topo.node_count()];
        for &g in topo.gpus() {
            let mut inside = topo.out_links(g).iter().filter(|&&l| {
                matches!(
                    topo.kind(topo.link(l).dst),
                    NodeKind::NvSwitch | NodeKind::Gpu
                )
            });
            if let (Some(&l), None) = (inside.next(), inside.next()) {
                let v = topo.link(l).dst;
                if topo.kind(v) == NodeKind::NvSwitch {
                    nv_ports[g.index()] = NvPort {
                        link: l,
                        nvswitch: v,
                        latency: topo.link(l).latency,
                    };
                }
            }
        }
        PathFinder {
            topo,
            graph,
            pool: RefCell::default(),
            walk_scratch: WalkScratch::default(),
            ends,
            nv_ports,
            dist_sets: Vec::new(),
            dist_index: FxHashMap::default(),
            parent_levels: FxHashMap::default(),
            switch_spreads: SwitchSpreads::default(),
            cache_version: 0,
        }
    }

    pub fn topology(&self) -> &'t Topology {
        self.topo
    }

    /// For a GPU with a single way onto the fabric, that way: its link to its NIC, the NIC's
    /// link to its switch, and the switch (the way off the fabric to it is the same two links
    /// reversed). `None` for a GPU with several NICs or ports, or a node that is not a GPU.
    pub fn single_homed_access(&self, gpu: NodeId) -> Option<(LinkId, LinkId, NodeId)> {
        let e = &self.ends[gpu.index()];
        e.single_homed()
            .then(|| (e.to_nic, e.port, self.topo.link(e.port).dst))
    }

    /// The position of `gpu` among the fabric's GPUs (what destination-mod-k pinning uses).
    pub fn gpu_ordinal(&self, gpu: NodeId) -> u32 {
        self.ends[gpu.index()].ordinal
    }

    /// An error unless `n` is a GPU.
    pub fn check_gpu(&self, n: NodeId) -> Result<(), RouteError> {
        if self.ends[n.index()].is_gpu() {
            Ok(())
        } else {
            Err(RouteError::NotAGpu(self.topo.node_name(n).to_string()))
        }
    }

    fn no_path(&self, src: NodeId, dst: NodeId) -> RouteError {
        RouteError::NoPath {
            src: self.topo.node_name(src).to_string(),
            dst: self.topo.node_name(dst).to_string(),
        }
    }

    /// Drops what was found under another link state.
    fn sync_caches(&mut self, state: &LinkState) {
        if state.version() != self.cache_version {
            self.dist_sets.clear();
            self.dist_index.clear();
            self.parent_levels.clear();
            self.ends.iter_mut().for_each(|e| e.dist = NO_DISTANCES);
            self.pool.get_mut().clear();
            self.switch_spreads.clear();
            self.cache_version = state.version();
        }
    }

    /// Switch distances (in switch-to-switch links) to the switches that reach `dst`'s NICs:
    /// their index in `dist_sets`.
    fn distances(&mut self, state: &LinkState, dst: NodeId) -> usize {
        self.sync_caches(state);
        let known = self.ends[dst.index()].dist;
        if known != NO_DISTANCES {
            return known as usize;
        }
        let topo = self.topo;
        let g = &self.graph;
        let mut sources: Vec<u32> = Vec::new();
        for &(l, nic) in g.targets(dst) {
            if topo.kind(nic.node) != NodeKind::Nic || !state.is_up(l.reverse()) {
                continue;
            }
            for &(m, s) in g.targets(nic.node) {
                // The switch must be able to send to the NIC: the reverse direction is up.
                if s.sw != graph::NOT_A_SWITCH && state.is_up(m.reverse()) {
                    sources.push(s.sw);
                }
            }
        }
        sources.sort_unstable();
        sources.dedup();
        if let Some(&i) = self.dist_index.get(&sources) {
            self.ends[dst.index()].dist = i;
            return i as usize;
        }
        let parents = cache::parents(g, state, &sources);
        let found = if parents.is_empty() {
            Distances::search(g, state, &sources)
        } else {
            let levels = self
                .parent_levels
                .entry(parents)
                .or_insert_with_key(|p| cache::levels(g, state, p));
            Distances::from_parents(levels, &sources)
        };
        let i = self.dist_sets.len() as u32;
        self.dist_sets.push(found);
        self.dist_index.insert(sources, i);
        self.ends[dst.index()].dist = i;
        i as usize
    }

    fn toward<'a>(
        &'a self,
        state: &'a LinkState,
        src: NodeId,
        dst: NodeId,
        dist: usize,
    ) -> Toward<'a> {
        Toward {
            topo: self.topo,
            state,
            src,
            dst,
            graph: &self.graph,
            pool: &self.pool,
            dist: &self.dist_sets[dist],
        }
    }

    /// The NVLink path inside a host, if `src` and `dst` share an NVSwitch or a direct link.
    pub fn nvlink_path(&self, state: &LinkState, src: NodeId, dst: NodeId) -> Option<HostPath> {
        let topo = self.topo;
        let (a, b) = (self.ends[src.index()], self.ends[dst.index()]);
        let same_host = if a.is_gpu() && b.is_gpu() {
            a.host == b.host
        } else {
            topo.host_of(src) == topo.host_of(dst)
        };
        if !same_host {
            return None;
        }
        let (a, b) = (self.nv_ports[src.index()], self.nv_ports[dst.index()]);
        if a.link != NO_PORT.link && b.link != NO_PORT.link && a.nvswitch == b.nvswitch {
            // What the search below finds, without reading the NVSwitch's links.
            let (up, down) = (a.link, b.link.reverse());
            return (state.is_up(up) && state.is_up(down)).then_some(HostPath {
                links: [up, down],
                len: 2,
                latency: Nanos(a.latency.0 + b.latency.0),
            });
        }
        for &l in topo.out_links(src) {
            if !state.is_up(l) {
                continue;
            }
            let v = topo.link(l).dst;
            if v == dst {
                return Some(HostPath {
                    links: [l, l],
                    len: 1,
                    latency: topo.link(l).latency,
                });
            }
            if topo.kind(v) == NodeKind::NvSwitch {
                if let Some(&m) = topo
                    .out_links(v)
                    .iter()
                    .find(|&&m| topo.link(m).dst == dst && state.is_up(m))
                {
                    return Some(HostPath {
                        links: [l, m],
                        len: 2,
                        latency: Nanos(topo.link(l).latency.0 + topo.link(m).latency.0),
                    });
                }
            }
        }
        None
    }

    /// The propagation latency of a path.
    pub fn latency_of(&self, links: &[LinkId]) -> Nanos {
        Nanos(links.iter().map(|&l| self.topo.link(l).latency.0).sum())
    }

    /// Walks from `src` to `dst` hop by hop; at each node with several equal-cost next hops
    /// (in link-id order), `choose` picks one by index (taken modulo their number). Nodes
    /// with a single next hop are not asked.
    pub fn walk(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
        choose: &mut dyn FnMut(NodeId, &[LinkId]) -> u64,
    ) -> Result<Route, RouteError> {
        self.walk_planned(state, src, dst, false, &mut |u, hops, _| choose(u, hops))
    }

    /// [`Self::walk`], with the chooser also given, if `planned`, the switch's *planned* next
    /// hops: those it would have if none of its inter-switch links were down (empty where not a
    /// switch, and always empty if not `planned`).
    pub fn walk_planned(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
        planned: bool,
        choose: &mut PlannedChooser<'_>,
    ) -> Result<Route, RouteError> {
        let mut links = Vec::new();
        let latency = self.walk_planned_into(state, src, dst, planned, choose, &mut links)?;
        Ok(Route::Path {
            links: links.into_iter().map(|(l, _)| l).collect(),
            latency,
        })
    }

    /// [`Self::walk_planned`], appending the path's links to `out` (each carrying all of the
    /// flow: weight 1) and returning its latency: the routing hot path allocates nothing.
    pub fn walk_planned_into(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
        planned: bool,
        choose: &mut PlannedChooser<'_>,
        out: &mut Vec<(LinkId, f64)>,
    ) -> Result<Nanos, RouteError> {
        let dist = self.distances(state, dst);
        let mut scratch = std::mem::take(&mut self.walk_scratch);
        let WalkScratch {
            links,
            hops,
            planned: planned_hops,
        } = &mut scratch;
        links.clear();
        // Left empty unless asked for (a previous walk may have filled it).
        planned_hops.clear();
        let t = self.toward(state, src, dst, dist);
        let (from, to) = (self.ends[src.index()], self.ends[dst.index()]);
        // Both ends single-homed: the walk runs from the source's switch to the destination's
        // over switches only, and the host sides are the endpoints' own links.
        let direct = from.single_homed() && to.single_homed() && src != dst && state.all_up();
        let (mut u, mut ui) = (src, self.graph.switch_index[src.index()]);
        let (mut latency, mut at_source) = (0, !direct);
        // Every hop is one link closer to the destination.
        let mut cost = if direct {
            links.extend([from.to_nic, from.port]);
            latency = u64::from(from.to_nic_latency) + u64::from(from.port_latency);
            (u, ui) = (self.graph.switch_nodes[from.sw as usize], from.sw);
            // Switches find their next hops without it.
            Some(u32::MAX)
        } else if ui == NOT_A_SWITCH && self.topo.kind(src) == NodeKind::Gpu {
            t.source_hops_into(hops)
        } else {
            hops.clear();
            let c = t.cost(src);
            if let Some(c) = c {
                t.next_hops_into(src, ui, c, hops);
            }
            c
        }
        .unwrap_or(0);
        loop {
            if direct && ui == to.sw {
                links.extend([to.port.reverse(), to.to_nic.reverse()]);
                latency += u64::from(to.port_latency) + u64::from(to.to_nic_latency);
                u = dst;
                break;
            }
            // The source's next hops are in the buffer already (a walk from a GPU to itself
            // comes back to it, and must not take them again).
            let found = if std::mem::take(&mut at_source) {
                Found::InBuffer
            } else {
                t.next_hops_into(u, ui, cost, hops)
            };
            let pool = self.pool.borrow();
            let (next, ends) = found.read(hops, &pool);
            let i = match next.len() {
                0 => break,
                1 => 0,
                n => {
                    if planned {
                        t.planned_hops_into(ui, planned_hops);
                    }
                    (choose(u, next, planned_hops) % n as u64) as usize
                }
            };
            let (l, end) = (next[i], ends[i]);
            drop(pool);
            links.push(l);
            (u, ui) = (end.node, end.sw);
            cost -= 1;
            latency += if end.latency != u32::MAX {
                u64::from(end.latency)
            } else {
                self.topo.link(l).latency.0
            };
        }
        self.walk_scratch = scratch;
        if u != dst {
            return Err(self.no_path(src, dst));
        }
        out.extend(self.walk_scratch.links.iter().map(|&l| (l, 1.0)));
        Ok(Nanos(latency))
    }

    /// Up to `limit` equal-cost paths from `src` to `dst` (in link-id order), and how many
    /// there are in all.
    pub fn equal_cost_paths(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
        limit: usize,
    ) -> Result<(Vec<Vec<LinkId>>, u64), RouteError> {
        self.check_gpu(src)?;
        self.check_gpu(dst)?;
        if let Some(path) = self.nvlink_path(state, src, dst) {
            return Ok((vec![path.links().to_vec()], 1));
        }
        let dag = self.shortest_path_dag(state, src, dst)?;
        let hops: HashMap<NodeId, &Vec<LinkId>> = dag.iter().map(|(u, h)| (*u, h)).collect();
        let mut count: HashMap<NodeId, u64> = HashMap::new();
        for (u, h) in dag.iter().rev() {
            let c = if *u == dst {
                1
            } else {
                h.iter()
                    .map(|&l| count[&self.topo.link(l).dst])
                    .fold(0u64, u64::saturating_add)
            };
            count.insert(*u, c);
        }
        let mut paths = Vec::new();
        let mut stack: Vec<LinkId> = Vec::new();
        fn walk(
            topo: &Topology,
            hops: &HashMap<NodeId, &Vec<LinkId>>,
            u: NodeId,
            dst: NodeId,
            stack: &mut Vec<LinkId>,
            paths: &mut Vec<Vec<LinkId>>,
            limit: usize,
        ) {
            if paths.len() >= limit {
                return;
            }
            if u == dst {
                paths.push(stack.clone());
                return;
            }
            for &l in hops[&u].iter() {
                stack.push(l);
                walk(topo, hops, topo.link(l).dst, dst, stack, paths, limit);
                stack.pop();
            }
        }
        walk(self.topo, &hops, src, dst, &mut stack, &mut paths, limit);
        Ok((paths, count[&src]))
    }
}
