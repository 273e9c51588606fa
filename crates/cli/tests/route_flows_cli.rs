//! `fabricsim route …` and `fabricsim flows` as a user runs them.

mod common;

use common::{fabricsim, self_contained_report, stderr, stdout};

const ZONE: [&str; 4] = ["--preset", "meta-ai-zone", "--set", "racks=4"];

#[test]
fn route_paths_lists_paths_and_the_one_taken() {
    let o = fabricsim(
        &[
            &[
                "route",
                "paths",
                "--from",
                "host0/gpu0",
                "--to",
                "host7/gpu3",
                "--limit",
                "2",
            ][..],
            &ZONE,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with("16 equal-cost paths from host0/gpu0 to host7/gpu3 (showing 2)\n"),
        "{text}"
    );
    assert!(text.contains("    1  host0/gpu0 > host0/nic0 > zone0/rack0/rtsw > zone0/ctsw0 > zone0/rack3/rtsw > host7/nic3 > host7/gpu3"), "{text}");
    assert!(text.contains("ecmp takes"), "{text}");
}

#[test]
fn route_balance_json_reports_ratios_per_group() {
    let o = fabricsim(
        &[
            &[
                "route",
                "balance",
                "--routing",
                "spray",
                "--pattern",
                "ring",
                "--json",
            ][..],
            &ZONE,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["routing"], "spray");
    assert_eq!(v["gpus"], 64);
    let up = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "rtsw->ctsw")
        .unwrap();
    // A ring crosses each rack boundary once; spray spreads each crossing over all 16 uplinks.
    assert_eq!(up["max_mean_ratio"], 1.0);
    assert_eq!(up["idle_fraction"], 0.0);
}

#[test]
fn flows_simulates_a_csv_and_writes_per_flow_results() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("flows.csv");
    std::fs::write(
        &csv,
        "# two flows from one GPU share its NIC, a third starts later\nsrc,dst,bytes,start\n\
         host0/gpu0,host4/gpu0,1GiB,0\nhost0/gpu0,host5/gpu0,1GiB,0\nhost1/gpu0,host6/gpu0,512MiB,1ms\n",
    )
    .unwrap();
    let out = dir.path().join("result.csv");
    let o = fabricsim(
        &[
            &[
                "flows",
                "--flows",
                csv.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
                "--json",
            ][..],
            &ZONE,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["flows"], 3);
    // Two GiB through one 400G NIC: 2^31 B / 50 GB/s = 42.949673 ms, plus 2.2 us of latency.
    assert_eq!(v["makespan_ns"], 42_949_673 + 2_200);
    let rows = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = rows.lines().collect();
    assert_eq!(
        lines[0],
        "src,dst,bytes,start_ns,end_ns,duration_ns,rate_gbps"
    );
    assert_eq!(lines.len(), 4);
    assert!(
        lines[3].starts_with("host1/gpu0,host6/gpu0,536870912,1000000,"),
        "{rows}"
    );

    // The analytical engine ignores the sharing: each GiB alone at 400G.
    let o = fabricsim(
        &[
            &[
                "flows",
                "--flows",
                csv.to_str().unwrap(),
                "--engine",
                "analytical",
                "--json",
            ][..],
            &ZONE,
        ]
        .concat(),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["makespan_ns"], 21_474_837 + 2_200);
}

/// The makespan `fabricsim flows --json` reports for `csv` on two racks of a zone.
fn makespan(csv: &std::path::Path, extra: &[&str]) -> u64 {
    let o = fabricsim(
        &[
            &["flows", "--flows", csv.to_str().unwrap(), "--json"][..],
            &["--preset", "meta-ai-zone", "--set", "racks=2"],
            extra,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["makespan_ns"].as_u64().unwrap()
}

#[test]
fn flows_spread_over_qps_gain_entropy_under_eecmp_only() {
    // Rack 0's 16 GPUs each send 1 GiB to their peer in rack 1, over rack 0's 16 uplinks.
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("r2r.csv");
    let mut text = String::from("src,dst,bytes,start\n");
    for h in 0..2 {
        for g in 0..8 {
            text += &format!("host{h}/gpu{g},host{}/gpu{g},1GiB,0\n", h + 2);
        }
    }
    std::fs::write(&csv, text).unwrap();
    // ECMP hashes the 5-tuple only: the QPs change nothing.
    let ecmp = makespan(&csv, &["--routing", "ecmp"]);
    assert_eq!(makespan(&csv, &["--routing", "ecmp", "--qps", "16"]), ecmp);
    // E-ECMP hashes the QP: 16 QPs per connection spread the load over the uplinks.
    let one = makespan(&csv, &["--routing", "eecmp"]);
    let sixteen = makespan(&csv, &["--routing", "eecmp", "--qps", "16"]);
    let nic_bound = 21_474_837 + 2_200; // 1 GiB at 400G, plus the path latency
    assert!(
        sixteen < one && sixteen < ecmp,
        "{sixteen} vs {one}, {ecmp}"
    );
    assert!(sixteen >= nic_bound, "{sixteen}");
    // Zero, and billions (which once ran for minutes), are refused.
    for qps in ["0", "4294967295"] {
        let o = fabricsim(
            &[
                &["flows", "--flows", csv.to_str().unwrap(), "--qps", qps][..],
                &ZONE,
            ]
            .concat(),
        );
        assert_eq!(o.status.code(), Some(2));
        assert!(
            stderr(&o).contains(&format!("--qps: `{qps}` is not a number of QPs")),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn flows_round_robin_puts_successive_messages_on_successive_qps() {
    let dir = tempfile::tempdir().unwrap();
    let (implicit, explicit) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    let (mut a, mut b) = (
        String::from("src,dst,bytes,start\n"),
        String::from("src,dst,bytes,start,qp\n"),
    );
    for h in 0..2 {
        for g in 0..8 {
            for k in 0..4 {
                let line = format!("host{h}/gpu{g},host{}/gpu{g},256MiB,{k}us", h + 2);
                a += &format!("{line}\n");
                b += &format!("{line},{}\n", k % 2);
            }
        }
    }
    std::fs::write(&implicit, a).unwrap();
    std::fs::write(&explicit, b).unwrap();
    let eecmp = ["--routing", "eecmp"];
    assert_eq!(
        makespan(
            &implicit,
            &[&eecmp[..], &["--qps", "2", "--qp-mode", "round-robin"]].concat()
        ),
        makespan(&explicit, &eecmp)
    );
}

#[test]
fn bad_routing_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("bad.csv");
    std::fs::write(&csv, "src,dst,bytes,start\nhost0/gpu0,host4/gpu9,1GiB,0\n").unwrap();
    let bad_csv = format!(
        "{}: line 2: dst: the fabric has no node `host4/gpu9`",
        csv.display()
    );
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["route", "balance", "--routing", "random"],
            "unknown routing policy `random`; expected one of ecmp, eecmp, pin, spray".into(),
        ),
        (
            vec!["route", "balance", "--pattern", "butterfly"],
            "'butterfly' for '--pattern <PATTERN>'\n  [possible values: permutation, ring, all-to-all]"
                .into(),
        ),
        (
            vec![
                "route",
                "paths",
                "--from",
                "host0/nic0",
                "--to",
                "host1/gpu0",
            ],
            "--from: `host0/nic0` is not a GPU".into(),
        ),
        (vec!["flows", "--flows", csv.to_str().unwrap()], bad_csv),
    ];
    for (args, expected) in cases {
        let o = fabricsim(&[&args[..], &ZONE].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&expected),
            "{args:?}: `{}` should contain `{expected}`",
            stderr(&o)
        );
    }
}

/// A start time past 2^62 ns is refused, naming the line (a flow starting at 2^64 − 1 ns used
/// to end before it started).
#[test]
fn flow_start_times_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("late.csv");
    std::fs::write(
        &csv,
        "src,dst,bytes,start\nhost0/gpu0,host1/gpu0,1GiB,18446744073709551615\n",
    )
    .unwrap();
    let o = fabricsim(&[&["flows", "--flows", csv.to_str().unwrap()][..], &ZONE].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("line 2: start: 18446744073709551615 ns is above 2^62 ns"),
        "{}",
        stderr(&o)
    );
}

/// `fabricsim flows` on examples/r2r.csv (rack 0 to rack 1 of a 2-rack AI Zone), with `extra`.
fn flows_on_r2r(extra: &[&str]) -> std::process::Output {
    let r2r = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/r2r.csv");
    let base = [
        "flows",
        "--preset",
        "meta-ai-zone",
        "--set",
        "racks=2",
        "--flows",
        r2r,
    ];
    fabricsim(&[&base[..], extra].concat())
}

#[test]
fn flows_and_run_write_every_link_they_used() {
    let dir = tempfile::tempdir().unwrap();
    let links = dir.path().join("links.csv");
    let o = flows_on_r2r(&["--links", links.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&links).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("link,src,dst,group,capacity_gbps,bytes,utilization,peak_utilization,busy_fraction")
    );
    let mut by_group: std::collections::BTreeMap<String, f64> = Default::default();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let (bytes, util, busy): (f64, f64, f64) = (
            f[5].parse().unwrap(),
            f[6].parse().unwrap(),
            f[8].parse().unwrap(),
        );
        assert!(
            bytes > 0.0 && util > 0.0 && util <= 1.0 + 1e-9 && busy <= 1.0,
            "{line}"
        );
        *by_group.entry(f[3].to_string()).or_default() += bytes;
    }
    // 16 flows of 1 GiB, each leaving through its NIC and entering the next rack through one.
    let gib = (1u64 << 30) as f64;
    assert_eq!(by_group["nic->rtsw"], 16.0 * gib);
    assert_eq!(by_group["rtsw->nic"], 16.0 * gib);
    assert_eq!(by_group["rtsw->ctsw"], 16.0 * gib);

    let o = fabricsim(&["run", "--links", links.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&links).unwrap();
    assert!(
        text.lines().count() > 100 && text.contains(",host,"),
        "{text}"
    );
}

#[test]
fn flows_write_a_report_of_their_completion_times() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("flows.html");
    let o = flows_on_r2r(&["--report", report.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = self_contained_report(&report, 2);
    assert!(html.contains("Flow completion times") && html.contains("rtsw-&gt;ctsw"));
}

#[test]
fn route_balance_compares_policies_and_path_selections() {
    let o = fabricsim(
        &[
            &[
                "route",
                "balance",
                "--pattern",
                "permutation",
                "--qps",
                "4",
                "--compare-routing",
                "ecmp,ecmp+disjoint,spray",
                "--json",
            ][..],
            &ZONE,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let variants = v["variants"].as_array().unwrap();
    let names: Vec<_> = variants
        .iter()
        .map(|x| {
            (
                x["routing"].as_str().unwrap(),
                x["path_selection"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("ecmp", "hashed"),
            ("ecmp", "disjoint:4"),
            ("spray", "hashed")
        ]
    );
    let up = |i: usize, what: &str| {
        variants[i]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["group"] == "rtsw->ctsw")
            .unwrap()[what]
            .as_f64()
            .unwrap()
    };
    // ECMP hashes a connection's four QPs alike (it does not see the QP); by disjoint paths
    // they go up four uplinks, so the busiest uplink carries less; spraying evens out more.
    assert!(up(1, "max_load") < up(0, "max_load"), "{v}");
    assert!(up(2, "max_mean_ratio") < up(1, "max_mean_ratio"), "{v}");
    assert_eq!(up(0, "mean_load"), up(1, "mean_load"));
    // TE has no static pattern to solve here.
    let o = fabricsim(&["route", "balance", "--compare-routing", "ecmp,te"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`te`: te needs a traffic matrix"),
        "{}",
        stderr(&o)
    );
}
