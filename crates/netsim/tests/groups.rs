//! Port groups (a ring's channels' NIC ports solved as one while nothing else crosses them)
//! give what solving every port apart gives, to the last bit: through pipeline-like sends that
//! make ports dirty and clean again, a second collective joining the first's group, revived
//! channels, and a derate that dissolves the groups mid-run.

use fabricsim_netsim::{Completion, Engine, FlowEngine, Leg, LinkStats, Network, Strand};
use fabricsim_routing::{FlowKey, HashConfig, LinkCondition, Policy, Router};
use fabricsim_topology::{presets, Bandwidth, Nanos, NodeId, Topology};

/// 20 hosts of 8 GPUs: a ring over them crosses 40 NIC ports.
fn fabric() -> Topology {
    presets::build_with("meta-ai-zone", &[("racks", "10")]).unwrap()
}

/// One pipelined channel of a ring over every host's GPU `rail`: one flow across every hop.
fn channel(topo: &Topology, rail: usize, channel: u32, start: usize) -> Strand {
    let gpus = topo.gpus();
    let hosts = gpus.len() / 8;
    let legs = (0..hosts)
        .map(|i| {
            let (a, b) = ((start + i) % hosts, (start + i + 1) % hosts);
            Leg::Routed(FlowKey::connection(
                gpus[a * 8 + rail],
                gpus[b * 8 + rail],
                channel,
                11,
            ))
        })
        .collect();
    Strand { legs, weight: 1.0 }
}

/// A collective's channels `first..first + 4` on `rail`, `bytes` each (a little more for
/// later channels).
fn collective(
    net: &mut Network<'_, FlowEngine>,
    topo: &Topology,
    rail: usize,
    first: u32,
    bytes: u64,
) {
    for c in first..first + 4 {
        let strand = channel(topo, rail, c, c as usize);
        net.submit_bundle(vec![strand], bytes + (u64::from(c) << 16), None)
            .unwrap();
    }
}

/// A send between two hosts' GPUs on `rail`, as a pipeline stage's to the next.
fn send(net: &mut Network<'_, FlowEngine>, gpus: &[NodeId], rail: usize, from: usize, bytes: u64) {
    let hosts = gpus.len() / 8;
    let key = FlowKey::connection(
        gpus[from * 8 + rail],
        gpus[((from + 3) % hosts) * 8 + rail],
        0,
        5,
    );
    net.submit(key, bytes, None).unwrap();
}

/// Two rails' rings of 4 channels each, with sends coming and going on their hosts, a second
/// collective on rail 0 while its first runs, a third after both (the channels revived), and,
/// if `derate`, a NIC port slowed mid-run; every set solved in place if `in_place`. Returns
/// the completions, the link figures and how many port groups formed.
fn scenario(apart: bool, derate: bool, in_place: bool) -> (Vec<Completion>, LinkStats, usize) {
    let topo = fabric();
    let gpus = topo.gpus().to_vec();
    let mut engine = FlowEngine::new(&topo);
    if apart {
        engine.keep_ports_apart();
    }
    if in_place {
        engine.solve_in_place_above(0);
    }
    let mut net = Network::new(
        &topo,
        Router::new(&topo, Policy::Ecmp, HashConfig::default()),
        engine,
    );
    let mut done = Vec::new();
    collective(&mut net, &topo, 0, 0, 64 << 20);
    collective(&mut net, &topo, 1, 0, 48 << 20);
    let groups = net.engine().port_groups();
    for step in 0..12u64 {
        net.advance(Nanos(100_000 * (step + 1)), &mut done);
        for h in 0..3 {
            let from = (step as usize * 3 + h) % 20;
            send(&mut net, &gpus, (step % 2) as usize, from, (4 + step) << 20);
        }
        if step == 4 {
            collective(&mut net, &topo, 0, 4, 16 << 20);
        }
        if derate && step == 7 {
            let nic = topo.node_by_name("host5/nic0").unwrap();
            let port = *topo
                .out_links(nic)
                .iter()
                .find(|&&l| topo.kind(topo.link(l).dst).is_switch())
                .unwrap();
            net.set_cable(port, LinkCondition::Derated(Bandwidth(100_000_000_000)));
        }
    }
    net.run_to_end(&mut done);
    collective(&mut net, &topo, 0, 0, 8 << 20);
    send(&mut net, &gpus, 0, 2, 8 << 20);
    net.run_to_end(&mut done);
    let stats = net.engine().link_stats().clone();
    (done, stats, groups)
}

fn assert_same(a: &(Vec<Completion>, LinkStats, usize), b: &(Vec<Completion>, LinkStats, usize)) {
    assert_eq!(a.0, b.0, "completions");
    assert_eq!(a.1.bytes, b.1.bytes, "bytes per link");
    assert_eq!(a.1.busy, b.1.busy, "busy time per link");
    assert_eq!(a.1.peak_utilization, b.1.peak_utilization, "peak per link");
}

#[test]
fn port_groups_give_what_ports_solved_apart_give() {
    let (grouped, apart) = (scenario(false, false, false), scenario(true, false, false));
    assert_eq!(grouped.2, 2, "one group per rail's ring");
    assert_eq!(apart.2, 0);
    assert_same(&grouped, &apart);
    assert_same(&scenario(false, false, true), &apart);
}

#[test]
fn a_derate_dissolves_the_groups_and_changes_nothing() {
    let (grouped, apart) = (scenario(false, true, false), scenario(true, true, false));
    assert_eq!(grouped.2, 2);
    assert_same(&grouped, &apart);
}
