//! `fabricsim cluster`: the summary, JSON and CSV outputs of a small plan, spreads over seeds,
//! bad plans and flags refused with status 2.

mod common;

use common::{fabricsim, stderr, stdout};

const PLAN: &str = r#"
[fabric]
preset = "meta-ai-zone"
set = ["racks=4"]

[[job]]
name = "small"
[job.llm]
model = "llama3-8b"
layers = 2
tp = 8
seq = 2048
global_batch = 4

[[job]]
name = "wide"
[job.llm]
model = "llama3-8b"
layers = 2
tp = 8
dp = 4
seq = 2048
global_batch = 16

[cluster]
days = 10
seed = 2
[cluster.synthetic]
jobs = 20
mean_gap = "6h"
mix = [{ job = "small", share = 2, hours = [1, 20] }, { job = "wide", share = 1, hours = [10, 100] }]
[cluster.failures]
gpu = { per_hour = 1e-3 }
"#;

fn plan(dir: &tempfile::TempDir, text: &str) -> String {
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_plan_runs_to_a_summary_json_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan(&dir, PLAN);
    let o = fabricsim(&["cluster", &p]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with("10 days of 64 GPUs, scheduler topology-aware"),
        "{text}"
    );
    for part in ["failures", "GPU-hours lost", "largest jobs", "step times:"] {
        assert!(text.contains(part), "no {part} in\n{text}");
    }
    let jobs = dir.path().join("jobs.csv");
    let series = dir.path().join("series.csv");
    let o = fabricsim(&[
        "cluster",
        &p,
        "--json",
        "--jobs-csv",
        jobs.to_str().unwrap(),
        "--series-csv",
        series.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["gpus"], 64);
    assert_eq!(v["jobs"].as_array().unwrap().len(), 20);
    let gpu = v["failures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["class"] == "gpu")
        .unwrap();
    assert!(gpu["failures"].as_u64().unwrap() > 0);
    let csv = std::fs::read_to_string(jobs).unwrap();
    assert!(csv.starts_with("name,workload,gpus,arrival_h"));
    assert_eq!(csv.lines().count(), 21);
    // A sample an hour for 10 days, and the one at the start.
    let csv = std::fs::read_to_string(series).unwrap();
    assert_eq!(csv.lines().count(), 1 + 241);
}

#[test]
fn seeds_give_a_spread_and_schedulers_compare() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan(&dir, PLAN);
    let o = fabricsim(&["cluster", &p, "--seeds", "3", "--scheduler", "random"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("scheduler random"), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("  ") && l.trim_start().starts_with(char::is_numeric))
            .count(),
        3,
        "{text}"
    );
    assert!(text.contains("range: ETTR"));
}

#[test]
fn jobs_cut_apart_in_one_zone_run_at_their_time_alone() {
    // Random placement puts jobs on shared racks, and simulated together some slow each other
    // down. Cut apart, each is simulated by itself: one zone has no edge to load.
    let dir = tempfile::tempdir().unwrap();
    let p = plan(&dir, PLAN);
    let slowdowns = |extra: &[&str]| {
        let mut args = vec!["cluster", p.as_str(), "--json", "--scheduler", "random"];
        args.extend(extra);
        let o = fabricsim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| j["iterations"].as_f64() > Some(0.0))
            .map(|j| j["slowdown"].as_f64().unwrap())
            .collect::<Vec<f64>>()
    };
    let together = slowdowns(&[]);
    assert!(together.iter().any(|&s| s > 1.01), "{together:?}");
    let apart = slowdowns(&["--exact-group-gpus", "0"]);
    assert!(
        !apart.is_empty() && apart.iter().all(|&s| (s - 1.0).abs() < 1e-9),
        "{apart:?}"
    );
}

#[test]
fn bad_plans_and_flags_exit_2_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (PLAN.replace("days = 10", "days = -1"), vec![], "days = -1"),
        (PLAN.replace("mean_gap = \"6h\"", "mean_gap = \"6 weeks\""), vec![], "mean_gap"),
        (PLAN.replace("[cluster]\n", "[cluster]\nfoo = 1\n"), vec![], "unknown field `foo`"),
        (PLAN.to_string(), vec!["--scheduler", "best"], "'best' for '--scheduler"),
        (PLAN.to_string(), vec!["--seeds", "0"], "--seeds 0"),
        (PLAN.to_string(), vec!["--exact-group-gpus", "many"], "'many' for '--exact-group-gpus"),
        (
            PLAN.replace("[cluster.failures]", "[[cluster.outage]]\nat = \"1h\"\nhosts = [\"host99\"]\nhours = 1\n[cluster.failures]"),
            vec![],
            "`host99` is not a host",
        ),
    ];
    for (text, flags, what) in cases {
        let p = plan(&dir, &text);
        let mut args = vec!["cluster", p.as_str()];
        args.extend(flags);
        let o = fabricsim(&args);
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        assert!(stderr(&o).contains(what), "{what} not in: {}", stderr(&o));
    }
}
