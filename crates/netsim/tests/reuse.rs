//! Routes, bundles and paths met again: the route memo against routing afresh, flows placed
//! where the last ones went against flows placed by their links, and named paths against
//! unnamed ones, across link failures and repairs.

use fabricsim_netsim::network::{Leg, Strand};
use fabricsim_netsim::{Completion, Engine, FlowEngine, FlowId, Network};
use fabricsim_routing::{FlowKey, HashConfig, LinkCondition, Policy, Router};
use fabricsim_topology::presets;
use fabricsim_topology::{Bandwidth, Nanos, NodeId, Topology};

fn build(name: &str, settings: &[(&str, &str)]) -> Topology {
    presets::build_with(name, settings).unwrap()
}

fn id(topo: &Topology, name: &str) -> NodeId {
    topo.node_by_name(name).unwrap()
}

const GIB: u64 = 1 << 30;

/// A memoized route is the route: the same key routes as without the memo, and once the link
/// it took goes down the memo is forgotten and the key routes around it.
#[test]
fn memoized_routes_follow_the_link_state() {
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let key = FlowKey::connection(id(&topo, "host0/gpu0"), id(&topo, "host2/gpu0"), 7, 3);
    let router = || Router::new(&topo, Policy::Ecmp, HashConfig::default());
    let mut plain = Network::new(&topo, router(), FlowEngine::new(&topo));
    let mut memo = Network::new(&topo, router(), FlowEngine::new(&topo));
    memo.memoize_routes();
    let first = memo.submit(key, GIB, None).unwrap();
    let again = memo.submit(key, GIB, None).unwrap();
    let reference = plain.submit(key, GIB, None).unwrap();
    assert_eq!(memo.route_of(first), plain.route_of(reference));
    assert_eq!(memo.route_of(again), memo.route_of(first));
    // Take down the uplink the key took out of rack 0.
    let rtsw = id(&topo, "zone0/rack0/rtsw");
    let (uplink, _) = *memo
        .route_of(first)
        .iter()
        .find(|&&(l, _)| topo.link(l).src == rtsw)
        .unwrap();
    memo.set_cable(uplink, LinkCondition::Down);
    plain.set_cable(uplink, LinkCondition::Down);
    let after = memo.submit(key, GIB, None).unwrap();
    let reference = plain.submit(key, GIB, None).unwrap();
    assert!(memo.route_of(after).iter().all(|&(l, _)| l != uplink));
    assert_eq!(memo.route_of(after), plain.route_of(reference));
}

/// A remembered bundle is the bundle: the same strands merge to the same links as without the
/// memo, and after a link it took goes down, bundles in flight (kept whole or as one strand's
/// keys) are re-routed as a fresh submission of the same strands is.
#[test]
fn memoized_bundles_follow_the_link_state() {
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let gpu = |name: &str| id(&topo, name);
    let key = |a: &str, b: &str, qp| FlowKey::connection(gpu(a), gpu(b), qp, 5);
    let ring = || {
        vec![
            Strand {
                legs: [Leg::Routed(key("host0/gpu0", "host2/gpu0", 0))]
                    .into_iter()
                    .collect(),
                weight: 0.5,
            },
            Strand {
                legs: [Leg::Routed(key("host1/gpu0", "host3/gpu0", 0))]
                    .into_iter()
                    .collect(),
                weight: 0.5,
            },
        ]
    };
    // Through a PXN proxy: one strand of two routed legs.
    let via = || {
        vec![Strand {
            legs: [
                Leg::Routed(key("host0/gpu1", "host0/gpu2", 0)),
                Leg::Routed(key("host0/gpu2", "host2/gpu2", 1)),
            ]
            .into_iter()
            .collect(),
            weight: 1.0,
        }]
    };
    let router = || Router::new(&topo, Policy::Ecmp, HashConfig::default());
    let mut plain = Network::new(&topo, router(), FlowEngine::new(&topo));
    let mut memo = Network::new(&topo, router(), FlowEngine::new(&topo));
    memo.memoize_routes();
    let mut flows = Vec::new();
    let bundles: [&dyn Fn() -> Vec<Strand>; 2] = [&ring, &via];
    for strands in bundles {
        let first = memo.submit_bundle(strands(), GIB, None).unwrap().0;
        let again = memo.submit_bundle(strands(), GIB, None).unwrap().0;
        let reference = plain.submit_bundle(strands(), GIB, None).unwrap().0;
        assert_eq!(memo.route_of(first), plain.route_of(reference));
        assert_eq!(memo.route_of(again), memo.route_of(first));
        flows.push((first, strands));
    }
    // Take down the uplink out of rack 0 of each bundle's first strand.
    let rtsw = id(&topo, "zone0/rack0/rtsw");
    for (flow, strands) in flows {
        let (uplink, _) = *memo
            .route_of(flow)
            .iter()
            .find(|&&(l, _)| topo.link(l).src == rtsw && topo.kind(topo.link(l).dst).is_switch())
            .unwrap();
        memo.set_cable(uplink, LinkCondition::Down);
        plain.set_cable(uplink, LinkCondition::Down);
        let rerouted = memo.route_of(flow);
        assert!(rerouted.iter().all(|&(l, _)| l != uplink));
        let fresh = memo.submit_bundle(strands(), GIB, None).unwrap().0;
        let reference = plain.submit_bundle(strands(), GIB, None).unwrap().0;
        assert_eq!(rerouted, memo.route_of(fresh));
        assert_eq!(memo.route_of(fresh), plain.route_of(reference));
    }
}

/// What [`across_an_uplink_failure`] saw: the completions, each submission's latency, and the
/// links' bytes, busy times and peaks.
type Seen = (Vec<Completion>, Vec<Nanos>, Vec<f64>, Vec<Nanos>, Vec<f64>);

/// 120 submissions of 1 MiB 20 µs apart, overlapping, alternating between two senders from
/// rack 0 to rack 1 of `topo` (`send(net, sender, now)` submits one); the rack-0 uplink of the
/// first one's route fails at the 40th and comes back at the 80th. Every submission must be on
/// links up.
fn across_an_uplink_failure(
    topo: &Topology,
    mut send: impl FnMut(&mut Network<'_, FlowEngine>, usize, Nanos) -> (FlowId, Nanos),
) -> Seen {
    let rtsw = id(topo, "zone0/rack0/rtsw");
    let router = Router::new(topo, Policy::Ecmp, HashConfig::default());
    let mut net = Network::new(topo, router, FlowEngine::new(topo));
    net.memoize_routes();
    let (mut done, mut uplink, mut latencies) = (Vec::new(), None, Vec::new());
    for i in 0..120u64 {
        let now = Nanos(i * 20_000);
        net.advance(now, &mut done);
        if let (40 | 80, Some(l)) = (i, uplink) {
            let condition = if i == 40 {
                LinkCondition::Down
            } else {
                LinkCondition::Up
            };
            net.set_cable(l, condition);
        }
        let (flow, latency) = send(&mut net, (i % 2) as usize, now);
        latencies.push(latency);
        let route = net.route_of(flow);
        assert!(route.iter().all(|&(l, _)| net.link_state().is_up(l)));
        if i == 0 {
            let &(l, _) = route
                .iter()
                .find(|&&(l, _)| topo.link(l).src == rtsw)
                .unwrap();
            uplink = Some(l);
        }
    }
    net.run_to_end(&mut done);
    let stats = net.link_stats().clone();
    (
        done,
        latencies,
        stats.bytes,
        stats.busy,
        stats.peak_utilization,
    )
}

#[test]
fn messages_placed_where_the_last_went_run_as_routed_ones() {
    // Two connections send messages across an uplink's failure and repair, each placed where
    // its connection's last one went (while the link state holds) or routed: the same
    // completions and link figures, and each message on its route of the moment.
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let gpu = |name: &str| id(&topo, name);
    let keys = [
        FlowKey::connection(gpu("host0/gpu0"), gpu("host2/gpu0"), 0, 9),
        FlowKey::connection(gpu("host1/gpu3"), gpu("host3/gpu3"), 0, 9),
    ];
    let mut at = [None, None];
    let on = across_an_uplink_failure(&topo, |net, c, now| {
        let (flow, _) = net
            .submit_message_on(keys[c], 1 << 20, now, &mut at[c])
            .unwrap();
        (flow, Nanos(0))
    });
    let routed = across_an_uplink_failure(&topo, |net, c, now| {
        (
            net.submit_message(keys[c], 1 << 20, now).unwrap().0,
            Nanos(0),
        )
    });
    assert_eq!(on.0.len(), 120);
    assert_eq!(on, routed);
}

#[test]
fn bundles_placed_where_the_last_went_run_as_submitted_ones() {
    // Two bundles, each two strands (one through a proxy GPU, as PXN sends), submitted across
    // an uplink's failure and repair, each placed where its last submission went (while the
    // link state holds) or submitted afresh: the same completions, latencies and link figures.
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let gpu = |name: &str| id(&topo, name);
    let key = |a: &str, b: &str, qp| FlowKey::connection(gpu(a), gpu(b), qp, 9);
    let routed = |keys: &[FlowKey]| Strand {
        legs: keys.iter().map(|&k| Leg::Routed(k)).collect(),
        weight: 1.0,
    };
    let bundles = [
        vec![
            routed(&[key("host0/gpu0", "host2/gpu0", 0)]),
            routed(&[
                key("host0/gpu0", "host0/gpu1", 0),
                key("host0/gpu1", "host2/gpu1", 0),
            ]),
        ],
        vec![
            routed(&[key("host1/gpu3", "host3/gpu3", 1)]),
            routed(&[key("host1/gpu2", "host3/gpu5", 1)]),
        ],
    ];
    let mut at = [None, None];
    let on = across_an_uplink_failure(&topo, |net, c, _| {
        let strands = bundles[c].clone();
        net.submit_bundle_on(strands, 1 << 20, None, &mut at[c])
            .unwrap()
    });
    let submitted = across_an_uplink_failure(&topo, |net, c, _| {
        net.submit_bundle(bundles[c].clone(), 1 << 20, None)
            .unwrap()
    });
    assert_eq!(on.0.len(), 120);
    assert_eq!(on, submitted);
}

#[test]
fn a_path_named_again_is_its_cohort_and_runs_as_unnamed() {
    // Steps on one path as above, every other one under a name (as the network names a ring
    // channel's merged links): named or not, one cohort and the same completions. A name
    // stands for the links only: under another cap the path is another cohort.
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let mut router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
    let state = fabricsim_routing::LinkState::new(&topo);
    let key = FlowKey::connection(id(&topo, "host0/gpu0"), id(&topo, "host2/gpu0"), 0, 0);
    let route = router.route(&state, &key).unwrap();
    let links = route.incidence();
    let steps = |named: bool| {
        let mut engine = FlowEngine::new(&topo);
        let mut done = Vec::new();
        for step in 0..20u64 {
            engine.submit(fabricsim_netsim::FlowSpec {
                path: (named && step % 2 == 1).then_some(7),
                links: &links,
                bytes: 1 << 20,
                cap: None,
                latency: route.latency(),
            });
            while done.len() as u64 == step {
                let t = engine.next_event().unwrap();
                engine.advance(t, &mut done);
            }
        }
        (engine, done)
    };
    let (mut named, by_name) = steps(true);
    let (_, unnamed) = steps(false);
    assert_eq!(by_name, unnamed);
    assert_eq!(named.cohort_count(), 1);
    named.submit(fabricsim_netsim::FlowSpec {
        path: Some(7),
        links: &links,
        bytes: 1 << 20,
        cap: Some(Bandwidth(1_000_000_000)),
        latency: route.latency(),
    });
    assert_eq!(named.cohort_count(), 2);
}
