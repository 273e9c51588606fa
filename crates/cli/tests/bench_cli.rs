//! `fabricsim bench` as a user runs it.

mod common;

use common::{fabricsim, self_contained_report, stderr, stdout};

/// 16 GPUs of an AI Zone, 1 MiB to 16 MiB.
const SMALL: [&str; 9] = [
    "bench",
    "--preset",
    "meta-ai-zone",
    "--gpus",
    "16",
    "-b",
    "1M",
    "-e",
    "16M",
];

#[test]
fn bench_prints_nccl_tests_columns_for_each_size() {
    let out = fabricsim(&[&SMALL[..], &["-f", "4"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("algbw") && text.contains("busbw") && text.contains("# Avg bus bandwidth")
    );
    let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(rows[0].trim_start().starts_with("1048576 "), "{text}");
    // nccl-tests' fields, in its order and nothing after them: size count type redop root,
    // then time algbw busbw #wrong out of place and in place. busbw is field 8 (1-based), as
    // nccl-tests' log parsers read it.
    for row in &rows {
        let f: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(f.len(), 13, "{row}");
        assert_eq!(&f[2..5], ["float", "sum", "-1"], "{row}");
        assert_eq!((f[8], f[12]), ("N/A", "N/A"), "{row}");
        assert_eq!(f[5..8], f[9..12], "{row}");
        let busbw: f64 = f[7].parse().unwrap();
        assert!(busbw > 0.0, "{row}");
    }
    // What ran is a comment under the table, `*` where the tuner chose.
    let ran = text
        .lines()
        .find(|l| l.starts_with("# algorithm: "))
        .unwrap();
    assert!(ran.contains('*') && ran.contains("1048576"), "{text}");
    assert!(text.contains("# *: chosen by NCCL's cost model"), "{text}");

    // --wide: the same fields first, then what ran, the busiest tier and its utilization.
    let wide = fabricsim(&[&SMALL[..], &["--wide"]].concat());
    let wide = stdout(&wide);
    let wide_rows: Vec<&str> = wide.lines().filter(|l| !l.starts_with('#')).collect();
    for (narrow, row) in rows.iter().zip(&wide_rows) {
        let f: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(f.len(), 17, "{row}");
        assert_eq!(
            f[..13].join(" "),
            narrow.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        assert!(f[13].contains('*'), "{row}");
        let util: f64 = f[15].parse().unwrap();
        assert!((0.0..=1.0).contains(&util), "{row}");
    }
    assert!(!wide.contains("# algorithm: "), "{wide}");
}

#[test]
fn dash_o_is_the_reduction_as_in_nccl_tests() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabricsim"))
        .current_dir(dir.path())
        .args([
            "bench", "--gpus", "8", "-b", "1M", "-e", "1M", "--algo", "ring", "-o", "max",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let row = text.lines().find(|l| !l.starts_with('#')).unwrap();
    assert_eq!(row.split_whitespace().nth(3), Some("max"), "{text}");
    // A forced algorithm carries no mark; the protocol the tuner chose does.
    let algo = text
        .lines()
        .find(|l| l.starts_with("# algorithm: "))
        .unwrap();
    assert!(
        algo.starts_with("# algorithm: ring/") && algo.ends_with("* at every size"),
        "{algo}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no file named `max`"
    );
    let bad = fabricsim(&["bench", "-o", "median"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("'median' for '--op <OP>'")
            && stderr(&bad).contains("[possible values: sum, prod, min, max, avg]"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn json_and_csv_carry_the_same_rows() {
    let args = [
        "bench",
        "--preset",
        "meta-ai-zone",
        "--gpus",
        "32",
        "-b",
        "8M",
        "-e",
        "8M",
        "--algo",
        "ring",
        "--proto",
        "LL128",
        "--compare-routing",
        "ecmp,spray",
    ];
    let json = fabricsim(&[&args[..], &["--json"]].concat());
    assert!(json.status.success());
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    let row = &v["runs"][1]["results"][0];
    assert_eq!(row["algorithm"], "ring");
    assert_eq!(row["size"], 8 << 20);
    let csv = fabricsim(&[&args[..], &["--csv"]].concat());
    let text = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(text.lines().count(), 3);
    let spray: Vec<&str> = text.lines().nth(2).unwrap().split(',').collect();
    assert_eq!(spray[0], "spray");
    let busbw: f64 = spray[11].parse().unwrap();
    assert!((busbw - row["busbw_gbps"].as_f64().unwrap()).abs() < 1e-3);
}

#[test]
fn bad_bench_flags_exit_2_naming_the_flag() {
    for (args, needle) in [
        (vec!["--collective", "allreduse"], "--collective"),
        (
            vec!["--algo", "nvls", "--collective", "all-to-all"],
            "--algo",
        ),
        (vec!["--gpus", "100000"], "--gpus"),
        (vec!["--down", "no/such/switch"], "--down"),
        (vec!["-b", "1G", "-e", "1M"], "--minbytes"),
        (
            vec!["--algo", "halving-doubling", "--gpus", "24"],
            "power-of-two",
        ),
        (vec!["--compare-routing", "ecmp,magic"], "--compare-routing"),
        (vec!["--compare-routing", "ecmp+magic"], "--compare-routing"),
        (vec!["--path-selection", "disjoint:0"], "--path-selection"),
        (vec!["-d", "float128"], "--datatype"),
        (vec!["-g", "8"], "--gpus N"),
        (vec!["-t", "2"], "--gpus N"),
        // Billions of QPs once allocated a strand each and aborted.
        (vec!["--qps", "4294967295"], "1 to 128"),
        (vec!["--channels", "65"], "1 to 64"),
        (vec!["--gpu", "V100"], "--gpu"),
        (
            vec!["--placement", "per-host", "--gpus", "100000"],
            "--gpus",
        ),
    ] {
        let out = fabricsim(&[&["bench", "--preset", "meta-ai-zone"], &args[..]].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn compare_routing_sets_path_selection_beside_the_policies() {
    // HPN's dual-port NICs: sent by outstanding bytes over disjoint paths, a GPU's channel
    // connections use both ports; hashed, the busier port sets the pace.
    let out = fabricsim(&[
        "bench",
        "--preset",
        "hpn",
        "--set",
        "segments=1",
        "--set",
        "hosts_per_segment=16",
        "--gpus",
        "128",
        "-b",
        "1G",
        "-e",
        "1G",
        "--algo",
        "ring",
        "--proto",
        "Simple",
        "--compare-routing",
        "ecmp,ecmp+disjoint",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs[0]["routing"], "ecmp");
    assert_eq!(runs[1]["routing"], "ecmp+disjoint:4");
    let busbw = |i: usize| runs[i]["results"][0]["busbw_gbps"].as_f64().unwrap();
    assert!(busbw(1) > busbw(0), "{} vs {}", busbw(1), busbw(0));
}

#[test]
fn bench_writes_every_link_per_routing_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let links = dir.path().join("links.csv");
    let o = fabricsim(&[
        "bench",
        "--preset",
        "meta-ai-zone",
        "--gpus",
        "32",
        "-b",
        "1M",
        "-e",
        "4M",
        "--compare-routing",
        "ecmp,spray",
        "--links",
        links.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&links).unwrap();
    assert!(
        text.starts_with("routing,size,link,src,dst,group,"),
        "{text}"
    );
    let runs: std::collections::BTreeSet<(String, String)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_string(), f[1].to_string())
        })
        .collect();
    let expected: std::collections::BTreeSet<(String, String)> = ["ecmp", "spray"]
        .iter()
        .flat_map(|r| ["1048576", "4194304"].map(|s| (r.to_string(), s.to_string())))
        .collect();
    assert_eq!(runs, expected);
    assert!(text.contains(",rtsw->ctsw,"), "32 GPUs span racks");
}

#[test]
fn bench_writes_a_report_with_a_line_per_policy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.html");
    let out = fabricsim(&[
        "bench",
        "--preset",
        "meta-ai-zone",
        "--gpus",
        "32",
        "-b",
        "1M",
        "-e",
        "64M",
        "-f",
        "8",
        "--compare-routing",
        "ecmp,eecmp",
        "--report",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Bus and algorithm bandwidth, utilization, and a heat map per policy.
    let html = self_contained_report(&path, 5);
    assert!(html.contains("Links under ecmp at 64M") && html.contains("Links under eecmp at 64M"));
}

#[test]
fn nccl_tests_data_types_and_iteration_flags_are_taken() {
    let out = fabricsim(&[
        "bench", "--gpus", "16", "-b", "1M", "-e", "1M", "-d", "bfloat16", "-n", "20", "-w", "5",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let row: Vec<&str> = text
        .lines()
        .find(|l| !l.starts_with('#'))
        .unwrap()
        .split_whitespace()
        .collect();
    // size, count (2-byte elements), type.
    assert_eq!(&row[..3], &["1048576", "524288", "bfloat16"]);
}
