//! How evenly a traffic pattern lands on the links of each tier under a policy: the static
//! view of load balancing (no rates), `fabricsim route balance`.
//!
//! Each connection counts as 1 on every link it crosses; with `qps` QPs per connection each QP
//! is routed on its own key and counts 1/qps (a spread flow counts its weight), so loads are
//! in connections and comparable across QP counts.
//!
//! Figures are over the links *in scope*: those on some equal-cost path of some pair of the
//! pattern, the links a perfect balancer could use. Links no pair could reach do not dilute the
//! mean.

use fabricsim_topology::{LinkId, Nanos, NodeId, NodeKind, Topology};

use crate::key::{mix, FlowKey};
use crate::link_state::LinkState;
use crate::paths::PathFinder;
use crate::router::{RouteError, Router};
use crate::select::{candidate_paths, Choice, PathSelection, Selector};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Each GPU sends to one other, chosen by a seeded random permutation.
    Permutation,
    /// GPU i sends to GPU i + 1 (in id order, wrapping): a naive ring.
    Ring,
    /// Every GPU sends to every other.
    AllToAll,
}

impl Pattern {
    pub const NAMES: [&'static str; 3] = ["permutation", "ring", "all-to-all"];

    pub fn parse(s: &str) -> Option<Pattern> {
        match s {
            "permutation" => Some(Pattern::Permutation),
            "ring" => Some(Pattern::Ring),
            "all-to-all" => Some(Pattern::AllToAll),
            _ => None,
        }
    }
}

/// The (source, destination) pairs of `pattern` over `gpus`, deterministic in `seed`.
pub fn pairs(pattern: Pattern, gpus: &[NodeId], seed: u64) -> Vec<(NodeId, NodeId)> {
    let n = gpus.len();
    match pattern {
        Pattern::Ring => (0..n)
            .filter(|_| n > 1)
            .map(|i| (gpus[i], gpus[(i + 1) % n]))
            .collect(),
        Pattern::AllToAll => (0..n)
            .flat_map(|i| {
                (0..n)
                    .filter(move |&j| j != i)
                    .map(move |j| (gpus[i], gpus[j]))
            })
            .collect(),
        Pattern::Permutation => {
            // Fisher-Yates with a SplitMix64 stream: deterministic, no RNG dependency.
            let mut perm: Vec<usize> = (0..n).collect();
            let mut state = seed;
            for i in (1..n).rev() {
                state = mix(state);
                let j = (state % (i as u64 + 1)) as usize;
                perm.swap(i, j);
            }
            (0..n)
                .filter(|&i| perm[i] != i)
                .map(|i| (gpus[i], gpus[perm[i]]))
                .collect()
        }
    }
}

/// Load on the links of one group (one direction between two tiers).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupLoad {
    /// `lower->upper` or `upper->lower`, by tier name (`nic` for NICs): `rtsw->ctsw`.
    pub group: String,
    pub links: usize,
    pub max_load: f64,
    pub mean_load: f64,
    /// max / mean: 1 is perfect balance.
    pub max_mean_ratio: f64,
    /// Links of the group that carry nothing.
    pub idle_fraction: f64,
}

fn label(topo: &Topology, n: NodeId) -> Option<&str> {
    match topo.kind(n) {
        NodeKind::Switch(r) => Some(topo.tier_name(r.tier)),
        NodeKind::Nic => Some("nic"),
        NodeKind::Gpu | NodeKind::NvSwitch => None,
    }
}

/// Per-link load of the pairs, each with `qps` QPs, under the router's policy.
pub fn link_loads(
    router: &mut Router<'_>,
    state: &LinkState,
    pairs: &[(NodeId, NodeId)],
    qps: u32,
    seed: u64,
) -> Result<Vec<f64>, RouteError> {
    let topo = router.topology();
    let mut load = vec![0.0; topo.link_count()];
    let share = 1.0 / f64::from(qps);
    // Spraying ignores the key: one route per pair serves every QP.
    let qps_routed = if router.policy().uses_key() { qps } else { 1 };
    let weight = if qps_routed == 1 { 1.0 } else { share };
    for &(src, dst) in pairs {
        for qp in 0..qps_routed {
            for (l, w) in router
                .route(state, &FlowKey::connection(src, dst, qp, seed))?
                .incidence()
            {
                load[l.index()] += w * weight;
            }
        }
    }
    Ok(load)
}

/// Per-link load as [`link_loads`] gives it, with each QP of each connection a message of one
/// unit that the hosts' `selection` puts on a path, every message in flight at once (none done
/// yet), in the pattern's order. Under disjoint paths the QPs of a connection go on its peer's
/// paths by fewest outstanding messages; a flowlet never sees a gap, so it is hashed.
pub fn selected_link_loads(
    router: &mut Router<'_>,
    state: &LinkState,
    pairs: &[(NodeId, NodeId)],
    qps: u32,
    seed: u64,
    selection: PathSelection,
) -> Result<Vec<f64>, RouteError> {
    if selection == PathSelection::Hashed {
        return link_loads(router, state, pairs, qps, seed);
    }
    let topo = router.topology();
    let mut load = vec![0.0; topo.link_count()];
    let share = 1.0 / f64::from(qps);
    let mut hosts = Selector::new(selection);
    for &(src, dst) in pairs {
        for qp in 0..qps {
            let key = FlowKey::connection(src, dst, qp, seed);
            let (choice, _) = hosts.choose(key, 1, Nanos(0), 0, |_, _, limit| {
                candidate_paths(router, state, key, limit)
            });
            match choice {
                Choice::Key(k) => {
                    for (l, w) in router.route(state, &k)?.incidence() {
                        load[l.index()] += w * share;
                    }
                }
                Choice::Path(links) => {
                    for l in links {
                        load[l.index()] += share;
                    }
                }
            }
        }
    }
    Ok(load)
}

/// The links on some equal-cost path of some pair.
///
/// With every link up, the equal-cost paths between two GPUs that each reach the fabric one way
/// are their access links and the paths between their switches: pairs whose switches were
/// already spread add only their access links (a ring over thousands of GPUs crosses a few
/// hundred pairs of racks).
pub fn links_in_scope(
    topo: &Topology,
    state: &LinkState,
    pairs: &[(NodeId, NodeId)],
) -> Result<Vec<bool>, RouteError> {
    links_in_scope_over(&mut PathFinder::new(topo), state, pairs)
}

/// [`links_in_scope`] over a path finder already built for the fabric (a simulation's, whose
/// distances to these destinations are known).
pub fn links_in_scope_over(
    paths: &mut PathFinder<'_>,
    state: &LinkState,
    pairs: &[(NodeId, NodeId)],
) -> Result<Vec<bool>, RouteError> {
    let topo = paths.topology();
    let mut scope = vec![false; topo.link_count()];
    let mut spread_between = std::collections::BTreeSet::new();
    for &(src, dst) in pairs {
        let access = |g| paths.single_homed_access(g);
        let across_hosts = topo.host_of(src) != topo.host_of(dst);
        if let (true, Some((a_nic, a_port, a_sw)), Some((b_nic, b_port, b_sw))) =
            (state.all_up() && across_hosts, access(src), access(dst))
        {
            // Under one switch the only shortest path is the two GPUs' ways on and off; between
            // two switches, a pair's paths are the switches' spread and its own ways.
            if a_sw == b_sw || !spread_between.insert((a_sw, b_sw)) {
                for l in [a_nic, a_port, b_port.reverse(), b_nic.reverse()] {
                    scope[l.index()] = true;
                }
                continue;
            }
        }
        // Every equal-cost path (those `spray` spreads over).
        paths.check_gpu(src)?;
        paths.check_gpu(dst)?;
        if let Some(path) = paths.nvlink_path(state, src, dst) {
            for l in path.links() {
                scope[l.index()] = true;
            }
            continue;
        }
        paths.mark_dag_links(state, src, dst, &mut scope)?;
    }
    Ok(scope)
}

/// The group of link `l`: its direction between tiers (`rtsw->ctsw`, `nic->rtsw`); `None` for
/// a link inside a host (NVLink, PCIe).
pub fn link_group(topo: &Topology, l: LinkId) -> Option<String> {
    let link = topo.link(l);
    Some(format!(
        "{}->{}",
        label(topo, link.src)?,
        label(topo, link.dst)?
    ))
}

/// The network links in `scope` grouped by direction between tiers (`rtsw->ctsw`), groups in
/// order of their first link.
pub fn link_groups(topo: &Topology, scope: &[bool]) -> Vec<(String, Vec<LinkId>)> {
    // By the pair of tier names (a few), named once each.
    let mut groups: Vec<((&str, &str), Vec<LinkId>)> = Vec::new();
    for l in topo.link_ids().filter(|l| scope[l.index()]) {
        let link = topo.link(l);
        let (Some(a), Some(b)) = (label(topo, link.src), label(topo, link.dst)) else {
            continue;
        };
        match groups.iter_mut().find(|(g, _)| *g == (a, b)) {
            Some((_, v)) => v.push(l),
            None => groups.push(((a, b), vec![l])),
        }
    }
    groups
        .into_iter()
        .map(|((a, b), links)| (format!("{a}->{b}"), links))
        .collect()
}

/// Groups the network links in `scope` by direction between tiers and summarises their loads.
pub fn group_loads(topo: &Topology, load: &[f64], scope: &[bool]) -> Vec<GroupLoad> {
    link_groups(topo, scope)
        .into_iter()
        .map(|(group, links)| {
            let v: Vec<f64> = links.iter().map(|l| load[l.index()]).collect();
            let max = v.iter().copied().fold(0.0, f64::max);
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            GroupLoad {
                group,
                links: v.len(),
                max_load: max,
                mean_load: mean,
                max_mean_ratio: if mean > 0.0 { max / mean } else { 0.0 },
                idle_fraction: v.iter().filter(|&&x| x <= 0.0).count() as f64 / v.len() as f64,
            }
        })
        .collect()
}
