//! Routing a flow key to a path (or, for spraying, to a weighted set of links) under a policy,
//! over the links that are up.
//!
//! Paths are the equal-cost shortest paths of the forwarding rule (see
//! `fabricsim_topology::reach`): between hosts, source GPU → one of its NICs → switches →
//! a NIC of the destination GPU → destination GPU; inside a host, over the NVSwitch. They are
//! found without enumerating: for each destination, a backward BFS over the switches gives every
//! switch's distance to the destination's NICs (cached per set of attachment switches, so the
//! GPUs of a rack share one BFS, and dropped when the link state changes). A switch's candidate
//! next hops are its up links to switches one step closer, or to the destination's NICs; those
//! of switches with many neighbours are cached with the distances, so a cluster switch filters
//! its two hundred neighbours once per destination rack rather than once per flow.
//! That is the closed form of a Clos (an up-port choice per tier) and works on any graph.
//!
//! The choice among candidates is made **hop by hop**, as switches make it:
//! - `ecmp`: each node hashes the 5-tuple with its own seed (or all with one seed, which
//!   reproduces hash polarization);
//! - `eecmp`: the same with the destination QP in the hash;
//! - `pin`: destination-mod-k: candidate `ordinal(dst) mod k` at every hop, a deterministic
//!   per-destination path, as Meta's path pinning; `k` counts the switch's planned next hops
//!   (as if no inter-switch link were down), and a flow whose pinned link is down falls back
//!   to ECMP among the links left, as the BGP underlay does;
//! - `spray`: no choice — the flow is spread evenly over all equal-cost paths, each link
//!   weighted by the share of paths that cross it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use fabricsim_topology::{LinkId, Nanos, NodeId, NodeKind, Topology};

use crate::key::{mix, FlowKey};
use crate::link_state::LinkState;

/// How a switch picks among equal-cost next hops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Ecmp,
    EEcmp,
    Pin,
    Spray,
}

impl Policy {
    pub const NAMES: [&'static str; 4] = ["ecmp", "eecmp", "pin", "spray"];

    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "ecmp" => Some(Policy::Ecmp),
            "eecmp" => Some(Policy::EEcmp),
            "pin" => Some(Policy::Pin),
            "spray" => Some(Policy::Spray),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Policy::Ecmp => "ecmp",
            Policy::EEcmp => "eecmp",
            Policy::Pin => "pin",
            Policy::Spray => "spray",
        }
    }
}

/// Hash seeds. By default every node gets its own seed derived from `seed` and its id; with
/// `polarized` all nodes use `seed` itself, so consecutive tiers make correlated choices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashConfig {
    pub seed: u64,
    pub polarized: bool,
}

/// Where a flow's bytes go.
#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    /// One path, as directed links from source to destination.
    Path { links: Vec<LinkId>, latency: Nanos },
    /// Bytes spread over several paths: each link with the fraction of the flow it carries.
    Spread {
        links: Vec<(LinkId, f64)>,
        latency: Nanos,
    },
}

impl Route {
    /// Each link with the fraction of the flow's rate it carries.
    pub fn incidence(&self) -> Vec<(LinkId, f64)> {
        match self {
            Route::Path { links, .. } => links.iter().map(|&l| (l, 1.0)).collect(),
            Route::Spread { links, .. } => links.clone(),
        }
    }

    /// Propagation latency (for a spread, of its slowest path).
    pub fn latency(&self) -> Nanos {
        match self {
            Route::Path { latency, .. } | Route::Spread { latency, .. } => *latency,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("`{0}` is not a GPU")]
    NotAGpu(String),
    #[error("no path from `{src}` to `{dst}` over the links that are up")]
    NoPath { src: String, dst: String },
}

const FAR: u16 = u16::MAX;

/// Picks a next hop by index from (node, next hops that are up, planned next hops).
pub type PlannedChooser<'a> = dyn FnMut(NodeId, &[LinkId], &[LinkId]) -> u64 + 'a;

/// The equal-cost path machinery of one topology, shared by every policy: per-destination
/// distances (cached), next hops, hop-by-hop walks, spreads and path enumeration.
pub struct PathFinder<'t> {
    topo: &'t Topology,
    switch_index: Vec<u32>,
    switch_count: usize,
    /// Switch-to-switch adjacency by switch index, for the distance BFS: for switch `t`, each
    /// neighbour switch `s` with the link `s -> t` (whose state decides if `s` can reach `t`).
    sw_offsets: Vec<u32>,
    sw_adj: Vec<(u32, LinkId)>,
    /// Per node, its out links (in the topology's order) with the node each leads to, so a
    /// walk reads one short run per node instead of the link table.
    out_offsets: Vec<u32>,
    out: Vec<(LinkId, NodeId)>,
    /// Per switch index: its index among the wide switches (more than `SCAN_DEGREE` switch
    /// neighbours), whose next hops are cached; `u32::MAX` for the others.
    wide: Vec<u32>,
    wide_count: usize,
    pool: RefCell<HopPool>,
    walk_scratch: WalkScratch,
    /// Per link: where it leads and its latency in ns (`u32::MAX`: look it up in the
    /// topology), 8 bytes where the link table holds 24, for the walk's one read per hop.
    link_hop: Vec<(NodeId, u32)>,
    gpu_ordinal: Vec<u32>,
    /// Distances per set of attachment switches (shared by the GPUs of a rack), and per
    /// destination GPU node, so that the routing hot path is one array index. Both are dropped
    /// when the link state changes.
    dist_cache: HashMap<Vec<u32>, Rc<Distances>>,
    dist_by_dst: Vec<Option<Rc<Distances>>>,
    cache_version: u64,
}

/// Every switch's distance toward one set of attachment switches, and the next hops of the
/// switches with many neighbours as found so far (a switch's next hops depend only on these
/// distances and the link state, so the flows to all GPUs of a rack share them).
struct Distances {
    /// Per switch index: switch-to-switch links to an attachment switch, or `FAR`.
    dist: Vec<u16>,
    /// Per *wide* switch (more than `SCAN_DEGREE` switch neighbours), by its wide index: where
    /// its next hops start in the path finder's [`HopPool`], `NOT_YET` until first asked for,
    /// or `AT_DST` for an attachment switch. Empty until a first wide switch is asked for.
    hops: RefCell<Vec<u32>>,
}

/// Next-hop lists of wide switches, each stored once however many destinations share it: a
/// cluster switch sends to every other zone over the same uplinks, an aggregation switch to
/// every rack of a zone over the same downlinks. So the lists stay few and in cache, and a
/// destination's entry is a 4-byte index. Each list is stored after its length; dropped with
/// the distances when the link state changes.
#[derive(Default)]
struct HopPool {
    links: Vec<LinkId>,
    index: HashMap<Vec<LinkId>, u32>,
    scratch: Vec<LinkId>,
}

impl HopPool {
    /// Where the list in `scratch` starts in `links`, stored there if new.
    fn intern_scratch(&mut self) -> u32 {
        if let Some(&at) = self.index.get(&self.scratch) {
            return at;
        }
        let at = self.links.len() as u32;
        self.links.push(LinkId(self.scratch.len() as u32));
        self.links.extend_from_slice(&self.scratch);
        self.index.insert(self.scratch.clone(), at);
        at
    }

    fn list(&self, at: u32) -> &[LinkId] {
        let at = at as usize;
        &self.links[at + 1..][..self.links[at].0 as usize]
    }

    fn clear(&mut self) {
        self.links.clear();
        self.index.clear();
    }
}

/// A walk's buffers, kept between walks so that routing allocates only the path it returns.
#[derive(Default)]
struct WalkScratch {
    links: Vec<LinkId>,
    hops: Vec<LinkId>,
    planned: Vec<LinkId>,
}

const NOT_YET: u32 = u32::MAX;
const AT_DST: u32 = u32::MAX - 1;
/// Switches with at most this many switch neighbours (a rack switch's uplinks) find their next
/// hops by a scan as fast as a cache lookup; only the others' are cached.
const SCAN_DEGREE: u32 = 64;

/// The shortest-path DAG toward one destination.
struct Toward<'a> {
    topo: &'a Topology,
    state: &'a LinkState,
    src: NodeId,
    dst: NodeId,
    switch_index: &'a [u32],
    sw_offsets: &'a [u32],
    sw_adj: &'a [(u32, LinkId)],
    out_offsets: &'a [u32],
    out: &'a [(LinkId, NodeId)],
    wide: &'a [u32],
    wide_count: usize,
    pool: &'a RefCell<HopPool>,
    dist: Rc<Distances>,
}

impl Toward<'_> {
    /// `u`'s out links with the node each leads to.
    fn targets(&self, u: NodeId) -> &[(LinkId, NodeId)] {
        &self.out[self.out_offsets[u.index()] as usize..self.out_offsets[u.index() + 1] as usize]
    }

    fn up_targets(&self, u: NodeId) -> impl Iterator<Item = (LinkId, NodeId)> + '_ {
        self.targets(u)
            .iter()
            .copied()
            .filter(|&(l, _)| self.state.is_up(l))
    }

    fn links_to_dst(&self, nic: NodeId) -> bool {
        self.up_targets(nic).any(|(_, v)| v == self.dst)
    }

    fn switch_cost(&self, s: NodeId) -> Option<u32> {
        let d = self.dist.dist[self.switch_index[s.index()] as usize];
        (d != FAR).then(|| u32::from(d) + 2)
    }

    /// Links from `u` to its cost; `None` when the destination is not reachable from `u`.
    fn cost(&self, u: NodeId) -> Option<u32> {
        if u == self.dst {
            return Some(0);
        }
        match self.topo.kind(u) {
            NodeKind::Switch(_) => self.switch_cost(u),
            NodeKind::Nic if self.links_to_dst(u) => Some(1),
            NodeKind::Nic if self.is_src_nic(u) => self
                .up_targets(u)
                .filter(|(_, v)| self.topo.kind(*v).is_switch())
                .filter_map(|(_, v)| self.switch_cost(v))
                .min()
                .map(|c| c + 1),
            NodeKind::Gpu if u == self.src => self
                .up_targets(u)
                .filter(|(_, v)| self.topo.kind(*v) == NodeKind::Nic)
                .filter_map(|(_, v)| self.cost(v))
                .min()
                .map(|c| c + 1),
            _ => None,
        }
    }

    fn is_src_nic(&self, nic: NodeId) -> bool {
        self.targets(self.src).iter().any(|&(_, n)| n == nic)
    }

    /// The equal-cost next hops of `u`, in link-id order. Hosts never forward for others:
    /// a switch hands traffic only to switches or to the destination's NICs.
    fn next_hops(&self, u: NodeId) -> Vec<LinkId> {
        let mut hops = Vec::new();
        self.next_hops_into(u, &mut hops);
        hops
    }

    /// [`Self::next_hops`] into a reused buffer (the routing hot path allocates nothing).
    fn next_hops_into(&self, u: NodeId, hops: &mut Vec<LinkId>) {
        hops.clear();
        let ui = self.switch_index[u.index()];
        if ui != u32::MAX {
            return self.switch_next_hops(ui, u, hops);
        }
        let Some(c) = self.cost(u).filter(|&c| c > 0) else {
            return;
        };
        let from_switch = self.topo.kind(u).is_switch();
        hops.extend(
            self.up_targets(u)
                .filter(|&(_, v)| {
                    let allowed = match self.topo.kind(v) {
                        NodeKind::Switch(_) => true,
                        NodeKind::Nic => !from_switch || self.links_to_dst(v),
                        NodeKind::Gpu => v == self.dst,
                        NodeKind::NvSwitch => false,
                    };
                    allowed && self.cost(v) == Some(c - 1)
                })
                .map(|(l, _)| l),
        );
    }

    /// The next hops a switch `u` would have toward the destination if none of its links to
    /// other switches were down (distances as they are): what a static assignment, such as
    /// path pinning, was computed over. Empty where `u` is not a switch or is next to the
    /// destination.
    fn planned_hops_into(&self, u: NodeId, hops: &mut Vec<LinkId>) {
        hops.clear();
        let ui = self.switch_index[u.index()];
        if ui == u32::MAX {
            return;
        }
        let d = self.dist.dist[ui as usize];
        if d != FAR && d > 0 {
            self.closer_switches(ui, d, false, hops);
        }
    }

    /// The links from switch `ui` (at distance `d > 0`) to the switches at distance `d - 1`,
    /// only those that are up if `up_only`.
    fn closer_switches(&self, ui: u32, d: u16, up_only: bool, hops: &mut Vec<LinkId>) {
        let (a, b) = (
            self.sw_offsets[ui as usize] as usize,
            self.sw_offsets[ui as usize + 1] as usize,
        );
        hops.reserve(b - a);
        for &(s, s_to_u) in &self.sw_adj[a..b] {
            // The adjacency holds `s -> u`; the hop is its reverse, `u -> s`.
            let hop = s_to_u.reverse();
            if self.dist.dist[s as usize] == d - 1 && (!up_only || self.state.is_up(hop)) {
                hops.push(hop);
            }
        }
    }

    /// `next_hops` for a switch, over the compact switch adjacency; a wide switch's from the
    /// cache.
    fn switch_next_hops(&self, ui: u32, u: NodeId, hops: &mut Vec<LinkId>) {
        let wi = self.wide[ui as usize];
        if wi == u32::MAX {
            return match self.dist.dist[ui as usize] {
                FAR => {}
                0 => self.hops_to_dst_nics(u, hops),
                d => self.closer_switches(ui, d, true, hops),
            };
        }
        let mut at = self.dist.hops.borrow_mut();
        if at.is_empty() {
            *at = vec![NOT_YET; self.wide_count];
        }
        let mut pool = self.pool.borrow_mut();
        if at[wi as usize] == NOT_YET {
            at[wi as usize] = match self.dist.dist[ui as usize] {
                0 => AT_DST,
                d => {
                    let mut list = std::mem::take(&mut pool.scratch);
                    list.clear();
                    if d != FAR {
                        self.closer_switches(ui, d, true, &mut list);
                    }
                    pool.scratch = list;
                    pool.intern_scratch()
                }
            };
        }
        match at[wi as usize] {
            AT_DST => self.hops_to_dst_nics(u, hops),
            start => hops.extend_from_slice(pool.list(start)),
        }
    }

    /// From an attachment switch `u` down to the destination's NICs that can deliver to it.
    fn hops_to_dst_nics(&self, u: NodeId, hops: &mut Vec<LinkId>) {
        for &(_, nic) in self.targets(self.dst) {
            if self.topo.kind(nic) != NodeKind::Nic || !self.links_to_dst(nic) {
                continue;
            }
            for &(l, v) in self.targets(nic) {
                let down = l.reverse();
                if v == u && self.state.is_up(down) {
                    hops.push(down);
                }
            }
        }
        hops.sort_unstable();
    }
}

impl<'t> PathFinder<'t> {
    pub fn new(topo: &'t Topology) -> Self {
        let mut switch_index = vec![u32::MAX; topo.node_count()];
        let switch_nodes: Vec<NodeId> = topo.switches().map(|(s, _)| s).collect();
        for (i, s) in switch_nodes.iter().enumerate() {
            switch_index[s.index()] = i as u32;
        }
        let switch_count = switch_nodes.len();
        let mut sw_offsets = Vec::with_capacity(switch_count + 1);
        let mut sw_adj = Vec::new();
        sw_offsets.push(0);
        for &t in &switch_nodes {
            for &l in topo.out_links(t) {
                let s = switch_index[topo.link(l).dst.index()];
                if s != u32::MAX {
                    sw_adj.push((s, l.reverse()));
                }
            }
            sw_offsets.push(sw_adj.len() as u32);
        }
        let mut wide = vec![u32::MAX; switch_count];
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
            out.extend(topo.out_links(u).iter().map(|&l| (l, topo.link(l).dst)));
            out_offsets.push(out.len() as u32);
        }
        let mut gpu_ordinal = vec![u32::MAX; topo.node_count()];
        for (i, g) in topo.gpus().iter().enumerate() {
            gpu_ordinal[g.index()] = i as u32;
        }
        PathFinder {
            topo,
            switch_index,
            switch_count,
            sw_offsets,
            sw_adj,
            out_offsets,
            out,
            wide,
            wide_count,
            pool: RefCell::default(),
            walk_scratch: WalkScratch::default(),
            link_hop: topo
                .links()
                .iter()
                .map(|l| (l.dst, u32::try_from(l.latency.0).unwrap_or(u32::MAX)))
                .collect(),
            gpu_ordinal,
            dist_cache: HashMap::new(),
            dist_by_dst: vec![None; topo.node_count()],
            cache_version: 0,
        }
    }

    pub fn topology(&self) -> &'t Topology {
        self.topo
    }

    /// The position of `gpu` among the fabric's GPUs (what destination-mod-k pinning uses).
    pub fn gpu_ordinal(&self, gpu: NodeId) -> u32 {
        self.gpu_ordinal[gpu.index()]
    }

    /// An error unless `n` is a GPU.
    pub fn check_gpu(&self, n: NodeId) -> Result<(), RouteError> {
        if self.topo.kind(n) == NodeKind::Gpu {
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

    /// Switch distances (in switch-to-switch links) to the switches that reach `dst`'s NICs.
    fn distances(&mut self, state: &LinkState, dst: NodeId) -> Rc<Distances> {
        if state.version() != self.cache_version {
            self.dist_cache.clear();
            self.dist_by_dst.iter_mut().for_each(|d| *d = None);
            self.pool.get_mut().clear();
            self.cache_version = state.version();
        }
        if let Some(d) = &self.dist_by_dst[dst.index()] {
            return Rc::clone(d);
        }
        let topo = self.topo;
        let mut sources: Vec<u32> = Vec::new();
        for &l in topo.out_links(dst) {
            let nic = topo.link(l).dst;
            if topo.kind(nic) != NodeKind::Nic || !state.is_up(l.reverse()) {
                continue;
            }
            for &m in topo.out_links(nic) {
                let s = topo.link(m).dst;
                // The switch must be able to send to the NIC: the reverse direction is up.
                if topo.kind(s).is_switch() && state.is_up(m.reverse()) {
                    sources.push(self.switch_index[s.index()]);
                }
            }
        }
        sources.sort_unstable();
        sources.dedup();
        if let Some(d) = self.dist_cache.get(&sources) {
            let d = Rc::clone(d);
            self.dist_by_dst[dst.index()] = Some(Rc::clone(&d));
            return d;
        }
        let mut dist = vec![FAR; self.switch_count];
        let mut frontier: Vec<u32> = sources.clone();
        for &s in &sources {
            dist[s as usize] = 0;
        }
        let mut level = 0u16;
        let mut next = Vec::new();
        while !frontier.is_empty() {
            level += 1;
            for &t in &frontier {
                let (a, b) = (
                    self.sw_offsets[t as usize] as usize,
                    self.sw_offsets[t as usize + 1] as usize,
                );
                for &(s, s_to_t) in &self.sw_adj[a..b] {
                    if dist[s as usize] == FAR && state.is_up(s_to_t) {
                        dist[s as usize] = level;
                        next.push(s);
                    }
                }
            }
            std::mem::swap(&mut frontier, &mut next);
            next.clear();
        }
        let dist = Rc::new(Distances {
            dist,
            hops: RefCell::default(),
        });
        self.dist_cache.insert(sources, Rc::clone(&dist));
        self.dist_by_dst[dst.index()] = Some(Rc::clone(&dist));
        dist
    }

    fn toward<'a>(
        &'a self,
        state: &'a LinkState,
        src: NodeId,
        dst: NodeId,
        dist: Rc<Distances>,
    ) -> Toward<'a> {
        Toward {
            topo: self.topo,
            state,
            src,
            dst,
            switch_index: &self.switch_index,
            sw_offsets: &self.sw_offsets,
            sw_adj: &self.sw_adj,
            out_offsets: &self.out_offsets,
            out: &self.out,
            wide: &self.wide,
            wide_count: self.wide_count,
            pool: &self.pool,
            dist,
        }
    }

    /// The NVLink path inside a host, if `src` and `dst` share an NVSwitch or a direct link.
    pub fn nvlink_path(&self, state: &LinkState, src: NodeId, dst: NodeId) -> Option<Vec<LinkId>> {
        let topo = self.topo;
        if topo.host_of(src) != topo.host_of(dst) {
            return None;
        }
        for &l in topo.out_links(src) {
            if !state.is_up(l) {
                continue;
            }
            let v = topo.link(l).dst;
            if v == dst {
                return Some(vec![l]);
            }
            if topo.kind(v) == NodeKind::NvSwitch {
                if let Some(&m) = topo
                    .out_links(v)
                    .iter()
                    .find(|&&m| topo.link(m).dst == dst && state.is_up(m))
                {
                    return Some(vec![l, m]);
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
        let dist = self.distances(state, dst);
        let mut scratch = std::mem::take(&mut self.walk_scratch);
        let WalkScratch {
            links,
            hops,
            planned: planned_hops,
        } = &mut scratch;
        links.clear();
        let t = self.toward(state, src, dst, dist);
        let mut u = src;
        let mut latency = 0;
        loop {
            t.next_hops_into(u, hops);
            let l = match hops.len() {
                0 => break,
                1 => hops[0],
                n => {
                    if planned {
                        t.planned_hops_into(u, planned_hops);
                    }
                    hops[(choose(u, hops, planned_hops) % n as u64) as usize]
                }
            };
            links.push(l);
            let (end, ns) = self.link_hop[l.index()];
            u = end;
            latency += if ns != u32::MAX {
                u64::from(ns)
            } else {
                self.topo.link(l).latency.0
            };
        }
        let route = Route::Path {
            links: links.to_vec(),
            latency: Nanos(latency),
        };
        self.walk_scratch = scratch;
        if u != dst {
            return Err(self.no_path(src, dst));
        }
        Ok(route)
    }

    /// The equal-cost shortest-path DAG from `src` to `dst` over the links that are up: its
    /// nodes in order of decreasing cost to `dst` (a topological order: `src` first, `dst`
    /// last), each with its next hops in link-id order. Every walk from `src` along next hops
    /// is one of the equal-cost paths. For GPUs of different NVLink domains.
    pub fn shortest_path_dag(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
    ) -> Result<Vec<(NodeId, Vec<LinkId>)>, RouteError> {
        let topo = self.topo;
        let dist = self.distances(state, dst);
        let t = self.toward(state, src, dst, dist);
        if t.cost(src).is_none() {
            return Err(self.no_path(src, dst));
        }
        let mut order: Vec<(u32, NodeId)> = vec![(t.cost(src).unwrap_or(0), src)];
        let mut seen = std::collections::BTreeSet::from([src]);
        let mut i = 0;
        while i < order.len() {
            let u = order[i].1;
            for l in t.next_hops(u) {
                let v = topo.link(l).dst;
                if seen.insert(v) {
                    order.push((t.cost(v).unwrap_or(0), v));
                }
            }
            i += 1;
        }
        order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        Ok(order
            .into_iter()
            .map(|(_, u)| (u, t.next_hops(u)))
            .collect())
    }

    /// Bytes spread evenly over every equal-cost path: link weight = share of paths using it.
    pub fn spread(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
    ) -> Result<Route, RouteError> {
        let dag = self.shortest_path_dag(state, src, dst)?;
        let index: HashMap<NodeId, usize> =
            dag.iter().enumerate().map(|(i, (u, _))| (*u, i)).collect();
        let mut to_dst = vec![0f64; dag.len()];
        let mut latency_to_dst = vec![0u64; dag.len()];
        for i in (0..dag.len()).rev() {
            let (u, hops) = &dag[i];
            if *u == dst {
                to_dst[i] = 1.0;
            }
            for &l in hops {
                let j = index[&self.topo.link(l).dst];
                to_dst[i] += to_dst[j];
                latency_to_dst[i] =
                    latency_to_dst[i].max(latency_to_dst[j] + self.topo.link(l).latency.0);
            }
        }
        let total = to_dst[0];
        let mut from_src = vec![0f64; dag.len()];
        from_src[0] = 1.0;
        let mut links = Vec::new();
        for (i, (_, hops)) in dag.iter().enumerate() {
            for &l in hops {
                let j = index[&self.topo.link(l).dst];
                from_src[j] += from_src[i];
                links.push((l, from_src[i] * to_dst[j] / total));
            }
        }
        links.sort_by_key(|&(l, _)| l);
        Ok(Route::Spread {
            links,
            latency: Nanos(latency_to_dst[0]),
        })
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
            return Ok((vec![path], 1));
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

/// Decides where a flow goes between hosts. The built-in policies ([`HashedPolicy`]) choose hop
/// by hop among equal-cost next hops with [`PathFinder::walk`] or spread with
/// [`PathFinder::spread`]; an explicit path table (centralized TE) returns whole paths.
pub trait RoutingPolicy {
    fn name(&self) -> &str;
    /// Whether the route depends on the flow key (false for spraying: every QP of a connection
    /// takes the same spread).
    fn uses_key(&self) -> bool {
        true
    }
    /// Routes `key` between two GPUs of different NVLink domains.
    fn route(
        &self,
        paths: &mut PathFinder<'_>,
        state: &LinkState,
        key: &FlowKey,
    ) -> Result<Route, RouteError>;
}

/// ECMP, E-ECMP, pinning and spraying, with their hash seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashedPolicy {
    pub policy: Policy,
    pub hash: HashConfig,
}

impl HashedPolicy {
    fn node_seed(&self, node: NodeId) -> u64 {
        if self.hash.polarized {
            self.hash.seed
        } else {
            mix(self.hash.seed ^ (u64::from(node.0) << 20))
        }
    }
}

impl RoutingPolicy for HashedPolicy {
    fn name(&self) -> &str {
        self.policy.name()
    }

    fn uses_key(&self) -> bool {
        self.policy != Policy::Spray
    }

    fn route(
        &self,
        paths: &mut PathFinder<'_>,
        state: &LinkState,
        key: &FlowKey,
    ) -> Result<Route, RouteError> {
        let ordinal = u64::from(paths.gpu_ordinal(key.dst));
        let mut choose = |node: NodeId, hops: &[LinkId], planned: &[LinkId]| match self.policy {
            Policy::Ecmp => key.hash5(self.node_seed(node)),
            Policy::EEcmp => key.hash_with_qp(self.node_seed(node)),
            // Pinned over the planned next hops; when the pinned link is down, the switch
            // falls back to ECMP among the links left (the BGP underlay).
            Policy::Pin | Policy::Spray => {
                if planned.is_empty() {
                    return ordinal;
                }
                let pinned = planned[(ordinal % planned.len() as u64) as usize];
                match hops.iter().position(|&h| h == pinned) {
                    Some(i) => i as u64,
                    None => key.hash5(self.node_seed(node)),
                }
            }
        };
        match self.policy {
            Policy::Spray => paths.spread(state, key.src, key.dst),
            _ => paths.walk_planned(
                state,
                key.src,
                key.dst,
                self.policy == Policy::Pin,
                &mut choose,
            ),
        }
    }
}

/// Routes flows over one topology under a policy.
pub struct Router<'t> {
    paths: PathFinder<'t>,
    policy: Box<dyn RoutingPolicy + 't>,
}

impl<'t> Router<'t> {
    /// A router with one of the built-in policies.
    pub fn new(topo: &'t Topology, policy: Policy, hash: HashConfig) -> Self {
        Router::with_policy(topo, Box::new(HashedPolicy { policy, hash }))
    }

    /// A router with any policy (such as a TE path table).
    pub fn with_policy(topo: &'t Topology, policy: Box<dyn RoutingPolicy + 't>) -> Self {
        Router {
            paths: PathFinder::new(topo),
            policy,
        }
    }

    pub fn topology(&self) -> &'t Topology {
        self.paths.topology()
    }

    pub fn policy(&self) -> &dyn RoutingPolicy {
        self.policy.as_ref()
    }

    /// Replaces the policy (a controller programming a new TE table).
    pub fn set_policy(&mut self, policy: Box<dyn RoutingPolicy + 't>) {
        self.policy = policy;
    }

    /// Routes `key`: over NVLink inside a host, else under the policy.
    pub fn route(&mut self, state: &LinkState, key: &FlowKey) -> Result<Route, RouteError> {
        self.paths.check_gpu(key.src)?;
        self.paths.check_gpu(key.dst)?;
        if let Some(links) = self.paths.nvlink_path(state, key.src, key.dst) {
            let latency = self.paths.latency_of(&links);
            return Ok(Route::Path { links, latency });
        }
        self.policy.route(&mut self.paths, state, key)
    }

    /// See [`PathFinder::equal_cost_paths`].
    pub fn equal_cost_paths(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
        limit: usize,
    ) -> Result<(Vec<Vec<LinkId>>, u64), RouteError> {
        self.paths.equal_cost_paths(state, src, dst, limit)
    }
}
