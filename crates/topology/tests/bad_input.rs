//! Bad input gets an error that names the place and what was expected; never a panic.

use fabricsim_topology::format::read_json;
use fabricsim_topology::presets::{self, parse_assignment};

fn preset_err(name: &str, settings: &[(&str, &str)]) -> String {
    let overrides: Vec<(String, String)> = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    presets::build(name, &overrides)
        .map(|_| ())
        .expect_err("should be rejected")
        .to_string()
}

#[test]
fn unknown_preset_lists_the_valid_ones() {
    let e = preset_err("fat-tre", &[]);
    assert!(e.contains("unknown preset `fat-tre`"), "{e}");
    for p in [
        "fat-tree",
        "leaf-spine",
        "meta-ai-zone",
        "meta-cluster",
        "hpn",
        "dcn-plus",
        "superpod",
        "switch",
    ] {
        assert!(e.contains(p), "{e} should list {p}");
    }
}

#[test]
fn unknown_parameter_lists_the_valid_ones() {
    let e = preset_err("fat-tree", &[("radix", "8")]);
    assert!(
        e.contains("no parameter `radix`") && e.contains("k, gpus_per_host, link_speed"),
        "{e}"
    );
}

/// (preset, settings, what the message must say)
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);

#[test]
fn out_of_range_and_malformed_values_say_what_is_expected() {
    let cases: &[Case<'_>] = &[
        (
            "fat-tree",
            &[("k", "7")],
            "k=7 is not accepted: expected an even number from 2 to 128",
        ),
        (
            "fat-tree",
            &[("k", "1000")],
            "expected a whole number from 2 to 128",
        ),
        ("fat-tree", &[("k", "-4")], "expected a whole number"),
        (
            "fat-tree",
            &[("k", "8"), ("gpus_per_host", "3")],
            "expected a divisor of the 4 host ports",
        ),
        (
            "fat-tree",
            &[("link_speed", "fast")],
            "link_speed=fast is not accepted",
        ),
        (
            "fat-tree",
            &[("link_speed", "0Gbps")],
            "expected a positive bandwidth",
        ),
        (
            "meta-ai-zone",
            &[("uplinks", "3:1")],
            "expected one of 1:1, 1:1.125, 2x",
        ),
        (
            "meta-ai-zone",
            &[("ctsws", "5")],
            "a divisor of the 16 RTSW uplinks",
        ),
        (
            "meta-ai-zone",
            &[
                ("hosts_per_rack", "1"),
                ("gpus_per_host", "4"),
                ("uplinks", "1:1.125"),
            ],
            "needs a multiple of 8",
        ),
        (
            "meta-cluster",
            &[("atsw_oversubscription", "lots")],
            "expected an oversubscription ratio",
        ),
        (
            "meta-cluster",
            &[("zones", "64"), ("racks", "1024"), ("hosts_per_rack", "16")],
            "more than the 1048576 a preset builds",
        ),
        ("hpn", &[("dual_tor", "maybe")], "expected true or false"),
        (
            "hpn",
            &[("link_latency", "0.5ns")],
            "not a whole number of nanoseconds",
        ),
    ];
    for (preset, settings, expected) in cases {
        let e = preset_err(preset, settings);
        assert!(
            e.contains(expected),
            "{preset} {settings:?}: `{e}` should contain `{expected}`"
        );
    }
}

#[test]
fn a_setting_must_be_key_equals_value() {
    assert!(parse_assignment("k")
        .unwrap_err()
        .to_string()
        .contains("write it as key=value"));
    assert!(parse_assignment("=4").is_err());
    assert_eq!(
        parse_assignment(" k = 8 ").unwrap(),
        ("k".into(), "8".into())
    );
}

/// A valid two-host fabric under one leaf; tests break one thing at a time.
const GOOD: &str = r#"{
  "format": "fabricsim-topology",
  "version": 1,
  "name": "two-hosts",
  "tiers": ["leaf"],
  "nodes": [
    {"name":"leaf0","kind":"switch","tier":"leaf","plane":0},
    {"name":"host0/gpu0","kind":"gpu","host":"host0"},
    {"name":"host0/nic0","kind":"nic","host":"host0"},
    {"name":"host1/gpu0","kind":"gpu","host":"host1"},
    {"name":"host1/nic0","kind":"nic","host":"host1"}
  ],
  "links": [
    {"a":"host0/gpu0","b":"host0/nic0","capacity":"512Gbps","latency":"100ns"},
    {"a":"host0/nic0","b":"leaf0","capacity":"400Gbps","latency":"500ns"},
    {"a":"host1/gpu0","b":"host1/nic0","capacity":"512Gbps","latency":"100ns"},
    {"a":"host1/nic0","b":"leaf0","capacity":"400Gbps","latency":"500ns"}
  ]
}
"#;

fn file_err(text: &str) -> String {
    read_json(text)
        .map(|_| ())
        .expect_err("should be rejected")
        .to_string()
}

#[test]
fn the_good_file_is_good() {
    let topo = read_json(GOOD).unwrap();
    assert_eq!(topo.gpus().len(), 2);
    assert_eq!(topo.hosts().len(), 2);
}

#[test]
fn malformed_json_names_line_and_column() {
    let e = file_err(&GOOD.replace(
        r#""kind":"nic","host":"host0"}"#,
        r#""kind":"nic","host":"host0""#,
    ));
    assert!(e.starts_with("line 10, column 5"), "{e}");
    let e = file_err(&GOOD.replace(
        r#""capacity":"400Gbps","latency":"500ns"}"#,
        r#""capacty":"400Gbps","latency":"500ns"}"#,
    ));
    assert!(
        e.starts_with("line 15,") && e.contains("unknown field `capacty`"),
        "{e}"
    );
    let e = file_err(&GOOD.replace("\"kind\":\"gpu\"", "\"kind\":\"tpu\""));
    assert!(e.contains("unknown variant `tpu`"), "{e}");
    let e = file_err(&GOOD.replacen("400Gbps", "400Gbit", 1));
    assert!(
        e.starts_with("line 15,") && e.contains("`400Gbit` is not a bandwidth"),
        "{e}"
    );
    assert!(file_err("").contains("line 1, column 0"));
}

#[test]
fn inconsistent_files_name_the_element() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "\"fabricsim-topology\"",
            "\"other\"",
            "format: expected \"fabricsim-topology\"",
        ),
        (
            "\"version\": 1",
            "\"version\": 2",
            "version: this fabricsim reads version 1, not 2",
        ),
        (
            r#""b":"leaf0","capacity":"400Gbps","latency":"500ns"},"#,
            r#""b":"leaf9","capacity":"400Gbps","latency":"500ns"},"#,
            "links[1].b: no node is named `leaf9`",
        ),
        (
            r#""tier":"leaf","plane":0"#,
            r#""tier":"spine","plane":0"#,
            "nodes[0].tier: `spine` is not one of the declared tiers",
        ),
        (
            r#""kind":"switch","tier":"leaf","plane":0"#,
            r#""kind":"switch""#,
            "nodes[0]: switch `leaf0` needs a \"tier\"",
        ),
        (
            r#"{"name":"host1/gpu0","kind":"gpu","host":"host1"}"#,
            r#"{"name":"host0/gpu0","kind":"gpu","host":"host1"}"#,
            "nodes[3].name: `host0/gpu0` is also the name of nodes[1]",
        ),
        (
            r#""kind":"nic","host":"host1"}"#,
            r#""kind":"nic"}"#,
            "nodes[4]: nic `host1/nic0` needs a \"host\"",
        ),
        (
            "\"400Gbps\",\"latency\":\"500ns\"},\n    {\"a\":\"host1",
            "\"0Gbps\",\"latency\":\"500ns\"},\n    {\"a\":\"host1",
            "cable 1 (host0/nic0 -- leaf0): capacity must be positive",
        ),
        (
            r#"{"a":"host1/nic0","b":"leaf0""#,
            r#"{"a":"host1/gpu0","b":"leaf0""#,
            "cable 3 (host1/gpu0 -- leaf0): a GPU cannot link to a switch directly",
        ),
        (
            r#"{"a":"host1/gpu0","b":"host1/nic0""#,
            r#"{"a":"host1/gpu0","b":"host0/nic0""#,
            "NVLink and PCIe links stay inside one host",
        ),
        (
            r#"{"a":"host1/nic0","b":"leaf0","capacity":"400Gbps","latency":"500ns"}"#,
            r#"{"a":"host1/nic0","b":"host1/nic0","capacity":"400Gbps","latency":"500ns"}"#,
            "cannot join a node to itself",
        ),
    ];
    for (from, to, expected) in cases {
        let text = GOOD.replacen(from, to, 1);
        assert_ne!(text, GOOD, "fixture edit `{from}` did not apply");
        let e = file_err(&text);
        assert!(e.contains(expected), "`{e}` should contain `{expected}`");
    }
}

#[test]
fn a_gpu_that_cannot_reach_the_others_is_named() {
    // host1 on a second leaf that nothing joins to leaf0.
    let text = GOOD
        .replace(r#"{"name":"host0/gpu0""#, "{\"name\":\"leaf1\",\"kind\":\"switch\",\"tier\":\"leaf\",\"plane\":0},\n    {\"name\":\"host0/gpu0\"")
        .replace(r#"{"a":"host1/nic0","b":"leaf0""#, r#"{"a":"host1/nic0","b":"leaf1""#);
    let e = file_err(&text);
    assert!(
        e.contains("`host0/gpu0` cannot reach `host1/gpu0`: no chain of switches joins their NICs"),
        "{e}"
    );

    // A GPU with no NIC of its own cannot reach another host, even if a host-mate has one.
    let text = GOOD
        .replace(
            r#"{"name":"host1/nic0","kind":"nic","host":"host1"}"#,
            "{\"name\":\"host1/nic0\",\"kind\":\"nic\",\"host\":\"host1\"},\n    \
             {\"name\":\"host1/gpu1\",\"kind\":\"gpu\",\"host\":\"host1\"},\n    \
             {\"name\":\"host1/nvswitch\",\"kind\":\"nvswitch\",\"host\":\"host1\"}",
        )
        .replace(
            r#"{"a":"host1/gpu0","b":"host1/nic0","capacity":"512Gbps","latency":"100ns"},"#,
            "{\"a\":\"host1/gpu1\",\"b\":\"host1/nic0\",\"capacity\":\"512Gbps\",\"latency\":\"100ns\"},\n    \
             {\"a\":\"host1/gpu0\",\"b\":\"host1/nvswitch\",\"capacity\":\"3.6Tbps\",\"latency\":\"25ns\"},\n    \
             {\"a\":\"host1/gpu1\",\"b\":\"host1/nvswitch\",\"capacity\":\"3.6Tbps\",\"latency\":\"25ns\"},",
        );
    let e = file_err(&text);
    assert!(
        e.contains(
            "`host0/gpu0` cannot reach `host1/gpu0`: one of them has no NIC linked to a switch"
        ),
        "{e}"
    );
}

#[test]
fn an_isolated_node_is_named() {
    let text = GOOD.replace(
        r#"{"name":"host0/gpu0""#,
        "{\"name\":\"spare\",\"kind\":\"switch\",\"tier\":\"leaf\"},\n    {\"name\":\"host0/gpu0\"",
    );
    assert!(file_err(&text).contains("node `spare` has no links"));
}
