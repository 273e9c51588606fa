//! Orbit representatives: flows folded under a turn of every server's GPUs give the full
//! problem's completions.

use fabricsim_netsim::{Completion, FlowEngine, Fold, Network};
use fabricsim_routing::{FlowKey, HashConfig, Policy, Router};
use fabricsim_topology::presets;
use fabricsim_topology::symmetry::HostRotation;
use fabricsim_topology::{Nanos, Topology};
use proptest::prelude::*;

fn build(name: &str, settings: &[(&str, &str)]) -> Topology {
    presets::build_with(name, settings).unwrap()
}

/// Three-tier oversubscribed, dual-ToR rail-optimized, one-switch and rail-optimized
/// single-ToR fabrics with 4-GPU servers.
fn fabric(i: usize) -> Topology {
    match i {
        0 => build(
            "meta-cluster",
            &[
                ("zones", "2"),
                ("racks", "2"),
                ("hosts_per_rack", "2"),
                ("gpus_per_host", "4"),
                ("atsw_oversubscription", "2"),
            ],
        ),
        1 => build(
            "hpn",
            &[
                ("segments", "2"),
                ("hosts_per_segment", "2"),
                ("gpus_per_host", "4"),
                ("tor_uplinks", "2"),
            ],
        ),
        2 => build("switch", &[("hosts", "8"), ("gpus_per_host", "4")]),
        _ => build(
            "superpod",
            &[
                ("sus", "2"),
                ("nodes_per_su", "4"),
                ("gpus_per_host", "4"),
                ("spine_radix", "8"),
            ],
        ),
    }
}

/// Base flows: (source server, destination server, GPU offset, bytes, start µs).
fn flows() -> impl Strategy<Value = Vec<(usize, usize, usize, u64, u64)>> {
    prop::collection::vec(
        (0usize..8, 0usize..8, 0usize..4, 1u64..(64 << 20), 0u64..100),
        1..12,
    )
}

/// Runs the base flows' images under `turns` (each flow from GPU k of its source server to
/// GPU k + offset of its destination, for every k < turns) and returns the completion time of
/// every submitted flow, in submission order.
fn completions(
    topo: &Topology,
    base: &[(usize, usize, usize, u64, u64)],
    turns: usize,
    fold: Option<Fold>,
) -> Vec<Nanos> {
    let router = Router::new(topo, Policy::Spray, HashConfig::default());
    let mut net = Network::new(topo, router, FlowEngine::new(topo));
    if let Some(fold) = fold {
        net.set_fold(fold);
    }
    let hosts = topo.hosts();
    let mut order: Vec<_> = base
        .iter()
        .filter(|f| f.0 % hosts.len() != f.1 % hosts.len())
        .collect();
    order.sort_by_key(|f| f.4);
    let mut done: Vec<Completion> = Vec::new();
    let mut submitted = 0;
    for &&(s, d, offset, bytes, start) in &order {
        net.advance(Nanos(start * 1_000), &mut done);
        let (s, d) = (&hosts[s % hosts.len()], &hosts[d % hosts.len()]);
        let n = s.gpus.len();
        for k in 0..turns {
            let key = FlowKey::connection(s.gpus[k], d.gpus[(k + offset) % n], 0, 0);
            net.submit(key, bytes, None).unwrap();
            submitted += 1;
        }
    }
    net.run_to_end(&mut done);
    let mut at = vec![Nanos(0); submitted];
    for c in done {
        at[c.flow.0 as usize] = c.at;
    }
    at
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn representatives_finish_when_their_orbits_do(flows in flows(), which in 0usize..4) {
        let topo = fabric(which);
        let rotation = HostRotation::new(&topo, 1).expect("these fabrics turn");
        let n = rotation.order as usize;
        let full = completions(&topo, &flows, n, None);
        let (first, size) = rotation.link_orbits();
        let folded = completions(&topo, &flows, 1, Some(Fold::new(first, &size, rotation.order)));
        prop_assert_eq!(full.len(), folded.len() * n);
        for (i, &rep) in folded.iter().enumerate() {
            let orbit = &full[i * n..(i + 1) * n];
            // The full problem is symmetric: an orbit finishes at one time, up to rounding.
            for &t in orbit {
                prop_assert!(t.0.abs_diff(orbit[0].0) <= 2, "orbit {i}: {orbit:?}");
            }
            prop_assert!(rep.0.abs_diff(orbit[0].0) <= 2, "flow {i}: {rep:?} folded, {orbit:?} in full");
        }
    }
}

#[test]
fn a_fold_credits_each_link_of_an_orbit_with_its_load() {
    let topo = fabric(0);
    let rotation = HostRotation::new(&topo, 1).unwrap();
    let (first, size) = rotation.link_orbits();
    let router = Router::new(&topo, Policy::Spray, HashConfig::default());
    let mut net = Network::new(&topo, router, FlowEngine::new(&topo));
    net.set_fold(Fold::new(first, &size, rotation.order));
    let (a, b) = (&topo.hosts()[0], &topo.hosts()[7]);
    net.submit(
        FlowKey::connection(a.gpus[0], b.gpus[0], 0, 0),
        1 << 30,
        None,
    )
    .unwrap();
    net.run_to_end(&mut Vec::new());
    let stats = net.link_stats();
    // Every GPU of server 0 sent 1 GiB through its own NIC link, the rack switch's uplinks
    // carried the four GiB between them.
    let uplink = |gpu| {
        let nic = topo.nics_of_gpu(gpu).next().unwrap();
        topo.out_links(nic)
            .iter()
            .copied()
            .find(|&l| topo.kind(topo.link(l).dst).is_switch())
            .unwrap()
    };
    for &gpu in &a.gpus {
        let link = uplink(gpu);
        assert!((stats.bytes[link.index()] - (1u64 << 30) as f64).abs() < 1.0);
    }
    let rtsw = topo.link(uplink(a.gpus[0])).dst;
    let up: f64 = topo
        .out_links(rtsw)
        .iter()
        .filter(|&&l| topo.kind(topo.link(l).dst).is_switch())
        .map(|&l| stats.bytes[l.index()])
        .sum();
    assert!((up - 4.0 * (1u64 << 30) as f64).abs() < 16.0, "{up}");
}
