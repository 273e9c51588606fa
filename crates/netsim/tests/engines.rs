//! The engines against closed forms, each other, failures, and the max-min certificate.

use fabricsim_netsim::{AnalyticalEngine, Completion, Engine, FlowEngine, Network};
use fabricsim_routing::{FlowKey, HashConfig, LinkCondition, Policy, Router};
use fabricsim_topology::presets;
use fabricsim_topology::{Bandwidth, LinkId, Nanos, NodeId, Topology};
use proptest::prelude::*;

fn build(name: &str, settings: &[(&str, &str)]) -> Topology {
    presets::build_with(name, settings).unwrap()
}

fn id(topo: &Topology, name: &str) -> NodeId {
    topo.node_by_name(name).unwrap()
}

const GIB: u64 = 1 << 30;
const NIC: f64 = 50e9; // 400 Gbps in bytes/s

/// Rack 0's 16 GPUs each send `bytes` to the same-index GPU of rack 1.
fn rack_to_rack<E: Engine>(net: &mut Network<'_, E>, topo: &Topology, bytes: u64) {
    for h in 0..2 {
        for g in 0..8 {
            let (src, dst) = (
                id(topo, &format!("host{h}/gpu{g}")),
                id(topo, &format!("host{}/gpu{g}", h + 2)),
            );
            net.submit(FlowKey::connection(src, dst, 0, 0), bytes, None)
                .unwrap();
        }
    }
}

fn run<E: Engine>(net: &mut Network<'_, E>) -> Vec<Completion> {
    let mut done = Vec::new();
    net.run_to_end(&mut done);
    done
}

#[test]
fn one_flow_takes_latency_plus_bytes_over_the_nic_rate() {
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    for engine in ["flow", "analytical"] {
        let router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
        let key = FlowKey::connection(id(&topo, "host0/gpu0"), id(&topo, "host2/gpu0"), 0, 0);
        let done = if engine == "flow" {
            let mut net = Network::new(&topo, router, FlowEngine::new(&topo));
            net.submit(key, GIB, None).unwrap();
            run(&mut net)
        } else {
            let mut net = Network::new(&topo, router, AnalyticalEngine::new(&topo));
            net.submit(key, GIB, None).unwrap();
            run(&mut net)
        };
        // PCIe 100 ns + 4 network links of 500 ns + PCIe 100 ns; the NIC link (400G) is the
        // bottleneck (PCIe is 512G).
        let expected = 2_200 + (GIB as f64 / NIC * 1e9).ceil() as u64;
        assert_eq!(
            done,
            vec![Completion {
                flow: fabricsim_netsim::FlowId(0),
                at: Nanos(expected)
            }],
            "{engine}"
        );
    }
}

#[test]
fn uncongested_flow_level_and_analytical_agree() {
    // Pinning puts each of 16 flows on its own uplink: nothing shared, so no contention.
    let topo = build("meta-ai-zone", &[("racks", "4")]);
    let mut flow = Network::new(
        &topo,
        Router::new(&topo, Policy::Pin, HashConfig::default()),
        FlowEngine::new(&topo),
    );
    let mut analytical = Network::new(
        &topo,
        Router::new(&topo, Policy::Pin, HashConfig::default()),
        AnalyticalEngine::new(&topo),
    );
    rack_to_rack(&mut flow, &topo, 256 << 20);
    rack_to_rack(&mut analytical, &topo, 256 << 20);
    let (mut a, mut b) = (run(&mut flow), run(&mut analytical));
    a.sort_by_key(|c| c.flow);
    b.sort_by_key(|c| c.flow);
    assert_eq!(a.len(), 16);
    for (x, y) in a.iter().zip(&b) {
        assert!(x.at.0.abs_diff(y.at.0) <= 1, "{x:?} vs {y:?}");
    }
}

#[test]
fn flows_sharing_a_link_split_it() {
    // One GPU (one 400G NIC) sends to two destinations: the NIC link is shared, half each.
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let mut net = Network::new(
        &topo,
        Router::new(&topo, Policy::Ecmp, HashConfig::default()),
        FlowEngine::new(&topo),
    );
    let src = id(&topo, "host0/gpu0");
    net.submit(
        FlowKey::connection(src, id(&topo, "host2/gpu0"), 0, 0),
        GIB,
        None,
    )
    .unwrap();
    net.submit(
        FlowKey::connection(src, id(&topo, "host3/gpu0"), 0, 0),
        GIB,
        None,
    )
    .unwrap();
    assert_eq!(
        net.engine().rate(fabricsim_netsim::FlowId(0)),
        Bandwidth(25_000_000_000)
    );
    let done = run(&mut net);
    let expected = 2_200 + (2.0 * GIB as f64 / NIC * 1e9).ceil() as u64;
    assert!(
        done.iter().all(|c| c.at.0.abs_diff(expected) <= 1),
        "{done:?} vs {expected}"
    );
}

#[test]
fn an_uplink_failure_mid_transfer_costs_what_the_lost_capacity_implies() {
    // Spray: 16 flows share rack 0's 16 uplinks evenly, each at the NIC rate. Halfway, one
    // uplink fails: the rest of every flow is re-spread over 15 uplinks at 15/16 of the rate.
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let mut net = Network::new(
        &topo,
        Router::new(&topo, Policy::Spray, HashConfig::default()),
        FlowEngine::new(&topo),
    );
    let bytes = GIB;
    rack_to_rack(&mut net, &topo, bytes);
    let full = bytes as f64 / NIC; // seconds at full rate
    let half = Nanos((full / 2.0 * 1e9) as u64);
    let mut done = Vec::new();
    net.advance(half, &mut done);
    assert!(done.is_empty());
    let rtsw = id(&topo, "zone0/rack0/rtsw");
    let uplink = topo
        .out_links(rtsw)
        .iter()
        .copied()
        .find(|&l| topo.kind(topo.link(l).dst).is_switch())
        .unwrap();
    net.set_cable(uplink, LinkCondition::Down);
    assert!(net.stalled().is_empty());
    net.run_to_end(&mut done);
    assert_eq!(done.len(), 16);
    let makespan = done.iter().map(|c| c.at.0).max().unwrap() as f64 * 1e-9;
    let expected = full / 2.0 + (full / 2.0) * 16.0 / 15.0 + 2_200e-9;
    assert!(
        (makespan - expected).abs() < 1e-6,
        "makespan {makespan} s, expected {expected} s"
    );
    // Nothing crossed the dead uplink after the failure: its bytes are those of the first half.
    let stats = net.engine().link_stats().clone();
    let carried = stats.bytes[uplink.index()];
    assert!(
        (carried - 16.0 * bytes as f64 / 2.0 / 16.0).abs() < 1e3,
        "{carried}"
    );
}

#[test]
fn a_flow_with_no_path_left_stalls_and_resumes_on_repair() {
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let mut net = Network::new(
        &topo,
        Router::new(&topo, Policy::Ecmp, HashConfig::default()),
        FlowEngine::new(&topo),
    );
    net.submit(
        FlowKey::connection(id(&topo, "host0/gpu0"), id(&topo, "host2/gpu0"), 0, 0),
        GIB,
        None,
    )
    .unwrap();
    let nic = id(&topo, "host0/nic0");
    let nic_link = topo
        .out_links(nic)
        .iter()
        .copied()
        .find(|&l| topo.kind(topo.link(l).dst).is_switch())
        .unwrap();
    let mut done = Vec::new();
    net.advance(Nanos(1_000_000), &mut done);
    net.set_cable(nic_link, LinkCondition::Down);
    assert_eq!(net.stalled().len(), 1);
    assert!(net.stalled()[0]
        .1
        .to_string()
        .contains("no path from `host0/gpu0` to `host2/gpu0`"));
    assert_eq!(
        net.engine().next_event(),
        None,
        "a stalled flow never finishes by itself"
    );
    net.advance(Nanos(5_000_000), &mut done);
    net.set_cable(nic_link, LinkCondition::Up);
    assert!(net.stalled().is_empty());
    net.run_to_end(&mut done);
    // 4 ms of stall on top of the uncongested time.
    let expected = 4_000_000 + 2_200 + (GIB as f64 / NIC * 1e9).ceil() as u64;
    assert!(
        done[0].at.0.abs_diff(expected) <= 2,
        "{:?} vs {expected}",
        done[0]
    );
}

#[test]
fn only_flows_a_change_can_affect_are_resolved() {
    let topo = build("meta-ai-zone", &[("racks", "4")]);
    let mut engine = FlowEngine::new(&topo);
    let mut router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
    let state = fabricsim_routing::LinkState::new(&topo);
    let mut submit = |engine: &mut FlowEngine, a: &str, b: &str, bytes: u64| {
        let route = router
            .route(
                &state,
                &FlowKey::connection(id(&topo, a), id(&topo, b), 0, 0),
            )
            .unwrap();
        engine.submit(fabricsim_netsim::FlowSpec {
            path: None,
            links: &route.incidence(),
            bytes,
            cap: None,
            latency: route.latency(),
        })
    };
    // A fits at its solo rate (fast path, no solve); B shares A's NIC, so A and B are solved
    // together; C is elsewhere and fits (fast path).
    submit(&mut engine, "host0/gpu0", "host2/gpu0", GIB);
    submit(&mut engine, "host0/gpu0", "host3/gpu0", GIB);
    submit(&mut engine, "host4/gpu0", "host6/gpu0", 1 << 20);
    assert_eq!(
        engine.rate(fabricsim_netsim::FlowId(0)),
        Bandwidth(25_000_000_000)
    );
    assert_eq!(engine.solved_flows(), 2);
    let mut done = Vec::new();
    while let Some(t) = engine.next_event() {
        engine.advance(t, &mut done);
    }
    // C finishing touches nobody; A and B finish together and leave nothing to re-solve.
    assert_eq!(engine.solved_flows(), 2);
    assert_eq!(engine.solves(), 1);
    assert_eq!(done.len(), 3);
}

/// `n` flows of `bytes` from each of `pairs` (source, destination) in turn, 1 ns apart, on one
/// engine; returns it and the completions.
fn dense(
    topo: &Topology,
    pairs: &[(&str, &str)],
    n: usize,
    bytes: u64,
) -> (FlowEngine, Vec<Completion>) {
    let mut engine = FlowEngine::new(topo);
    let mut router = Router::new(topo, Policy::Ecmp, HashConfig::default());
    let state = fabricsim_routing::LinkState::new(topo);
    let mut done = Vec::new();
    for i in 0..n {
        engine.advance(Nanos(i as u64), &mut done);
        let (a, b) = pairs[i % pairs.len()];
        let key = FlowKey::connection(id(topo, a), id(topo, b), 0, 0);
        let route = router.route(&state, &key).unwrap();
        engine.submit(fabricsim_netsim::FlowSpec {
            path: None,
            links: &route.incidence(),
            bytes,
            cap: None,
            latency: route.latency(),
        });
    }
    while let Some(t) = engine.next_event() {
        engine.advance(t, &mut done);
    }
    (engine, done)
}

#[test]
fn flows_on_one_path_share_it_as_one_cohort() {
    // 1,000 flows of 1 MiB from one GPU to another, 1 ns apart: one path, one cohort. Processor
    // sharing on the NIC: the link never idles, so the last byte leaves after all the bytes at
    // the NIC's rate, and equal flows finish in the order they started.
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let n = 1000;
    let (engine, done) = dense(&topo, &[("host0/gpu0", "host2/gpu0")], n, 1 << 20);
    assert_eq!(engine.flow_count(), n);
    assert_eq!(engine.cohort_count(), 1);
    assert_eq!(done.len(), n);
    let order: Vec<u32> = done.iter().map(|c| c.flow.0).collect();
    assert_eq!(order, (0..n as u32).collect::<Vec<_>>());
    let last = done.last().unwrap().at.0 as f64;
    let expected = 2_200.0 + n as f64 * (1u64 << 20) as f64 / NIC * 1e9;
    assert!((last - expected).abs() < n as f64, "{last} vs {expected}");
}

#[test]
fn memory_follows_the_flows_in_flight_not_every_flow_submitted() {
    // Step fidelity submits a schedule's flows as their dependencies resolve: here 3 at a time,
    // 3,000 in all. The network and the engine forget each finished one.
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
    let mut net = Network::new(&topo, router, FlowEngine::new(&topo));
    let gpu = |h: u32, g: u32| id(&topo, &format!("host{h}/gpu{g}"));
    let mut done = Vec::new();
    let mut most = 0;
    for wave in 0..1_000u32 {
        for g in 0..3 {
            let key = FlowKey::connection(gpu(0, g), gpu(2 + wave % 2, g), wave, 0);
            net.submit(key, 1 << 20, None).unwrap();
        }
        most = most.max(net.flows_held()).max(net.engine().flows_held());
        let before = done.len();
        while done.len() < before + 3 {
            let t = net.engine().next_event().unwrap();
            net.advance(t, &mut done);
        }
    }
    assert_eq!(net.engine().flow_count(), 3_000);
    assert_eq!(done.len(), 3_000);
    assert!(most <= 6, "held {most} flows' records with 3 in flight");
    assert_eq!((net.flows_held(), net.engine().flows_held()), (0, 0));
}

#[test]
fn a_fixed_link_state_keeps_no_recipe_and_runs_the_same() {
    // A bench declares that no link changes: its flows keep nothing to be routed again with,
    // and complete where and when they would otherwise.
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let gpu = |h: u32, g: u32| id(&topo, &format!("host{h}/gpu{g}"));
    let run = |fixed: bool| {
        let router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
        let mut net = Network::new(&topo, router, FlowEngine::new(&topo));
        if fixed {
            net.fix_link_state();
        }
        for g in 0..8 {
            let key = FlowKey::connection(gpu(0, g), gpu(2 + g % 2, (g + 3) % 8), g, 0);
            net.submit(key, (1 + u64::from(g)) << 20, None).unwrap();
        }
        let held = net.flows_held();
        let mut done = Vec::new();
        net.run_to_end(&mut done);
        (held, done)
    };
    let ((kept, free), (none, fixed)) = (run(false), run(true));
    assert_eq!((kept, none), (8, 0));
    assert_eq!(fixed, free);
    assert_eq!(fixed.len(), 8);
}

#[test]
fn flows_one_after_another_on_a_path_reuse_its_cohort() {
    // A ring's steps: each flow starts when the one before it has completed, on the same path.
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let mut engine = FlowEngine::new(&topo);
    let mut router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
    let state = fabricsim_routing::LinkState::new(&topo);
    let key = FlowKey::connection(id(&topo, "host0/gpu0"), id(&topo, "host2/gpu0"), 0, 0);
    let route = router.route(&state, &key).unwrap();
    let one = 2_200 + ((1u64 << 20) as f64 / NIC * 1e9).ceil() as u64;
    let mut done = Vec::new();
    for step in 0..100u64 {
        assert_eq!(engine.now(), Nanos(step * one));
        engine.submit(fabricsim_netsim::FlowSpec {
            path: None,
            links: &route.incidence(),
            bytes: 1 << 20,
            cap: None,
            latency: route.latency(),
        });
        // Its drain, then its completion a path latency later.
        while done.len() as u64 == step {
            let t = engine.next_event().unwrap();
            engine.advance(t, &mut done);
        }
    }
    assert_eq!(done.len(), 100);
    assert_eq!(engine.cohort_count(), 1);
    let bytes: f64 = engine.link_stats().bytes.iter().sum();
    assert_eq!(
        bytes,
        100.0 * (1u64 << 20) as f64 * route.incidence().len() as f64
    );
}

#[test]
fn dense_sharing_work_grows_with_flows_not_with_flows_squared() {
    // Flows among 8 GPUs of 4 racks, over few paths: the variables re-solved per flow stay
    // bounded by the paths in flight as the flows grow eightfold (they grew with the flows in
    // flight when each flow was its own variable).
    let topo = build("meta-ai-zone", &[("racks", "4")]);
    let pairs: Vec<(String, String)> = (0..8)
        .flat_map(|s| (0..8).filter(move |&d| d != s).map(move |d| (s, d)))
        .map(|(s, d)| (format!("host{}/gpu0", s), format!("host{}/gpu0", d)))
        .collect();
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let per_flow = |n: usize| {
        let (engine, done) = dense(&topo, &pairs, n, 1 << 20);
        assert_eq!(done.len(), n);
        assert!(engine.cohort_count() <= pairs.len() * (n / pairs.len()).max(1));
        engine.solved_flows() as f64 / n as f64
    };
    let (small, large) = (per_flow(1_000), per_flow(8_000));
    assert!(
        small <= 2.0 * pairs.len() as f64,
        "{small} cohorts re-solved per flow"
    );
    assert!(
        large <= 1.5 * small + 1.0,
        "{small} → {large} per flow at 8× the flows"
    );
}

#[test]
fn a_link_passed_through_takes_in_only_the_flows_it_binds() {
    // Five links between switches at chosen capacities (bytes/s), and flows on them by hand:
    // four flows and D on V; D and F on Z; F, S and T on Y; S alone on X, T alone on W. Max-min:
    // V's five at 1e9, F at 4e9 (Z and Y both full), S and T at 3e9 (X and W).
    let topo = build("leaf-spine", &[("k", "4")]);
    let between_switches: Vec<LinkId> = topo
        .link_ids()
        .filter(|&l| {
            let link = topo.link(l);
            [link.src, link.dst]
                .iter()
                .all(|&n| matches!(topo.kind(n), fabricsim_topology::NodeKind::Switch(_)))
        })
        .collect();
    let [v, z, y, x, w] = between_switches[..5] else {
        panic!("leaf-spine k=4 has links between switches");
    };
    let mut engine = FlowEngine::new(&topo);
    for (l, gbs) in [(v, 5), (z, 5), (y, 10), (x, 3), (w, 3)] {
        engine.set_link_capacity(l, Bandwidth(gbs * 1_000_000_000));
    }
    let mut submit = |links: &[LinkId], bytes: u64| {
        let links: Vec<(LinkId, f64)> = links.iter().map(|&l| (l, 1.0)).collect();
        engine.submit(fabricsim_netsim::FlowSpec {
            path: None,
            links: &links,
            bytes,
            cap: None,
            latency: Nanos(0),
        })
    };
    let on_v: Vec<_> = (0..4).map(|_| submit(&[v], GIB)).collect();
    let d = submit(&[v, z], 1 << 20);
    let (f, s, t) = (
        submit(&[z, y], GIB),
        submit(&[y, x], GIB),
        submit(&[y, w], GIB),
    );
    let rate = |e: &mut FlowEngine, flow| e.rate(flow).0;
    assert_eq!(rate(&mut engine, d), 1_000_000_000);
    assert_eq!(
        [f, s, t].map(|g| rate(&mut engine, g)),
        [4_000_000_000, 3_000_000_000, 3_000_000_000]
    );
    // D drains first. Its links V and Z were full: V's four flows (one cohort, one path) and F
    // are solved again, and F's other link Y is full, but binds only F, its fastest: S and T
    // at 3e9 are bottlenecked on X and W, and stay out of the set (they were in it, 4 cohorts,
    // when the search took every flow above the floor on every full link).
    let before = engine.solved_flows();
    let mut done = Vec::new();
    let t0 = engine.next_event().unwrap();
    engine.advance(t0, &mut done);
    assert_eq!(done.len(), 1);
    assert_eq!(rate(&mut engine, on_v[0]), 1_250_000_000);
    assert_eq!(
        [f, s, t].map(|g| rate(&mut engine, g)),
        [4_000_000_000, 3_000_000_000, 3_000_000_000]
    );
    assert_eq!(engine.solved_flows() - before, 2);
}

/// Random flows: (src gpu, dst gpu, bytes, start µs); GPU numbers wrap around the fabric.
fn flows() -> impl Strategy<Value = Vec<(u32, u32, u64, u64)>> {
    prop::collection::vec((0u32..16, 0u32..16, 1u64..(64 << 20), 0u64..200), 1..40)
}

/// Small instances of several presets: two-tier, three-tier oversubscribed, dual-ToR
/// dual-plane, rail-optimized.
fn small_fabric(i: usize) -> Topology {
    match i {
        0 => build("leaf-spine", &[("k", "4"), ("gpus_per_host", "2")]),
        1 => build("fat-tree", &[("k", "4")]),
        2 => build(
            "meta-cluster",
            &[
                ("zones", "2"),
                ("racks", "2"),
                ("hosts_per_rack", "2"),
                ("gpus_per_host", "2"),
                ("atsw_oversubscription", "2"),
            ],
        ),
        3 => build(
            "hpn",
            &[
                ("segments", "2"),
                ("hosts_per_segment", "2"),
                ("gpus_per_host", "2"),
                ("tor_uplinks", "2"),
            ],
        ),
        _ => build(
            "superpod",
            &[
                ("sus", "2"),
                ("nodes_per_su", "4"),
                ("gpus_per_host", "2"),
                ("spine_radix", "8"),
            ],
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn max_min_certificate_capacity_and_conservation(
        flows in flows(),
        fabric in 0usize..5,
        policy in 0usize..4,
        seed in 0u64..1000,
        qps in 1u32..5,
    ) {
        let topo = small_fabric(fabric);
        let policy = Policy::parse(Policy::NAMES[policy]).unwrap();
        let gpus = topo.gpus();
        let n = gpus.len() as u32;
        // `in_place`: every component solved where it lies (`solve_in_place_above(0)`);
        // `apart`: twin links solved each on its own (`keep_twins_apart`).
        let run_once = |in_place: bool, apart: bool| {
            let mut engine = FlowEngine::new(&topo);
            if in_place {
                engine.solve_in_place_above(0);
            }
            if apart {
                engine.keep_twins_apart();
            }
            let mut net = Network::new(&topo, Router::new(&topo, policy, HashConfig { seed, polarized: false, functions: [None; 3], ..HashConfig::default() }), engine);
            let mut order: Vec<_> = flows.iter().filter(|f| f.0 % n != f.1 % n).collect();
            order.sort_by_key(|f| f.3);
            let mut done = Vec::new();
            let mut expected_link_bytes = 0.0;
            for &&(s, d, bytes, start) in &order {
                net.advance(Nanos(start * 1_000), &mut done);
                // Split over `qps` QPs, as `flows --qps N` does: equal flows at equal rates,
                // the ties the incremental solve must not chain through.
                for qp in 0..qps {
                    let key = FlowKey::connection(gpus[(s % n) as usize], gpus[(d % n) as usize], qp, seed);
                    let part = bytes / u64::from(qps) + 1;
                    let f = net.submit(key, part, None).unwrap();
                    expected_link_bytes += part as f64 * net.route_of(f).iter().map(|&(_, w)| w).sum::<f64>();
                }
                certify(&topo, &mut net)?;
            }
            // After every departure too: the re-solve there covers only the faster flows.
            while let Some(t) = net.engine().next_event() {
                net.advance(t, &mut done);
                certify(&topo, &mut net)?;
            }
            let stats = net.engine().link_stats().clone();
            let carried: f64 = stats.bytes.iter().sum();
            prop_assert!((carried - expected_link_bytes).abs() <= 1e-6 * expected_link_bytes + 1.0, "bytes {carried} vs {expected_link_bytes}");
            prop_assert_eq!(done.len(), order.len() * qps as usize);
            Ok((done, stats))
        };
        let first = run_once(false, false)?;
        prop_assert_eq!(&first.0, &run_once(false, false)?.0, "same inputs, same completions");
        prop_assert_eq!(&first.0, &run_once(true, false)?.0, "solved in place, the same completions");
        let apart = run_once(false, true)?;
        prop_assert_eq!(&first.0, &apart.0, "twins solved apart, the same completions");
        prop_assert_eq!(&first.1.bytes, &apart.1.bytes, "and the same bytes on every link");
        prop_assert_eq!(&first.1.busy, &apart.1.busy, "and busy times");
        prop_assert_eq!(&first.1.peak_utilization, &apart.1.peak_utilization, "and peaks");
    }
}

/// No link over capacity, and every flow has a saturated link on which no flow is faster.
/// Rates are read in whole bytes per second, rounded down: a link's load as read may fall short
/// of its capacity by up to one byte per second per flow on it (`rounding`).
fn certify(topo: &Topology, net: &mut Network<'_, FlowEngine>) -> Result<(), TestCaseError> {
    let n = net.engine().flow_count();
    let mut load = vec![0.0f64; topo.link_count()];
    let mut rounding = vec![0.0f64; topo.link_count()];
    let mut fastest = vec![0.0f64; topo.link_count()];
    let mut rates = Vec::new();
    for f in 0..n {
        let flow = fabricsim_netsim::FlowId(f as u32);
        if !net.engine().is_active(flow) {
            rates.push(None);
            continue;
        }
        let r = net.engine().rate(flow).0 as f64;
        for (l, w) in net.route_of(flow) {
            load[l.index()] += w * r;
            rounding[l.index()] += w;
            fastest[l.index()] = f64::max(fastest[l.index()], r);
        }
        rates.push(Some(r));
    }
    for (l, &x) in load.iter().enumerate() {
        let cap = topo.link(LinkId(l as u32)).capacity.0 as f64;
        prop_assert!(
            x <= cap * (1.0 + 1e-9) + 1.0,
            "link {l} carries {x} > {cap}"
        );
    }
    for (f, r) in rates.iter().enumerate() {
        let Some(r) = *r else { continue };
        let route = net.route_of(fabricsim_netsim::FlowId(f as u32));
        let bottleneck = route.iter().any(|&(l, _)| {
            let cap = topo.link(l).capacity.0 as f64;
            load[l.index()] >= cap * (1.0 - 1e-9) - rounding[l.index()] - 2.0
                && r >= fastest[l.index()] - 2.0
        });
        prop_assert!(bottleneck, "flow {f} at {r} B/s has no bottleneck link");
    }
    Ok(())
}
