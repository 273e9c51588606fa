//! The cluster over days on small fabrics: placement, ETTR, the failure process, the cost of a
//! failure by hand, rank layering.

use std::path::Path;

use fabricsim_timeline::{run, Outcome, Plan};

/// A plan on `meta-ai-zone` with `racks` racks of 2 hosts (8 GPUs each), a small Llama
/// (4 layers) in the given sizes as workloads, and `cluster` as its [cluster] table.
fn plan(racks: u32, cluster: &str) -> Plan {
    let mut text = format!(
        "[fabric]\npreset = \"meta-ai-zone\"\nset = [\"racks={racks}\"]\n[routing]\npolicy = \"ecmp\"\n"
    );
    // (name, TP, DP, sequence, micro-batches per replica, layering)
    for (name, tp, dp, seq, micro, order) in [
        ("small-4", 4, 1, 2048, 4, "tp-cp-pp-dp"),
        ("small-8", 8, 1, 2048, 4, "tp-cp-pp-dp"),
        ("small-16", 8, 2, 8192, 16, "tp-cp-pp-dp"),
        ("small-16-bad", 8, 2, 8192, 16, "dp-pp-cp-tp"),
    ] {
        text += &format!(
            "[[job]]\nname = \"{name}\"\n[job.llm]\nmodel = \"llama3-8b\"\nlayers = 4\ntp = {tp}\n\
             dp = {dp}\nseq = {seq}\nmicro_batch = 1\nglobal_batch = {}\norder = \"{order}\"\n",
            micro * dp
        );
    }
    text += cluster;
    Plan::parse(&text, Path::new("test.toml")).unwrap()
}

fn outcome(p: &Plan, seed: u64) -> Outcome {
    let topo = p.scenario.fabric.load().unwrap();
    run(p, &topo, seed).unwrap()
}

const QUIET: &str = "failures = false\ncheckpoint_write = \"0s\"\n";

#[test]
fn jobs_that_fit_exactly_leave_no_fragments_under_topology_aware_placement() {
    // 32 GPUs on 4 hosts: two 4-GPU jobs, then three 8-GPU ones, all long.
    let arrivals: String = ["small-4", "small-4", "small-8", "small-8", "small-8"]
        .iter()
        .map(|j| format!("[[cluster.arrival]]\njob = \"{j}\"\nhours = 100\n"))
        .collect();
    let with = |scheduler: &str| {
        plan(
            2,
            &format!("[cluster]\ndays = 1\nscheduler = \"{scheduler}\"\n{QUIET}{arrivals}"),
        )
    };
    for seed in 0..4 {
        let o = outcome(&with("topology-aware"), seed);
        assert_eq!(o.fragmentation, 0.0);
        assert!(o.jobs.iter().all(|j| j.state == "running"));
    }
    // Random placement puts the two small jobs on two hosts for some seeds, and then an
    // 8-GPU job finds no whole host while 8 GPUs are free.
    let fragmented: Vec<f64> = (0..8)
        .map(|seed| outcome(&with("random"), seed).fragmentation)
        .collect();
    assert!(fragmented.iter().any(|&f| f > 0.2), "{fragmented:?}");
}

#[test]
fn a_job_alone_without_failures_runs_at_its_alone_time_with_ettr_one() {
    let p = plan(
        2,
        &format!(
            "[cluster]\ndays = 1\n{QUIET}[[cluster.arrival]]\njob = \"small-16\"\nat = \"1h\"\niterations = 500\n"
        ),
    );
    let o = outcome(&p, 1);
    let j = &o.jobs[0];
    assert_eq!(j.state, "finished");
    assert!((j.slowdown - 1.0).abs() < 1e-9);
    assert!((j.ettr - 1.0).abs() < 1e-9, "ETTR {}", j.ettr);
    assert_eq!(j.start_h, Some(1.0));
    let took = (j.end_h.unwrap() - 1.0) * 3600.0;
    assert!(
        (took - 500.0 * j.iteration_s).abs() < 1e-6 * took,
        "{took} s"
    );
}

#[test]
fn the_failure_process_has_its_configured_rate() {
    // GPU failures only, at 1e-3 per GPU-hour on 32 GPUs for 1,000 days: 768 expected
    // (repairs are a second, so a failed host is back before the next failure).
    let p = plan(
        2,
        "[cluster]\ndays = 1000\nsample_every = \"1d\"\n\
         [cluster.failures]\ngpu = { per_hour = 1e-3, repair = \"1s\" }\nhost = { per_hour = 0.0 }\n\
         nic = { per_hour = 0.0 }\ncable = { per_hour = 0.0 }\ntor = { per_hour = 0.0 }\n\
         switch = { per_hour = 0.0 }\nsoftware = { per_hour = 0.0 }\n",
    );
    let o = outcome(&p, 7);
    let expected = 1e-3 * 32.0 * 24_000.0;
    let gpu = o
        .failures
        .iter()
        .find(|f| f.class.name() == "gpu")
        .unwrap()
        .failures as f64;
    // Poisson: within four standard deviations.
    assert!(
        (gpu - expected).abs() < 4.0 * expected.sqrt(),
        "{gpu} against {expected}"
    );
    assert!(o
        .failures
        .iter()
        .filter(|f| f.class.name() != "gpu")
        .all(|f| f.failures == 0));
}

#[test]
fn a_gpu_failure_costs_the_work_since_the_last_checkpoint_and_the_restart() {
    // Checkpoints every hour take 100 s; host0 fails 1.5 h in: 1,700 s of computing since the
    // checkpoint written at 3,600–3,700 s are lost, the job restarts on the other rack (600 s)
    // and redoes them.
    let p = plan(
        2,
        "[cluster]\ndays = 2\nfailures = false\ncheckpoint_every = \"1h\"\ncheckpoint_write = \"100s\"\n\
         restart = \"10min\"\n[[cluster.arrival]]\njob = \"small-16\"\nhours = 6\n\
         [[cluster.outage]]\nat = \"1.5h\"\nhosts = [\"host0\"]\nhours = 48\nclass = \"gpu\"\n",
    );
    let o = outcome(&p, 1);
    let j = &o.jobs[0];
    assert_eq!(j.interruptions, 1);
    assert!(
        (j.lost_gpu_h - 1700.0 * 16.0 / 3600.0).abs() < 1e-6,
        "{}",
        j.lost_gpu_h
    );
    assert!((j.restart_h - 600.0 / 3600.0).abs() < 1e-9);
    // End = useful computing + lost + restart + checkpoint writes (both placements are alike).
    let useful = j.iterations_wanted * j.iteration_s;
    let end = (j.end_h.unwrap() * 3600.0) - (useful + 1700.0 + 600.0 + j.checkpoint_h * 3600.0);
    assert!(end.abs() < 1e-3 * useful, "{end} s unaccounted");
    assert_eq!(
        o.failures
            .iter()
            .find(|f| f.class.name() == "gpu")
            .unwrap()
            .failures,
        1
    );
}

#[test]
fn a_planned_drain_moves_the_job_without_losing_work() {
    let p = plan(
        2,
        "[cluster]\ndays = 2\nfailures = false\ncheckpoint_every = \"1h\"\ncheckpoint_write = \"100s\"\n\
         restart = \"10min\"\n[[cluster.arrival]]\njob = \"small-16\"\nhours = 6\n\
         [[cluster.outage]]\nat = \"1.5h\"\nrack = \"zone0/rack0/rtsw\"\nhours = 4\nplanned = true\n",
    );
    let o = outcome(&p, 1);
    let j = &o.jobs[0];
    assert_eq!(
        (j.interruptions, j.lost_gpu_h, j.state),
        (1, 0.0, "finished")
    );
    assert!((j.restart_h - 600.0 / 3600.0).abs() < 1e-9);
    assert!(o.failures.iter().all(|f| f.failures == 0));
}

#[test]
fn tensor_parallelism_across_hosts_is_slower_than_inside_them() {
    // The same 16 GPUs: Llama 3's layering keeps TP inside each host; the reverse puts the
    // two data-parallel replicas' ranks side by side in each host and TP across the network.
    // (With long sequences and many micro-batches TP's traffic outweighs FSDP's.)
    let arrivals = |job: &str| {
        format!(
            "[cluster]\ndays = 1\n{QUIET}[[cluster.arrival]]\njob = \"{job}\"\niterations = 10\n"
        )
    };
    let good = outcome(&plan(1, &arrivals("small-16")), 1).jobs.remove(0);
    let bad = outcome(&plan(1, &arrivals("small-16-bad")), 1)
        .jobs
        .remove(0);
    assert!(
        bad.iteration_s > 1.05 * good.iteration_s,
        "bad {} s against good {} s",
        bad.iteration_s,
        good.iteration_s
    );
    // Where the time went: TP's exposed communication grows the most.
    let tp =
        |j: &fabricsim_timeline::report::JobRow| j.exposed_comm.get("tp").copied().unwrap_or(0.0);
    assert!(
        tp(&bad) > tp(&good) + 0.02,
        "tp exposed {} against {}",
        tp(&bad),
        tp(&good)
    );
}

#[test]
fn the_same_plan_and_seed_give_the_same_outcome() {
    let text = "[cluster]\ndays = 20\nscheduler = \"random\"\n\
         [cluster.synthetic]\njobs = 30\nmean_gap = \"8h\"\n\
         mix = [{ job = \"small-4\", share = 1, hours = [1, 10] }, { job = \"small-16\", share = 1, hours = [5, 50] }]\n";
    let a = serde_json::to_string(&outcome(&plan(2, text), 3)).unwrap();
    let b = serde_json::to_string(&outcome(&plan(2, text), 3)).unwrap();
    assert_eq!(a, b);
    let c = serde_json::to_string(&outcome(&plan(2, text), 4)).unwrap();
    assert_ne!(a, c);
}

#[test]
fn bad_plans_name_the_key() {
    let bad = |cluster: &str| {
        let text = format!(
            "[fabric]\npreset = \"meta-ai-zone\"\n[[job]]\nname = \"a\"\n[job.llm]\nmodel = \"llama3-8b\"\n\
             layers = 4\ntp = 8\nseq = 2048\nglobal_batch = 4\n{cluster}"
        );
        Plan::parse(&text, Path::new("p.toml"))
            .unwrap_err()
            .to_string()
    };
    assert!(bad("").contains("no [cluster] table"));
    assert!(bad("[cluster]\ndays = 0\n").contains("days = 0"));
    assert!(bad("[cluster]\ndays = 1\nscheduler = \"best\"\n")
        .contains("expected one of topology-aware"));
    assert!(
        bad("[cluster]\ndays = 1\n[[cluster.arrival]]\njob = \"b\"\nhours = 1\n")
            .contains("job = \"b\"")
    );
    assert!(
        bad("[cluster]\ndays = 1\n[[cluster.arrival]]\njob = \"a\"\n")
            .contains("give one of hours")
    );
    assert!(bad("[cluster]\ndays = 1\nrestart = \"5 parsecs\"\n").contains("restart"));
    assert!(bad("[cluster]\ndays = 3000\nsample_every = \"1min\"\n").contains("1,000,000 samples"));
    assert!(
        bad("[cluster]\ndays = 1\n[cluster.failures]\ndisk = { per_hour = 1 }\n")
            .contains("[cluster.failures.disk]")
    );
}
