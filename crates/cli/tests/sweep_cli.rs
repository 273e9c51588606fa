//! `fabricsim sweep` as a user runs it.

mod common;

use std::process::Command;

use common::{fabricsim, self_contained_report, stderr, stdout};

const PLAN: &str = r#"
seeds = 2
metrics = ["iteration_ms", "mfu"]

[vary]
"routing.policy" = ["ecmp", "spray"]
"job.llama3-8b.llm.pp" = [1, 2]
"#;

fn sweep_with_threads(plan: &std::path::Path, threads: &str) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_fabricsim"))
        .env("RAYON_NUM_THREADS", threads)
        .args(["sweep", plan.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

#[test]
fn a_sweep_is_one_row_per_point_seed_and_job_for_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let one = sweep_with_threads(&plan, "1");
    assert_eq!(
        one,
        sweep_with_threads(&plan, "2"),
        "the same table on 1 and 2 threads"
    );
    let lines: Vec<&str> = one.lines().collect();
    assert_eq!(
        lines[0],
        "job.llama3-8b.llm.pp,routing.policy,seed,job,iteration_ms,mfu,error"
    );
    // 2 × 2 points × 2 seeds, the last key fastest, then the seed.
    assert_eq!(lines.len(), 1 + 8, "{one}");
    let lead: Vec<String> = lines[1..]
        .iter()
        .map(|l| l.split(',').take(3).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(
        lead,
        [
            "1,ecmp,0",
            "1,ecmp,1",
            "1,spray,0",
            "1,spray,1",
            "2,ecmp,0",
            "2,ecmp,1",
            "2,spray,0",
            "2,spray,1"
        ]
    );
    // A point is what `run --set` gives for it.
    let row: Vec<&str> = lines[7].split(',').collect();
    let o = fabricsim(&[
        "run",
        "--json",
        "--set",
        "routing.policy=spray",
        "--set",
        "job.llama3-8b.llm.pp=2",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        row[4].parse::<f64>().unwrap(),
        v["jobs"][0]["iteration_ms"].as_f64().unwrap()
    );
}

#[test]
fn bad_plans_name_the_file_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    for (text, needle) in [
        ("metrics = []\n[vary]\n", "metrics: expected at least one"),
        (
            "metrics = [\"mfu\"]\n[vary]\n\"routing.policy\" = \"ecmp\"\n",
            "vary.\"routing.policy\": expected a non-empty list",
        ),
        (
            "metrics = [\"mfu\"]\nseeds = 0\n[vary]\n",
            "seeds = 0: expected 1 to 1000",
        ),
        (
            "metrics = [\"mfu\"]\n[vary]\n\"job.llama3-8b.llm.tp\" = [3]\n",
            "point job.llama3-8b.llm.tp=3",
        ),
        (
            "metrics = [\"mfu\"]\ncolour = 1\n[vary]\n",
            "unknown field `colour`",
        ),
    ] {
        std::fs::write(&plan, text).unwrap();
        let o = fabricsim(&["sweep", plan.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{text}");
        let err = stderr(&o);
        assert!(err.contains(needle), "{needle}: {err}");
    }
}

#[test]
fn a_sweep_writes_a_report_with_a_chart_per_metric() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let report = dir.path().join("sweep.html");
    let o = fabricsim(&[
        "sweep",
        plan.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = self_contained_report(&report, 2);
    assert!(
        html.contains("iteration_ms, median over seeds") && html.contains("mfu, median over seeds")
    );
}

#[test]
fn a_design_search_prices_each_fabric_and_marks_the_pareto_front() {
    // Racks with 1:1 or doubled uplinks, under ECMP or spraying: more ports cost more.
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let scenario = format!(
        "{}/../../scenarios/design-2zones.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::write(
        &plan,
        format!(
            "scenario = \"{scenario}\"\nmetrics = [\"iteration_ms\"]\n[vary]\n\
             \"fabric.set\" = [[\"zones=2\", \"racks=8\"], [\"zones=2\", \"racks=8\", \"uplinks=2x\"]]\n\
             \"routing.policy\" = [\"ecmp\", \"spray\"]\n\
             [design]\nobjective = \"iteration_ms\"\n[design.prices]\nswitch_port = 2.0\ncable = 1.0\n"
        ),
    )
    .unwrap();
    let o = fabricsim(&["sweep", plan.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows.len(), 4);
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
    for r in &rows {
        // The prices applied to the inventory: 2 per port, 1 per cable.
        let cables = f(r, "switch_cables") + f(r, "nic_cables");
        assert_eq!(f(r, "cost"), 2.0 * f(r, "switch_ports") + cables);
        assert_eq!(
            f(r, "switch_ports"),
            2.0 * f(r, "switch_cables") + f(r, "nic_cables")
        );
    }
    assert!(
        f(&rows[2], "cost") > f(&rows[0], "cost"),
        "doubled uplinks cost more"
    );
    // The front: exactly the rows no other row beats on both cost and time.
    for r in &rows {
        let dominated = rows.iter().any(|o| {
            f(o, "cost") <= f(r, "cost")
                && f(o, "iteration_ms") <= f(r, "iteration_ms")
                && (f(o, "cost") < f(r, "cost") || f(o, "iteration_ms") < f(r, "iteration_ms"))
        });
        assert_eq!(r["pareto"].as_bool(), Some(!dominated), "{r}");
    }
    assert!(rows.iter().any(|r| r["pareto"] == true));
    // A shard cannot know the front.
    let shard = fabricsim(&["sweep", plan.to_str().unwrap(), "--json", "--shard", "0/2"]);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&shard.stdout).unwrap();
    assert!(rows
        .iter()
        .all(|r| r["pareto"].is_null() && r["cost"].is_f64()));

    // An objective that is not a metric is refused, naming the key.
    let bad = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("objective = \"iteration_ms\"", "objective = \"mfu\"");
    std::fs::write(&plan, bad).unwrap();
    let o = fabricsim(&["sweep", plan.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("design.objective = \"mfu\""),
        "{}",
        stderr(&o)
    );
}
