//! Route versions: the next-hop tables alone carry every demand to its destination, on two
//! tiers and on three (where ⟨ingress port, prefix⟩ entries can conflict).

use std::collections::BTreeMap;
use std::sync::Arc;

use fabricsim_controller::routes::{compute, RouteVersion};
use fabricsim_controller::state::Snapshot;
use fabricsim_routing::balance::{pairs, Pattern};
use fabricsim_routing::{LinkCondition, LinkState};
use fabricsim_te::solve::SolveOptions;
use fabricsim_te::{Solver, TrafficMatrix};
use fabricsim_topology::{presets, NodeId, Topology};

fn fabric(preset: &str, set: &[(&str, &str)]) -> Arc<Topology> {
    let set: Vec<(String, String)> = set
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Arc::new(presets::build(preset, &set).unwrap())
}

fn snapshot(topo: &Arc<Topology>, pattern: Pattern, links: LinkState) -> Snapshot {
    with_pairs(topo, pairs(pattern, topo.gpus(), 7), links)
}

fn with_pairs(topo: &Arc<Topology>, pairs: Vec<(NodeId, NodeId)>, links: LinkState) -> Snapshot {
    let rows = pairs.into_iter().map(|(s, d)| (s, d, 1));
    Snapshot {
        state_version: 1,
        topo: Arc::clone(topo),
        links,
        demand: TrafficMatrix::from_bytes(topo, rows),
    }
}

/// Follows the tables from each demand's source NIC; returns the hops each took.
fn walk_all(topo: &Topology, snap: &Snapshot, rv: &RouteVersion) -> Vec<usize> {
    // (switch, ingress peer, prefix) → next hop
    let mut next: BTreeMap<(&str, &str, &str), &str> = BTreeMap::new();
    for t in &rv.switches {
        for e in &t.entries {
            let key = (
                t.switch.as_str(),
                e.ingress_peer.as_str(),
                e.prefix.as_str(),
            );
            assert!(
                next.insert(key, &e.next_hop).is_none(),
                "two entries for {key:?}"
            );
        }
    }
    let mut hops = Vec::new();
    for d in &snap.demand.demands {
        if topo.host_of(d.src) == topo.host_of(d.dst) {
            continue;
        }
        let nic = |g| topo.node_name(topo.nics_of_gpu(g).next().unwrap());
        let (mut from, prefix) = (nic(d.src), nic(d.dst));
        let first = topo.node_by_name(from).unwrap();
        let mut up = topo.out_links(first).iter().map(|&l| topo.link(l).dst);
        let mut at = topo.node_name(up.find(|&n| topo.kind(n).is_switch()).unwrap());
        let mut n = 1;
        while at != prefix {
            let to = next
                .get(&(at, from, prefix))
                .unwrap_or_else(|| panic!("no entry at {at} from {from} to {prefix}"));
            (from, at) = (at, to);
            n += 1;
            assert!(n < 16, "a loop toward {prefix}");
        }
        hops.push(n);
    }
    hops
}

#[test]
fn two_tier_tables_carry_every_demand_without_conflicts() {
    let topo = fabric("meta-ai-zone", &[("racks", "8")]);
    let snap = snapshot(&topo, Pattern::AllToAll, LinkState::new(&topo));
    let rv = compute(&snap, Solver::Cspf, &SolveOptions::default()).unwrap();
    assert_eq!(rv.summary.conflicts, 0);
    assert_eq!(
        rv.summary.max_utilization,
        rv.summary.solver_max_utilization
    );
    let hops = walk_all(&topo, &snap, &rv);
    assert_eq!(hops.len(), rv.summary.demands);
    // Within a rack: NIC→RTSW→NIC; across racks: NIC→RTSW→CTSW→RTSW→NIC.
    assert!(hops.iter().all(|&h| h == 2 || h == 4), "{hops:?}");
}

#[test]
fn three_tier_tables_stay_consistent_where_entries_conflict() {
    // Two zones of 16 racks: each CTSW has two ATSW uplinks. The 16 GPUs of zone 0's first
    // rack each send to the 16 of zone 1's first rack.
    let topo = fabric("meta-cluster", &[("zones", "2"), ("racks", "16")]);
    let gpus = topo.gpus();
    let rows = gpus[..16]
        .iter()
        .flat_map(|&s| gpus[256..272].iter().map(move |&d| (s, d)))
        .collect();
    let snap = with_pairs(&topo, rows, LinkState::new(&topo));
    let rv = compute(&snap, Solver::Cspf, &SolveOptions::default()).unwrap();
    // Two sources of one rack entering a CTSW by the same port toward one NIC leave it the
    // same way, whatever paths the solver gave them: some demands follow another's entry.
    assert!(rv.summary.conflicts > 0, "{}", rv.summary.conflicts);
    let hops = walk_all(&topo, &snap, &rv);
    assert_eq!(hops.len(), rv.summary.demands);
    assert!(hops.contains(&6), "cross-zone traffic goes through an ATSW");
    // The loads reported are the forwarded traffic's: all of it arrives.
    let into_nics: f64 = rv
        .links
        .iter()
        .filter(|l| l.link.contains("rtsw->"))
        .filter(|l| {
            l.link
                .split("->")
                .nth(1)
                .is_some_and(|d| d.contains("/nic"))
        })
        .map(|l| l.gbps)
        .sum();
    let network: f64 = snap
        .demand
        .demands
        .iter()
        .filter(|d| topo.host_of(d.src) != topo.host_of(d.dst))
        .map(|d| d.rate * 8e-9)
        .sum();
    assert!(
        (into_nics - network).abs() < 1e-6 * network,
        "{into_nics} vs {network}"
    );
}

#[test]
fn tables_avoid_down_links_and_are_deterministic() {
    let topo = fabric("meta-ai-zone", &[("racks", "8")]);
    let mut links = LinkState::new(&topo);
    let rtsw = topo.node_by_name("zone0/rack0/rtsw").unwrap();
    let mut down = Vec::new();
    for &l in topo
        .out_links(rtsw)
        .iter()
        .filter(|&&l| topo.node_name(topo.link(l).dst).contains("ctsw"))
        .take(8)
    {
        links.set(l, LinkCondition::Down);
        links.set(l.reverse(), LinkCondition::Down);
        down.push(topo.node_name(topo.link(l).dst).to_string());
    }
    let snap = snapshot(&topo, Pattern::Permutation, links.clone());
    let rv = compute(&snap, Solver::Cspf, &SolveOptions::default()).unwrap();
    let rack0 = rv
        .switches
        .iter()
        .find(|t| t.switch == "zone0/rack0/rtsw")
        .unwrap();
    for e in &rack0.entries {
        assert!(!down.contains(&e.next_hop), "entry over a down link: {e:?}");
    }
    walk_all(&topo, &snap, &rv);
    let again = compute(
        &snapshot(&topo, Pattern::Permutation, links),
        Solver::Cspf,
        &SolveOptions::default(),
    )
    .unwrap();
    assert_eq!(rv, again);
}
