//! Chakra import/export on the shared example traces, and the LLM generator against closed-form
//! counts.

use std::path::{Path, PathBuf};

use fabricsim_collectives::Collective;
use fabricsim_workload::chakra::{self, import};
use fabricsim_workload::llm::{
    generate, memory, DpMode, ModelSpec, Parallelism, RankOrder, Recompute, Training,
};
use fabricsim_workload::{GpuSpec, OpKind, Workload};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/astra_examples")
}

/// Every `<prefix>.<rank>.et` trace under the examples, as prefixes.
fn trace_prefixes(dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            trace_prefixes(&p, out);
        } else if let Some(name) = p.to_str().and_then(|s| s.strip_suffix(".0.et")) {
            out.push(name.to_string());
        }
    }
}

#[test]
fn every_example_trace_imports() {
    let mut prefixes = Vec::new();
    trace_prefixes(&examples(), &mut prefixes);
    assert!(prefixes.len() >= 14, "found {prefixes:?}");
    for prefix in prefixes {
        let groups = PathBuf::from(format!(
            "{}.json",
            prefix.trim_end_matches(|c: char| c != '/').to_string() + "workload"
        ));
        let groups = groups.is_file().then_some(groups);
        let (w, _warnings) =
            import(&prefix, groups.as_deref()).unwrap_or_else(|e| panic!("{prefix}: {e}"));
        assert!(w.rank_count() >= 4, "{prefix}");
        assert!(w.op_count() >= w.rank_count(), "{prefix}");
    }
}

#[test]
fn ranks_with_identical_programs_share_one() {
    // symbolic_tensor_graph's DP 4 × TP 2 GPT: every rank runs the same graph towards its own
    // peers and groups, so the 8 files make one program and 8 bindings.
    let dir = examples().join("generated/stg_gpt_dp4_tp2_pp1");
    let prefix = dir.join("workload");
    let (w, _) = import(prefix.to_str().unwrap(), Some(&dir.join("workload.json"))).unwrap();
    assert_eq!(w.rank_count(), 8);
    assert_eq!(w.programs.len(), 1);
    assert!(w.ranks.iter().all(|b| b.program == 0));
    // Their groups differ: the bindings hold them.
    assert_ne!(w.ranks[0].groups, w.ranks[1].groups);
    // The microbenchmarks' node ids differ per rank (id = rank), so each rank keeps its own.
    let base = examples().join("astra-sim/examples/workload/microbenchmarks/all_reduce/4npus_1MB");
    let (w, _) = import(base.join("all_reduce").to_str().unwrap(), None).unwrap();
    assert_eq!(w.programs.len(), 4);
}

#[test]
fn microbenchmark_traces_read_as_astra_sim_sizes() {
    let base = examples().join("astra-sim/examples/workload/microbenchmarks");
    for (dir, op, factor) in [
        ("all_reduce/8npus_1MB/all_reduce", Collective::AllReduce, 1),
        ("all_gather/8npus_1MB/all_gather", Collective::AllGather, 8),
        (
            "reduce_scatter/8npus_1MB/reduce_scatter",
            Collective::ReduceScatter,
            1,
        ),
        ("all_to_all/8npus_1MB/all_to_all", Collective::AllToAll, 1),
    ] {
        let (w, warnings) = import(base.join(dir).to_str().unwrap(), None).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(w.rank_count(), 8);
        for r in 0..8 {
            let p = w.program_of(r);
            assert_eq!(p.len(), 1);
            match p.ops[0].kind {
                OpKind::Collective { op: o, bytes, .. } => {
                    assert_eq!(o, op);
                    assert_eq!(bytes, 1_048_576 * factor);
                }
                k => panic!("{k:?}"),
            }
        }
        assert_eq!(w.groups.len(), 1);
        assert_eq!(w.groups[0].ranks, (0..8).collect::<Vec<_>>());
    }
}

#[test]
fn real_trace_with_absent_dependencies_warns_and_imports() {
    // chakra/tests/data/feeder_tests_trace.tar.gz holds chakra.0.et; unpack it with tar.
    let tarball = examples().join("chakra/tests/data/feeder_tests_trace.tar.gz");
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let mut found = Vec::new();
    trace_prefixes(dir.path(), &mut found);
    assert_eq!(found.len(), 1, "{found:?}");
    let (w, warnings) = import(&found[0], None).unwrap();
    assert_eq!(w.op_count(), 3664);
    let colls = w.programs[0]
        .ops
        .iter()
        .filter(|o| matches!(o.kind, OpKind::Collective { .. }))
        .count();
    // 21 COMM_COLL nodes: 14 CPU-side c10d calls and 7 GPU kernels (5 all-reduce, 2 broadcast).
    assert_eq!(colls, 7);
    // Absent dependencies, self-dependencies and cycles among the rest are dropped with
    // warnings.
    assert_eq!(warnings.len(), 3);
    assert!(warnings[0].message.contains("absent"), "{}", warnings[0]);
    assert!(
        warnings[1].message.contains("themselves"),
        "{}",
        warnings[1]
    );
    assert!(warnings[2].message.contains("cycles"), "{}", warnings[2]);
}

#[test]
fn custom_ring_traces_pair_sends_and_receives() {
    let prefix = examples().join("astra-sim/examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce");
    let (w, _) = import(prefix.to_str().unwrap(), None).unwrap();
    let count = |f: fn(&OpKind) -> bool| {
        (0..8)
            .map(|r| w.program_of(r).ops.iter().filter(|o| f(&o.kind)).count())
            .sum::<usize>()
    };
    assert_eq!(count(|k| matches!(k, OpKind::Send { .. })), 8 * 14);
    assert_eq!(count(|k| matches!(k, OpKind::Recv { .. })), 8 * 14);
}

pub fn training(
    model: &str,
    tp: u32,
    cp: u32,
    pp: u32,
    vpp: u32,
    dp: u32,
    dp_mode: DpMode,
) -> Training {
    Training {
        model: ModelSpec::named(model).unwrap(),
        parallel: Parallelism {
            tp,
            sp: false,
            cp,
            pp,
            vpp,
            dp,
            dp_mode,
            ep: 1,
            order: RankOrder::default(),
        },
        seq: 4096,
        micro_batch: 1,
        global_batch: 8 * dp,
        recompute: Recompute::None,
        grad_bytes: 4,
        gpu: GpuSpec::named("H100").unwrap(),
    }
}

/// FLOPs of all compute ops but recomputation.
fn flops_of(w: &Workload) -> f64 {
    (0..w.rank_count() as u32)
        .map(|r| {
            w.program_of(r)
                .ops
                .iter()
                .filter(|o| !w.label(o).contains("recompute"))
                .map(|o| match o.kind {
                    OpKind::Compute(c) => c.flops,
                    _ => 0.0,
                })
                .sum::<f64>()
        })
        .sum()
}

/// (count, bytes) of collectives of `op` on one rank.
fn collectives(w: &Workload, rank: u32, op: Collective, label: &str) -> (usize, u64) {
    let p = w.program_of(rank);
    let mut out = (0, 0);
    for o in &p.ops {
        if let OpKind::Collective { op: x, bytes, .. } = o.kind {
            if x == op && w.label(o).contains(label) {
                out.0 += 1;
                out.1 += bytes;
            }
        }
    }
    out
}

/// What the kernels execute at sequence length 4096: the model count, but causal attention
/// does half its dense attention term.
fn kernel_flops(t: &Training) -> f64 {
    let m = &t.model;
    let dense_attention = 12.0 * f64::from(m.layers) * f64::from(m.d_model) * 4096.0;
    (m.flops_per_token(4096) - dense_attention / 2.0) * t.tokens() as f64
}

#[test]
fn generated_flops_equal_six_p_n_plus_causal_attention() {
    for (model, tp, cp, pp, vpp, dp) in [
        ("llama3-8b", 8, 1, 1, 1, 2),
        ("llama3-8b", 4, 2, 2, 1, 2),
        ("llama3-8b", 2, 1, 4, 2, 1),
        ("gpt3-175b", 8, 1, 8, 1, 2),
    ] {
        let mut t = training(model, tp, cp, pp, vpp, dp, DpMode::Fsdp);
        t.recompute = Recompute::Full;
        let w = generate(&t).unwrap_or_else(|e| panic!("{model}: {e}"));
        let model = t.model.flops_per_token(4096) * t.tokens() as f64;
        let expect = kernel_flops(&t);
        let got = flops_of(&w);
        // Exact but for a vocabulary TP does not divide (GPT-3's 50,257): each TP rank's LM
        // head shard is padded up, as Megatron pads the vocabulary.
        assert!(
            (got / expect - 1.0).abs() < 1e-6,
            "{model} tp{tp} cp{cp} pp{pp}: {got} vs {expect}"
        );
        assert_eq!(w.accounting.model_flops, model);
    }
}

#[test]
fn llama3_8b_parameter_count() {
    let m = ModelSpec::named("llama3-8b").unwrap();
    let p = m.total_params() as f64 / 1e9;
    assert!((p - 8.03).abs() < 0.01, "{p}");
    let m = ModelSpec::named("llama3-405b").unwrap();
    let p = m.total_params() as f64 / 1e9;
    assert!((p - 405.8).abs() < 1.0, "{p}");
}

#[test]
fn collective_volumes_match_closed_form() {
    // Llama 3 8B, TP 8 without SP, PP 2, DP 2 (DDP), 8 micro-batches of 4096 tokens.
    let t = training("llama3-8b", 8, 1, 2, 1, 2, DpMode::Ddp);
    let w = generate(&t).unwrap();
    let act = 4096 * 4096 * 2;
    // 16 layers per stage × 8 micro-batches × (2 forward + 2 backward) all-reduces.
    let (n, bytes) = collectives(&w, 0, Collective::AllReduce, "-tp-");
    assert_eq!(n, 16 * 8 * 4);
    assert_eq!(bytes, 16 * 8 * 4 * act);
    // DDP: one FP32 gradient all-reduce per layer plus the embedding's.
    let m = &t.model;
    let layer = (m.attention_params() + m.mlp_params() + 2 * 4096) / 8;
    let (n, bytes) = collectives(&w, 0, Collective::AllReduce, "-grad-");
    assert_eq!(n, 17);
    assert_eq!(bytes, 4 * (16 * layer + m.embedding_params() / 8));
    // Pipeline: 8 activation sends on stage 0, 8 gradient sends on stage 1.
    let sends = |r: u32| {
        w.program_of(r)
            .ops
            .iter()
            .filter(|o| matches!(o.kind, OpKind::Send { bytes, .. } if bytes == act))
            .count()
    };
    assert_eq!(sends(0), 8);
    assert_eq!(sends(8), 8);

    // With SP: all-gather / reduce-scatter pairs instead, same bytes each.
    let mut sp = t.clone();
    sp.parallel.sp = true;
    let w = generate(&sp).unwrap();
    assert_eq!(collectives(&w, 0, Collective::AllReduce, "-tp-").0, 0);
    assert_eq!(
        collectives(&w, 0, Collective::AllGather, "-tp-"),
        (16 * 8 * 4, 16 * 8 * 4 * act)
    );
    assert_eq!(
        collectives(&w, 0, Collective::ReduceScatter, "-tp-"),
        (16 * 8 * 4, 16 * 8 * 4 * act)
    );

    // FSDP: one BF16 weight all-gather and one FP32 gradient reduce-scatter per layer.
    let w = generate(&training("llama3-8b", 8, 1, 2, 1, 2, DpMode::Fsdp)).unwrap();
    assert_eq!(
        collectives(&w, 0, Collective::AllGather, "weights"),
        (16, 16 * layer * 2)
    );
    assert_eq!(
        collectives(&w, 0, Collective::ReduceScatter, "-grad-").0,
        17
    );
}

#[test]
fn moe_emits_expert_all_to_alls() {
    let mut t = training("mixtral-8x7b", 2, 1, 1, 1, 8, DpMode::Fsdp);
    t.parallel.ep = 4;
    t.global_batch = 16;
    let w = generate(&t).unwrap();
    // 32 layers × 2 micro-batches × 4 all-to-alls, each tokens·top_k·d·2 bytes.
    let (n, bytes) = collectives(&w, 0, Collective::AllToAll, "ep-all-to-all");
    assert_eq!(n, 32 * 2 * 4);
    assert_eq!(bytes, 32 * 2 * 4 * (4096 * 2 * 4096 * 2));
    assert!((flops_of(&w) / kernel_flops(&t) - 1.0).abs() < 1e-9);
}

#[test]
fn megatron_rank_order_keeps_expert_parallelism_in_the_server() {
    // Megatron-Core's MoE reference mapping for Mixtral 8×7B: TP 1, EP 8, PP 4 on 64 GPUs.
    let mut t = training("mixtral-8x7b", 1, 1, 4, 1, 16, DpMode::Ddp);
    t.parallel.ep = 8;
    t.global_batch = 64;
    let ep_of_rank0 = |t: &Training| {
        let w = generate(t).unwrap();
        let g = w.groups.iter().find(|g| g.name.starts_with("ep")).unwrap();
        g.ranks.clone()
    };
    // Llama 3's order puts the pipeline stages inside data parallelism: EP spans 8 servers' GPUs.
    assert_eq!(ep_of_rank0(&t), [0, 4, 8, 12, 16, 20, 24, 28]);
    t.parallel.order = RankOrder::parse("tp-cp-ep-dp-pp").unwrap();
    assert_eq!(ep_of_rank0(&t), (0..8).collect::<Vec<u32>>());
    let w = generate(&t).unwrap();
    assert_eq!(
        w.ranks[8].program, 0,
        "rank 8 is the second server of stage 0"
    );
    assert_eq!(w.ranks[16].program, 1, "stage 1 starts after DP × TP ranks");
}

#[test]
fn moe_layers_permute_tokens_and_run_the_activation() {
    let mut t = training("mixtral-8x7b", 1, 1, 1, 1, 8, DpMode::Fsdp);
    t.parallel.ep = 8;
    t.global_batch = 8; // one micro-batch per replica
    let w = generate(&t).unwrap();
    let bytes_of = |label: &str| -> f64 {
        let p = w.program_of(0);
        p.ops
            .iter()
            .filter(|o| w.label(o) == label)
            .map(|o| match o.kind {
                OpKind::Compute(c) => c.bytes,
                _ => 0.0,
            })
            .sum()
    };
    // 4,096 tokens of d = 4,096 in BF16, read once and written once per chosen expert (top-2).
    let act = 4096.0 * 4096.0 * 2.0;
    assert_eq!(bytes_of("layer0/permute"), 3.0 * act);
    assert_eq!(bytes_of("layer0/unpermute-bwd"), 3.0 * act);
    // SwiGLU over the 8,192 routed tokens of FFN 14,336: gate and up in, product out.
    let ffn = 8192.0 * 14336.0 * 2.0;
    assert_eq!(bytes_of("layer0/expert-act"), 3.0 * ffn);
    assert_eq!(bytes_of("layer0/expert-act-bwd"), 5.0 * ffn);
}

#[test]
fn memory_matches_hand_computation() {
    // Llama 3 8B, TP 8, PP 1, DP 2 under DDP, no SP, no recomputation, 8 micro-batches.
    let t = training("llama3-8b", 8, 1, 1, 1, 2, DpMode::Ddp);
    let m = memory(&t)[0];
    let p = t.model.total_params() / 8;
    assert_eq!(m.params, p);
    assert_eq!(m.weights, 2 * p);
    assert_eq!(m.grads, 4 * p);
    assert_eq!(m.optimizer, 12 * p);
    // One micro-batch of 4,096 tokens in flight. Per token and layer, in BF16: the inputs of
    // the two norms and the two projections they feed, whole without SP (4 × 4,096), and
    // divided by TP: Q and the attention output (2 × 4,096), K and V (2 × 8 heads × 128), the
    // gate, up and their product (3 × 14,336). 32 layers, plus the FP32 logits.
    let per_token = 4 * 4096 + (2 * 4096 + 2 * 8 * 128 + 3 * 14_336) / 8;
    assert_eq!(
        m.activations,
        32 * 2 * per_token * 4096 + 4 * 4096 * 128_256 / 8
    );
}

#[test]
fn too_large_a_model_errors() {
    let t = training("llama3-405b", 8, 1, 1, 1, 2, DpMode::Ddp);
    let e = generate(&t).unwrap_err().to_string();
    assert!(e.contains("GB per GPU") && e.contains("H100"), "{e}");
}

/// A Llama 3 8B job of TP 2, DP 2 (FSDP) and the given CP, PP and layers, exported as Chakra
/// into a fresh directory (kept alive by the caller) as `job.*`.
fn exported(cp: u32, pp: u32, layers: u32) -> (Workload, tempfile::TempDir) {
    let mut t = training("llama3-8b", 2, cp, pp, 1, 2, DpMode::Fsdp);
    t.model.layers = layers;
    let w = generate(&t).unwrap();
    let dir = tempfile::tempdir().unwrap();
    chakra::export(&w, &prefix_in(&dir)).unwrap();
    (w, dir)
}

fn prefix_in(dir: &tempfile::TempDir) -> String {
    dir.path().join("job").to_str().unwrap().to_string()
}

#[test]
fn generated_workload_round_trips_through_chakra() {
    let (w, dir) = exported(2, 2, 4);
    let prefix = prefix_in(&dir);
    let (back, warnings) = import(&prefix, Some(Path::new(&format!("{prefix}.json")))).unwrap();
    assert!(warnings.is_empty());
    assert_eq!(back.rank_count(), w.rank_count());
    for r in 0..w.rank_count() as u32 {
        let (a, b) = (w.program_of(r), back.program_of(r));
        assert_eq!(a.len(), b.len());
        for i in 0..a.len() {
            assert_eq!(w.label(&a.ops[i]), back.label(&b.ops[i]));
            assert_eq!(a.deps(i as u32), b.deps(i as u32));
            assert_eq!(
                resolve(&w, r, a.ops[i].kind),
                resolve(&back, r, b.ops[i].kind),
                "rank {r} op {i}"
            );
        }
    }
}

/// An op with its slots resolved to group members and peer ranks.
fn resolve(w: &Workload, rank: u32, k: OpKind) -> String {
    let b = &w.ranks[rank as usize];
    match k {
        OpKind::Collective { op, bytes, group } => {
            format!(
                "{op:?} {bytes} {:?}",
                w.groups[b.groups[group as usize] as usize].ranks
            )
        }
        OpKind::Send { peer, bytes, tag } => {
            format!("send {} {bytes} {tag}", b.peers[peer as usize])
        }
        OpKind::Recv { peer, bytes, tag } => {
            format!("recv {} {bytes} {tag}", b.peers[peer as usize])
        }
        k => format!("{k:?}"),
    }
}

/// A Chakra all-gather whose per-rank size times the ranks would wrap 64 bits is refused,
/// naming the node (it used to report a wrapped byte count).
#[test]
fn chakra_sizes_that_would_wrap_are_refused() {
    use fabricsim_workload::chakra::pb::attribute_proto::Value;
    let (_, dir) = exported(1, 1, 1);
    let prefix = prefix_in(&dir);
    // Every all-gather (comm_type 2) of rank 0 gets a per-rank size of 2^62 bytes.
    let file = std::path::PathBuf::from(format!("{prefix}.0.et"));
    let mut trace = chakra::read_file(&file).unwrap();
    let mut changed = 0;
    for node in &mut trace.nodes {
        let gather = node
            .attr
            .iter()
            .any(|a| a.name == "comm_type" && a.value == Some(Value::Int64Val(2)));
        for a in node
            .attr
            .iter_mut()
            .filter(|a| gather && a.name == "comm_size")
        {
            a.value = Some(Value::Int64Val(1 << 62));
            changed += 1;
        }
    }
    assert!(changed > 0);
    chakra::write_file(&file, &trace).unwrap();
    let e = import(&prefix, Some(Path::new(&format!("{prefix}.json"))))
        .unwrap_err()
        .to_string();
    assert!(e.contains("above 2^62 bytes") && e.contains("node"), "{e}");
}

/// A small gzip of zeros (each zero byte an empty node) is refused at the first empty record,
/// naming the file and byte; it used to decode into hundreds of millions of nodes.
#[test]
fn a_gzip_bomb_of_empty_nodes_is_refused() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.0.et");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![0u8; 16 << 20]).unwrap();
    let packed = gz.finish().unwrap();
    assert!(packed.len() < 64 << 10, "{}", packed.len());
    std::fs::write(&path, packed).unwrap();
    let e = chakra::read_file(&path).unwrap_err().to_string();
    assert!(e.contains("bomb.0.et: byte 1: an empty node record"), "{e}");
}

/// Ranks that disagree are reported, naming the rank's file: a collective whose size differs
/// between the members of its group, and a send whose receive expects another size.
#[test]
fn ranks_that_disagree_are_reported() {
    use fabricsim_workload::chakra::pb::{attribute_proto::Value, NodeType};
    let (_, dir) = exported(2, 2, 4);
    let prefix = prefix_in(&dir);
    let groups = format!("{prefix}.json");
    let grow_first = |rank: u32, ty: NodeType| {
        let file = std::path::PathBuf::from(format!("{prefix}.{rank}.et"));
        let mut trace = chakra::read_file(&file).unwrap();
        let node = trace
            .nodes
            .iter_mut()
            .find(|n| n.r#type == ty as i32)
            .expect("a node of that type");
        let size = node
            .attr
            .iter_mut()
            .find(|a| a.name == "comm_size")
            .unwrap();
        size.value = Some(Value::Int64Val(12_345));
        chakra::write_file(&file, &trace).unwrap();
    };
    grow_first(1, NodeType::CommCollNode);
    grow_first(0, NodeType::CommSendNode);
    let (_, warnings) = import(&prefix, Some(Path::new(&groups))).unwrap();
    let text: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
    assert!(
        // The group's lowest rank is the reference; an all-gather's size is the gathered
        // buffer (12,345 bytes a rank over 2 ranks).
        text.iter().any(|t| t.contains("collective 0 on group")
            && t.contains("rank 1 all-gather of 24690 bytes")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.contains("from rank 0 to rank") && t.contains("12345 bytes sent")),
        "{text:#?}"
    );
}

/// The import reads a node's strings without copying them, and refuses one that is not UTF-8
/// as reading the whole trace does, naming the file and the node's byte.
#[test]
fn a_node_name_that_is_not_utf8_is_refused() {
    let (_, dir) = exported(1, 1, 1);
    let prefix = prefix_in(&dir);
    let groups = format!("{prefix}.json");
    import(&prefix, Some(Path::new(&groups))).unwrap();
    // Rank 1's first node's name, `\u{1}…`, its first byte made 0xff in the encoded file.
    let file = std::path::PathBuf::from(format!("{prefix}.1.et"));
    let mut trace = chakra::read_file(&file).unwrap();
    trace.nodes[0].name = format!("\u{1}{}", trace.nodes[0].name);
    chakra::write_file(&file, &trace).unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    let name = trace.nodes[0].name.as_bytes();
    let at = bytes.windows(name.len()).position(|w| w == name).unwrap();
    bytes[at] = 0xff;
    std::fs::write(&file, bytes).unwrap();
    let whole = chakra::read_file(&file).unwrap_err().to_string();
    let e = import(&prefix, Some(Path::new(&groups)))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("job.1.et: byte") && e.contains("not UTF-8"),
        "{e}"
    );
    assert!(whole.contains("not UTF-8"), "{whole}");
}
