//! Link events during a run, and the TE controller programming paths over simulated time.

use std::path::Path;

use fabricsim_cluster::control::{Recompute, TeConfig, TeController, Trigger};
use fabricsim_cluster::demand::job_traffic;
use fabricsim_cluster::placement::{place, Placement};
use fabricsim_cluster::scenario::Scenario;
use fabricsim_cluster::simulate::{build_workload, simulate, ScenarioRun, SimError};
use fabricsim_cluster::{CommConfig, JobSpec, RunError, RunOptions};
use fabricsim_netsim::{FlowEngine, Network};
use fabricsim_routing::{cables_named, FlowKey, HashConfig, LinkCondition, Policy, Router};
use fabricsim_te::{Solver, TrafficMatrix};
use fabricsim_topology::Nanos;
use fabricsim_workload::ComputeModel;

/// A 4-layer Llama 3 8B, TP 8 + SP, PP 2, FSDP 2 on 32 GPUs of `meta-ai-zone`.
fn scenario(routing: &str, extra: &str) -> Scenario {
    let text = format!(
        "[fabric]\npreset = \"meta-ai-zone\"\n[routing]\n{routing}\n{extra}\n\
         [[job]]\nname = \"small\"\n[job.llm]\nmodel = \"llama3-8b\"\nlayers = 4\ntp = 8\n\
         sp = true\npp = 2\ndp = 2\nseq = 2048\nglobal_batch = 8\n"
    );
    Scenario::parse(&text, Path::new("test.toml")).unwrap()
}

fn run(s: &Scenario) -> Result<ScenarioRun, SimError> {
    let topo = s.fabric.load().unwrap();
    simulate(s, &topo, RunOptions::default(), |_, _, _| {})
}

fn iteration_ms(r: &ScenarioRun) -> f64 {
    r.reports[0].iteration_ms
}

#[test]
fn te_programs_at_start_and_after_each_link_event() {
    let s = scenario(
        "policy = \"te\"\nte_detection = \"5ms\"",
        "[[event]]\nat = \"2ms\"\ntarget = \"zone0/ctsw0\"\nstate = \"down\"\n\
         [[event]]\nat = \"10ms\"\ntarget = \"zone0/ctsw0\"\nstate = \"up\"\n",
    );
    let r = run(&s).unwrap();
    let log: Vec<(u64, Trigger)> = r.output.te.iter().map(|x| (x.at_ns, x.trigger)).collect();
    assert_eq!(
        log,
        [
            (0, Trigger::Start),
            (7_000_000, Trigger::LinkEvent),
            (15_000_000, Trigger::LinkEvent)
        ]
    );
    assert!(r
        .output
        .te
        .iter()
        .all(|x| x.error.is_none() && x.demands > 0));
    assert_eq!(r.output.link_events.len(), 2);
    assert!(iteration_ms(&r) > 15.0, "{}", iteration_ms(&r));
    // Same inputs, same outputs.
    let again = run(&s).unwrap();
    assert_eq!(
        serde_json::to_string(&r.reports).unwrap(),
        serde_json::to_string(&again.reports).unwrap()
    );
}

#[test]
fn te_recomputes_every_period_while_jobs_run() {
    let s = scenario("policy = \"te\"\nte_period = \"10ms\"", "");
    let r = run(&s).unwrap();
    let end = r.output.end.0;
    let periods: Vec<u64> = r.output.te[1..].iter().map(|x| x.at_ns).collect();
    assert!(periods.iter().all(|&t| t < end));
    let expected: Vec<u64> = (1..=end.div_ceil(10_000_000) - 1)
        .map(|k| k * 10_000_000)
        .collect();
    assert_eq!(periods, expected, "end {end}");
    assert!(r.output.te[1..]
        .iter()
        .all(|x| x.trigger == Trigger::Period));
    // The demand does not change, so neither does the table's utilization.
    let first: &Recompute = &r.output.te[0];
    assert!(r
        .output
        .te
        .iter()
        .all(|x| x.max_utilization == first.max_utilization));
}

/// The controller alone: after a switch fails and the controller recomputes, no demand's
/// programmed path crosses the failed switch; before the recompute, broken paths fall back to
/// the ECMP underlay, which avoids it too.
#[test]
fn recomputed_paths_avoid_a_failed_switch() {
    let s = scenario("policy = \"te\"", "");
    let topo = s.fabric.load().unwrap();
    let (workload, _) = build_workload("small", &s.jobs[0].workload).unwrap();
    let mut used = vec![false; topo.node_count()];
    let gpus = place(&topo, &mut used, workload.rank_count(), &Placement::Packed).unwrap();
    let job = JobSpec {
        name: "small".into(),
        workload,
        gpus,
        compute: ComputeModel::new(s.jobs[0].gpu),
        comm: CommConfig::default(),
    };
    let rows = job_traffic(&topo, &job).unwrap();
    assert!(!rows.is_empty());
    let demand = TrafficMatrix::from_bytes(&topo, rows);
    let pairs: Vec<_> = demand.demands.iter().map(|d| (d.src, d.dst)).collect();
    let mut net = Network::new(
        &topo,
        Router::new(&topo, Policy::Ecmp, HashConfig::default()),
        FlowEngine::new(&topo),
    );
    let config = TeConfig {
        detection: Nanos(1),
        ..TeConfig::new(Solver::Cspf)
    };
    let mut te = TeController::new(config, demand, HashConfig::default());
    te.program(&mut net, 0, Trigger::Start);
    let failed = cables_named(&topo, "zone0/ctsw0").unwrap();
    let crosses = |net: &Network<'_, FlowEngine>, f| {
        net.route_of(f)
            .iter()
            .any(|&(l, _)| failed.contains(&l) || failed.contains(&l.reverse()))
    };
    let submit = |net: &mut Network<'_, FlowEngine>| -> Vec<_> {
        pairs
            .iter()
            .map(|&(src, dst)| {
                net.submit(FlowKey::connection(src, dst, 0, 0), 1, None)
                    .unwrap()
            })
            .collect()
    };
    let before = submit(&mut net);
    assert!(
        before.iter().any(|&f| crosses(&net, f)),
        "no demand used ctsw0"
    );
    for &l in &failed {
        net.set_cable(l, LinkCondition::Down);
    }
    te.link_changed(0);
    let underlay = submit(&mut net);
    assert!(underlay.iter().all(|&f| !crosses(&net, f)));
    te.act(&mut net, 1);
    assert_eq!(te.log.len(), 2);
    assert_eq!(te.log[1].trigger, Trigger::LinkEvent);
    let after = submit(&mut net);
    assert!(after.iter().all(|&f| !crosses(&net, f)));
}

#[test]
fn a_nic_down_stalls_the_job_until_its_repair() {
    let base = iteration_ms(&run(&scenario("policy = \"ecmp\"", "")).unwrap());
    let down = "[[event]]\nat = \"1ms\"\ntarget = \"host0/nic0\"\nstate = \"down\"\n";
    let err = run(&scenario("policy = \"ecmp\"", down)).err().unwrap();
    assert!(
        matches!(err, SimError::Run(RunError::Stalled { .. })),
        "{err}"
    );
    let repaired =
        format!("{down}[[event]]\nat = \"500ms\"\ntarget = \"host0/nic0\"\nstate = \"up\"\n");
    let r = run(&scenario("policy = \"ecmp\"", &repaired)).unwrap();
    assert_eq!(r.output.link_events.len(), 2);
    // Nothing crosses GPU 0's NIC for 499 ms: the iteration waits for the repair.
    assert!(
        iteration_ms(&r) > 500.0 && base < 500.0,
        "{base} → {}",
        iteration_ms(&r)
    );
}

#[test]
fn a_derated_uplink_costs_time_under_ecmp() {
    let base = iteration_ms(&run(&scenario("policy = \"ecmp\"", "")).unwrap());
    let derate =
        "[[event]]\nat = \"0ms\"\ntarget = \"zone0/ctsw0\"\nstate = \"derate\"\ngbps = 10\n";
    let r = run(&scenario("policy = \"ecmp\"", derate)).unwrap();
    assert!(iteration_ms(&r) > base, "{base} → {}", iteration_ms(&r));
}

#[test]
fn bad_events_are_named() {
    for (extra, needle) in [
        (
            "[[event]]\nat = \"1ms\"\ntarget = \"nope\"\nstate = \"down\"\n",
            "event 1: target:",
        ),
        (
            "[[event]]\nat = \"1ms\"\ntarget = \"zone0/ctsw0\"\nstate = \"off\"\n",
            "event 1: state: `off`",
        ),
        (
            "[[event]]\nat = \"1ms\"\ntarget = \"zone0/ctsw0\"\nstate = \"derate\"\ngbps = 900\n",
            "above the 400 Gbit/s cabled",
        ),
    ] {
        let err = run(&scenario("policy = \"ecmp\"", extra)).err().unwrap();
        assert!(err.to_string().contains(needle), "{needle}: {err}");
        assert!(err.is_input());
    }
    let parse = |text: &str| {
        Scenario::parse(text, Path::new("t.toml"))
            .err()
            .unwrap()
            .to_string()
    };
    let job =
        "[[job]]\nname = \"a\"\n[job.llm]\nmodel = \"llama3-8b\"\nseq = 1\nglobal_batch = 1\n";
    assert!(parse(&format!("[routing]\nte_period = \"1s\"\n{job}")).contains("only routing `te`"));
    assert!(parse(&format!(
        "[[event]]\nat = \"soon\"\ntarget = \"x\"\nstate = \"down\"\n{job}"
    ))
    .contains("event 1: at = \"soon\""));
    assert!(parse(&format!("[routing]\npolicy = \"te:simplex\"\n{job}")).contains("te:lp"));
}
