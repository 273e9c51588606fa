//! Host-side path selection: disjoint paths by outstanding bytes, flowlets after an idle gap.

use fabricsim_routing::select::{Choice, PathSelection, Selector};
use fabricsim_routing::{FlowKey, HashConfig, LinkState, Policy, Router};
use fabricsim_topology::presets;
use fabricsim_topology::{LinkId, Nanos, NodeKind, Topology};

fn hpn() -> Topology {
    presets::build_with("hpn", &[("segments", "2")]).unwrap()
}

/// Issues a message on `key` at `now` through `sel`.
fn choose(
    sel: &mut Selector,
    router: &mut Router<'_>,
    topo: &Topology,
    key: FlowKey,
    now: u64,
) -> (Choice, Option<fabricsim_routing::select::Ticket>) {
    let state = LinkState::new(topo);
    sel.choose(key, 1 << 20, Nanos(now), 0, |s, d, limit| {
        router
            .equal_cost_paths(&state, s, d, limit)
            .map(|(p, _)| p)
            .unwrap_or_default()
    })
}

fn path(c: &Choice) -> Vec<LinkId> {
    match c {
        Choice::Path(p) => p.clone(),
        Choice::Key(k) => panic!("hashed: {k:?}"),
    }
}

#[test]
fn disjoint_paths_share_nothing_and_a_free_one_is_always_taken_first() {
    let topo = hpn();
    let mut router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
    let mut sel = Selector::new(PathSelection::Disjoint { paths: 4 });
    let (a, b) = (
        topo.hosts()[0].gpus[0],
        topo.hosts().last().unwrap().gpus[0],
    );
    let key = FlowKey::connection(a, b, 0, 0);
    let (first, t0) = choose(&mut sel, &mut router, &topo, key, 0);
    let paths = sel.paths(a, b).to_vec();
    assert!(paths.len() >= 2, "a dual-ToR host has disjoint paths");
    // No two kept paths share a link but the GPUs' own.
    for (i, p) in paths.iter().enumerate() {
        for q in &paths[i + 1..] {
            for l in p.iter().filter(|l| q.contains(l)) {
                let x = topo.link(*l);
                assert!(topo.kind(x.src) == NodeKind::Gpu || topo.kind(x.dst) == NodeKind::Gpu);
            }
        }
    }
    // Concurrent messages take every free path before any is used twice.
    let mut taken = vec![path(&first)];
    let mut tickets = vec![t0.unwrap()];
    for _ in 1..paths.len() {
        let (c, t) = choose(&mut sel, &mut router, &topo, key, 0);
        assert!(!taken.contains(&path(&c)), "a free path was left");
        taken.push(path(&c));
        tickets.push(t.unwrap());
    }
    // All busy: the next goes with the fewest outstanding bytes (all equal: the first). Once
    // the second path's message is done, it is the free one.
    sel.done(tickets[1], Nanos(5));
    let (c, _) = choose(&mut sel, &mut router, &topo, key, 5);
    assert_eq!(path(&c), taken[1]);
}

#[test]
fn single_homed_hosts_keep_paths_disjoint_above_their_one_cable() {
    // Two racks of an AI Zone: a GPU's NIC has one cable to its RTSW, and 16 CTSWs above.
    let topo = presets::build_with("meta-ai-zone", &[("racks", "2")]).unwrap();
    let mut router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
    let mut sel = Selector::new(PathSelection::Disjoint { paths: 4 });
    let (a, b) = (
        topo.hosts()[0].gpus[0],
        topo.hosts().last().unwrap().gpus[0],
    );
    choose(
        &mut sel,
        &mut router,
        &topo,
        FlowKey::connection(a, b, 0, 0),
        0,
    );
    let paths = sel.paths(a, b).to_vec();
    assert_eq!(paths.len(), 4, "four paths through distinct CTSWs");
    for (i, p) in paths.iter().enumerate() {
        for q in &paths[i + 1..] {
            for l in p.iter().filter(|l| q.contains(l)) {
                let x = topo.link(*l);
                let kinds = [topo.kind(x.src), topo.kind(x.dst)];
                assert!(
                    kinds.contains(&NodeKind::Gpu) || kinds.contains(&NodeKind::Nic),
                    "{} -> {} is shared above the access cable",
                    topo.node_name(x.src),
                    topo.node_name(x.dst)
                );
            }
        }
    }
}

#[test]
fn a_flowlet_is_rehashed_only_after_the_gap() {
    let topo = hpn();
    let mut router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
    let gap = 500_000;
    let mut sel = Selector::new(PathSelection::Flowlet { gap: Nanos(gap) });
    let (a, b) = (
        topo.hosts()[0].gpus[0],
        topo.hosts().last().unwrap().gpus[0],
    );
    let key = FlowKey::connection(a, b, 0, 0);
    let port = |c: &Choice| match c {
        Choice::Key(k) => k.src_port,
        Choice::Path(_) => panic!("a flowlet is hashed"),
    };
    let (c1, t1) = choose(&mut sel, &mut router, &topo, key, 0);
    // A second message while the first is in flight keeps the port.
    let (c2, t2) = choose(&mut sel, &mut router, &topo, key, 10);
    assert_eq!(port(&c1), port(&c2));
    sel.done(t1.unwrap(), Nanos(20));
    sel.done(t2.unwrap(), Nanos(100));
    // Idle since 100 ns: just short of the gap, the same port; at the gap, a new one.
    let (c3, t3) = choose(&mut sel, &mut router, &topo, key, 100 + gap - 1);
    assert_eq!(port(&c3), port(&c1));
    sel.done(t3.unwrap(), Nanos(100 + gap));
    let (c4, _) = choose(&mut sel, &mut router, &topo, key, 100 + 2 * gap);
    assert_ne!(port(&c4), port(&c1));
    assert!(port(&c4) >= 0xC000, "still a dynamic port");
}

#[test]
fn a_dual_tor_host_with_a_port_down_keeps_disjoint_paths_through_the_other() {
    let topo = hpn();
    let (a, b) = (
        topo.hosts()[0].gpus[0],
        topo.hosts().last().unwrap().gpus[0],
    );
    // Take one of the source NIC's two ports down.
    let nic = topo
        .out_links(a)
        .iter()
        .map(|&l| topo.link(l).dst)
        .find(|&n| topo.kind(n) == NodeKind::Nic)
        .unwrap();
    let ports: Vec<LinkId> = topo
        .out_links(nic)
        .iter()
        .copied()
        .filter(|&l| matches!(topo.kind(topo.link(l).dst), NodeKind::Switch(_)))
        .collect();
    assert_eq!(ports.len(), 2, "a dual-port NIC");
    let mut state = LinkState::new(&topo);
    state.set_cable(ports[0], fabricsim_routing::LinkCondition::Down);
    let mut router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
    let mut sel = Selector::new(PathSelection::Disjoint { paths: 4 });
    let key = FlowKey::connection(a, b, 0, 0);
    sel.choose(key, 1 << 20, Nanos(0), 1, |s, d, limit| {
        router
            .equal_cost_paths(&state, s, d, limit)
            .map(|(p, _)| p)
            .unwrap_or_default()
    });
    let paths = sel.paths(a, b);
    assert!(paths.len() >= 2, "paths part above the surviving port");
    for p in paths {
        assert!(p.contains(&ports[1]) && !p.contains(&ports[0]));
    }
}
