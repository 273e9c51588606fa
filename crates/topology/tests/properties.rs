//! Random valid parameters always build a valid, connected fabric, whose JSON export reads
//! back to a fabric that exports byte-identically, with the same figures.

use fabricsim_topology::figures::FabricFigures;
use fabricsim_topology::format::{read_json, write_json};
use fabricsim_topology::presets;
use proptest::prelude::*;

/// A preset with small random parameters that its documented constraints accept.
fn small_preset() -> impl Strategy<Value = (&'static str, Vec<(String, String)>)> {
    let s = |k: &str, v: u32| (k.to_string(), v.to_string());
    let b = |k: &str, v: bool| (k.to_string(), v.to_string());
    prop_oneof![
        (1u32..=5, prop::sample::select(vec![1u32, 2])).prop_filter_map(
            "g divides k/2",
            move |(h, g)| {
                (h % g == 0).then(|| ("fat-tree", vec![s("k", 2 * h), s("gpus_per_host", g)]))
            }
        ),
        (1u32..=6).prop_map(move |h| ("leaf-spine", vec![s("k", 2 * h)])),
        (1u32..=6, 1u32..=4)
            .prop_map(move |(h, g)| { ("switch", vec![s("hosts", h), s("gpus_per_host", g)]) }),
        (1u32..=6, 1u32..=3, 1u32..=4, 0usize..2, 1u32..=3).prop_map(move |(r, h, g, up, z)| {
            let uplinks = ["1:1", "2x"][up];
            (
                "meta-cluster",
                vec![
                    s("racks", r),
                    s("hosts_per_rack", h),
                    s("gpus_per_host", g),
                    ("uplinks".into(), uplinks.into()),
                    s("zones", z),
                ],
            )
        }),
        (
            1u32..=3,
            1u32..=4,
            1u32..=4,
            1u32..=3,
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(move |(seg, h, g, up, t, p)| {
                (
                    "hpn",
                    vec![
                        s("segments", seg),
                        s("hosts_per_segment", h),
                        s("gpus_per_host", g),
                        s("tor_uplinks", up),
                        b("dual_tor", t),
                        b("dual_plane", p),
                    ],
                )
            }),
        (1u32..=3, 1u32..=3, 1u32..=4, 1u32..=4).prop_map(move |(pods, seg, h, g)| {
            // 200G ports into 200G uplinks over one aggregation switch always split evenly.
            (
                "dcn-plus",
                vec![
                    s("pods", pods),
                    s("segments_per_pod", seg),
                    s("hosts_per_segment", h),
                    s("gpus_per_host", g),
                    s("aggs_per_pod", 1),
                    ("link_speed".into(), "200Gbps".into()),
                ],
            )
        }),
        (
            0usize..3,
            prop::sample::select(vec![1u32, 2, 4, 8]),
            prop::sample::select(vec![1u32, 2, 4])
        )
            .prop_map(move |(i, g, spines)| {
                // A spine radix that gives `spines` spines, which divide the leaves' uplinks.
                let (sus, nodes) = [(1, 4), (2, 4), (4, 8)][i];
                (
                    "superpod",
                    vec![
                        s("sus", sus),
                        s("nodes_per_su", nodes),
                        s("gpus_per_host", g),
                        s("spine_radix", (sus * g * nodes / spines).max(2)),
                    ],
                )
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_presets_are_valid_and_round_trip((name, overrides) in small_preset()) {
        let topo = presets::build(name, &overrides).map_err(|e| TestCaseError::fail(format!("{name} {overrides:?}: {e}")))?;
        let figures = FabricFigures::of(&topo);
        // Connected: some pair of GPUs needs the network, or there is one NVLink domain.
        if topo.hosts().len() > 1 {
            prop_assert!(figures.diameter_hops >= 1);
            prop_assert!(figures.max_equal_cost_paths >= 1);
        }
        let mut first = Vec::new();
        write_json(&topo, &mut first).unwrap();
        let back = read_json(std::str::from_utf8(&first).unwrap()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut second = Vec::new();
        write_json(&back, &mut second).unwrap();
        prop_assert!(first == second, "export -> import -> export changed the bytes");
        prop_assert_eq!(FabricFigures::of(&back), figures);
    }
}

#[test]
fn default_cluster_round_trips_byte_identically() {
    let topo = presets::build("meta-cluster", &[]).unwrap();
    let mut first = Vec::new();
    write_json(&topo, &mut first).unwrap();
    let back = read_json(std::str::from_utf8(&first).unwrap()).unwrap();
    let mut second = Vec::new();
    write_json(&back, &mut second).unwrap();
    assert!(first == second);
    assert_eq!(back.node_count(), topo.node_count());
    assert_eq!(back.links(), topo.links());
}

/// A small valid file to mutate.
fn sample_file() -> String {
    let topo = presets::build(
        "leaf-spine",
        &[
            ("k".into(), "4".into()),
            ("gpus_per_host".into(), "2".into()),
        ],
    )
    .unwrap();
    let mut out = Vec::new();
    write_json(&topo, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Bad input is an error, never a panic: random edits of a valid file either read or fail.
    #[test]
    fn mutated_files_never_panic(edits in prop::collection::vec((any::<prop::sample::Index>(), 0usize..5, "[\\[\\]{}\",:0-9a-z/ ]{0,3}"), 1..4)) {
        let mut text = sample_file();
        for (at, len, with) in edits {
            let start = at.index(text.len());
            let end = (start + len).min(text.len());
            if text.is_char_boundary(start) && text.is_char_boundary(end) {
                text.replace_range(start..end, &with);
            }
        }
        let _ = read_json(&text);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = read_json(&text);
        let _ = text.parse::<fabricsim_topology::Bandwidth>();
        let _ = text.parse::<fabricsim_topology::Nanos>();
        let _ = text.parse::<fabricsim_topology::Bytes>();
    }
}
