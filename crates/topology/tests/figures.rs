//! Figures of hand-built fabrics, where every number can be checked by eye.

use fabricsim_topology::figures::FabricFigures;
use fabricsim_topology::reach::count_shortest_paths;
use fabricsim_topology::{Bandwidth, Nanos, NodeKind, TopologyBuilder};

const NVLINK: Bandwidth = Bandwidth::from_gbytes_per_s(450);
const NIC: Bandwidth = Bandwidth::from_gbps(400);

#[test]
fn one_host_needs_no_network() {
    let mut b = TopologyBuilder::new("one-box", vec![]);
    let h = b.add_host("box".into());
    let nvs = b.add_host_node(h, NodeKind::NvSwitch, "box/nvswitch");
    for g in 0..8 {
        let gpu = b.add_host_node(h, NodeKind::Gpu, format!("box/gpu{g}"));
        b.connect(gpu, nvs, NVLINK, Nanos(25));
    }
    let topo = b.build().unwrap();
    let f = FabricFigures::of(&topo);
    assert_eq!((f.gpus, f.switches, f.diameter_hops), (8, 0, 0));
    assert_eq!(
        f.farthest_pair,
        Some(["box/gpu0".to_string(), "box/gpu7".to_string()])
    );
    assert_eq!(f.max_equal_cost_paths, 1, "through the NVSwitch");
    assert!(f
        .render_text()
        .contains("diameter            0 switch hops (box/gpu0 to box/gpu7)"));
}

/// Two 2-GPU hosts, each GPU with its own NIC, under two leaves joined by two spines:
/// host0 on leaf0, host1 on leaf1.
fn two_leaves() -> fabricsim_topology::Topology {
    let mut b = TopologyBuilder::new("two-leaves", vec!["leaf".into(), "spine".into()]);
    let leaves = [b.add_switch("leaf0", 1, 0), b.add_switch("leaf1", 1, 0)];
    let spines = [b.add_switch("spine0", 2, 0), b.add_switch("spine1", 2, 0)];
    for &l in &leaves {
        for &s in &spines {
            b.connect(l, s, NIC, Nanos(500));
        }
    }
    for (i, &leaf) in leaves.iter().enumerate() {
        let h = b.add_host(format!("host{i}"));
        let nvs = b.add_host_node(h, NodeKind::NvSwitch, format!("host{i}/nvswitch"));
        for g in 0..2 {
            let gpu = b.add_host_node(h, NodeKind::Gpu, format!("host{i}/gpu{g}"));
            let nic = b.add_host_node(h, NodeKind::Nic, format!("host{i}/nic{g}"));
            b.connect(gpu, nvs, NVLINK, Nanos(25));
            b.connect(gpu, nic, Bandwidth::from_gbps(512), Nanos(100));
            b.connect(nic, leaf, NIC, Nanos(500));
        }
    }
    b.build().unwrap()
}

#[test]
fn two_leaves_two_spines() {
    let topo = two_leaves();
    let f = FabricFigures::of(&topo);
    assert_eq!(f.diameter_hops, 3);
    assert_eq!(f.max_equal_cost_paths, 2);
    assert_eq!(f.injection_bandwidth_gbps, 4.0 * 400.0);
    assert_eq!(f.oversubscription[0].ratio, 1.0);
    assert_eq!(f.bisection_bandwidth_gbps, 800.0);
}

#[test]
fn paths_never_transit_a_host() {
    let topo = two_leaves();
    let id = |n: &str| topo.node_by_name(n).unwrap();
    // Across hosts: gpu -> nic -> leaf -> spine -> leaf -> nic -> gpu, two ways (one per spine);
    // never through the NVSwitch and a host-mate's NIC.
    assert_eq!(
        count_shortest_paths(&topo, id("host0/gpu0"), id("host1/gpu1")),
        Some((6, 2))
    );
    // Inside a host: over the NVSwitch only.
    assert_eq!(
        count_shortest_paths(&topo, id("host0/gpu0"), id("host0/gpu1")),
        Some((2, 1))
    );
    // Not GPUs: no answer.
    assert_eq!(
        count_shortest_paths(&topo, id("leaf0"), id("host1/gpu1")),
        None
    );
}

#[test]
fn figures_are_deterministic() {
    let a = serde_json::to_string(&FabricFigures::of(&two_leaves())).unwrap();
    let b = serde_json::to_string(&FabricFigures::of(&two_leaves())).unwrap();
    assert_eq!(a, b);
}
