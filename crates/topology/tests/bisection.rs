//! The closed-form bisection bandwidth of `FabricFigures` against the true minimum: every
//! balanced bipartition of the GPUs of a small fabric, each cut measured by max-flow.
//!
//! The flow network obeys the forwarding rule: hosts do not forward for others, so a NIC
//! sends into the network only for a source-side GPU and receives only for a sink-side one.

use fabricsim_topology::figures::FabricFigures;
use fabricsim_topology::presets;
use fabricsim_topology::{NodeKind, Topology};

/// Dinic's max-flow on an adjacency list of (to, capacity, reverse-edge index).
struct Flow {
    adj: Vec<Vec<(usize, u64, usize)>>,
}

impl Flow {
    fn new(n: usize) -> Self {
        Flow {
            adj: vec![Vec::new(); n],
        }
    }
    fn edge(&mut self, a: usize, b: usize, cap: u64) {
        let (ra, rb) = (self.adj[b].len(), self.adj[a].len());
        self.adj[a].push((b, cap, ra));
        self.adj[b].push((a, 0, rb));
    }
    fn max_flow(&mut self, s: usize, t: usize) -> u64 {
        let mut total = 0;
        loop {
            let mut level = vec![usize::MAX; self.adj.len()];
            level[s] = 0;
            let mut queue = std::collections::VecDeque::from([s]);
            while let Some(u) = queue.pop_front() {
                for &(v, cap, _) in &self.adj[u] {
                    if cap > 0 && level[v] == usize::MAX {
                        level[v] = level[u] + 1;
                        queue.push_back(v);
                    }
                }
            }
            if level[t] == usize::MAX {
                return total;
            }
            let mut next = vec![0; self.adj.len()];
            loop {
                let pushed = self.push(s, t, u64::MAX, &level, &mut next);
                if pushed == 0 {
                    break;
                }
                total += pushed;
            }
        }
    }
    fn push(&mut self, u: usize, t: usize, limit: u64, level: &[usize], next: &mut [usize]) -> u64 {
        if u == t {
            return limit;
        }
        while next[u] < self.adj[u].len() {
            let (v, cap, rev) = self.adj[u][next[u]];
            if cap > 0 && level[v] == level[u] + 1 {
                let got = self.push(v, t, limit.min(cap), level, next);
                if got > 0 {
                    self.adj[u][next[u]].1 -= got;
                    self.adj[v][rev].1 += got;
                    return got;
                }
            }
            next[u] += 1;
        }
        0
    }
}

/// Minimum over balanced GPU bipartitions of the A→B max-flow, in bytes/s.
fn brute_force_bisection(topo: &Topology) -> u64 {
    let gpus = topo.gpus();
    let n = gpus.len();
    assert!(
        n.is_multiple_of(2) && n <= 16,
        "exhaustive search is for small fabrics"
    );
    let gpu_index = |node| gpus.iter().position(|&g| g == node);
    // The GPU each NIC serves (presets give one NIC per GPU).
    let owner: Vec<Option<usize>> = topo
        .nodes()
        .map(|node| match topo.kind(node) {
            NodeKind::Nic => topo
                .out_links(node)
                .iter()
                .find_map(|&l| gpu_index(topo.link(l).dst)),
            NodeKind::Gpu => gpu_index(node),
            _ => None,
        })
        .collect();
    let mut best = u64::MAX;
    // GPU 0 on side A: each unordered bipartition once (links are symmetric).
    for mask in 0u32..(1 << n) {
        if mask & 1 == 0 || mask.count_ones() as usize != n / 2 {
            continue;
        }
        let in_a = |g: usize| mask & (1 << g) != 0;
        let (s, t) = (topo.node_count(), topo.node_count() + 1);
        let mut flow = Flow::new(topo.node_count() + 2);
        for (g, &gpu) in gpus.iter().enumerate() {
            if in_a(g) {
                flow.edge(s, gpu.index(), u64::MAX / 4);
            } else {
                flow.edge(gpu.index(), t, u64::MAX / 4);
            }
        }
        for link in topo.links() {
            let (src, dst) = (link.src.index(), link.dst.index());
            let allowed = match (topo.kind(link.src), topo.kind(link.dst)) {
                // Only source-side hosts send and only sink-side hosts receive.
                (NodeKind::Gpu, _) => in_a(owner[src].unwrap()),
                (_, NodeKind::Gpu) => !in_a(owner[dst].unwrap()),
                (NodeKind::Nic, NodeKind::Switch(_)) => in_a(owner[src].unwrap()),
                (NodeKind::Switch(_), NodeKind::Nic) => !in_a(owner[dst].unwrap()),
                _ => true,
            };
            if allowed {
                flow.edge(src, dst, link.capacity.0);
            }
        }
        best = best.min(flow.max_flow(s, t));
    }
    best
}

fn check(name: &str, settings: &[(&str, &str)]) {
    let overrides: Vec<(String, String)> = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let topo = presets::build(name, &overrides).unwrap();
    let closed_form = FabricFigures::of(&topo).bisection_bandwidth;
    let exhaustive = brute_force_bisection(&topo);
    assert_eq!(
        closed_form.0, exhaustive,
        "{name} {settings:?}: closed form {closed_form}, max-flow {exhaustive} B/s"
    );
}

#[test]
fn fat_tree_k4() {
    check("fat-tree", &[("k", "4")]);
}

#[test]
fn leaf_spine_k4() {
    check("leaf-spine", &[("k", "4")]);
}

#[test]
fn meta_zone_small_with_each_uplink_stage() {
    for uplinks in ["1:1", "2x"] {
        check(
            "meta-ai-zone",
            &[
                ("racks", "4"),
                ("hosts_per_rack", "2"),
                ("gpus_per_host", "2"),
                ("uplinks", uplinks),
            ],
        );
    }
    // 1:1.125 needs 8 down-ports per RTSW.
    check(
        "meta-ai-zone",
        &[
            ("racks", "2"),
            ("hosts_per_rack", "1"),
            ("gpus_per_host", "8"),
            ("uplinks", "1:1.125"),
        ],
    );
}

#[test]
fn meta_cluster_small_oversubscribed() {
    check(
        "meta-cluster",
        &[
            ("zones", "2"),
            ("racks", "2"),
            ("hosts_per_rack", "2"),
            ("gpus_per_host", "2"),
            ("atsw_oversubscription", "2"),
        ],
    );
}

#[test]
fn hpn_small_dual_tor_dual_plane() {
    check(
        "hpn",
        &[
            ("segments", "2"),
            ("hosts_per_segment", "2"),
            ("gpus_per_host", "2"),
            ("tor_uplinks", "2"),
        ],
    );
    check(
        "hpn",
        &[
            ("segments", "2"),
            ("hosts_per_segment", "2"),
            ("gpus_per_host", "2"),
            ("tor_uplinks", "1"),
            ("dual_plane", "false"),
        ],
    );
}

#[test]
fn dcn_plus_and_superpod_small() {
    check(
        "dcn-plus",
        &[
            ("pods", "2"),
            ("segments_per_pod", "2"),
            ("hosts_per_segment", "2"),
            ("gpus_per_host", "1"),
            ("aggs_per_pod", "2"),
            ("link_speed", "200Gbps"),
        ],
    );
    check(
        "superpod",
        &[
            ("sus", "2"),
            ("nodes_per_su", "4"),
            ("gpus_per_host", "2"),
            ("spine_radix", "8"),
        ],
    );
    check("switch", &[("hosts", "4"), ("gpus_per_host", "2")]);
}
