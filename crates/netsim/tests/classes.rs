//! Link classes on a network: a bundle crossing its classes in full gives the rates and link
//! figures of the full problem; one crossing a class in part is refused.

use fabricsim_netsim::{Completion, FlowEngine, Leg, LinkClasses, Network, NetworkError, Strand};
use fabricsim_routing::{FlowKey, HashConfig, Policy, Router};
use fabricsim_topology::{presets, HostId, Topology};

fn fabric() -> Topology {
    presets::build_with(
        "meta-cluster",
        &[
            ("zones", "2"),
            ("racks", "2"),
            ("hosts_per_rack", "2"),
            ("gpus_per_host", "4"),
        ],
    )
    .unwrap()
}

fn network(topo: &Topology) -> Network<'_, FlowEngine> {
    Network::new(
        topo,
        Router::new(topo, Policy::Ecmp, HashConfig::default()),
        FlowEngine::new(topo),
    )
}

fn classes(topo: &Topology) -> LinkClasses {
    let hosts: Vec<HostId> = (0..topo.hosts().len() as u32).map(HostId).collect();
    LinkClasses::by_server(topo, &hosts, |a, b| {
        topo.link(a).capacity == topo.link(b).capacity
    })
}

/// A ring over every server: GPU k of each server to GPU k of the next, on the network, and
/// GPU k to GPU k + 1 inside each server over NVLink, as one bundle.
fn ring(topo: &Topology, k: usize, servers: usize) -> Vec<Strand> {
    let gpu = |h: usize, g: usize| topo.hosts()[h].gpus[g];
    let mut strands = Vec::new();
    for h in 0..servers {
        let key = FlowKey::connection(gpu(h, k), gpu((h + 1) % servers, k), 0, 7);
        strands.push(Strand {
            legs: [Leg::Routed(key)].into_iter().collect(),
            weight: 1.0,
        });
        // Inside a server, the route is NVLink.
        let key = FlowKey::connection(gpu(h, k), gpu(h, (k + 1) % 4), 0, 7);
        strands.push(Strand {
            legs: [Leg::Routed(key)].into_iter().collect(),
            weight: 0.5,
        });
    }
    strands
}

fn run(topo: &Topology, classed: bool) -> (Vec<Completion>, Vec<f64>, usize) {
    let mut net = network(topo);
    if classed {
        net.set_link_classes(classes(topo));
    }
    let servers = topo.hosts().len();
    let mut entries = 0;
    for k in 0..4 {
        let (id, _) = net
            .submit_bundle(ring(topo, k, servers), 64 << 20, None)
            .unwrap();
        entries += net.route_of(id).len();
    }
    let mut done = Vec::new();
    net.run_to_end(&mut done);
    (done, net.link_stats().bytes.clone(), entries)
}

#[test]
fn a_bundle_alike_on_every_server_gives_the_full_results_with_fewer_links() {
    let topo = fabric();
    let (done, bytes, entries) = run(&topo, true);
    let (full_done, full_bytes, full_entries) = run(&topo, false);
    assert_eq!(done, full_done, "the same completions, to the nanosecond");
    assert_eq!(bytes, full_bytes, "every link's bytes, classed links too");
    assert!(
        entries * 2 < full_entries,
        "the engine sees one link per class: {entries} entries against {full_entries}"
    );
}

#[test]
fn a_bundle_crossing_a_class_in_part_is_refused() {
    let topo = fabric();
    let mut net = network(&topo);
    net.set_link_classes(classes(&topo));
    // A ring over the first two servers leaves the others' links idle.
    let err = net
        .submit_bundle(ring(&topo, 0, 2), 1 << 20, None)
        .unwrap_err();
    assert!(matches!(err, NetworkError::ClassBroken(_)), "{err}");
    // A ring over every server still goes through afterwards.
    let servers = topo.hosts().len();
    assert_eq!(servers, 8);
    net.submit_bundle(ring(&topo, 1, servers), 1 << 20, None)
        .unwrap();
}
