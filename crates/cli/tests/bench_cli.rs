//! `fabricsim bench` as a user runs it.

mod common;

use common::{fabricsim, stderr, stdout};

#[test]
fn bench_prints_nccl_tests_columns_for_each_size() {
    let out = fabricsim(&[
        "bench",
        "--preset",
        "meta-ai-zone",
        "--gpus",
        "16",
        "-b",
        "1M",
        "-e",
        "16M",
        "-f",
        "4",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("algbw") && text.contains("busbw") && text.contains("# Avg bus bandwidth")
    );
    let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(rows[0].trim_start().starts_with("1048576 "), "{text}");
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
