//! `fabricsim te solve` and `bench --routing te` as a user runs them.

mod common;

use common::{fabricsim, self_contained_report, stderr, stdout};

const ZONE: [&str; 2] = ["--preset", "meta-ai-zone"];

#[test]
fn te_solve_compares_te_with_ecmp_per_tier() {
    let args = [
        "te",
        "solve",
        "--bench-like",
        "all-reduce",
        "--algo",
        "tree",
        "--gpus",
        "128",
        "--solver",
        "cspf,lp,mwu",
        "--json",
    ];
    let o = fabricsim(&[&args[..], &ZONE].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let routings = v["routings"].as_array().unwrap();
    let names: Vec<&str> = routings
        .iter()
        .map(|r| r["routing"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ecmp", "eecmp/16", "te", "te:lp", "te:mwu"]);
    let max = |i: usize| routings[i]["max_utilization"].as_f64().unwrap();
    // TE below both hashed policies; the LP's optimum bounds every table from below.
    assert!(max(2) < max(0) && max(2) < max(1), "{v}");
    let optimum = routings[3]["lower_bound"].as_f64().unwrap();
    assert!(routings
        .iter()
        .all(|r| r["max_utilization"].as_f64().unwrap() >= optimum - 1e-9));
    let tiers = routings[2]["tiers"].as_array().unwrap();
    assert!(tiers
        .iter()
        .any(|t| t["group"] == "rtsw->ctsw" && t["p99"].is_f64()));
}

#[test]
fn te_solve_reads_a_demand_file_and_names_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("demand.csv");
    std::fs::write(
        &good,
        "src,dst,rate\nhost0/gpu0,host2/gpu0,400Gbps\nhost1/gpu0,host3/gpu0,400Gbps\n",
    )
    .unwrap();
    let o = fabricsim(
        &[
            &["te", "solve", "--demand", good.to_str().unwrap()][..],
            &ZONE,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("TE on meta-ai-zone: 2 demands"),
        "{}",
        stdout(&o)
    );
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "src,dst,rate\nhost0/gpu0,host2/gpu0,fast\n").unwrap();
    let o = fabricsim(
        &[
            &["te", "solve", "--demand", bad.to_str().unwrap()][..],
            &ZONE,
        ]
        .concat(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.csv: line 2: rate:"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn te_solve_refuses_bad_options() {
    for (args, message) in [
        (
            &["te", "solve", "--pattern", "ring", "--solver", "simplex"][..],
            "'simplex' for '--solver <SOLVER>'",
        ),
        (&["te", "solve"][..], "no demand"),
        (
            &["te", "solve", "--pattern", "ring", "--down", "nowhere"][..],
            "--down:",
        ),
    ] {
        let o = fabricsim(&[args, &ZONE].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(message), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn bench_runs_under_te_and_compares_it() {
    let args = "bench --gpus 128 --algo ring --proto Simple -b 1G -e 1G --set uplinks=1:1 \
                --compare-routing ecmp,te,spray --json";
    let o = fabricsim(&[&args.split_whitespace().collect::<Vec<_>>()[..], &ZONE].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let busbw = |i: usize| v["runs"][i]["results"][0]["busbw_gbps"].as_f64().unwrap();
    assert_eq!(v["runs"][1]["routing"], "te");
    // TE's table gives every ring edge its own uplink: as fast as ideal spraying.
    assert!(
        busbw(1) > 1.2 * busbw(0),
        "te {} vs ecmp {}",
        busbw(1),
        busbw(0)
    );
    let spray = busbw(2);
    assert!(
        (busbw(1) - spray).abs() < 1e-6 * spray,
        "te {} vs spray {spray}",
        busbw(1)
    );
}

/// Without the `highs` feature, naming HiGHS is refused up front, saying how to get it.
#[cfg(not(feature = "highs"))]
#[test]
fn highs_needs_a_build_with_the_feature() {
    for args in [
        &[
            "te",
            "solve",
            "--preset",
            "leaf-spine",
            "--bench-like",
            "all-reduce",
            "--gpus",
            "8",
            "--solver",
            "highs",
        ][..],
        &["run", "--routing", "te:highs"][..],
    ] {
        let o = fabricsim(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains("--features highs"), "{}", stderr(&o));
    }
}

/// Two uplinks down under a 128-GPU tree all-reduce on a 1:1 zone: rerouting after the LP's
/// rounding reaches CSPF's 1.000 (docs/commands/te.md).
#[test]
fn rerouting_after_rounding_matches_cspf_with_uplinks_down() {
    let args = [
        "te",
        "solve",
        "--preset",
        "meta-ai-zone",
        "--set",
        "uplinks=1:1",
        "--bench-like",
        "all-reduce",
        "--algo",
        "tree",
        "--gpus",
        "128",
        "--solver",
        "cspf,lp",
        "--down",
        "zone0/rack0/rtsw--zone0/ctsw0",
        "--down",
        "zone0/rack1/rtsw--zone0/ctsw5",
        "--json",
    ];
    let o = fabricsim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let max = |name: &str| {
        v["routings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["routing"] == name)
            .unwrap()["max_utilization"]
            .as_f64()
            .unwrap()
    };
    assert!((max("te") - 1.0).abs() < 1e-3, "{v}");
    assert!(max("te:lp") <= max("te") + 1e-9, "{v}");
}

/// Volumes whose sum per GPU passes 2^64 do not wrap: four rows of 2^62 bytes from one GPU put
/// that GPU at line rate (they used to sum to 0, "the demand is empty", or a tripled load).
#[test]
fn huge_volumes_are_summed_without_wrapping() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("big.csv");
    let rows: String = (2..6)
        .map(|h| format!("host0/gpu0,host{h}/gpu0,4611686018427387904\n"))
        .collect();
    std::fs::write(&f, format!("src,dst,bytes\n{rows}")).unwrap();
    let o = fabricsim(
        &[
            &["te", "solve", "--demand", f.to_str().unwrap(), "--json"][..],
            &ZONE,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // The four demands share host0/gpu0's 400G NIC: 100 Gb/s each, 400 in all.
    assert!(
        (v["total_rate_gbps"].as_f64().unwrap() - 400.0).abs() < 1e-6,
        "{v}"
    );
    // Above 2^62 bytes a row is refused, naming the line.
    std::fs::write(
        &f,
        "src,dst,bytes\nhost0/gpu0,host2/gpu0,9223372036854775808\n",
    )
    .unwrap();
    let o = fabricsim(&[&["te", "solve", "--demand", f.to_str().unwrap()][..], &ZONE].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("line 2: bytes") && stderr(&o).contains("2^62"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn te_solve_writes_a_report_per_routing() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("te.html");
    let o = fabricsim(&[
        "te",
        "solve",
        "--preset",
        "meta-ai-zone",
        "--set",
        "racks=4",
        "--pattern",
        "all-to-all",
        "--gpus",
        "32",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = self_contained_report(&report, 1);
    for routing in ["ecmp", "eecmp/16", "te", "te:mwu"] {
        assert!(html.contains(&format!("<td>{routing}</td>")), "{routing}");
    }
}
