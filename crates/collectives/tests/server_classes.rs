//! A collective laid alike on every server solves one link per class of identical constraints
//! (`LinkClasses`): its rows are the full problem's, bit for bit, and where the claim fails the
//! bench runs again in full.

use fabricsim_collectives::bench::{run_size, Bench, Row};
use fabricsim_collectives::placement::{place, Placement};
use fabricsim_collectives::{Algorithm, Collective, Fidelity, Ranks};
use fabricsim_routing::Policy;
use fabricsim_te::Routing;
use fabricsim_topology::format::{read_json, write_json};
use fabricsim_topology::{presets, Topology};

fn build(preset: &str, params: &[(&str, &str)]) -> Topology {
    let params: Vec<(String, String)> = params
        .iter()
        .map(|&(k, v)| (k.to_string(), v.to_string()))
        .collect();
    presets::build(preset, &params).unwrap()
}

/// The row with and without classes, and how many links the first solved by class.
fn both(topo: &Topology, gpus: usize, bench: &Bench, size: u64) -> (Row, Row) {
    let ranks = Ranks::new(topo, place(topo, gpus, Placement::Contiguous).unwrap()).unwrap();
    let classed = run_size(topo, &ranks, bench, size).unwrap();
    let full = Bench {
        full_detail: true,
        ..bench.clone()
    };
    let full = run_size(topo, &ranks, &full, size).unwrap();
    assert_eq!(full.classed_links, 0, "--full-detail solves every link");
    (classed, full)
}

/// Asserts the rows are the same, bit for bit, every link's figures included; returns how
/// many links the first solved by class.
fn same(mut classed: Row, mut full: Row) -> usize {
    let n = classed.classed_links;
    classed.classed_links = 0;
    assert_eq!(classed.links.len(), full.links.len(), "links used");
    for (a, b) in classed.links.iter().zip(&full.links) {
        assert_eq!(a, b, "link {:?}", a.link);
    }
    (classed.links, full.links) = (Vec::new(), Vec::new());
    assert_eq!(classed, full);
    n
}

fn ring(op: Collective, channels: u32, policy: Policy) -> Bench {
    Bench {
        algorithm: Some(Algorithm::Ring),
        channels,
        routing: Routing::Hashed(policy),
        keep_links: true,
        ..Bench::new(op)
    }
}

#[test]
fn a_ring_on_whole_servers_solves_one_link_per_class_and_gets_the_full_result() {
    let cluster = build("meta-cluster", &[("zones", "2")]);
    for (op, channels, policy, size) in [
        (Collective::AllReduce, 16, Policy::Ecmp, 1 << 20),
        (Collective::AllReduce, 8, Policy::Ecmp, 256 << 20),
        (Collective::AllGather, 4, Policy::Spray, 64 << 20),
        (Collective::ReduceScatter, 16, Policy::Ecmp, 1 << 30),
    ] {
        let (classed, full) = both(&cluster, 512, &ring(op, channels, policy), size);
        let n = same(classed, full);
        assert!(n > 0, "{op:?}: 64 whole servers have classes");
    }
    // A fat tree's servers, and an oversubscribed zone where ECMP collides.
    let tree = build("fat-tree", &[("k", "8")]);
    let (classed, full) = both(
        &tree,
        64,
        &ring(Collective::AllReduce, 16, Policy::Ecmp),
        64 << 20,
    );
    assert!(same(classed, full) > 0);
    // Two small zones joined at 1:7, the ring crossing them where ECMP collides.
    let zones = build(
        "meta-cluster",
        &[
            ("zones", "2"),
            ("racks", "4"),
            ("atsw_oversubscription", "7"),
        ],
    );
    let (classed, full) = both(
        &zones,
        zones.gpus().len(),
        &ring(Collective::AllReduce, 16, Policy::Ecmp),
        1 << 30,
    );
    assert!(same(classed, full) > 0);
}

#[test]
fn where_servers_are_not_alike_the_bench_runs_in_full() {
    let cluster = build("meta-cluster", &[("zones", "2")]);
    // Part of a server: no classes are tried.
    let (classed, full) = both(
        &cluster,
        60,
        &ring(Collective::AllReduce, 16, Policy::Ecmp),
        1 << 24,
    );
    assert_eq!(same(classed, full), 0);
    // Step fidelity: transfers are not laid alike, so no classes are tried either.
    let step = Bench {
        fidelity: Fidelity::Step,
        ..ring(Collective::AllReduce, 2, Policy::Ecmp)
    };
    let (classed, full) = both(&cluster, 16, &step, 1 << 20);
    assert_eq!(same(classed, full), 0);
    // Dual-ToR servers hash each connection onto one of two ports: no classes are tried.
    let hpn = build("hpn", &[]);
    let (classed, full) = both(
        &hpn,
        256,
        &ring(Collective::AllReduce, 16, Policy::Ecmp),
        1 << 26,
    );
    assert_eq!(same(classed, full), 0, "hpn's ports hash apart");
}

#[test]
fn a_server_cabled_unlike_the_others_breaks_a_class_and_the_size_runs_in_full() {
    // Server 1's first two GPUs swap NICs: its links line up with the others' place for
    // place, but its channels leave by other NICs, which only the bundles show.
    let small = build(
        "meta-cluster",
        &[("zones", "1"), ("racks", "2"), ("hosts_per_rack", "2")],
    );
    let mut text = Vec::new();
    write_json(&small, &mut text).unwrap();
    let cable = |gpu: u32, nic: &str| format!(r#""a":"host1/gpu{gpu}","b":"host1/{nic}""#);
    let swapped = String::from_utf8(text)
        .unwrap()
        .replace(&cable(0, "nic0"), &cable(0, "nicX"))
        .replace(&cable(1, "nic1"), &cable(1, "nic0"))
        .replace(&cable(0, "nicX"), &cable(0, "nic1"));
    let topo = read_json(&swapped).unwrap();
    let host1 = &topo.hosts()[1];
    assert_eq!(topo.nics_of_gpu(host1.gpus[0]).next(), Some(host1.nics[1]));
    let bench = ring(Collective::AllReduce, 16, Policy::Ecmp);
    let (classed, full) = both(&topo, topo.gpus().len(), &bench, 1 << 26);
    assert_eq!(same(classed, full), 0, "refused, and run again in full");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(16))]

    /// Any ring on whole servers (of 8, in two zones at 1:3), any operation, channel count,
    /// policy, size and seed: the same row under classes as in full. A size that splits evenly
    /// over the ranks and channels gives every server the same bytes, so classes apply; an
    /// uneven one gives some edges an element more, and the run is in full.
    #[test]
    fn classes_never_change_a_row(
        servers in 2usize..9,
        op in proptest::sample::select(vec![
            Collective::AllReduce,
            Collective::AllGather,
            Collective::ReduceScatter,
        ]),
        channels in 1u32..17,
        spray in proptest::bool::ANY,
        even in proptest::bool::ANY,
        size in 1u64..(1 << 30),
        seed in 0u64..1000,
    ) {
        let topo = build(
            "meta-cluster",
            &[("zones", "2"), ("racks", "2"), ("hosts_per_rack", "2"), ("atsw_oversubscription", "3")],
        );
        let policy = if spray { Policy::Spray } else { Policy::Ecmp };
        let mut bench = ring(op, channels, policy);
        bench.transport.seed = seed;
        // Whole 4-byte elements for every rank of every channel.
        let unit = servers as u64 * 8 * u64::from(channels) * 4;
        let size = if even { (size / unit).max(1) * unit } else { size };
        let (classed, full) = both(&topo, servers * 8, &bench, size);
        let classed_links = same(classed, full);
        proptest::prop_assert!(!even || classed_links > 0, "an even size has classes");
    }
}
