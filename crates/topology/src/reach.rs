//! Who reaches whom, and over how many switches, under the forwarding rule every figure and
//! every route obeys:
//!
//! - GPUs of one host talk over their NVLink domain (NVSwitch or direct GPU–GPU links);
//! - between hosts, traffic leaves through a NIC linked to the source GPU, crosses only network
//!   switches, and enters through a NIC linked to the destination GPU. Hosts never forward for
//!   others (no transit through a foreign GPU, NIC or NVSwitch).
//!
//! So network distance is a property of a GPU's *attachment set* — the switches its NICs are
//! cabled to — and GPUs with the same set (the GPUs of a rack, or of a rail in a segment) are
//! one class. Distances are computed per class with a bit-parallel multi-source BFS over the
//! switch graph: 64 classes per sweep, one pass over the switch links per BFS level.

use rustc_hash::FxHashMap;

use crate::builder::TopologyError;
use crate::ids::NodeId;
use crate::model::{NodeKind, Topology};

/// The switches and switch-to-switch links of a fabric, re-indexed densely.
pub(crate) struct SwitchGraph {
    /// Node id → switch index, `u32::MAX` for host nodes.
    pub index_of: Vec<u32>,
    pub nodes: Vec<NodeId>,
    /// CSR over switch indices; parallel cables appear once per cable.
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl SwitchGraph {
    pub fn new(topo: &Topology) -> Self {
        let mut index_of = vec![u32::MAX; topo.node_count()];
        let mut nodes = Vec::new();
        for (id, _) in topo.switches() {
            index_of[id.index()] = nodes.len() as u32;
            nodes.push(id);
        }
        let mut offsets = Vec::with_capacity(nodes.len() + 1);
        let mut targets = Vec::new();
        offsets.push(0);
        for &s in &nodes {
            for &l in topo.out_links(s) {
                let t = index_of[topo.link(l).dst.index()];
                if t != u32::MAX {
                    targets.push(t);
                }
            }
            offsets.push(targets.len() as u32);
        }
        SwitchGraph {
            index_of,
            nodes,
            offsets,
            targets,
        }
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    fn neighbours(&self, s: u32) -> &[u32] {
        &self.targets[self.offsets[s as usize] as usize..self.offsets[s as usize + 1] as usize]
    }

    /// Connected components (links come in pairs, so weak = strong connectivity).
    fn components(&self) -> Vec<u32> {
        let mut comp = vec![u32::MAX; self.len()];
        let mut stack = Vec::new();
        let mut next = 0;
        for start in 0..self.len() as u32 {
            if comp[start as usize] != u32::MAX {
                continue;
            }
            comp[start as usize] = next;
            stack.push(start);
            while let Some(s) = stack.pop() {
                for &t in self.neighbours(s) {
                    if comp[t as usize] == u32::MAX {
                        comp[t as usize] = next;
                        stack.push(t);
                    }
                }
            }
            next += 1;
        }
        comp
    }
}

/// GPUs grouped by attachment set, plus each GPU's NVLink domain.
pub(crate) struct GpuClasses {
    /// Sorted switch indices each class is attached to (empty: no network).
    pub attach: Vec<Vec<u32>>,
    /// The GPUs of each class, in id order.
    pub members: Vec<Vec<NodeId>>,
    /// NVLink domain of every GPU (indexed like `topo.gpus()`).
    pub domain_of_gpu: Vec<u32>,
    /// The single domain all members of a class share, if they do.
    pub class_domain: Vec<Option<u32>>,
}

impl GpuClasses {
    pub fn new(topo: &Topology, sw: &SwitchGraph) -> Self {
        let domain_of_gpu = nvlink_domains(topo);
        let mut class_of: FxHashMap<Vec<u32>, usize> = FxHashMap::default();
        let (mut attach, mut members) = (Vec::new(), Vec::<Vec<NodeId>>::new());
        let mut class_domain: Vec<Option<u32>> = Vec::new();
        for (gi, &gpu) in topo.gpus().iter().enumerate() {
            let mut set: Vec<u32> = topo
                .nics_of_gpu(gpu)
                .flat_map(|nic| topo.out_links(nic).iter().map(|&l| topo.link(l).dst))
                .map(|n| sw.index_of[n.index()])
                .filter(|&s| s != u32::MAX)
                .collect();
            set.sort_unstable();
            set.dedup();
            // Class ids follow the order of each class's first GPU: deterministic.
            let c = match class_of.get(&set) {
                Some(&c) => c,
                None => {
                    let c = attach.len();
                    class_of.insert(set.clone(), c);
                    attach.push(set);
                    members.push(Vec::new());
                    class_domain.push(Some(domain_of_gpu[gi]));
                    c
                }
            };
            members[c].push(gpu);
            if class_domain[c] != Some(domain_of_gpu[gi]) {
                class_domain[c] = None;
            }
        }
        GpuClasses {
            attach,
            members,
            domain_of_gpu,
            class_domain,
        }
    }

    pub fn len(&self) -> usize {
        self.attach.len()
    }

    /// Whether some GPU of `a` and some GPU of `b` are in different NVLink domains, so that
    /// the pair must use the network.
    pub fn needs_network(&self, a: usize, b: usize) -> bool {
        !matches!((self.class_domain[a], self.class_domain[b]), (Some(x), Some(y)) if x == y)
    }
}

/// NVLink domains: GPUs joined through NVSwitches or direct GPU–GPU links (union-find).
fn nvlink_domains(topo: &Topology) -> Vec<u32> {
    let n = topo.node_count();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    fn find(parent: &mut [u32], mut x: u32) -> u32 {
        while parent[x as usize] != x {
            parent[x as usize] = parent[parent[x as usize] as usize];
            x = parent[x as usize];
        }
        x
    }
    for link in topo.links() {
        let (ka, kb) = (topo.kind(link.src), topo.kind(link.dst));
        let nvlink = matches!(
            (ka, kb),
            (NodeKind::Gpu, NodeKind::Gpu)
                | (NodeKind::Gpu, NodeKind::NvSwitch)
                | (NodeKind::NvSwitch, NodeKind::Gpu)
        );
        if nvlink {
            let (a, b) = (find(&mut parent, link.src.0), find(&mut parent, link.dst.0));
            parent[a.max(b) as usize] = a.min(b);
        }
    }
    topo.gpus().iter().map(|g| find(&mut parent, g.0)).collect()
}

/// Validation: every GPU reaches every other under the forwarding rule.
pub(crate) fn check_gpus_reach_each_other(topo: &Topology) -> Result<(), TopologyError> {
    let sw = SwitchGraph::new(topo);
    let comp = sw.components();
    // Fast path, GPU by GPU without grouping them: every GPU has a NIC on one switch component.
    let components_of = |gpu: NodeId| {
        topo.nics_of_gpu(gpu)
            .flat_map(|nic| topo.out_links(nic).iter().map(|&l| topo.link(l).dst))
            .map(|n| sw.index_of[n.index()])
            .filter(|&s| s != u32::MAX)
            .map(|s| comp[s as usize])
    };
    if let Some(c0) = topo.gpus().first().and_then(|&g| components_of(g).min()) {
        if topo
            .gpus()
            .iter()
            .all(|&g| components_of(g).any(|c| c == c0))
        {
            return Ok(());
        }
    }
    let classes = GpuClasses::new(topo, &sw);
    let comps: Vec<Vec<u32>> = classes
        .attach
        .iter()
        .map(|set| {
            let mut c: Vec<u32> = set.iter().map(|&s| comp[s as usize]).collect();
            c.sort_unstable();
            c.dedup();
            c
        })
        .collect();
    for a in 0..classes.len() {
        for b in a..classes.len() {
            let shared = comps[a].iter().any(|c| comps[b].contains(c));
            if shared || !classes.needs_network(a, b) {
                continue;
            }
            let (ga, gb) = network_pair(topo, &classes, a, b);
            let why = if comps[a].is_empty() || comps[b].is_empty() {
                "one of them has no NIC linked to a switch, and a GPU reaches other hosts only \
                 through a NIC of its own"
            } else {
                "no chain of switches joins their NICs"
            };
            return Err(TopologyError::Unreachable {
                gpu: topo.node_name(ga).to_string(),
                other: topo.node_name(gb).to_string(),
                why,
            });
        }
    }
    Ok(())
}

/// The first GPU of class `a` and the first GPU of class `b` outside its NVLink domain.
pub(crate) fn network_pair(
    topo: &Topology,
    classes: &GpuClasses,
    a: usize,
    b: usize,
) -> (NodeId, NodeId) {
    let gpu_index = |g: NodeId| topo.gpus().binary_search(&g).unwrap_or(0);
    for &ga in &classes.members[a] {
        let da = classes.domain_of_gpu[gpu_index(ga)];
        if let Some(&gb) = classes.members[b]
            .iter()
            .find(|&&gb| classes.domain_of_gpu[gpu_index(gb)] != da)
        {
            return (ga, gb);
        }
    }
    (classes.members[a][0], classes.members[b][0])
}

/// The largest network distance between two GPUs, in switches traversed, and the first pair of
/// classes (in class order) that attains it. `None` when no two GPUs need the network.
pub(crate) fn farthest_classes(
    sw: &SwitchGraph,
    classes: &GpuClasses,
) -> Option<(u32, usize, usize)> {
    const UNREACHED: u16 = u16::MAX;
    let n = sw.len();
    let mut best: Option<(u32, usize, usize)> = None;
    let mut dist = vec![UNREACHED; 64 * n];
    let (mut visited, mut frontier, mut next) = (vec![0u64; n], vec![0u64; n], vec![0u64; n]);
    for batch in (0..classes.len()).step_by(64) {
        let width = (classes.len() - batch).min(64);
        dist.fill(UNREACHED);
        visited.fill(0);
        frontier.fill(0);
        for k in 0..width {
            for &s in &classes.attach[batch + k] {
                frontier[s as usize] |= 1 << k;
                visited[s as usize] |= 1 << k;
                dist[k * n + s as usize] = 1;
            }
        }
        let mut level: u16 = 1;
        loop {
            next.fill(0);
            for s in 0..n as u32 {
                let f = frontier[s as usize];
                if f != 0 {
                    for &t in sw.neighbours(s) {
                        next[t as usize] |= f;
                    }
                }
            }
            level = level.saturating_add(1);
            let mut any = false;
            for t in 0..n {
                let fresh = next[t] & !visited[t];
                frontier[t] = fresh;
                if fresh != 0 {
                    any = true;
                    visited[t] |= fresh;
                    let mut bits = fresh;
                    while bits != 0 {
                        let k = bits.trailing_zeros() as usize;
                        dist[k * n + t] = level;
                        bits &= bits - 1;
                    }
                }
            }
            if !any {
                break;
            }
        }
        for k in 0..width {
            let a = batch + k;
            for b in 0..classes.len() {
                if !classes.needs_network(a, b) {
                    continue;
                }
                let d = classes.attach[b]
                    .iter()
                    .map(|&s| dist[k * n + s as usize])
                    .min();
                let Some(d) = d.filter(|&d| d != UNREACHED) else {
                    continue;
                };
                let (lo, hi) = (a.min(b), a.max(b));
                let better = match best {
                    None => true,
                    Some((bd, ba, bb)) => {
                        u32::from(d) > bd || (u32::from(d) == bd && (lo, hi) < (ba, bb))
                    }
                };
                if better {
                    best = Some((u32::from(d), lo, hi));
                }
            }
        }
    }
    best
}

/// Number of distinct shortest paths (sequences of directed links) from GPU `src` to GPU `dst`
/// under the forwarding rule, saturating at `u64::MAX`, with their length in links. `None` if
/// either is not a GPU or no path exists.
pub fn count_shortest_paths(topo: &Topology, src: NodeId, dst: NodeId) -> Option<(u32, u64)> {
    let domains = nvlink_domains(topo);
    let gpu_index = |g: NodeId| topo.gpus().binary_search(&g).ok();
    let same_domain = match (gpu_index(src), gpu_index(dst)) {
        (Some(a), Some(b)) => domains[a] == domains[b],
        _ => return None,
    };
    let endpoint_nics: Vec<NodeId> = topo.nics_of_gpu(src).chain(topo.nics_of_gpu(dst)).collect();
    let may_transit = |n: NodeId| match topo.kind(n) {
        NodeKind::Switch(_) => !same_domain,
        NodeKind::Nic => !same_domain && endpoint_nics.contains(&n),
        NodeKind::NvSwitch => same_domain && topo.host_of(n) == topo.host_of(src),
        NodeKind::Gpu => n == src,
    };
    let mut dist = vec![u32::MAX; topo.node_count()];
    let mut count = vec![0u64; topo.node_count()];
    let mut queue = std::collections::VecDeque::new();
    dist[src.index()] = 0;
    count[src.index()] = 1;
    queue.push_back(src);
    while let Some(u) = queue.pop_front() {
        if u == dst || !may_transit(u) {
            continue;
        }
        if dist[u.index()] >= dist[dst.index()] {
            break;
        }
        for &l in topo.out_links(u) {
            let v = topo.link(l).dst;
            if dist[v.index()] == u32::MAX {
                dist[v.index()] = dist[u.index()] + 1;
                queue.push_back(v);
            }
            if dist[v.index()] == dist[u.index()] + 1 {
                count[v.index()] = count[v.index()].saturating_add(count[u.index()]);
            }
        }
    }
    (dist[dst.index()] != u32::MAX).then(|| (dist[dst.index()], count[dst.index()]))
}
