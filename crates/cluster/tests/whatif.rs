//! What an action costs: exactly nothing when it touches no link a job uses, the same report
//! for any number of threads, and a job cut off by the action named with what cut it off. A
//! maintenance plan takes every element once, never cuts a job off and never costs more than the
//! order given. The capacity-buffer curve rises with the failures, and not for a job they miss.

use std::path::Path;

use fabricsim_cluster::buffer::{capacity_buffer, elements_of_kind, BufferSpec};
use fabricsim_cluster::maintenance::{plan, PlanError};
use fabricsim_cluster::scenario::Scenario;
use fabricsim_cluster::whatif::{what_if, Action};

/// An 8-rack AI Zone (2 hosts a rack) with a 32-GPU Llama job placed at random (its rings
/// cross racks, so ECMP's hash matters) and a 16-GPU job packed into the first rack.
const SCENARIO: &str = r#"
[fabric]
preset = "meta-ai-zone"
set = ["racks=8"]

[[job]]
name = "packed"
placement = "packed"

[job.llm]
model = "llama3-8b"
layers = 2
tp = 8
sp = true
dp = 2
seq = 2048
global_batch = 4

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

fn scenario() -> Scenario {
    Scenario::parse(SCENARIO, Path::new("whatif-test.toml")).unwrap()
}

#[test]
fn an_action_no_job_feels_costs_exactly_nothing() {
    let s = scenario();
    let topo = s.fabric.load().unwrap();
    // Random placement over 16 hosts leaves some rack's hosts free in some seeds but not all:
    // a derate to the full rate changes no capacity, whatever the placement.
    let actions = [Action::new("derate", "zone0/ctsw0", Some(400.0))];
    let r = what_if(&s, &topo, &actions, 4, &|| {}).unwrap();
    for job in &r.actions[0].jobs {
        assert!(job.change.iter().all(|&c| c == 0.0), "{job:?}");
        assert_eq!(job.gpu_hours_lost_per_day, 0.0);
    }
    // The links carry what they carried: every group's busiest link is as busy as before.
    let tiers = &r.actions[0].tiers;
    assert!(
        tiers
            .iter()
            .any(|t| t.group == "rtsw->ctsw" && t.before > 0.0),
        "{tiers:?}"
    );
    assert!(tiers.iter().all(|t| t.before == t.after), "{tiers:?}");
}

#[test]
fn a_drain_of_a_rack_no_job_uses_costs_exactly_nothing() {
    // The packed job alone, in the first rack: the last rack's switch is on none of its paths.
    let text = &SCENARIO[..SCENARIO.find("[[job]]\nname = \"spread\"").unwrap()];
    let s = Scenario::parse(text, Path::new("whatif-test.toml")).unwrap();
    let topo = s.fabric.load().unwrap();
    let actions = [Action::new("drain", "zone0/rack7/rtsw", None)];
    let r = what_if(&s, &topo, &actions, 3, &|| {}).unwrap();
    let job = &r.actions[0].jobs[0];
    assert!(job.change.iter().all(|&c| c == 0.0), "{job:?}");
}

#[test]
fn the_report_is_the_same_for_one_and_two_threads() {
    let s = scenario();
    let topo = s.fabric.load().unwrap();
    let actions = [
        Action::new("drain", "zone0/ctsw3", None),
        Action::new("derate", "zone0/ctsw0", Some(100.0)),
    ];
    let run = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| what_if(&s, &topo, &actions, 3, &|| {}).unwrap())
    };
    let (one, two) = (run(1), run(2));
    assert_eq!(
        serde_json::to_string(&one).unwrap(),
        serde_json::to_string(&two).unwrap()
    );
    // The seeds differ: ECMP and the random placement are redrawn, so the baseline moves.
    let spread = &one.baseline[1].1;
    assert!(spread.iter().any(|&t| t != spread[0]), "{spread:?}");
}

#[test]
fn a_job_cut_off_by_the_action_is_named_and_the_others_costed() {
    let s = scenario();
    let topo = s.fabric.load().unwrap();
    let actions = [Action::new("drain", "zone0/rack0/rtsw", None)];
    let r = what_if(&s, &topo, &actions, 1, &|| {}).unwrap();
    let e = r.actions[0]
        .error
        .as_deref()
        .expect("the drain cuts the packed job off");
    assert!(
        e.contains("cut off by zone0/rack0/rtsw") && e.contains("no path from `host0/gpu"),
        "{e}"
    );
    assert_eq!(r.actions[0].gpu_hours_lost_per_day, f64::INFINITY);
    // The job it leaves running (placed after the packed one, so never in rack 0) is costed.
    let left: Vec<&str> = r.actions[0].jobs.iter().map(|j| j.job.as_str()).collect();
    assert_eq!(left, ["spread"]);
    assert!(r.actions[0].jobs[0].change.iter().all(|c| c.is_finite()));
}

#[test]
fn an_action_file_takes_several_elements_at_once() {
    use fabricsim_cluster::whatif::read_actions;
    let text = r#"
[[action]]
name = "two CTSWs"
drain = ["zone0/ctsw0", "zone0/ctsw1"]
derate = [{ target = "zone0/ctsw2", gbps = 200 }]
"#;
    let a = read_actions(text, "a.toml").unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].label, "two CTSWs");
    let states: Vec<&str> = a[0].events.iter().map(|e| e.state.as_str()).collect();
    assert_eq!(states, ["down", "down", "derate"]);
    let e = read_actions("[[action]]\nname = \"nothing\"\n", "b.toml").unwrap_err();
    assert!(e.contains("b.toml: action 1 (`nothing`)"), "{e}");
    let e = read_actions("[[action]]\nname = \"x\"\nunplug = [\"a\"]\n", "c.toml").unwrap_err();
    assert!(e.contains("c.toml") && e.contains("unplug"), "{e}");
}

#[test]
fn a_maintenance_plan_takes_each_element_once_and_costs_no_more_than_the_order_given() {
    let s = scenario();
    let topo = s.fabric.load().unwrap();
    let names = ["zone0/ctsw0", "zone0/ctsw1", "zone0/ctsw2"];
    let elements: Vec<Action> = names
        .iter()
        .map(|n| Action::new("drain", n, None))
        .collect();
    let p = plan(&s, &topo, &elements, 2, 4.0, 2, &|| {}).unwrap();
    let mut taken: Vec<&str> = p
        .batches
        .iter()
        .flat_map(|b| b.elements.iter())
        .map(|e| e.as_str())
        .collect();
    taken.sort_unstable();
    let mut want: Vec<String> = elements.iter().map(|a| a.label.clone()).collect();
    want.sort_unstable();
    assert_eq!(taken, want);
    assert!(p
        .batches
        .iter()
        .all(|b| !b.elements.is_empty() && b.elements.len() <= 2));
    assert!(p
        .batches
        .iter()
        .all(|b| b.gpu_hours_lost_per_day.is_finite()));
    assert!(p.gpu_hours_lost <= p.naive_gpu_hours_lost, "{p:?}");
    // The total is the batches' daily cost for the hours each is out.
    let sum: f64 = p.batches.iter().map(|b| b.gpu_hours_lost_per_day).sum();
    assert!(
        (p.gpu_hours_lost - sum * 4.0 / 24.0).abs() <= 1e-9 * sum.max(1.0),
        "{p:?}"
    );
}

#[test]
fn a_maintenance_plan_refuses_an_element_that_cuts_a_job_off() {
    let s = scenario();
    let topo = s.fabric.load().unwrap();
    let elements = [
        Action::new("drain", "zone0/ctsw0", None),
        Action::new("drain", "zone0/rack0/rtsw", None),
    ];
    match plan(&s, &topo, &elements, 1, 1.0, 1, &|| {}) {
        Err(PlanError::CutsOff { element, why }) => {
            assert_eq!(element, "drain zone0/rack0/rtsw");
            assert!(why.contains("cut off by zone0/rack0/rtsw"), "{why}");
        }
        other => panic!("expected the RTSW refused, got {other:?}"),
    }
}

#[test]
fn the_capacity_curve_rises_with_failures_and_spares_a_job_they_miss() {
    let s = scenario();
    let topo = s.fabric.load().unwrap();
    assert_eq!(elements_of_kind(&topo, "ctsw").unwrap().len(), 16);
    assert_eq!(elements_of_kind(&topo, "rtsw-ctsw").unwrap().len(), 8 * 16);
    assert!(elements_of_kind(&topo, "atsw")
        .unwrap_err()
        .contains("expected one of"));
    let spec = BufferSpec {
        kind: "ctsw".into(),
        max: 8,
        draws: 2,
        seeds: 8,
        slowdown: 0.05,
    };
    let r = capacity_buffer(&s, &topo, &[s.routing], &spec, &|| {}).unwrap();
    let curve = &r.curves[0];
    let median = |job: usize| -> Vec<f64> {
        curve
            .points
            .iter()
            .map(|p| p.jobs[job].median_change)
            .collect()
    };
    // The packed job lives in one rack: CTSW failures never touch it.
    assert!(median(0).iter().all(|&c| c == 0.0), "{:?}", median(0));
    // The spread job's median slowdown over 16 runs a point rises with the failures: checked
    // every second count, as one count more can be an accident of the hash.
    let spread = median(1);
    for k in (2..=8).step_by(2) {
        assert!(spread[k] >= spread[k - 2], "{spread:?}");
    }
    assert!(
        spread[8] > 0.05,
        "half the CTSWs down costs more than 5 %: {spread:?}"
    );
    // It tolerates the counts before the first median over 5 %.
    let first_over = spread.iter().position(|&c| c > 0.05).unwrap();
    assert_eq!(curve.tolerates[1], ("spread".to_string(), first_over - 1));
    assert_eq!(curve.tolerates[0], ("packed".to_string(), 8));
}

/// Under path pinning, draining a cable a flow is pinned to moves it onto the cable its
/// neighbour is pinned to: two 1 GiB sends that each had a 400G path now share one, and the
/// iteration (nothing but the two sends) takes twice as long, as a hand computation says.
#[test]
fn a_pinned_cable_drain_costs_what_a_hand_computation_says() {
    use fabricsim_workload::{chakra, Binding, Op, OpKind, Program, Workload};
    const BYTES: u64 = 1 << 30;
    // Ranks 0 and 1 (hosts 0 and 1, under leaf0) send to ranks 2 and 3 (hosts 2 and 3, under
    // leaf1). Destination-mod-2 pins 0→2 to spine0 and 1→3 to spine1 (`route paths` shows it).
    let mut w = Workload {
        name: "two-sends".into(),
        labels: vec!["send".into(), "recv".into()],
        ..Workload::default()
    };
    for (rank, peer) in [(0u32, 2u32), (1, 3), (2, 0), (3, 1)] {
        let mut p = Program::new();
        let kind = if rank < 2 {
            OpKind::Send {
                peer: 0,
                bytes: BYTES,
                tag: 0,
            }
        } else {
            OpKind::Recv {
                peer: 0,
                bytes: BYTES,
                tag: 0,
            }
        };
        p.push(
            Op {
                id: 0,
                label: u32::from(rank >= 2),
                kind,
            },
            &[],
        );
        w.programs.push(p);
        w.ranks.push(Binding {
            program: rank,
            groups: Vec::new(),
            peers: vec![peer],
        });
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("two-sends");
    chakra::export(&w, prefix.to_str().unwrap()).unwrap();
    let text = format!(
        "[fabric]\npreset = \"leaf-spine\"\nset = [\"k=4\"]\n[routing]\npolicy = \"pin\"\n\
         [[job]]\nname = \"sends\"\n[job.chakra]\nprefix = {:?}\n",
        prefix.to_str().unwrap()
    );
    let s = Scenario::parse(&text, &dir.path().join("s.toml")).unwrap();
    let topo = s.fabric.load().unwrap();
    let r = what_if(
        &s,
        &topo,
        &[Action::new("drain", "leaf0--spine1", None)],
        1,
        &|| {},
    )
    .unwrap();
    // Alone on its path, each send runs at the NIC's 400 Gbit/s less RoCEv2 framing
    // (4,096-byte payloads in 4,178-byte frames): 1 GiB takes 21.91 ms.
    let alone_ms = BYTES as f64 * 8.0 / (400e9 * 4096.0 / 4178.0) * 1e3;
    let base = r.baseline[0].1[0];
    assert!(
        (base / alone_ms - 1.0).abs() < 0.01,
        "{base} ms against {alone_ms} ms"
    );
    // Sharing leaf0→spine0 (and spine0→leaf1), each runs at half that: the transfer doubles;
    // the few microseconds of latency are the only part that does not.
    let change = r.actions[0].jobs[0].change[0];
    assert!((change - 1.0).abs() < 0.002, "change {change}");
}
