//! `fabricsim run` and `fabricsim replay` end to end.

mod common;

use common::{fabricsim, self_contained_report, stderr, stdout};

fn examples(path: &str) -> String {
    format!(
        "{}/../../tests/data/astra_examples/{path}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn default_scenario_prints_a_summary() {
    let o = fabricsim(&["run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for needle in [
        "job llama3-8b: 64 × H100",
        "iteration",
        "tokens/s",
        "MFU",
        "all-gather",
        "send/recv",
    ] {
        assert!(out.contains(needle), "no `{needle}` in\n{out}");
    }
}

#[test]
fn same_scenario_twice_gives_identical_json() {
    let a = fabricsim(&["run", "--json"]);
    let b = fabricsim(&["run", "--json"]);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    let job = &v["jobs"][0];
    assert!(job["iteration_ms"].as_f64().unwrap() > 0.0);
    let split = job["compute_fraction"].as_f64().unwrap()
        + job["exposed_comm_fraction"].as_f64().unwrap()
        + job["idle_fraction"].as_f64().unwrap();
    assert!((split - 1.0).abs() < 1e-9);
}

#[test]
fn bad_scenarios_name_the_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    for (text, needle) in [
        ("[fabric]\npreset = \"meta-ai-zone\"\n[[job]]\nname = \"a\"\n[job.llm]\nmodel = \"llama3-8b\"\nseq = 4096\nglobal_batch = 8\ntp = 3\n", "llm.tp (3) must divide heads"),
        ("[[job]]\nname = \"a\"\n[job.llm]\nmodel = \"llama9\"\nseq = 1\nglobal_batch = 1\n", "model = \"llama9\""),
        ("[[job]]\nname = \"a\"\ncolour = 1\n", "unknown field `colour`"),
        ("[[job]\n", "line 1"),
        ("[fabric]\npreset = \"meta-ai-zone\"\n", "no [[job]]"),
        ("[[job]]\nname = \"a\"\n[job.llm]\nmodel = \"llama3-405b\"\ntp = 8\ndp = 2\nseq = 8192\nglobal_batch = 2\n", "GB per GPU"),
        ("[[job]]\nname = \"a\"\n[job.llm]\nmodel = \"llama3-8b\"\nseq = 8192\nglobal_batch = 1\n[job.efficiency]\ngemm = 1.5\n", "efficiency.gemm = 1.5: expected a fraction of peak in (0, 1]"),
        ("[[job]]\nname = \"a\"\n[job.llm]\nmodel = \"llama3-8b\"\nseq = 8192\nglobal_batch = 1\n[job.efficiency]\nlaunch = 3\n", "unknown field `launch`"),
        ("[routing]\nhash = \"crc16,tier4=crc32\"\n[[job]]\nname = \"a\"\n[job.llm]\nmodel = \"llama3-8b\"\nseq = 8192\nglobal_batch = 1\n", "[routing] hash = `crc16,tier4=crc32`: expected a hash function"),
        ("[[job]]\nname = \"a\"\n[job.llm]\nmodel = \"llama3-8b\"\nseq = 8192\nglobal_batch = 1\norder = \"tp-dp\"\n", "order = \"tp-dp\": expected tp, cp, pp and dp each once"),
        ("[[job]]\nname = \"a\"\n[job.chakra]\nprefix = \"t\"\nranks = \"racks\"\n", "chakra.ranks = \"racks\": expected trace or communicators"),
    ] {
        let path = dir.path().join("s.toml");
        std::fs::write(&path, text).unwrap();
        let o = fabricsim(&["run", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{text}");
        let err = stderr(&o);
        assert!(err.contains("s.toml") || err.contains("job `a`"), "{err}");
        assert!(err.contains(needle), "{needle}: {err}");
    }
}

/// The default scenario with `extra` appended, run with `--json`: the job's iteration (ms) and
/// the whole JSON but the scenario's path.
fn default_with(extra: &str) -> (f64, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    let base = std::fs::read_to_string(format!(
        "{}/../../scenarios/default.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    std::fs::write(&path, format!("{base}{extra}")).unwrap();
    let o = fabricsim(&["run", path.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v.as_object_mut().unwrap().remove("scenario");
    (v["jobs"][0]["iteration_ms"].as_f64().unwrap(), v)
}

#[test]
fn run_reports_the_algorithm_each_collective_ran() {
    let (_, v) = default_with("");
    let colls = v["jobs"][0]["collectives"].as_array().unwrap();
    assert!(!colls.is_empty());
    for c in colls {
        let algo = c["algorithm"].as_str().unwrap();
        let (a, p) = algo.split_once('/').unwrap_or_else(|| panic!("{c}"));
        assert!(
            !a.is_empty() && ["LL", "LL128", "Simple"].contains(&p),
            "{c}"
        );
    }
    // A forced algorithm is what ran.
    let (_, forced) = default_with("[job.collectives]\nalgorithm = \"recursive-doubling\"\n");
    let algos: Vec<&str> = forced["jobs"][0]["collectives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["algorithm"].as_str().unwrap())
        .collect();
    assert!(
        algos.iter().any(|a| a.starts_with("recursive-doubling/")),
        "{algos:?}"
    );
}

#[test]
fn efficiency_overrides_reach_the_compute_model() {
    let (base, base_json) = default_with("");
    // The calibrated defaults, given explicitly, change nothing.
    let (_, same) = default_with(
        "[job.efficiency]\ngemm = 0.72\nattention = 0.605\nattention_bwd = 0.40\n\
         attention_blocks = 120\nattention_bwd_blocks = 105\nmemory = 0.89\nlaunch_us = 6.5\n",
    );
    assert_eq!(base_json, same);
    // GEMMs at half the fitted efficiency take twice as long: most of the compute.
    let (slow, _) = default_with("[job.efficiency]\ngemm = 0.36\n");
    assert!(slow > 1.3 * base, "{slow} ms against {base} ms");
    // A longer fixed cost per kernel costs something, and not much.
    let (launch, _) = default_with("[job.efficiency]\nlaunch_us = 20\n");
    assert!(
        launch > base && launch < 1.3 * base,
        "{launch} ms against {base} ms"
    );
}

#[test]
fn trace_slices_on_one_thread_never_overlap() {
    // The default job's ranks run FSDP collectives while their TP ones run: those go on extra
    // tracks of the comm lane, so Perfetto draws every slice (complete events that overlap on
    // one thread are misdrawn; this trace had 1,056 such pairs with one thread per lane).
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    let o = fabricsim(&["run", "--trace", trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    let mut threads: std::collections::BTreeMap<(u64, u64), Vec<(f64, f64)>> = Default::default();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        assert!(
            e["args"]["rank"].is_u64() && e["args"]["lane"].is_string(),
            "{e}"
        );
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        threads.entry(key).or_default().push((ts, ts + dur));
    }
    // Args say what each op moved or computed.
    let with = |key: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && !e["args"][key].is_null())
            .count()
    };
    assert!(with("flops") > 0 && with("bytes") > 0 && with("peer") > 0);
    assert!(events.iter().any(|e| e["ph"] == "X"
        && e["args"]["group"] == "dp0"
        && e["args"]["algorithm"].is_string()
        && e["args"]["protocol"].is_string()));
    // Arrows from each pipeline send to its receive, each end inside a slice of its thread.
    let ends: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["ph"] == "s" || e["ph"] == "f")
        .collect();
    assert!(!ends.is_empty());
    for end in &ends {
        let (pid, tid, ts) = (&end["pid"], &end["tid"], end["ts"].as_f64().unwrap());
        assert!(
            events.iter().any(|e| e["ph"] == "X"
                && e["pid"] == *pid
                && e["tid"] == *tid
                && e["ts"].as_f64().unwrap() <= ts
                && ts <= e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap()),
            "{end}"
        );
        let pair = if end["ph"] == "s" { "f" } else { "s" };
        assert_eq!(
            ends.iter()
                .filter(|e| e["id"] == end["id"] && e["ph"] == pair)
                .count(),
            1
        );
    }
    // Counter tracks: each link group's mean and busiest utilization, sampled every 1 ms.
    let counters: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "C").collect();
    assert!(counters
        .iter()
        .any(|e| e["name"] == "rtsw->ctsw utilization"));
    for c in &counters {
        let (mean, max) = (
            c["args"]["mean"].as_f64().unwrap(),
            c["args"]["max"].as_f64().unwrap(),
        );
        assert!(
            (0.0..=max + 1e-6).contains(&mean) && max <= 1.0 + 1e-6,
            "{c}"
        );
    }
    let named = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .count();
    assert_eq!(named, threads.len(), "every thread with slices has a name");
    assert!(
        threads.len() > 16 * 2,
        "some comm lanes need a second track"
    );
    for (key, mut slices) in threads {
        slices.sort_by(|a, b| a.partial_cmp(b).unwrap());
        for w in slices.windows(2) {
            assert!(w[1].0 >= w[0].1 - 1e-9, "{key:?}: {w:?} overlap");
        }
    }
}

#[test]
fn replay_runs_a_chakra_trace_and_writes_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    let prefix =
        examples("astra-sim/examples/workload/microbenchmarks/all_reduce/16npus_1MB/all_reduce");
    let o = fabricsim(&[
        "replay",
        &prefix,
        "--preset",
        "meta-ai-zone",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("all-reduce") && out.contains("world"), "{out}");
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let slices = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .count();
    assert_eq!(slices, 16);
}

#[test]
fn replay_of_generated_groups_trace() {
    let prefix = examples("generated/stg_gpt_dp4_tp2_pp1/workload");
    let groups = examples("generated/stg_gpt_dp4_tp2_pp1/workload.json");
    let o = fabricsim(&[
        "replay",
        &prefix,
        "--groups",
        &groups,
        "--preset",
        "meta-ai-zone",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("job workload: 8 × H100"),
        "{}",
        stdout(&o)
    );
    let o = fabricsim(&["replay", &prefix, "--preset", "meta-ai-zone"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("needs a communicator-group JSON"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn exported_chakra_replays_to_the_same_iteration() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("job");
    let p = prefix.to_str().unwrap();
    let a = fabricsim(&["run", "--json", "--export-chakra", p]);
    assert!(a.status.success(), "{}", stderr(&a));
    let b = fabricsim(&["replay", p, "--groups", &format!("{p}.json"), "--json"]);
    assert!(b.status.success(), "{}", stderr(&b));
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&a.stdout).unwrap(),
        serde_json::from_slice(&b.stdout).unwrap(),
    );
    assert_eq!(a["jobs"][0]["iteration_ms"], b["jobs"][0]["iteration_ms"]);
    assert_eq!(a["jobs"][0]["collectives"], b["jobs"][0]["collectives"]);

    // As ASTRA-sim reads it: communicators named by numbers from 1 (it parses them as
    // integers), the group JSON keyed by them, and every kernel's time in `duration_micros`.
    {
        use fabricsim_workload::chakra::{self, pb::attribute_proto::Value, pb::NodeType};
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{p}.json")).unwrap()).unwrap();
        assert!(json
            .as_object()
            .unwrap()
            .keys()
            .all(|k| k.parse::<u32>().is_ok_and(|n| n >= 1)));
        let trace = chakra::read_file(std::path::Path::new(&format!("{p}.0.et"))).unwrap();
        let mut collectives = 0;
        for n in &trace.nodes {
            // Each attribute ASTRA-sim's feeder reads has the type it reads it as
            // (`et_feeder_node.cpp`); another type reads as 0 there.
            for a in &n.attr {
                let typed = match (a.name.as_str(), &a.value) {
                    ("num_ops" | "comm_type" | "comm_size", Some(Value::Int64Val(_))) => true,
                    ("tensor_size", Some(Value::Uint64Val(_))) => true,
                    ("comm_src" | "comm_dst" | "comm_tag", Some(Value::Int32Val(_))) => true,
                    ("pg_name", Some(Value::StringVal(_))) => true,
                    ("is_cpu_op", Some(Value::BoolVal(_))) => true,
                    (
                        "num_ops" | "comm_type" | "comm_size" | "tensor_size" | "comm_src"
                        | "comm_dst" | "comm_tag" | "pg_name" | "is_cpu_op",
                        _,
                    ) => false,
                    _ => true,
                };
                assert!(
                    typed,
                    "node {} `{}`: {} is {:?}",
                    n.id, n.name, a.name, a.value
                );
            }
            if n.r#type == NodeType::CommCollNode as i32 {
                collectives += 1;
                let pg = n.attr.iter().find(|a| a.name == "pg_name").unwrap();
                let Some(Value::StringVal(name)) = &pg.value else {
                    panic!("pg_name of node {} is not a string", n.id)
                };
                assert!(json.get(name.as_str()).is_some(), "pg_name {name}");
            }
            if n.r#type == NodeType::CompNode as i32 {
                assert!(
                    n.duration_micros > 0,
                    "node {} `{}` has no duration",
                    n.id,
                    n.name
                );
                // ASTRA-sim's roofline time, num_ops / min(peak, bw × num_ops / tensor_size),
                // is defined: FLOPs, or bytes and at least one op.
                let value = |name: &str| n.attr.iter().find(|a| a.name == name)?.value.clone();
                let ops = match value("num_ops") {
                    Some(Value::Int64Val(v)) => v,
                    _ => 0,
                };
                let size = match value("tensor_size") {
                    Some(Value::Uint64Val(v)) => v,
                    _ => 0,
                };
                assert!(
                    ops > 0,
                    "node {} `{}`: num_ops {ops}, tensor_size {size}",
                    n.id,
                    n.name
                );
            }
        }
        assert!(collectives > 0);
    }

    // The exported trace is consistent: --strict accepts it.
    let groups = format!("{p}.json");
    let strict = ["replay", p, "--groups", groups.as_str(), "--strict"];
    let o = fabricsim(&strict);
    assert!(o.status.success(), "{}", stderr(&o));
    // Rank 1's first collective made larger than its group's: a warning, an error under --strict.
    use fabricsim_workload::chakra::{self, pb::attribute_proto::Value, pb::NodeType};
    let file = std::path::PathBuf::from(format!("{p}.1.et"));
    let mut trace = chakra::read_file(&file).unwrap();
    let node = trace
        .nodes
        .iter_mut()
        .find(|n| n.r#type == NodeType::CommCollNode as i32)
        .unwrap();
    let size = node
        .attr
        .iter_mut()
        .find(|a| a.name == "comm_size")
        .unwrap();
    size.value = Some(Value::Int64Val(1 << 30));
    chakra::write_file(&file, &trace).unwrap();
    let o = fabricsim(&["replay", p, "--groups", groups.as_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: job `job`: "),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("collective 0 on group"),
        "{}",
        stderr(&o)
    );
    let o = fabricsim(&strict);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("problem(s) under --strict"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn te_failure_scenario_reports_events_and_recomputes() {
    let path = format!(
        "{}/../../scenarios/te-failure.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let o = fabricsim(&["run", &path, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["routing"], "te");
    assert_eq!(v["link_events"].as_array().unwrap().len(), 2);
    let te = v["te_recomputes"].as_array().unwrap();
    let at: Vec<u64> = te.iter().map(|x| x["at_ns"].as_u64().unwrap()).collect();
    assert_eq!(at, [0, 200_000_000]);
    assert_eq!(te[1]["trigger"], "link-event");
    let o = fabricsim(&["run", &path, "--routing", "te:simplex"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("te:lp"), "{}", stderr(&o));
}

/// `--down` takes an element down from the start, as a scenario's event at time 0 would; a
/// name that is no element is refused.
#[test]
fn down_takes_an_element_down_from_the_start() {
    let zone = format!(
        "{}/../../scenarios/two-jobs.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let o = fabricsim(&["run", &zone, "--down", "zone0/ctsw3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("# at 0.000 ms: zone0/ctsw3 down"),
        "{}",
        stdout(&o)
    );
    // Draining the switch under the Mixtral job's first rack cuts it off: the Llama job still
    // finishes and is reported, the failure names what cut Mixtral off, and the exit is 1.
    let o = fabricsim(&["run", &zone, "--down", "zone0/rack0/rtsw"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("job llama3-8b: 64 × H100"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("job `mixtral` stalled")
            && stderr(&o).contains("cut off by zone0/rack0/rtsw: no path from `host0/gpu0`"),
        "{}",
        stderr(&o)
    );
    let o = fabricsim(&["run", &zone, "--down", "no/such"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`no/such` names no node"),
        "{}",
        stderr(&o)
    );
}

/// `--set` changes a key as editing the file would; a key or a job the scenario does not know
/// is refused with status 2.
#[test]
fn set_changes_a_key_as_editing_the_file_would() {
    let (_, edited) = default_with("[job.efficiency]\ngemm = 0.36\n");
    let o = fabricsim(&[
        "run",
        "--set",
        "job.llama3-8b.efficiency.gemm=0.36",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut set: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    set.as_object_mut().unwrap().remove("scenario");
    assert_eq!(set, edited);
    for (arg, want) in [
        ("job.llama3-8b.llm.tpp=4", "unknown field `tpp`"),
        (
            "job.gpt.llm.tp=4",
            "no job named `gpt`: expected one of llama3-8b",
        ),
        (
            "routing.policy=warp",
            "policy = \"warp\": expected one of ecmp",
        ),
        ("routing", "expected KEY=VALUE"),
    ] {
        let o = fabricsim(&["run", "--set", arg]);
        assert_eq!(o.status.code(), Some(2), "{arg}");
        assert!(stderr(&o).contains(want), "{arg}: {}", stderr(&o));
    }
}

#[test]
fn run_writes_a_self_contained_report_with_its_charts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.html");
    let out = fabricsim(&["run", "--report", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The time split, the first ranks' timeline and the links' heat map.
    let html = self_contained_report(&path, 3);
    for section in [
        "Where the time goes",
        "Timeline of llama3-8b",
        "Link utilization over time",
        "Link groups",
        "Parameters",
    ] {
        assert!(html.contains(section), "no {section}");
    }
    // The summary printed is the same as without the report.
    let plain = fabricsim(&["run"]);
    assert_eq!(stdout(&out), stdout(&plain));
}

#[test]
fn completions_name_every_command_and_refuse_unknown_shells() {
    let out = fabricsim(&["completions", "bash"]);
    assert!(out.status.success());
    let script = stdout(&out);
    for word in ["bench", "replay", "whatif", "--path-selection", "--report"] {
        assert!(script.contains(word), "{word} missing");
    }
    // Flags with a fixed set of values complete to them.
    for values in [
        "all-reduce all-gather reduce-scatter",
        "LL LL128 Simple",
        "meta-ai-zone",
        "topology-aware first-fit random",
    ] {
        assert!(script.contains(values), "{values} missing");
    }
    for shell in ["zsh", "fish"] {
        assert!(
            fabricsim(&["completions", shell]).status.success(),
            "{shell}"
        );
    }
    assert_eq!(fabricsim(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn run_writes_each_links_utilization_over_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("series.csv");
    let out = fabricsim(&[
        "run",
        "--links-series",
        path.to_str().unwrap(),
        "--sample-every",
        "5ms",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("time_ms,link,src,dst,group,utilization"));
    let mut last = 0.0;
    let mut times = std::collections::BTreeSet::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let (t, u): (f64, f64) = (f[0].parse().unwrap(), f[5].parse().unwrap());
        assert!(t >= last && t % 5.0 == 0.0, "{line}");
        assert!((0.0..=1.0 + 1e-6).contains(&u), "{line}");
        assert!(f[4].contains("->"), "{line}");
        last = t;
        times.insert(f[0].to_string());
    }
    assert!(times.len() > 10, "{} sample times", times.len());
    // Each sample reads every link: intervals under a microsecond are refused.
    let o = fabricsim(&[
        "run",
        "--links-series",
        path.to_str().unwrap(),
        "--sample-every",
        "10ns",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--sample-every"));
}

#[test]
fn jobs_bytes_per_link_add_up_and_name_the_jobs_they_met() {
    let dir = tempfile::tempdir().unwrap();
    let (job_links, links, report) = (
        dir.path().join("jobs.csv"),
        dir.path().join("links.csv"),
        dir.path().join("report.html"),
    );
    let out = fabricsim(&[
        "run",
        &format!(
            "{}/../../scenarios/shared-racks.toml",
            env!("CARGO_MANIFEST_DIR")
        ),
        "--job-links",
        job_links.to_str().unwrap(),
        "--links",
        links.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let read = |p: &std::path::Path| -> Vec<csv::StringRecord> {
        csv::Reader::from_path(p)
            .unwrap()
            .records()
            .map(Result::unwrap)
            .collect()
    };
    // Per link, the jobs' bytes add up to the link's (every flow finished, none re-routed).
    let mut sum = std::collections::BTreeMap::<String, f64>::new();
    let rows = read(&job_links);
    for r in &rows {
        *sum.entry(r[1].to_string()).or_default() += r[5].parse::<f64>().unwrap();
    }
    let total = read(&links);
    assert_eq!(sum.len(), total.len());
    for r in &total {
        let bytes: f64 = r[5].parse().unwrap();
        assert!(
            (sum[&r[0]] - bytes).abs() <= 1.0 + 1e-9 * bytes,
            "link {}",
            &r[0]
        );
    }
    // The two jobs are interleaved over the same racks: they meet on RTSW uplinks, and the
    // shares on a link add up to 1.
    let shared: Vec<_> = rows
        .iter()
        .filter(|r| &r[4] == "rtsw->ctsw" && !r[8].is_empty())
        .collect();
    assert!(!shared.is_empty());
    for r in &shared {
        let other = if &r[0] == "job-a" { "job-b:" } else { "job-a:" };
        assert!(r[8].starts_with(other), "{:?}", r);
        let mine: f64 = r[5].parse().unwrap();
        let theirs: f64 = r[8][other.len()..].parse().unwrap();
        let share: f64 = r[6].parse().unwrap();
        assert!((share - mine / (mine + theirs)).abs() < 1e-5, "{:?}", r);
    }
    // Host links are never shared.
    assert!(rows.iter().all(|r| &r[4] != "host" || r[8].is_empty()));
    let html = self_contained_report(&report, 3);
    assert!(html.contains("Links each job loaded most"));
    assert!(html.contains("job-a: shares fabric links with job-b"));
}

/// The default job exported with data parallelism innermost, as symbolic_tensor_graph numbers
/// ranks: replayed in the trace's order its tensor-parallel groups span hosts, and the replay
/// says so; laid by its communicators they are back inside hosts, and the iteration is within
/// 1 % of the job's own (its DP and PP ranks sit on other hosts of the same rack).
#[test]
fn a_trace_laid_by_its_communicators_keeps_tensor_parallelism_inside_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("job");
    let p = p.to_str().unwrap();
    let run = fabricsim(&["run", "--json"]);
    let export = fabricsim(&[
        "run",
        "--set",
        "job.llama3-8b.llm.order=dp-tp-cp-pp",
        "--export-chakra",
        p,
    ]);
    assert!(export.status.success(), "{}", stderr(&export));
    let groups = format!("{p}.json");
    let replay = |ranks: &str| {
        let o = fabricsim(&["replay", p, "--groups", &groups, "--json", "--ranks", ranks]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (v["jobs"][0]["iteration_ms"].as_f64().unwrap(), stderr(&o))
    };
    let (trace, warned) = replay("trace");
    assert!(warned.contains("communicator `tp0` (8 ranks") && warned.contains("spans 4 hosts"));
    let (laid, quiet) = replay("communicators");
    assert!(!quiet.contains("spans"), "{quiet}");
    let run: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let own = run["jobs"][0]["iteration_ms"].as_f64().unwrap();
    assert!((laid - own).abs() < 0.01 * own, "{laid} against {own}");
    assert!(
        trace > 1.5 * own,
        "tensor parallelism over the network: {trace} ms"
    );

    let bad = fabricsim(&["replay", p, "--groups", &groups, "--ranks", "rack"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("--ranks rack: expected trace or communicators"));
}
