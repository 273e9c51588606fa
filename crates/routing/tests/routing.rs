//! Routing facts a network engineer relies on.

use fabricsim_routing::{
    FlowKey, HashConfig, LinkCondition, LinkState, PathFinder, Policy, Route, RouteError, Router,
};
use fabricsim_topology::figures::FabricFigures;
use fabricsim_topology::presets;
use fabricsim_topology::{LinkId, NodeId, Topology};

fn build(name: &str, settings: &[(&str, &str)]) -> Topology {
    presets::build_with(name, settings).unwrap()
}

fn id(topo: &Topology, name: &str) -> NodeId {
    topo.node_by_name(name)
        .unwrap_or_else(|| panic!("no node {name}"))
}

/// A switch's links to other switches, in link-id order.
fn uplinks(topo: &Topology, switch: NodeId) -> Vec<LinkId> {
    topo.out_links(switch)
        .iter()
        .copied()
        .filter(|&l| topo.kind(topo.link(l).dst).is_switch())
        .collect()
}

fn path(route: &Route) -> Vec<LinkId> {
    match route {
        Route::Path { links, .. } => links.clone(),
        Route::Spread { .. } => panic!("expected a single path"),
    }
}

#[test]
fn path_counts_agree_with_the_topology_figures() {
    for (name, settings) in [
        ("fat-tree", vec![("k", "8")]),
        ("meta-cluster", vec![("zones", "2"), ("racks", "8")]),
        ("hpn", vec![("segments", "2"), ("hosts_per_segment", "8")]),
        ("superpod", vec![("sus", "2")]),
        ("dcn-plus", vec![("pods", "2")]),
    ] {
        let topo = build(name, &settings);
        let f = FabricFigures::of(&topo);
        let [a, b] = f.farthest_pair.clone().unwrap();
        let mut router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
        let state = LinkState::new(&topo);
        let (paths, total) = router
            .equal_cost_paths(&state, id(&topo, &a), id(&topo, &b), 100_000)
            .unwrap();
        assert_eq!(total, f.max_equal_cost_paths, "{name}");
        assert_eq!(paths.len() as u64, total.min(100_000), "{name}");
        // Every path has the diameter's switch count: links = switches + 4 host hops... + 1.
        assert!(
            paths
                .iter()
                .all(|p| p.len() == f.diameter_hops as usize + 3),
            "{name}"
        );
    }
}

#[test]
fn ecmp_picks_one_of_the_equal_cost_paths_deterministically() {
    let topo = build("meta-ai-zone", &[("racks", "4")]);
    let state = LinkState::new(&topo);
    let (src, dst) = (id(&topo, "host0/gpu0"), id(&topo, "host7/gpu3"));
    let mut router = Router::new(
        &topo,
        Policy::Ecmp,
        HashConfig {
            seed: 7,
            polarized: false,
            functions: [None; 3],
            ..HashConfig::default()
        },
    );
    let (paths, total) = router.equal_cost_paths(&state, src, dst, 64).unwrap();
    assert_eq!(total, 16);
    let key = FlowKey::connection(src, dst, 0, 7);
    let chosen = path(&router.route(&state, &key).unwrap());
    assert!(paths.contains(&chosen));
    assert_eq!(
        chosen,
        path(&router.route(&state, &key).unwrap()),
        "same key, same path"
    );
    // GPU -> NIC -> RTSW -> CTSW -> RTSW -> NIC -> GPU
    assert_eq!(chosen.len(), 6);
    // Inside a host, over the NVSwitch.
    let local = router
        .route(
            &state,
            &FlowKey::connection(src, id(&topo, "host0/gpu5"), 0, 7),
        )
        .unwrap();
    assert_eq!(path(&local).len(), 2);
}

/// Busiest / mean load when `flows` keys are hashed over `links` links, averaged over trials.
fn mean_imbalance(flows: u32, links: u64, trials: u32) -> f64 {
    let mut sum = 0.0;
    for t in 0..trials {
        let mut load = vec![0u32; links as usize];
        for f in 0..flows {
            let key = FlowKey::connection(NodeId(f), NodeId(1_000_000 + t), 0, u64::from(t));
            load[(key.hash5(99) % links) as usize] += 1;
        }
        let max = *load.iter().max().unwrap() as f64;
        sum += max / (flows as f64 / links as f64);
    }
    sum / trials as f64
}

#[test]
fn ecmp_imbalance_is_what_probability_says() {
    // Balls into bins: 1,000 flows on 16 links give busiest/mean above 1.2; 16 on 16 about 3.1.
    let many = mean_imbalance(1_000, 16, 400);
    assert!((1.2..1.45).contains(&many), "1000 on 16: {many}");
    let few = mean_imbalance(16, 16, 2_000);
    assert!((2.9..3.3).contains(&few), "16 on 16: {few}");
}

/// How many flows each RTSW uplink of rack 0 carries when rack 0's 16 GPUs each send to the
/// same-index GPU of rack 1, one connection (or `qps` QPs) each.
fn rack_uplink_loads(topo: &Topology, state: &LinkState, policy: Policy, qps: u32) -> Vec<u32> {
    let mut router = Router::new(
        topo,
        policy,
        HashConfig {
            seed: 1,
            polarized: false,
            functions: [None; 3],
            ..HashConfig::default()
        },
    );
    let rtsw = id(topo, "zone0/rack0/rtsw");
    let uplinks = uplinks(topo, rtsw);
    let mut load = vec![0u32; uplinks.len()];
    for h in 0..2 {
        for g in 0..8 {
            let src = id(topo, &format!("host{h}/gpu{g}"));
            let dst = id(topo, &format!("host{}/gpu{g}", h + 2));
            for qp in 0..qps {
                let route = router
                    .route(state, &FlowKey::connection(src, dst, qp, 1))
                    .unwrap();
                for l in path(&route) {
                    if let Some(i) = uplinks.iter().position(|&u| u == l) {
                        load[i] += 1;
                    }
                }
            }
        }
    }
    load
}

#[test]
fn pinning_balances_full_racks_and_ecmp_collides() {
    let topo = build("meta-ai-zone", &[("racks", "4")]);
    let state = LinkState::new(&topo);
    let pinned = rack_uplink_loads(&topo, &state, Policy::Pin, 1);
    assert_eq!(
        pinned,
        vec![1; 16],
        "destination-mod-k puts each of 16 destinations on its own uplink"
    );
    let ecmp = rack_uplink_loads(&topo, &state, Policy::Ecmp, 1);
    assert_eq!(ecmp.iter().sum::<u32>(), 16);
    assert!(
        *ecmp.iter().max().unwrap() >= 2,
        "16 hashed flows on 16 uplinks collide: {ecmp:?}"
    );
    // E-ECMP with 16 QPs per connection: 256 flows, spread much closer to the mean of 16.
    let eecmp = rack_uplink_loads(&topo, &state, Policy::EEcmp, 16);
    assert_eq!(eecmp.iter().sum::<u32>(), 256);
    assert!(*eecmp.iter().max().unwrap() <= 30, "{eecmp:?}");
    // Under plain ECMP the QP is invisible: all 16 QPs of a connection share one path.
    let ecmp_qps = rack_uplink_loads(&topo, &state, Policy::Ecmp, 16);
    assert_eq!(ecmp_qps.iter().map(|&x| x / 16).collect::<Vec<_>>(), ecmp);
}

#[test]
fn identical_seeds_polarize() {
    // k=4 fat-tree: from pod 0 to pod 1, an edge picks one of 2 aggs, the agg one of 2 cores.
    // With one seed everywhere the two choices use the same hash, so only 2 of 4 cores carry
    // traffic; with per-switch seeds all 4 do.
    let topo = build("fat-tree", &[("k", "4")]);
    let state = LinkState::new(&topo);
    let cores_used = |polarized: bool| {
        let mut router = Router::new(
            &topo,
            Policy::Ecmp,
            HashConfig {
                seed: 3,
                polarized,
                functions: [None; 3],
                ..HashConfig::default()
            },
        );
        let mut used = std::collections::BTreeSet::new();
        for f in 0..256u32 {
            let key = FlowKey::connection(
                id(&topo, "host0/gpu0"),
                id(&topo, "host4/gpu0"),
                0,
                u64::from(f),
            );
            for l in path(&router.route(&state, &key).unwrap()) {
                let n = topo.link(l).dst;
                if topo.node_name(n).starts_with("core") {
                    used.insert(n);
                }
            }
        }
        used.len()
    };
    assert_eq!(cores_used(false), 4);
    assert_eq!(cores_used(true), 2);
}

#[test]
fn a_linear_hash_polarizes_through_per_switch_seeds() {
    // k=8 fat-tree, flows from pod 0 to pod 1: an edge picks one of 4 aggs, the agg one of 4
    // cores, each by its hash modulo 4. Per agg, how many of its 4 core links carry the flows
    // of one source edge:
    // - a CRC seeded per switch differs from the edge's by a constant XOR (its seed), so the
    //   agg's choice is fixed by the edge's: one link per (edge, agg);
    // - the ideal hash seeded per switch is independent: all 4 links;
    // - a different CRC on tier 2 breaks the correlation: all 4 links.
    let topo = build("fat-tree", &[("k", "8")]);
    let state = LinkState::new(&topo);
    let spread = |hash: &str| {
        let config = HashConfig {
            seed: 3,
            polarized: false,
            functions: HashConfig::parse_functions(hash).unwrap(),
            ..HashConfig::default()
        };
        let mut router = Router::new(&topo, Policy::Ecmp, config);
        let mut used: std::collections::BTreeMap<NodeId, std::collections::BTreeSet<LinkId>> =
            Default::default();
        for f in 0..512u32 {
            // Source host 0 (edge 0 of pod 0) to the 16 hosts of pod 1, many connections.
            let key = FlowKey::connection(
                id(&topo, "host0/gpu0"),
                id(&topo, &format!("host{}/gpu0", 16 + f % 16)),
                0,
                u64::from(f),
            );
            for l in path(&router.route(&state, &key).unwrap()) {
                let (a, b) = (topo.link(l).src, topo.link(l).dst);
                if topo.node_name(b).starts_with("core") {
                    used.entry(a).or_default().insert(l);
                }
            }
        }
        assert_eq!(
            used.len(),
            4,
            "{hash}: every agg of pod 0 carries some flows"
        );
        used.values().map(|s| s.len()).max().unwrap()
    };
    assert_eq!(spread("crc16"), 1);
    assert_eq!(spread("crc32"), 1);
    assert_eq!(spread("xor16"), 1);
    assert_eq!(spread("ideal"), 4);
    assert_eq!(spread("crc16,tier2=crc32"), 4);
}

#[test]
fn spray_spreads_evenly_over_all_paths() {
    let topo = build("meta-ai-zone", &[("racks", "4")]);
    let state = LinkState::new(&topo);
    let mut router = Router::new(&topo, Policy::Spray, HashConfig::default());
    let route = router
        .route(
            &state,
            &FlowKey::connection(id(&topo, "host0/gpu0"), id(&topo, "host7/gpu3"), 0, 0),
        )
        .unwrap();
    let links = route.incidence();
    // 2 host links each side at weight 1, 16 up and 16 down links at 1/16.
    assert_eq!(links.len(), 4 + 32);
    let total: f64 = links.iter().map(|&(_, w)| w).sum();
    assert!(
        (total - 6.0).abs() < 1e-12,
        "each of the 6 hops carries the whole flow: {total}"
    );
    assert_eq!(
        links
            .iter()
            .filter(|&&(_, w)| (w - 1.0 / 16.0).abs() < 1e-12)
            .count(),
        32
    );
}

#[test]
fn down_links_are_avoided_and_partitions_reported() {
    let topo = build("meta-ai-zone", &[("racks", "4")]);
    let mut state = LinkState::new(&topo);
    let (src, dst) = (id(&topo, "host0/gpu0"), id(&topo, "host7/gpu3"));
    let rtsw = id(&topo, "zone0/rack0/rtsw");
    let uplinks = uplinks(&topo, rtsw);
    state.set_cable(uplinks[3], LinkCondition::Down);
    let mut router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
    let (paths, total) = router.equal_cost_paths(&state, src, dst, 64).unwrap();
    assert_eq!(total, 15);
    assert!(paths.iter().all(|p| !p.contains(&uplinks[3])));
    for f in 0..64 {
        let route = router
            .route(&state, &FlowKey::connection(src, dst, 0, f))
            .unwrap();
        assert!(!path(&route).contains(&uplinks[3]));
    }
    for &u in &uplinks {
        state.set_cable(u, LinkCondition::Down);
    }
    let err = router
        .route(&state, &FlowKey::connection(src, dst, 0, 0))
        .unwrap_err();
    assert_eq!(
        err,
        RouteError::NoPath {
            src: "host0/gpu0".into(),
            dst: "host7/gpu3".into()
        }
    );
    // Up again: routes come back (the cache follows the link-state version).
    for &u in &uplinks {
        state.set_cable(u, LinkCondition::Up);
    }
    assert!(router
        .route(&state, &FlowKey::connection(src, dst, 0, 0))
        .is_ok());
}

/// An explicit path table, as centralized TE will be: a fixed path per (src, dst).
struct PathTable {
    paths: std::collections::HashMap<(NodeId, NodeId), Vec<LinkId>>,
}

impl fabricsim_routing::RoutingPolicy for PathTable {
    fn name(&self) -> &str {
        "table"
    }
    fn route(
        &self,
        paths: &mut fabricsim_routing::PathFinder<'_>,
        state: &LinkState,
        key: &FlowKey,
    ) -> Result<Route, RouteError> {
        match self.paths.get(&(key.src, key.dst)) {
            Some(links) if links.iter().all(|&l| state.is_up(l)) => Ok(Route::Path {
                links: links.clone(),
                latency: fabricsim_topology::Nanos(0),
            }),
            // No entry, or a dead one: fall back to the last equal-cost next hop at every node.
            _ => paths.walk(state, key.src, key.dst, &mut |_, hops| {
                hops.len() as u64 - 1
            }),
        }
    }
}

#[test]
fn a_path_table_plugs_in_as_a_policy() {
    let topo = build("meta-ai-zone", &[("racks", "4")]);
    let state = LinkState::new(&topo);
    let (src, dst) = (id(&topo, "host0/gpu0"), id(&topo, "host7/gpu3"));
    let mut ecmp = Router::new(&topo, Policy::Ecmp, HashConfig::default());
    let (all, _) = ecmp.equal_cost_paths(&state, src, dst, 64).unwrap();
    let table = PathTable {
        paths: [((src, dst), all[5].clone())].into_iter().collect(),
    };
    let mut router = Router::with_policy(&topo, Box::new(table));
    assert_eq!(router.policy().name(), "table");
    assert_eq!(
        path(
            &router
                .route(&state, &FlowKey::connection(src, dst, 0, 0))
                .unwrap()
        ),
        all[5]
    );
    // Not in the table: the fallback takes the last of the 16 paths.
    let other = id(&topo, "host6/gpu3");
    let (others, _) = ecmp.equal_cost_paths(&state, src, other, 64).unwrap();
    assert_eq!(
        path(
            &router
                .route(&state, &FlowKey::connection(src, other, 0, 0))
                .unwrap()
        ),
        others[15]
    );
}

#[test]
fn single_homed_ends_route_as_the_general_walk_does() {
    // Between GPUs with one NIC and one NIC port each, a route with every link up skips the
    // hosts' side of the general walk. One NIC cable down sends every route through the
    // general walk: routes between the other GPUs must stay what they were.
    let fabrics: [(&str, &[(&str, &str)]); 3] = [
        ("meta-cluster", &[("zones", "3"), ("racks", "4")]),
        ("superpod", &[("sus", "2"), ("nodes_per_su", "4")]),
        ("fat-tree", &[("k", "8"), ("gpus_per_host", "2")]),
    ];
    for (name, settings) in fabrics {
        let topo = build(name, settings);
        let gpus = topo.gpus();
        let broken = *gpus.last().unwrap();
        let nic = topo.nics_of_gpu(broken).next().unwrap();
        let cable = *topo
            .out_links(nic)
            .iter()
            .find(|&&l| topo.kind(topo.link(l).dst).is_switch())
            .expect("a NIC port");
        for policy in [Policy::Ecmp, Policy::EEcmp, Policy::Pin] {
            let mut router = Router::new(&topo, policy, HashConfig::default());
            let mut state = LinkState::new(&topo);
            let keys: Vec<FlowKey> = (0..400)
                .map(|i| {
                    let (s, d) = (
                        gpus[(i * 7) % (gpus.len() - 1)],
                        gpus[(i * 13 + 5) % (gpus.len() - 1)],
                    );
                    FlowKey::connection(s, d, (i % 3) as u32, i as u64)
                })
                .filter(|k| k.src != k.dst)
                .collect();
            let shortcut: Vec<Route> = keys
                .iter()
                .map(|k| router.route(&state, k).unwrap())
                .collect();
            state.set_cable(cable, LinkCondition::Down);
            for (k, before) in keys.iter().zip(&shortcut) {
                assert_eq!(
                    &router.route(&state, k).unwrap(),
                    before,
                    "{name} {policy:?}"
                );
            }
        }
    }
}

#[test]
fn a_route_from_a_gpu_to_itself_ends() {
    // No NVSwitch (one GPU per host): out through the NIC and back, whatever the link state
    // (the walk once went round GPU -> NIC -> GPU for ever).
    let topo = build("fat-tree", &[("k", "4"), ("gpus_per_host", "1")]);
    let g = topo.gpus()[0];
    let mut router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
    let mut state = LinkState::new(&topo);
    let key = FlowKey::connection(g, g, 0, 1);
    let all_up = path(&router.route(&state, &key).unwrap());
    assert_eq!(all_up.len(), 2);
    assert_eq!(topo.link(all_up[1]).dst, g);
    state.set_cable(
        *uplinks(&topo, id(&topo, "pod0/edge0")).first().unwrap(),
        LinkCondition::Down,
    );
    assert_eq!(path(&router.route(&state, &key).unwrap()), all_up);
}

#[test]
fn a_dual_port_nic_with_a_port_down_sends_everything_on_the_other() {
    // HPN's dual-ToR host: each NIC's two ports go to two ToRs. Connections hash over both; with
    // one port's cable down, every connection leaves on the other.
    let topo = build("hpn", &[("segments", "2"), ("hosts_per_segment", "4")]);
    let (src, dst) = (id(&topo, "host0/gpu0"), id(&topo, "host5/gpu0"));
    let nic = id(&topo, "host0/nic0");
    let first_switch = |state: &LinkState| {
        let mut router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
        let mut tors = std::collections::BTreeSet::new();
        for seed in 0..64u64 {
            let route = router
                .route(state, &FlowKey::connection(src, dst, 0, seed))
                .unwrap();
            let hop = path(&route)
                .into_iter()
                .find(|&l| topo.link(l).src == nic)
                .unwrap();
            tors.insert(topo.node_name(topo.link(hop).dst).to_string());
        }
        tors
    };
    let up = LinkState::new(&topo);
    assert_eq!(first_switch(&up).len(), 2, "both ports carry connections");
    let mut state = LinkState::new(&topo);
    for l in fabricsim_routing::cables_named(&topo, "host0/nic0--seg0/rail0/tor0").unwrap() {
        state.set_cable(l, LinkCondition::Down);
    }
    assert_eq!(
        first_switch(&state).into_iter().collect::<Vec<_>>(),
        ["seg0/rail0/tor1"]
    );
}

#[test]
fn a_tier_sees_only_the_fields_it_selects() {
    // One GPU pair across racks of an AI Zone, 16 QPs on each of 32 connections (source
    // ports): the RTSW picks one of 16 uplinks by what it hashes.
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let state = LinkState::new(&topo);
    let (src, dst) = (id(&topo, "host0/gpu0"), id(&topo, "host2/gpu0"));
    let uplinks_used = |policy: Policy, fields: &str| {
        let mut router = Router::new(
            &topo,
            policy,
            HashConfig {
                seed: 5,
                fields: HashConfig::parse_fields(fields).unwrap(),
                ..HashConfig::default()
            },
        );
        let mut used = std::collections::BTreeSet::new();
        for seed in 0..32u64 {
            for qp in 0..16 {
                let key = FlowKey::connection(src, dst, qp, seed);
                used.insert(path(&router.route(&state, &key).unwrap())[2]);
            }
        }
        used.len()
    };
    // Addresses only: every connection and QP of the pair on one uplink, even under E-ECMP.
    assert_eq!(uplinks_used(Policy::EEcmp, "ips"), 1);
    // The 5-tuple: the connections' source ports spread; their QPs do not add paths...
    let five = uplinks_used(Policy::Ecmp, "5tuple");
    assert!(five > 8, "{five}");
    // ...and a field list decides, not the policy: E-ECMP told to hash the 5-tuple is ECMP.
    assert_eq!(uplinks_used(Policy::EEcmp, "5tuple"), five);
    assert_eq!(uplinks_used(Policy::Ecmp, "5tuple+qp"), 16);
    // The destination port alone is RoCEv2's 4791 for every flow: one uplink.
    assert_eq!(uplinks_used(Policy::Ecmp, "dport"), 1);
}

#[test]
fn nic_port_mappings_spread_connections_as_their_rules_say_and_fail_over() {
    use fabricsim_routing::NicPorts;
    let topo = build("hpn", &[("segments", "2"), ("hosts_per_segment", "4")]);
    let (src, dst) = (id(&topo, "host0/gpu0"), id(&topo, "host5/gpu0"));
    let nic = id(&topo, "host0/nic0");
    // Per connection (seed), the ToRs its 2 QPs leave the NIC for.
    let tors = |state: &LinkState, mapping: NicPorts| {
        let config = HashConfig {
            nic_ports: mapping,
            ..HashConfig::default()
        };
        let mut router = Router::new(&topo, Policy::Ecmp, config);
        (0..64u64)
            .map(|seed| {
                (0..2)
                    .map(|qp| {
                        let route = router
                            .route(state, &FlowKey::connection(src, dst, qp, seed))
                            .unwrap();
                        let hop = path(&route)
                            .into_iter()
                            .find(|&l| topo.link(l).src == nic)
                            .unwrap();
                        topo.node_name(topo.link(hop).dst).to_string()
                    })
                    .collect::<std::collections::BTreeSet<_>>()
            })
            .collect::<Vec<_>>()
    };
    let up = LinkState::new(&topo);
    // QP affinity: every connection's two QPs on the two ports.
    assert!(tors(&up, NicPorts::QpAffinity).iter().all(|t| t.len() == 2));
    // A bond and the switch-like hash see no QP under ecmp: a connection keeps one port,
    // and connections use both.
    for mapping in [NicPorts::BondL34, NicPorts::Hash] {
        let per_conn = tors(&up, mapping);
        assert!(per_conn.iter().all(|t| t.len() == 1), "{mapping:?}");
        let all: std::collections::BTreeSet<_> = per_conn.into_iter().flatten().collect();
        assert_eq!(all.len(), 2, "{mapping:?}");
    }
    // The bond's port is its formula's, modulo the two ports (in link order).
    let key = FlowKey::connection(src, dst, 0, 11);
    let mut router = Router::new(
        &topo,
        Policy::Ecmp,
        HashConfig {
            nic_ports: NicPorts::BondL34,
            ..HashConfig::default()
        },
    );
    let ports: Vec<LinkId> = topo
        .out_links(nic)
        .iter()
        .copied()
        .filter(|&l| topo.kind(topo.link(l).dst).is_switch())
        .collect();
    let want = ports[(NicPorts::BondL34.port(&key).unwrap() % 2) as usize];
    assert!(path(&router.route(&up, &key).unwrap()).contains(&want));
    // Any mapping: a port down sends everything on the other.
    let mut state = LinkState::new(&topo);
    for l in fabricsim_routing::cables_named(&topo, "host0/nic0--seg0/rail0/tor0").unwrap() {
        state.set_cable(l, LinkCondition::Down);
    }
    for mapping in [NicPorts::Hash, NicPorts::BondL34, NicPorts::QpAffinity] {
        let all: std::collections::BTreeSet<_> =
            tors(&state, mapping).into_iter().flatten().collect();
        assert_eq!(
            all.into_iter().collect::<Vec<_>>(),
            ["seg0/rail0/tor1"],
            "{mapping:?}"
        );
    }
}

/// Three small fabrics of single-homed and dual-homed GPUs, by preset name.
fn small_fabrics() -> [(&'static str, Topology); 3] {
    [
        ("meta-cluster", vec![("zones", "2"), ("racks", "4")]),
        ("hpn", vec![("segments", "2"), ("hosts_per_segment", "4")]),
        ("fat-tree", vec![("k", "4")]),
    ]
    .map(|(preset, settings)| (preset, build(preset, &settings)))
}

/// Every GPU to the GPUs `steps` after it and to one across the fabric: pairs within and
/// across hosts and racks.
fn pairs_at(topo: &Topology, steps: &[usize]) -> Vec<(NodeId, NodeId)> {
    let gpus = topo.gpus();
    let n = gpus.len();
    (0..n)
        .flat_map(|i| {
            steps
                .iter()
                .copied()
                .chain([n / 2 + 3])
                .map(move |d| (gpus[i], gpus[(i + d) % n]))
        })
        .filter(|(a, b)| a != b)
        .collect()
}

#[test]
fn the_scope_of_many_pairs_is_the_union_of_their_spreads() {
    // links_in_scope spreads one pair per pair of switches and adds the others' access links;
    // the union of every pair's own spread must come out.
    use fabricsim_routing::balance::links_in_scope;
    for (preset, topo) in small_fabrics() {
        let state = LinkState::new(&topo);
        let pairs = pairs_at(&topo, &[1, 7]);
        let mut spray = Router::new(&topo, Policy::Spray, HashConfig::default());
        let mut union = vec![false; topo.link_count()];
        for &(a, b) in &pairs {
            for (l, _) in spray
                .route(&state, &FlowKey::connection(a, b, 0, 0))
                .unwrap()
                .incidence()
            {
                union[l.index()] = true;
            }
        }
        assert_eq!(
            links_in_scope(&topo, &state, &pairs).unwrap(),
            union,
            "{preset}"
        );
    }
}

#[test]
fn a_dags_links_marked_are_the_links_of_the_dag() {
    // mark_dag_links runs the DAG's search without ordering it: the links it marks must be
    // every next hop of the DAG, with every link up and with an uplink down. The fabric of
    // 72 racks a zone has cluster switches of more than 64 switch neighbours, whose next hops
    // are read from the hop pool.
    let wide = (
        "meta-cluster",
        build("meta-cluster", &[("zones", "2"), ("racks", "72")]),
    );
    for (preset, topo) in small_fabrics().into_iter().chain([wide]) {
        let gpus = topo.gpus();
        let pairs: Vec<_> = pairs_at(&topo, &[1, 7, 9])
            .into_iter()
            .step_by((gpus.len() / 64).max(1))
            .collect();
        let mut state = LinkState::new(&topo);
        let mut paths = PathFinder::new(&topo);
        let uplink = uplinks(&topo, topo.link(topo.out_links(gpus[0])[0]).dst)[0];
        for down in [false, true] {
            if down {
                state.set(uplink, LinkCondition::Down);
            }
            for &(a, b) in &pairs {
                if topo.host_of(a) == topo.host_of(b) {
                    continue;
                }
                let mut marked = vec![false; topo.link_count()];
                let found = paths.mark_dag_links(&state, a, b, &mut marked);
                let Ok(dag) = paths.shortest_path_dag(&state, a, b) else {
                    // Cut off by the link down: both say so.
                    assert!(down && found.is_err(), "{preset}: {a:?} -> {b:?}");
                    continue;
                };
                let mut links = vec![false; topo.link_count()];
                for (_, hops) in dag {
                    hops.iter().for_each(|l| links[l.index()] = true);
                }
                assert!(found.is_ok() && links.contains(&true), "{preset}");
                assert_eq!(
                    marked, links,
                    "{preset}: {a:?} -> {b:?}, uplink down: {down}"
                );
            }
        }
    }
}

#[test]
fn spreads_between_switches_kept_give_what_a_fresh_search_gives() {
    // A spray router keeps the part between switches of each spread between single-homed GPUs
    // (and takes the ways on and off alone under one switch); every spread must be, to the last
    // bit, what the equal-cost paths make of it: each link's share of the paths, the slowest
    // path's latency. Before and after a link goes down and comes back. The latency asked for
    // alone (kept per pair of switches apart from the spreads) is the spread's.
    for (preset, topo) in small_fabrics() {
        let gpus = topo.gpus();
        let pairs = pairs_at(&topo, &[1, 7, 8, 9]);
        let mut state = LinkState::new(&topo);
        let mut kept = Router::new(&topo, Policy::Spray, HashConfig::default());
        let mut alone = Router::new(&topo, Policy::Spray, HashConfig::default());
        let some_uplink = uplinks(&topo, topo.link(topo.out_links(gpus[0])[0]).dst)
            .first()
            .copied();
        let (mut spreads, mut under_one_switch) = (0, 0);
        for round in 0..3 {
            if let (1 | 2, Some(l)) = (round, some_uplink) {
                let condition = if round == 1 {
                    LinkCondition::Down
                } else {
                    LinkCondition::Up
                };
                state.set(l, condition);
            }
            for &(a, b) in &pairs {
                let key = FlowKey::connection(a, b, 0, 0);
                let alone_latency = alone.latency(&state, &key);
                let Ok(Route::Spread { links, latency }) = kept.route(&state, &key) else {
                    continue;
                };
                assert_eq!(alone_latency, Ok(latency), "{preset} round {round}: alone");
                assert_eq!(kept.latency(&state, &key), Ok(latency), "{preset}: kept");
                let (paths, count) = kept.equal_cost_paths(&state, a, b, 1 << 16).unwrap();
                assert_eq!(paths.len() as u64, count, "{preset}: every path listed");
                let mut uses = std::collections::BTreeMap::new();
                for path in &paths {
                    for &l in path {
                        *uses.entry(l).or_insert(0u64) += 1;
                    }
                }
                let want: Vec<(LinkId, u64)> = uses
                    .iter()
                    .map(|(&l, &k)| (l, (k as f64 / count as f64).to_bits()))
                    .collect();
                let got: Vec<(LinkId, u64)> =
                    links.iter().map(|&(l, w)| (l, w.to_bits())).collect();
                assert_eq!(got, want, "{preset} round {round}: {a:?} -> {b:?}");
                let slowest = paths
                    .iter()
                    .map(|p| p.iter().map(|&l| topo.link(l).latency.0).sum::<u64>())
                    .max();
                assert_eq!(Some(latency.0), slowest, "{preset} round {round}: latency");
                spreads += 1;
                under_one_switch += usize::from(paths.len() == 1 && paths[0].len() == 4);
            }
        }
        assert!(spreads > pairs.len(), "{preset}: spreads checked");
        if preset == "meta-cluster" {
            assert!(under_one_switch > 0, "pairs under one switch checked");
        }
    }
}
