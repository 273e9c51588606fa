//! Twin links (a NIC's PCIe link and its port, which carry the same flows) solved as one give
//! what solving them apart gives: under derates and failures of either, and after a path that
//! crosses half a pair makes the engine solve them apart from then on.

use fabricsim_netsim::{Completion, Engine, FlowEngine, Leg, LinkStats, Network, Strand};
use fabricsim_routing::{FlowKey, HashConfig, LinkCondition, Policy, Router};
use fabricsim_topology::{presets, Bandwidth, LinkId, Nanos, NodeKind, Topology};

/// The link out of `from` towards a node of kind `to`.
fn link_to(topo: &Topology, from: &str, to: fn(NodeKind) -> bool) -> LinkId {
    let node = topo.node_by_name(from).unwrap();
    *topo
        .out_links(node)
        .iter()
        .find(|&&l| to(topo.kind(topo.link(l).dst)))
        .unwrap()
}

/// Every GPU of the fabric sends to a GPU two hosts on, on 2 QPs, under `policy`; on the way,
/// host 0's GPU 0 PCIe link is derated below its NIC's port, a rack uplink fails and comes
/// back, and (if `stray`) a hand-made flow crosses host 1's NIC port up without the PCIe link
/// below it.
fn scenario(policy: Policy, apart: bool, stray: bool) -> (Vec<Completion>, LinkStats) {
    let topo = presets::build_with("meta-ai-zone", &[("racks", "2")]).unwrap();
    let mut engine = FlowEngine::new(&topo);
    if apart {
        engine.keep_twins_apart();
    }
    let mut net = Network::new(
        &topo,
        Router::new(&topo, policy, HashConfig::default()),
        engine,
    );
    let gpus = topo.gpus().to_vec();
    for (i, &src) in gpus.iter().enumerate() {
        let dst = gpus[(i + 16) % gpus.len()];
        for qp in 0..2 {
            let bytes = (64 + 8 * i as u64 + qp as u64) << 20;
            net.submit(FlowKey::connection(src, dst, qp, 7), bytes, None)
                .unwrap();
        }
    }
    let mut done = Vec::new();
    let pcie = link_to(&topo, "host0/gpu0", |k| k == NodeKind::Nic);
    let uplink = link_to(&topo, "zone0/rack0/rtsw", NodeKind::is_switch);
    net.advance(Nanos(200_000), &mut done);
    net.set_cable(pcie, LinkCondition::Derated(Bandwidth(20_000_000_000)));
    net.advance(Nanos(400_000), &mut done);
    net.set_cable(uplink, LinkCondition::Down);
    if stray {
        let port = link_to(&topo, "host1/nic0", NodeKind::is_switch);
        let strand = Strand {
            legs: [Leg::Link(port)].into_iter().collect(),
            weight: 1.0,
        };
        net.submit_bundle(vec![strand], 32 << 20, None).unwrap();
    }
    net.advance(Nanos(900_000), &mut done);
    net.set_cable(uplink, LinkCondition::Up);
    net.set_cable(pcie, LinkCondition::Up);
    net.run_to_end(&mut done);
    let stats = net.engine().link_stats().clone();
    (done, stats)
}

fn assert_same(a: &(Vec<Completion>, LinkStats), b: &(Vec<Completion>, LinkStats)) {
    assert_eq!(a.0, b.0, "completions");
    assert_eq!(a.1.bytes, b.1.bytes, "bytes per link");
    assert_eq!(a.1.busy, b.1.busy, "busy time per link");
    assert_eq!(a.1.peak_utilization, b.1.peak_utilization, "peak per link");
}

#[test]
fn twins_solved_as_one_give_what_they_give_apart_through_derates_and_failures() {
    for policy in [Policy::Ecmp, Policy::Spray] {
        let (one, apart) = (
            scenario(policy, false, false),
            scenario(policy, true, false),
        );
        assert_same(&one, &apart);
        // The PCIe link is faster than the NIC's port, so only its derate can have filled it:
        // its peak is figured on its own capacity, not on its representative's.
        let topo = presets::build_with("meta-ai-zone", &[("racks", "2")]).unwrap();
        let pcie = link_to(&topo, "host0/gpu0", |k| k == NodeKind::Nic);
        let port = link_to(&topo, "host0/nic0", NodeKind::is_switch);
        assert!(topo.link(pcie).capacity.0 > topo.link(port).capacity.0);
        let peak = &one.1.peak_utilization;
        assert!(
            peak[pcie.index()] > 0.999,
            "{policy:?}: {}",
            peak[pcie.index()]
        );
        assert_eq!(one.1.bytes[pcie.index()], one.1.bytes[port.index()]);
    }
}

#[test]
fn a_path_across_half_a_pair_unfolds_them_and_changes_nothing() {
    for policy in [Policy::Ecmp, Policy::Spray] {
        assert_same(
            &scenario(policy, false, true),
            &scenario(policy, true, true),
        );
    }
}
