//! Tensor-parallel gangs: a run that simulates each gang's ranks as one while they stand alike
//! reports exactly what the run of every rank alone does, to the last bit and the last event.

use std::path::Path;

use fabricsim_cluster::orchestrator::{RunOptions, RunOutput};
use fabricsim_cluster::scenario::Scenario;

mod common;
use common::reports;

/// A Llama job with pipeline sends, FSDP and tensor parallelism under hashed ECMP (every rank
/// simulated), and a data-parallel job beside it.
fn scenario(tp: u32, dp_mode: &str, vpp: u32) -> Scenario {
    let dp = 32 / tp / 2;
    let text = format!(
        r#"
[fabric]
preset = "meta-ai-zone"
set = ["racks=8"]

[routing]
policy = "ecmp"

[[job]]
name = "a"
placement = "packed"

[job.llm]
model = "llama3-8b"
layers = 8
tp = {tp}
sp = true
pp = 2
vpp = {vpp}
dp = {dp}
dp_mode = "{dp_mode}"
seq = 2048
global_batch = {batch}

[[job]]
name = "b"
placement = "packed"

[job.llm]
model = "llama3-8b"
layers = 2
tp = 8
sp = true
dp = 4
seq = 2048
global_batch = 8
"#,
        batch = 4 * dp
    );
    Scenario::parse(&text, Path::new("gangs-test.toml")).unwrap()
}

fn run(s: &Scenario, lone_ranks: bool) -> RunOutput {
    let options = RunOptions {
        lone_ranks,
        ..RunOptions::default()
    };
    common::run(s, options)
}

#[test]
fn gangs_report_what_every_rank_alone_does() {
    for (tp, dp_mode, vpp) in [(8, "fsdp", 2), (8, "ddp", 1), (4, "fsdp", 1), (2, "ddp", 2)] {
        let s = scenario(tp, dp_mode, vpp);
        let (gangs, alone) = (run(&s, false), run(&s, true));
        let case = format!("tp {tp}, {dp_mode}, vpp {vpp}");
        assert_eq!(reports(&gangs), reports(&alone), "{case}");
        assert_eq!(gangs.end, alone.end, "{case}");
        assert_eq!(gangs.flows, alone.flows, "{case}");
        assert_eq!(gangs.events, alone.events, "{case}");
        assert_eq!(gangs.links.len(), alone.links.len(), "{case}");
        for (a, b) in gangs.links.iter().zip(&alone.links) {
            assert_eq!(
                (a.link, a.bytes.to_bits()),
                (b.link, b.bytes.to_bits()),
                "{case}"
            );
        }
    }
}

/// Two servers' tensor-parallel groups that exchange halves with pipeline-style sends after
/// no-ops (which a merged gang must hand back to its ranks in order), kernels on both streams,
/// an op waiting on two: built by hand, as a trace would give it.
fn handmade() -> fabricsim_workload::Workload {
    use fabricsim_collectives::Collective;
    use fabricsim_workload::{Binding, Compute, Group, Op, OpClass, OpKind, Program, Workload};
    let kernel = |flops: f64| {
        OpKind::Compute(Compute {
            class: OpClass::Gemm,
            flops,
            bytes: 1e6,
            shape: None,
            duration: None,
        })
    };
    let all_reduce = OpKind::Collective {
        op: Collective::AllReduce,
        bytes: 1 << 20,
        group: 0,
    };
    let send = |tag| OpKind::Send {
        peer: 0,
        bytes: 4 << 20,
        tag,
    };
    let recv = |tag| OpKind::Recv {
        peer: 0,
        bytes: 4 << 20,
        tag,
    };
    let load = OpKind::Memory {
        bytes: 1 << 28,
        store: false,
    };
    let ops: [(OpKind, &[u32]); 16] = [
        (kernel(1e11), &[]),
        (all_reduce, &[0]),
        (OpKind::Nop, &[1]),
        (load, &[1]),
        (send(0), &[2]),
        (recv(0), &[2]),
        (kernel(2e11), &[3, 5]),
        (all_reduce, &[6]),
        (kernel(1e11), &[7]),
        (OpKind::Nop, &[8]),
        (send(1), &[9]),
        (recv(1), &[9]),
        (kernel(1e11), &[10, 11]),
        (all_reduce, &[12]),
        (kernel(3e11), &[13]),
        (all_reduce, &[14]),
    ];
    let mut p = Program::new();
    for (i, (kind, deps)) in ops.into_iter().enumerate() {
        let op = Op {
            id: i as u64,
            label: 0,
            kind,
        };
        p.push(op, deps);
    }
    Workload {
        name: "handmade".into(),
        labels: vec!["op".into()],
        programs: vec![p],
        ranks: (0..16)
            .map(|r| Binding {
                program: 0,
                groups: vec![r / 8],
                peers: vec![(r + 8) % 16],
            })
            .collect(),
        groups: (0..2)
            .map(|s| Group {
                name: format!("tp{s}"),
                ranks: (8 * s..8 * s + 8).collect(),
            })
            .collect(),
        ..Workload::default()
    }
}

#[test]
fn gangs_hand_no_ops_that_send_back_to_their_ranks() {
    use fabricsim_cluster::placement::{place, Placement};
    use fabricsim_cluster::{CommConfig, JobSpec, Orchestrator};
    use fabricsim_netsim::{FlowEngine, Network};
    use fabricsim_routing::{HashConfig, Policy, Router};
    use fabricsim_workload::{ComputeModel, GpuSpec};
    let topo = fabricsim_topology::presets::build("meta-ai-zone", &[]).unwrap();
    let run = |lone_ranks| {
        let w = handmade();
        let mut used = vec![false; topo.node_count()];
        let gpus = place(&topo, &mut used, w.rank_count(), &Placement::Packed).unwrap();
        let spec = JobSpec {
            name: "handmade".into(),
            workload: w,
            gpus,
            compute: ComputeModel::new(GpuSpec::named("H100").unwrap()),
            comm: CommConfig::default(),
        };
        let net = Network::new(
            &topo,
            Router::new(&topo, Policy::Ecmp, HashConfig::default()),
            FlowEngine::new(&topo),
        );
        let options = RunOptions {
            lone_ranks,
            ..RunOptions::default()
        };
        Orchestrator::new(net, vec![spec], options)
            .run(|_, _, _| {})
            .unwrap()
    };
    let (gangs, alone) = (run(false), run(true));
    assert_eq!(reports(&gangs), reports(&alone));
    assert_eq!((gangs.end, gangs.flows), (alone.end, alone.flows));
    assert_eq!(gangs.events, alone.events);
}
