//! Every preset against the closed-form counts of its published shape (docs/presets.md).

use fabricsim_topology::figures::FabricFigures;
use fabricsim_topology::presets::{self, PresetError};
use fabricsim_topology::{NodeKind, Topology};

fn build(name: &str, settings: &[(&str, &str)]) -> Topology {
    let overrides: Vec<(String, String)> = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    presets::build(name, &overrides).unwrap_or_else(|e| panic!("{name} {settings:?}: {e}"))
}

fn tier_count(f: &FabricFigures, tier: &str) -> usize {
    f.switches_by_tier
        .0
        .iter()
        .find(|(t, _)| t == tier)
        .map_or(0, |(_, n)| *n)
}

fn ratio(f: &FabricFigures, lower: &str) -> f64 {
    f.oversubscription
        .iter()
        .find(|o| o.lower == lower)
        .map(|o| o.ratio)
        .expect("a boundary above the tier")
}

const GBPS_400: f64 = 400.0;

#[test]
fn fat_tree_matches_al_fares_counts() {
    for k in [4usize, 8, 16, 48] {
        let f = FabricFigures::of(&build("fat-tree", &[("k", &k.to_string())]));
        assert_eq!(f.hosts, k * k * k / 4, "k={k} hosts");
        assert_eq!(f.gpus, k * k * k / 4, "k={k} gpus");
        assert_eq!(f.switches, 5 * k * k / 4, "k={k} switches");
        assert_eq!(
            (
                tier_count(&f, "edge"),
                tier_count(&f, "agg"),
                tier_count(&f, "core")
            ),
            (k * k / 2, k * k / 2, k * k / 4)
        );
        assert_eq!(f.diameter_hops, 5, "k={k}: edge, agg, core, agg, edge");
        // Between pods: one of k/2 aggs, then one of k/2 cores: (k/2)^2 paths.
        assert_eq!(f.max_equal_cost_paths, (k * k / 4) as u64, "k={k}");
        assert_eq!(ratio(&f, "edge"), 1.0);
        assert_eq!(ratio(&f, "agg"), 1.0);
        assert_eq!(
            f.bisection_bandwidth_gbps,
            (k * k * k / 8) as f64 * GBPS_400,
            "k={k}: full bisection"
        );
    }
}

#[test]
fn leaf_spine_matches_radix_counts() {
    for k in [4usize, 16, 64] {
        let f = FabricFigures::of(&build("leaf-spine", &[("k", &k.to_string())]));
        assert_eq!(
            (tier_count(&f, "leaf"), tier_count(&f, "spine")),
            (k, k / 2)
        );
        assert_eq!(f.hosts, k * k / 2);
        assert_eq!(f.diameter_hops, 3);
        assert_eq!(f.max_equal_cost_paths, (k / 2) as u64);
    }
}

#[test]
fn meta_ai_zone_default_is_the_llama3_pod() {
    let topo = build("meta-ai-zone", &[]);
    let f = FabricFigures::of(&topo);
    assert_eq!(f.gpus, 3_072);
    assert_eq!(f.hosts, 384);
    assert_eq!(tier_count(&f, "rtsw"), 192);
    assert_eq!(ratio(&f, "rtsw"), 1.0, "non-blocking inside the zone");
    assert_eq!(f.bisection_bandwidth_gbps, 1_536.0 * GBPS_400);
    assert_eq!(f.diameter_hops, 3);
    // One 400G NIC per GPU, each on its rack's RTSW.
    let gpu = topo.node_by_name("host17/gpu5").unwrap();
    let nic: Vec<_> = topo.nics_of_gpu(gpu).collect();
    assert_eq!(nic.len(), 1);
    let rtsw = topo
        .out_links(nic[0])
        .iter()
        .map(|&l| topo.link(l).dst)
        .find(|&n| topo.kind(n).is_switch())
        .unwrap();
    assert_eq!(topo.node_name(rtsw), "zone0/rack8/rtsw");
}

#[test]
fn meta_ai_zone_uplink_provisioning_stages() {
    for (uplinks, ctsws, r) in [
        ("1:1", 16, 1.0),
        ("1:1.125", 18, 16.0 / 18.0),
        ("2x", 32, 0.5),
    ] {
        let f = FabricFigures::of(&build("meta-ai-zone", &[("uplinks", uplinks)]));
        assert_eq!(tier_count(&f, "ctsw"), ctsws, "{uplinks}");
        assert!(
            (ratio(&f, "rtsw") - r).abs() < 1e-12,
            "{uplinks}: {}",
            ratio(&f, "rtsw")
        );
    }
    let f = FabricFigures::of(&build(
        "meta-ai-zone",
        &[("uplinks", "2x"), ("ctsws", "16")],
    ));
    assert_eq!(tier_count(&f, "ctsw"), 16);
    assert_eq!(
        f.max_equal_cost_paths,
        16 * 2 * 2,
        "two parallel cables up and down per CTSW"
    );
}

#[test]
fn meta_cluster_default_is_the_24k_llama3_cluster() {
    let f = FabricFigures::of(&build("meta-cluster", &[]));
    assert_eq!(f.gpus, 24_576);
    assert_eq!(tier_count(&f, "rtsw"), 8 * 192);
    assert_eq!(tier_count(&f, "ctsw"), 8 * 16);
    assert_eq!(ratio(&f, "rtsw"), 1.0);
    // 1:7 realised with whole ports: 192 down, 27 up per CTSW.
    assert_eq!(ratio(&f, "ctsw"), 192.0 / 27.0);
    assert!((ratio(&f, "ctsw") - 7.0).abs() / 7.0 < 0.02);
    assert_eq!(f.diameter_hops, 5);
    assert_eq!(f.max_equal_cost_paths, 16 * 27 * 27);
    // Half of all CTSW->ATSW capacity: 8 zones x 16 CTSWs x 27 x 400G / 2.
    assert_eq!(
        f.bisection_bandwidth_gbps,
        (8 * 16 * 27 / 2) as f64 * GBPS_400
    );
}

#[test]
fn meta_cluster_oversubscription_is_a_parameter() {
    let f = FabricFigures::of(&build(
        "meta-cluster",
        &[
            ("zones", "2"),
            ("racks", "16"),
            ("atsw_oversubscription", "1:2"),
        ],
    ));
    assert_eq!(ratio(&f, "ctsw"), 2.0);
    let f = FabricFigures::of(&build(
        "meta-cluster",
        &[
            ("zones", "2"),
            ("racks", "28"),
            ("atsw_oversubscription", "2.8"),
        ],
    ));
    assert_eq!(ratio(&f, "ctsw"), 2.8);
}

#[test]
fn hpn_default_is_the_15k_dual_plane_pod() {
    let topo = build("hpn", &[]);
    let f = FabricFigures::of(&topo);
    assert_eq!(f.gpus, 15_360);
    assert_eq!(f.planes, 2);
    assert_eq!(tier_count(&f, "tor"), 15 * 8 * 2);
    assert_eq!(tier_count(&f, "agg"), 2 * 60);
    // 128 x 200G down, 60 x 400G up.
    assert!((ratio(&f, "tor") - 25_600.0 / 24_000.0).abs() < 1e-12);
    // Dual-ToR: each NIC has two 200G ports on two different ToRs of opposite planes.
    let nic = topo.node_by_name("host5/nic3").unwrap();
    let tors: Vec<_> = topo
        .out_links(nic)
        .iter()
        .map(|&l| topo.link(l).dst)
        .filter(|&n| topo.kind(n).is_switch())
        .collect();
    assert_eq!(tors.len(), 2);
    let planes: Vec<u8> = tors
        .iter()
        .map(|&t| match topo.kind(t) {
            NodeKind::Switch(r) => r.plane,
            _ => 9,
        })
        .collect();
    assert_eq!(planes, vec![0, 1]);
    assert_eq!(topo.node_name(tors[0]), "seg0/rail3/tor0");
}

#[test]
fn hpn_features_switch_off() {
    let f = FabricFigures::of(&build("hpn", &[("dual_tor", "false")]));
    assert_eq!(tier_count(&f, "tor"), 15 * 8);
    assert_eq!(f.planes, 2, "the aggregation tier keeps its two planes");
    assert!(
        (ratio(&f, "tor") - 25_600.0 / 24_000.0).abs() < 1e-12,
        "same capacity in one box"
    );

    // Without dual-plane an aggregation switch must take both ToRs of every rail: 7 segments.
    let err = presets::build("hpn", &[("dual_plane".into(), "false".into())]).unwrap_err();
    assert!(
        matches!(
            err,
            PresetError::BadParam {
                key: "segments",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("use at most 7 segments"), "{err}");
    let f = FabricFigures::of(&build("hpn", &[("dual_plane", "false"), ("segments", "7")]));
    assert_eq!(f.planes, 1);
    assert_eq!(f.gpus, 7 * 1_024);
}

#[test]
fn dcn_plus_pods_are_512_gpus_under_8_aggs() {
    let f = FabricFigures::of(&build("dcn-plus", &[("pods", "2")]));
    assert_eq!(f.gpus, 2 * 512);
    assert_eq!(tier_count(&f, "agg"), 2 * 8);
    assert_eq!(tier_count(&f, "tor"), 2 * 4 * 2);
    assert_eq!(ratio(&f, "tor"), 1.0);
    assert_eq!(ratio(&f, "agg"), 1.0);
    assert_eq!(f.diameter_hops, 5);
}

#[test]
fn superpod_leaves_and_spines_per_scalable_unit() {
    for (sus, leaves, spines) in [(1, 8, 4), (2, 16, 8), (4, 32, 16)] {
        let f = FabricFigures::of(&build("superpod", &[("sus", &sus.to_string())]));
        assert_eq!(
            (tier_count(&f, "leaf"), tier_count(&f, "spine")),
            (leaves, spines),
            "{sus} SUs"
        );
        assert_eq!(f.gpus, sus * 256);
        assert_eq!(ratio(&f, "leaf"), 1.0);
    }
}

#[test]
fn switch_is_one_switch_under_every_nic() {
    let f = FabricFigures::of(&build("switch", &[]));
    assert_eq!((f.gpus, f.hosts), (256, 32));
    assert_eq!(tier_count(&f, "switch"), 1);
    assert_eq!((f.diameter_hops, f.max_equal_cost_paths), (1, 1));
    // ASTRA-sim's Switch: one GPU per host, every transfer through the switch.
    let f = FabricFigures::of(&build(
        "switch",
        &[("hosts", "256"), ("gpus_per_host", "1")],
    ));
    assert_eq!((f.gpus, f.hosts), (256, 256));
    assert_eq!(f.injection_bandwidth.0, 256 * 400_000_000_000 / 8);
    assert_eq!(f.bisection_bandwidth.0, f.injection_bandwidth.0 / 2);
}

#[test]
fn every_preset_builds_with_its_defaults() {
    for p in presets::all() {
        let topo = p.build(&[]).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert_eq!(topo.name(), p.name);
        assert!(!topo.gpus().is_empty());
    }
}
