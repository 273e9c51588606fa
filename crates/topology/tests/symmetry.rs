//! Turning every server's GPUs: which fabrics it maps onto themselves, and the orbits of links.

use fabricsim_topology::format::{read_json, write_json};
use fabricsim_topology::presets;
use fabricsim_topology::symmetry::HostRotation;
use fabricsim_topology::Topology;

fn build(name: &str, settings: &[(&str, &str)]) -> Topology {
    presets::build_with(name, settings).unwrap()
}

fn node(topo: &Topology, name: &str) -> fabricsim_topology::NodeId {
    topo.node_by_name(name).unwrap()
}

#[test]
fn a_rack_switch_stays_and_each_gpu_turns_with_its_nic() {
    let topo = build("meta-ai-zone", &[("racks", "4")]);
    let turn = HostRotation::new(&topo, 1).unwrap();
    assert_eq!(turn.order, 8);
    let image = |n: &str| topo.node_name(turn.node(node(&topo, n))).to_string();
    assert_eq!(image("host3/gpu0"), "host3/gpu1");
    assert_eq!(image("host3/gpu7"), "host3/gpu0");
    assert_eq!(image("host3/nic2"), "host3/nic3");
    assert_eq!(image("zone0/rack1/rtsw"), "zone0/rack1/rtsw");
    // Switch-to-switch links are their own orbits; a NIC's cable is one of 8.
    let (first, size) = turn.link_orbits();
    for l in topo.link_ids() {
        let x = topo.link(l);
        let switches = topo.kind(x.src).is_switch() && topo.kind(x.dst).is_switch();
        assert_eq!(size[l.index()], if switches { 1 } else { 8 });
        assert!(first[l.index()] <= l);
        assert_eq!(first[turn.link(l).index()], first[l.index()]);
    }
    // A turn by 2 places has order 4.
    assert_eq!(HostRotation::new(&topo, 2).unwrap().order, 4);
    assert!(HostRotation::new(&topo, 3).is_err());
}

#[test]
fn rail_switches_turn_with_their_rails() {
    let topo = build("superpod", &[("sus", "2")]);
    let turn = HostRotation::new(&topo, 1).unwrap();
    let rail = node(&topo, "su0/rail0/leaf");
    assert_eq!(topo.node_name(turn.node(rail)), "su0/rail1/leaf");
}

#[test]
fn fabrics_that_tell_gpus_apart_are_refused_with_the_link() {
    // One GPU per server: nothing to turn.
    let topo = build("leaf-spine", &[("k", "4")]);
    assert!(HostRotation::new(&topo, 1).is_err());
    // One NIC cable slower than its peers'.
    let topo = build("meta-ai-zone", &[("racks", "2")]);
    let mut text = Vec::new();
    write_json(&topo, &mut text).unwrap();
    let mut doc: serde_json::Value = serde_json::from_slice(&text).unwrap();
    let links = doc["links"].as_array_mut().unwrap();
    let slow = links
        .iter_mut()
        .find(|l| l["a"] == "host1/nic5" || l["b"] == "host1/nic5")
        .unwrap();
    slow["capacity"] = serde_json::json!("200Gbps");
    let topo = read_json(&doc.to_string()).unwrap();
    let err = HostRotation::new(&topo, 1).unwrap_err();
    assert!(err.contains("host1/nic"), "{err}");
}
