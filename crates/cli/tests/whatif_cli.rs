//! `fabricsim whatif --plan`: a maintenance plan printed with its batches, bad plan flags
//! refused with status 2, and `--csv` for reports and plans; `fabricsim buffer`'s curve and its
//! bad flags.

mod common;

use common::{fabricsim, self_contained_report, stderr, stdout};

const SCENARIO: &str = r#"
[fabric]
preset = "meta-ai-zone"
set = ["racks=4"]

[[job]]
name = "spread"
placement = "random"
seed = 3

[job.llm]
model = "llama3-8b"
layers = 2
tp = 8
sp = true
dp = 4
seq = 2048
global_batch = 8
"#;

fn scenario(dir: &tempfile::TempDir) -> String {
    let path = dir.path().join("s.toml");
    std::fs::write(&path, SCENARIO).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_plan_lists_every_element_once_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(&dir);
    let o = fabricsim(&[
        "whatif",
        &s,
        "--plan",
        "--at-once",
        "2",
        "--hours",
        "6",
        "--seeds",
        "2",
        "--drain",
        "zone0/ctsw0",
        "--drain",
        "zone0/ctsw1",
        "--drain",
        "zone0/ctsw2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("2 at once, 6 h a batch, 2 seed(s)"), "{out}");
    for ctsw in ["ctsw0", "ctsw1", "ctsw2"] {
        assert_eq!(
            out.matches(&format!("drain zone0/{ctsw}")).count(),
            1,
            "{out}"
        );
    }
    assert!(
        out.lines().any(|l| l.starts_with("2 ")),
        "two batches: {out}"
    );
    assert!(out.contains("GPU-h lost in all; the order given:"), "{out}");
}

#[test]
fn bad_plan_flags_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(&dir);
    for (args, want) in [
        (
            vec!["--plan", "--at-once", "3"],
            "--at-once 3: expected 1 to the number of actions (2)",
        ),
        (
            vec!["--plan", "--hours", "0"],
            "--hours 0: expected more than 0",
        ),
        (vec!["--at-once", "2"], "--plan"),
    ] {
        let mut all = vec![
            "whatif",
            s.as_str(),
            "--drain",
            "zone0/ctsw0",
            "--drain",
            "zone0/ctsw1",
        ];
        all.extend(args);
        let o = fabricsim(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{all:?}: {}", stderr(&o));
    }
}

#[test]
fn csv_quotes_what_needs_quoting_and_a_plan_has_both_orders() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(&dir);
    let actions = dir.path().join("a.toml");
    std::fs::write(
        &actions,
        "[[action]]\nname = \"ctsw0, then \\\"1\\\"\"\ndrain = [\"zone0/ctsw0\", \"zone0/ctsw1\"]\n",
    )
    .unwrap();
    let o = fabricsim(&[
        "whatif",
        &s,
        "--seeds",
        "1",
        "--csv",
        "--action-file",
        actions.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("action,job,gpus,median_change,min_change,max_change,tokens_per_s_lost,gpu_hours_lost_per_day,cost_per_day,error")
    );
    let row = lines.next().unwrap();
    assert!(
        row.starts_with("\"ctsw0, then \"\"1\"\"\",spread,32,"),
        "{out}"
    );
    assert_eq!(lines.next(), None, "one job, one action: {out}");

    let o = fabricsim(&[
        "whatif",
        &s,
        "--seeds",
        "1",
        "--csv",
        "--plan",
        "--drain",
        "zone0/ctsw0",
        "--drain",
        "zone0/ctsw1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("order,batch,elements,gpu_hours_lost_per_day\n"),
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("plan,")).count(),
        2,
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("given,")).count(),
        2,
        "{out}"
    );
}

#[test]
fn buffer_prints_a_curve_per_routing_and_refuses_bad_flags() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(&dir);
    let o = fabricsim(&[
        "buffer",
        &s,
        "--fail",
        "ctsw",
        "--max",
        "2",
        "--draws",
        "1",
        "--seeds",
        "1",
        "--routing",
        "ecmp,spray",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("failed ctsw (16 in the fabric)"), "{out}");
    assert!(out.contains("# routing ecmp: baseline spread"), "{out}");
    assert!(out.contains("# routing spray: baseline spread"), "{out}");
    assert_eq!(
        out.matches("# tolerates (median slowdown at most 5.0%): spread")
            .count(),
        2
    );
    // Fabric variants side by side: one report each.
    let o = fabricsim(&[
        "buffer",
        &s,
        "--fail",
        "ctsw",
        "--max",
        "1",
        "--draws",
        "1",
        "--seeds",
        "1",
        "--variant",
        r#"fabric.set=["racks=4"]"#,
        "--variant",
        r#"fabric.set=["racks=4", "uplinks=2x"]"#,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("# variant fabric.set=[\"racks=4\"]\n"),
        "{out}"
    );
    assert!(out.contains("failed ctsw (16 in the fabric)"), "{out}");
    assert!(out.contains("failed ctsw (32 in the fabric)"), "{out}");
    for (args, want) in [
        (vec!["--fail", "atsw"], "--fail `atsw` is no tier of fabric"),
        (
            vec!["--fail", "ctsw", "--slowdown", "lots"],
            "--slowdown lots: expected a percentage",
        ),
        (
            vec!["--fail", "ctsw", "--max", "0"],
            "--max 0: expected 1 to 64",
        ),
        (
            vec!["--fail", "ctsw", "--routing", "warp"],
            "--routing warp: expected",
        ),
    ] {
        let mut all = vec!["buffer", s.as_str()];
        all.extend(args);
        let o = fabricsim(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{all:?}: {}", stderr(&o));
    }
}

#[test]
fn whatif_writes_a_report_of_each_action() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(&dir);
    let report = dir.path().join("w.html");
    let o = fabricsim(&[
        "whatif",
        &s,
        "--seeds",
        "2",
        "--drain",
        "zone0/ctsw0",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = self_contained_report(&report, 1);
    assert!(html.contains("drain zone0/ctsw0") && html.contains("over 2 seed(s)"));
    // A report goes with the text output, not instead of it.
    assert!(stdout(&o).contains("zone0/ctsw0"));
}
