//! The orchestrator against the collectives benchmark, generated jobs, determinism and stalls.

use std::path::Path;

use fabricsim_cluster::placement::{place, Placement};
use fabricsim_cluster::{
    CommConfig, JobReport, JobSpec, Orchestrator, RunError, RunOptions, RunOutput,
};
use fabricsim_collectives::bench::{run_size, Bench, Routing};
use fabricsim_collectives::{
    Collective, Fidelity, Generation, Protocol, QpMode, Ranks, Transport, DEFAULT_CHUNK,
};
use fabricsim_netsim::{FlowEngine, Network};
use fabricsim_routing::{HashConfig, PathSelection, Policy, Router};
use fabricsim_topology::presets;
use fabricsim_topology::{NodeKind, Topology};
use fabricsim_workload::chakra::import;
use fabricsim_workload::llm::{
    generate, DpMode, ModelSpec, Parallelism, RankOrder, Recompute, Training,
};
use fabricsim_workload::{Binding, ComputeModel, GpuSpec, Group, Op, OpKind, Program, Workload};

fn zone() -> Topology {
    presets::build("meta-ai-zone", &[]).unwrap()
}

fn run_jobs(topo: &Topology, jobs: Vec<JobSpec>) -> Result<Vec<JobReport>, RunError> {
    let out = run_with(topo, jobs, RunOptions::default())?;
    Ok(out.jobs.iter().map(JobReport::new).collect())
}

fn run_with(
    topo: &Topology,
    jobs: Vec<JobSpec>,
    options: RunOptions,
) -> Result<RunOutput, RunError> {
    let net = Network::new(
        topo,
        Router::new(topo, Policy::Ecmp, HashConfig::default()),
        FlowEngine::new(topo),
    );
    Orchestrator::new(net, jobs, options).run(|_, _, _| {})
}

/// The error of a run of `w` alone, placed packed, which must fail.
fn stall(topo: &Topology, name: &str, w: Workload) -> String {
    let mut used = vec![false; topo.node_count()];
    let spec = job(topo, name, w, Placement::Packed, &mut used);
    run_jobs(topo, vec![spec]).unwrap_err().to_string()
}

fn job(
    topo: &Topology,
    name: &str,
    workload: Workload,
    placement: Placement,
    used: &mut [bool],
) -> JobSpec {
    let gpus = place(topo, used, workload.rank_count(), &placement).unwrap();
    JobSpec {
        name: name.into(),
        workload,
        gpus,
        compute: ComputeModel::new(GpuSpec::named("H100").unwrap()),
        comm: CommConfig::default(),
    }
}

#[test]
fn collective_only_traces_agree_with_bench() {
    let topo = zone();
    let base = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/astra_examples/astra-sim/examples/workload/microbenchmarks");
    for (dir, op) in [
        ("all_reduce/16npus_1MB/all_reduce", Collective::AllReduce),
        ("all_gather/16npus_1MB/all_gather", Collective::AllGather),
        (
            "reduce_scatter/16npus_1MB/reduce_scatter",
            Collective::ReduceScatter,
        ),
        ("all_to_all/16npus_1MB/all_to_all", Collective::AllToAll),
        ("all_reduce/8npus_1MB/all_reduce", Collective::AllReduce),
    ] {
        let (w, _) = import(base.join(dir).to_str().unwrap(), None).unwrap();
        let bytes = match w.programs[0].ops[0].kind {
            OpKind::Collective { bytes, .. } => bytes,
            _ => unreachable!(),
        };
        let mut used = vec![false; topo.node_count()];
        let mut spec = job(&topo, dir, w, Placement::Packed, &mut used);
        let ranks = Ranks::new(&topo, spec.gpus.clone()).unwrap();
        // Inside one host the default is NCCL's closed-form cost model: within 3 % of the
        // engine. Run on the engine too, which must agree with bench to rounding.
        let closed = run_jobs(&topo, vec![spec.clone()]).unwrap()[0].iteration_ms * 1e3;
        spec.comm.host_closed_form = false;
        let reports = run_jobs(&topo, vec![spec.clone()]).unwrap();
        let comm = spec.comm;
        let bench = Bench {
            op,
            algorithm: None,
            protocol: None,
            channels: comm.channels,
            chunk: DEFAULT_CHUNK,
            fidelity: Fidelity::Pipelined,
            transport: Transport {
                protocol: Protocol::Simple,
                qps: 1,
                qp_mode: QpMode::Split,
                seed: 0,
                gpu: Generation::H100,
            },
            routing: Routing::Hashed(Policy::Ecmp),
            hash: HashConfig::default(),
            down: Vec::new(),
            path_selection: Default::default(),
            dtype: ("float", 4),
            full_detail: false,
            keep_links: false,
            link_figures: true,
        };
        let row = run_size(&topo, &ranks, &bench, bytes).unwrap();
        let sim = reports[0].iteration_ms * 1e3;
        assert!(
            (sim / row.time_us - 1.0).abs() < 1e-3,
            "{dir}: run {sim} µs, bench {} µs",
            row.time_us
        );
        assert!(
            (closed / row.time_us - 1.0).abs() < 0.03,
            "{dir}: closed form {closed} µs, bench {} µs",
            row.time_us
        );
    }
}

fn small_llm() -> Training {
    let mut model = ModelSpec::named("llama3-8b").unwrap();
    model.layers = 4;
    Training {
        model,
        parallel: Parallelism {
            tp: 8,
            sp: true,
            cp: 1,
            pp: 2,
            vpp: 1,
            dp: 2,
            dp_mode: DpMode::Fsdp,
            ep: 1,
            order: RankOrder::default(),
        },
        seq: 2048,
        micro_batch: 1,
        global_batch: 8,
        recompute: Recompute::None,
        grad_bytes: 4,
        gpu: GpuSpec::named("H100").unwrap(),
    }
}

#[test]
fn generated_job_runs_and_is_deterministic() {
    let topo = zone();
    let t = small_llm();
    let mut runs = Vec::new();
    for _ in 0..2 {
        let mut used = vec![false; topo.node_count()];
        let spec = job(
            &topo,
            "llm",
            generate(&t).unwrap(),
            Placement::Packed,
            &mut used,
        );
        let r = run_jobs(&topo, vec![spec]).unwrap();
        runs.push(serde_json::to_string(&r).unwrap());
    }
    assert_eq!(runs[0], runs[1]);
    let r: Vec<JobReport> = {
        let mut used = vec![false; topo.node_count()];
        run_jobs(
            &topo,
            vec![job(
                &topo,
                "llm",
                generate(&t).unwrap(),
                Placement::Packed,
                &mut used,
            )],
        )
        .unwrap()
    };
    let r = &r[0];
    assert!(r.iteration_ms > 0.0);
    assert!(r.mfu > 0.05 && r.mfu < 0.8, "{}", r.render());
    let split = r.compute_fraction + r.exposed_comm_fraction + r.idle_fraction;
    assert!((split - 1.0).abs() < 1e-9);
    // 2 stages × 4 micro-batches: the bubble shows as idle time.
    assert!(r.idle_fraction > 0.05, "{}", r.render());
    assert!(r.transfers.count == 2 * 4 * 2 * 8, "{}", r.transfers.count);
    // The exposed communication, split by what it serves, adds up to the total, and the
    // pipeline's sends and receives show as `pp`.
    let by_scope: f64 = r.exposed_comm_by_scope.values().sum();
    assert!(
        (by_scope - r.exposed_comm_fraction).abs() < 1e-9,
        "{}",
        r.render()
    );
    assert!(r.exposed_comm_by_scope.contains_key("pp"), "{}", r.render());
    assert!(r
        .exposed_comm_by_scope
        .keys()
        .all(|k| ["tp", "cp", "pp", "dp", "ep", "other"].contains(k)));
}

/// Two ranks; rank 0 calls an all-reduce on both, rank 1 never does.
#[test]
fn missing_member_stalls_with_diagnosis() {
    let topo = zone();
    let mut p0 = Program::new();
    p0.push(
        Op {
            id: 7,
            label: 0,
            kind: OpKind::Collective {
                op: Collective::AllReduce,
                bytes: 1 << 20,
                group: 0,
            },
        },
        &[],
    );
    let w = Workload {
        name: "broken".into(),
        labels: vec!["ar".into()],
        programs: vec![p0, Program::new()],
        ranks: vec![
            Binding {
                program: 0,
                groups: vec![0],
                peers: vec![],
            },
            Binding {
                program: 1,
                groups: vec![0],
                peers: vec![],
            },
        ],
        groups: vec![Group {
            name: "world".into(),
            ranks: vec![0, 1],
        }],
        ..Workload::default()
    };
    let e = stall(&topo, "broken", w);
    assert!(
        e.contains("stalled") && e.contains("waits for ranks 1"),
        "{e}"
    );
}

#[test]
fn receive_without_send_stalls_with_diagnosis() {
    let topo = zone();
    let mut p0 = Program::new();
    p0.push(
        Op {
            id: 0,
            label: 0,
            kind: OpKind::Recv {
                peer: 0,
                bytes: 100,
                tag: 5,
            },
        },
        &[],
    );
    let w = Workload {
        name: "lonely".into(),
        labels: vec!["recv".into()],
        programs: vec![p0, Program::new()],
        ranks: vec![
            Binding {
                program: 0,
                groups: vec![],
                peers: vec![1],
            },
            Binding {
                program: 1,
                groups: vec![],
                peers: vec![],
            },
        ],
        ..Workload::default()
    };
    let e = stall(&topo, "lonely", w);
    assert!(e.contains("receive (1 -> 0, tag 5) has no send"), "{e}");
}

/// The real PyTorch-converted trace (one rank, 3,664 nodes, 383 nodes that depend on
/// themselves, dependencies on absent nodes and cycles): it replays to the end, and with one
/// compute stream and no peers its iteration is exactly its GPU kernels' time, end to end.
#[test]
fn converted_pytorch_trace_replays() {
    let tarball = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/astra_examples/chakra/tests/data/feeder_tests_trace.tar.gz");
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let prefix = dir.path().join("tests/data/chakra");
    let (w, _) = import(prefix.to_str().unwrap(), None).unwrap();
    let topo = zone();
    let compute = ComputeModel::new(GpuSpec::named("H100").unwrap());
    let kernels_ns: u64 = w.programs[0]
        .ops
        .iter()
        .filter_map(|o| match o.kind {
            OpKind::Compute(c) => Some(compute.time(&c).0),
            _ => None,
        })
        .sum();
    assert!(kernels_ns > 100_000_000, "{kernels_ns}");
    let mut used = vec![false; topo.node_count()];
    let spec = job(&topo, "pytorch", w, Placement::Packed, &mut used);
    let net = Network::new(
        &topo,
        Router::new(&topo, Policy::Ecmp, HashConfig::default()),
        FlowEngine::new(&topo),
    );
    let out = Orchestrator::new(net, vec![spec], RunOptions::default())
        .run(|_, _, _| {})
        .unwrap();
    let s = &out.jobs[0];
    assert_eq!(s.compute_ns, kernels_ns);
    assert_eq!(s.iteration_ns, kernels_ns);
}

/// One rank: an op, then two ops that wait on each other (one of them also on the first).
/// The run stalls after the first op and names the first op of the cycle.
#[test]
fn dependency_cycle_stalls_with_diagnosis() {
    let topo = zone();
    let mut p = Program::new();
    p.push(op(OpKind::Nop), &[]);
    let mut cyclic = op(OpKind::Nop);
    cyclic.id = 11;
    p.push(cyclic, &[0, 2]);
    p.push(op(OpKind::Nop), &[1]);
    let w = Workload {
        name: "cyclic".into(),
        labels: vec!["step".into()],
        programs: vec![p],
        ranks: vec![Binding {
            program: 0,
            groups: vec![],
            peers: vec![],
        }],
        ..Workload::default()
    };
    let e = stall(&topo, "cyclic", w);
    assert!(
        e.contains("with 1 of 3 ops done")
            && e.contains("rank 0: op 11 (`step`) waits on ops that never finish"),
        "{e}"
    );
}

/// Sends and receives match by (source, destination, tag), whichever peer slot names the rank:
/// with two pipeline stages a rank's previous and next stage are the same rank.
/// An op of `kind`, unlabelled.
fn op(kind: OpKind) -> Op {
    Op {
        id: 0,
        label: 0,
        kind,
    }
}

/// Rank 0 runs `sender` (its peer slots naming `peers`), rank 1 `receiver` (peer 0).
fn sender_and_receiver(
    name: &str,
    sender: Program,
    receiver: Program,
    peers: Vec<u32>,
) -> Workload {
    Workload {
        name: name.into(),
        labels: vec!["p2p".into()],
        programs: vec![sender, receiver],
        ranks: vec![
            Binding {
                program: 0,
                groups: vec![],
                peers,
            },
            Binding {
                program: 1,
                groups: vec![],
                peers: vec![0],
            },
        ],
        ..Workload::default()
    }
}

#[test]
fn a_peer_named_in_two_slots_matches_by_rank_and_tag() {
    let topo = zone();
    let mut sender = Program::new();
    for (peer, tag) in [(0, 1), (1, 2), (1, 1)] {
        sender.push(
            op(OpKind::Send {
                peer,
                bytes: 1 << 20,
                tag,
            }),
            &[],
        );
    }
    let mut receiver = Program::new();
    for tag in [2, 1, 1] {
        receiver.push(
            op(OpKind::Recv {
                peer: 0,
                bytes: 1 << 20,
                tag,
            }),
            &[],
        );
    }
    let w = sender_and_receiver("pairs", sender, receiver, vec![1, 1]);
    let mut used = vec![false; topo.node_count()];
    let spec = job(&topo, "pairs", w, Placement::Random { seed: 3 }, &mut used);
    let reports = run_jobs(&topo, vec![spec]).unwrap();
    assert_eq!(reports[0].transfers.count, 3);
    assert_eq!(reports[0].transfers.bytes, 3 << 20);
}

/// Four 16 MiB sends from one GPU to a GPU of another rack, all at once, under `selection`:
/// the number of RTSW -> CTSW uplinks that carried them.
fn uplinks_of_concurrent_sends(selection: PathSelection) -> usize {
    let topo = zone();
    let mut sender = Program::new();
    let mut receiver = Program::new();
    for tag in 0..4 {
        let bytes = 16 << 20;
        sender.push(
            op(OpKind::Send {
                peer: 0,
                bytes,
                tag,
            }),
            &[],
        );
        receiver.push(
            op(OpKind::Recv {
                peer: 0,
                bytes,
                tag,
            }),
            &[],
        );
    }
    let w = sender_and_receiver("sends", sender, receiver, vec![1]);
    let gpus = vec![
        topo.hosts()[0].gpus[0],
        topo.hosts().last().unwrap().gpus[0],
    ];
    let spec = JobSpec {
        name: "sends".into(),
        workload: w,
        gpus,
        compute: ComputeModel::new(GpuSpec::named("H100").unwrap()),
        comm: CommConfig::default(),
    };
    let mut net = Network::new(
        &topo,
        Router::new(&topo, Policy::Ecmp, HashConfig::default()),
        FlowEngine::new(&topo),
    );
    net.set_path_selection(selection);
    let out = Orchestrator::new(net, vec![spec], RunOptions::default())
        .run(|_, _, _| {})
        .unwrap();
    assert_eq!(out.jobs[0].transfers.count, 4);
    out.links
        .iter()
        .filter(|u| {
            let l = topo.link(u.link);
            matches!(topo.kind(l.src), NodeKind::Switch(r) if r.tier == 1)
                && matches!(topo.kind(l.dst), NodeKind::Switch(r) if r.tier == 2)
        })
        .count()
}

#[test]
fn pipeline_sends_take_the_hosts_path_selection() {
    // Hashed, one connection is one path; by disjoint paths, four messages in flight at once
    // go up four different uplinks.
    assert_eq!(uplinks_of_concurrent_sends(PathSelection::Hashed), 1);
    assert_eq!(
        uplinks_of_concurrent_sends(PathSelection::Disjoint { paths: 4 }),
        4
    );
}

/// Kernel chains run as one event ([`fabricsim_cluster`]'s fused chains) unless a rank is
/// traced; tracing every rank runs each kernel alone, and the two runs agree in every figure.
#[test]
fn fused_kernel_chains_agree_with_each_kernel_alone() {
    let topo = zone();
    let t = small_llm();
    let run = |trace_ranks: u32| {
        let mut used = vec![false; topo.node_count()];
        let w = generate(&t).unwrap();
        let spec = job(&topo, "llm", w, Placement::Packed, &mut used);
        let options = RunOptions {
            trace_ranks,
            ..RunOptions::default()
        };
        let out = run_with(&topo, vec![spec], options).unwrap();
        let s = &out.jobs[0];
        let report = serde_json::to_string(&JobReport::new(s)).unwrap();
        (report, s.compute_ns, out.events, out.flows, out.end)
    };
    let w = generate(&t).unwrap();
    let (fused, alone) = (run(0), run(w.rank_count() as u32));
    assert_eq!(fused, alone);
    // The compute streams were busy for every kernel's own time, chained or not.
    let compute = ComputeModel::new(GpuSpec::named("H100").unwrap());
    let kernels_ns: u64 = (0..w.rank_count() as u32)
        .flat_map(|r| &w.program_of(r).ops)
        .filter_map(|o| match o.kind {
            OpKind::Compute(c) => Some(compute.time(&c).0),
            _ => None,
        })
        .sum();
    assert_eq!(fused.1, kernels_ns);
}
