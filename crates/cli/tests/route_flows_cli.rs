//! `fabricsim route …` and `fabricsim flows` as a user runs them.

mod common;

use common::{fabricsim, stderr, stdout};

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
            "unknown pattern `butterfly`".into(),
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
