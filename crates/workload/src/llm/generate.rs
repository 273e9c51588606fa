//! Emits the per-rank op DAGs of one training iteration (the model is in `docs/workloads.md`).
//!
//! One program per pipeline stage; every rank of the stage runs it through its own binding
//! (group slots TP, CP, DP, EP, expert-DP, present when the dimension is above 1; peer slots
//! next stage, previous stage). Per layer and micro-batch, forward:
//! `[SP: TP all-gather] → QKV GEMM → [CP: K/V all-gather] → attention → out-proj GEMM →
//! TP all-reduce (SP: reduce-scatter) → norm → [SP: all-gather] → MLP GEMMs (MoE: router,
//! EP all-to-all, expert GEMMs, all-to-all) → TP all-reduce (SP: reduce-scatter) → residual`.
//! Backward mirrors it in reverse with twice the GEMM and attention FLOPs and the conjugate TP
//! collectives (all-gather ↔ reduce-scatter; all-reduce stays), CP reduce-scatter of dK/dV.
//! Full recomputation replays a layer's forward (collectives included) before its backward;
//! selective replays the attention core. Pipeline stages send activations forward and
//! gradients back (`b·s·d·2 / (SP ? t : 1)` bytes); DP reduces gradients per layer after the
//! last micro-batch's backward (FSDP: weights all-gathered one layer ahead in the first forward),
//! then the optimizer step streams its state once.

use std::collections::HashMap;

use fabricsim_collectives::Collective;

use super::layout::{Coord, Dim, Layout};
use super::schedule::{stage_actions, Pass};
use super::{memory, DpMode, LlmError, Recompute, Training};
use crate::graph::{Accounting, Binding, Compute, Group, Op, OpClass, OpKind, Program, Workload};

const BF16: u64 = 2;
const NEXT: u16 = 0;
const PREV: u16 = 1;

/// Generates the workload; errors when the layout does not fit the model or HBM.
pub fn generate(t: &Training) -> Result<Workload, LlmError> {
    t.check()?;
    for m in memory(t) {
        if m.total > m.hbm {
            let gb = |b: u64| b as f64 / 1e9;
            return Err(LlmError::OutOfMemory {
                stage: m.stage,
                need: gb(m.total),
                weights: gb(m.weights),
                grads: gb(m.grads),
                optimizer: gb(m.optimizer),
                activations: gb(m.activations),
                gpu: t.gpu.name,
                have: gb(m.hbm),
            });
        }
    }
    let p = &t.parallel;
    let layout = Layout {
        tp: p.tp,
        cp: p.cp,
        pp: p.pp,
        dp: p.dp,
        ep: p.ep,
        order: p.order,
    };
    let mut dims = Vec::new();
    for (dim, size) in [
        (Dim::Tp, p.tp),
        (Dim::Cp, p.cp),
        (Dim::Dp, p.dp),
        (Dim::Ep, p.ep),
        (Dim::Edp, if t.model.is_moe() { p.dp / p.ep } else { 1 }),
    ] {
        if size > 1 {
            dims.push(dim);
        }
    }
    let slot = |d: Dim| dims.iter().position(|&x| x == d).map(|i| i as u16);

    let mut w = Workload {
        name: format!(
            "{} tp{} cp{} pp{} dp{}",
            t.model.name, p.tp, p.cp, p.pp, p.dp
        ),
        accounting: Accounting {
            tokens: t.tokens(),
            model_flops: t.model.flops_per_token(u64::from(t.seq)) * t.tokens() as f64,
        },
        ..Workload::default()
    };
    // Groups and bindings.
    let world = p.world();
    let mut group_of: HashMap<(usize, u32), u32> = HashMap::new();
    // Groups so far per dimension: a group's name is its dimension's and this number.
    let mut named = vec![0usize; dims.len()];
    for r in 0..world {
        let mut groups = Vec::with_capacity(dims.len());
        for (di, &dim) in dims.iter().enumerate() {
            let first = layout.first_member(dim, r);
            let id = *group_of.entry((di, first)).or_insert_with(|| {
                w.groups.push(Group {
                    name: format!("{}{}", dim.name(), named[di]),
                    ranks: layout.members(dim, r),
                });
                named[di] += 1;
                w.groups.len() as u32 - 1
            });
            groups.push(id);
        }
        let c = layout.coord(r);
        let peers = if p.pp > 1 {
            let next = Coord {
                pp: (c.pp + 1) % p.pp,
                ..c
            };
            let prev = Coord {
                pp: (c.pp + p.pp - 1) % p.pp,
                ..c
            };
            vec![layout.rank(next), layout.rank(prev)]
        } else {
            Vec::new()
        };
        w.ranks.push(Binding {
            program: c.pp,
            groups,
            peers,
        });
    }
    let mut labels = rustc_hash::FxHashMap::default();
    for stage in 0..p.pp {
        let mut e = Emitter {
            t,
            w: &mut w,
            labels: &mut labels,
            prog: Program::new(),
            stream: None,
            tp: slot(Dim::Tp),
            cp: slot(Dim::Cp),
            dp: slot(Dim::Dp),
            ep: slot(Dim::Ep),
            edp: slot(Dim::Edp),
        };
        e.stage(stage);
        let prog = e.prog;
        w.programs.push(prog);
    }
    Ok(w)
}

struct Emitter<'a> {
    t: &'a Training,
    w: &'a mut Workload,
    labels: &'a mut rustc_hash::FxHashMap<String, u32>,
    prog: Program,
    /// The last compute op: the compute stream runs in program order.
    stream: Option<u32>,
    tp: Option<u16>,
    cp: Option<u16>,
    dp: Option<u16>,
    ep: Option<u16>,
    edp: Option<u16>,
}

fn gemm(m: u64, n: u64, k: u64, passes: f64) -> Compute {
    Compute {
        class: OpClass::Gemm,
        flops: (passes * 2.0 * (m * n * k) as f64).round(),
        bytes: (passes * (BF16 * (m * k + k * n + m * n)) as f64).round(),
        shape: Some([m as u32, n as u32, k as u32]),
        duration: None,
    }
}

fn elementwise(bytes: u64) -> Compute {
    Compute {
        class: OpClass::Elementwise,
        flops: 0.0,
        bytes: bytes as f64,
        shape: None,
        duration: None,
    }
}

impl Emitter<'_> {
    fn op(&mut self, label: &str, kind: OpKind, deps: &[u32]) -> u32 {
        let label = self.w.intern(label, self.labels);
        let id = self.prog.len() as u64;
        self.prog.push(Op { id, label, kind }, deps)
    }

    fn compute(&mut self, label: &str, c: Compute, deps: &[u32]) -> u32 {
        let mut d: Vec<u32> = deps.to_vec();
        d.extend(self.stream);
        let i = self.op(label, OpKind::Compute(c), &d);
        self.stream = Some(i);
        i
    }

    /// A collective on `slot` (none when the dimension is 1: returns `deps` unchanged).
    fn coll(
        &mut self,
        label: &str,
        op: Collective,
        bytes: u64,
        slot: Option<u16>,
        deps: Vec<u32>,
    ) -> Vec<u32> {
        match slot {
            Some(group) => vec![self.op(label, OpKind::Collective { op, bytes, group }, &deps)],
            None => deps,
        }
    }

    /// Tokens per micro-batch on a rank (CP splits the sequence).
    fn tokens(&self) -> u64 {
        u64::from(self.t.micro_batch) * u64::from(self.t.seq / self.t.parallel.cp)
    }

    fn tp(&self) -> u64 {
        u64::from(self.t.parallel.tp)
    }

    /// Bytes of one activation tensor `[tokens, d]` in BF16, as the TP collectives see it.
    fn act_bytes(&self) -> u64 {
        self.tokens() * u64::from(self.t.model.d_model) * BF16
    }

    /// A TP collective of one activation (`op`, none: nothing), labelled
    /// `layer{l}/{what}-tp-{op}`; returns what follows it depends on.
    fn tp_coll(&mut self, l: u32, what: &str, op: Option<Collective>, deps: Vec<u32>) -> Vec<u32> {
        let Some(op) = op else {
            return deps;
        };
        let b = self.act_bytes();
        self.coll(
            &format!("layer{l}/{what}-tp-{}", op.name()),
            op,
            b,
            self.tp,
            deps,
        )
    }

    /// The collective `op` under SP, `otherwise` without it.
    fn sp_or(&self, op: Collective, otherwise: Option<Collective>) -> Option<Collective> {
        if self.t.parallel.sp {
            Some(op)
        } else {
            otherwise
        }
    }

    /// A TP "reduce" point (after a row-parallel GEMM) in the forward pass: all-reduce, or
    /// reduce-scatter under SP.
    fn tp_reduce(&mut self, l: u32, what: &str, deps: Vec<u32>) -> Vec<u32> {
        let op = self.sp_or(Collective::ReduceScatter, Some(Collective::AllReduce));
        self.tp_coll(l, what, op, deps)
    }

    /// A TP "gather" point (before a column-parallel GEMM): all-gather under SP, nothing else.
    fn tp_gather(&mut self, l: u32, what: &str, deps: Vec<u32>) -> Vec<u32> {
        let op = self.sp_or(Collective::AllGather, None);
        self.tp_coll(l, what, op, deps)
    }

    /// The backward of a TP reduce point: nothing (the gradient is replicated), or all-gather
    /// under SP.
    fn tp_reduce_bwd(&mut self, l: u32, what: &str, deps: Vec<u32>) -> Vec<u32> {
        let op = self.sp_or(Collective::AllGather, None);
        self.tp_coll(l, &format!("{what}-bwd"), op, deps)
    }

    /// The backward of a TP gather point: all-reduce of the input gradient (reduce-scatter
    /// under SP).
    fn tp_gather_bwd(&mut self, l: u32, what: &str, deps: Vec<u32>) -> Vec<u32> {
        let op = self.sp_or(Collective::ReduceScatter, Some(Collective::AllReduce));
        self.tp_coll(l, &format!("{what}-bwd"), op, deps)
    }

    fn kv_bytes(&self) -> u64 {
        let m = &self.t.model;
        let kv_local = u64::from(m.kv_heads).div_ceil(self.tp()) * m.head_dim();
        2 * u64::from(self.t.micro_batch) * u64::from(self.t.seq) * kv_local * BF16
    }

    /// Fused causal attention of one micro-batch, forward (`OpClass::Attention`) or backward:
    /// the kernel executes half the dense `4·q·s·hd` FLOPs (the causal mask skips the upper
    /// triangle; under CP, load-balanced chunks keep the half), and the backward twice that.
    fn attention(&self, class: OpClass) -> Compute {
        let m = &self.t.model;
        let heads = u64::from(m.heads) / self.tp();
        let hd = heads * m.head_dim();
        let q = self.tokens();
        let s = u64::from(self.t.seq);
        let b = u64::from(self.t.micro_batch);
        let passes = if class == OpClass::AttentionBackward {
            2.0
        } else {
            1.0
        };
        Compute {
            class,
            flops: passes * 2.0 * (q * s * hd) as f64,
            bytes: passes * (BF16 * (2 * q * hd + 2 * b * s * hd)) as f64,
            shape: Some([q as u32, s as u32, heads as u32]),
            duration: None,
        }
    }

    fn ew_bytes(&self) -> u64 {
        let shard = if self.t.parallel.sp { self.tp() } else { 1 };
        6 * self.act_bytes() / shard
    }

    /// The MLP activation between the up and the down GEMM over `rows` tokens, as one fused
    /// kernel (Megatron's fused bias-SwiGLU / bias-GELU): SwiGLU reads gate and up and writes
    /// their product forward, and backward reads those three and writes two gradients; GELU
    /// reads one and writes one forward, reads two and writes one backward.
    fn activation(&self, rows: u64, backward: bool) -> Compute {
        let tensors = match (self.t.model.gated_mlp, backward) {
            (true, false) => 3,
            (true, true) => 5,
            (false, false) => 2,
            (false, true) => 3,
        };
        let ffn_local = u64::from(self.t.model.ffn) / self.tp();
        elementwise(tensors * rows * ffn_local * BF16)
    }

    /// MoE token permutation (or unpermutation, the same bytes): the rank's tokens read once
    /// and written once per chosen expert, grouped by expert (Megatron's fused permute).
    fn permute_bytes(&self) -> u64 {
        let shard = if self.t.parallel.sp { self.tp() } else { 1 };
        self.act_bytes() * (1 + u64::from(self.t.model.top_k)) / shard
    }

    /// One layer's forward; returns the op its output depends on.
    fn layer_forward(&mut self, l: u32, input: Vec<u32>, tag: &str) -> Vec<u32> {
        let t = self.t;
        let m = &t.model;
        let (tok, d, tp) = (self.tokens(), u64::from(m.d_model), self.tp());
        let hd = m.head_dim();
        let qkv_n = (u64::from(m.heads) + 2 * u64::from(m.kv_heads)) * hd / tp;
        let x = self.tp_gather(l, &format!("attn{tag}"), input);
        let qkv = self.compute(&format!("layer{l}/qkv{tag}"), gemm(tok, qkv_n, d, 1.0), &x);
        let kv = self.kv_bytes();
        let x = self.coll(
            &format!("layer{l}/kv-cp-all-gather{tag}"),
            Collective::AllGather,
            kv,
            self.cp,
            vec![qkv],
        );
        let att = self.attention(OpClass::Attention);
        let a = self.compute(&format!("layer{l}/attention{tag}"), att, &x);
        let heads_local = u64::from(m.heads) * hd / tp;
        let o = self.compute(
            &format!("layer{l}/out-proj{tag}"),
            gemm(tok, d, heads_local, 1.0),
            &[a],
        );
        let x = self.tp_reduce(l, &format!("attn{tag}"), vec![o]);
        let ew = self.ew_bytes();
        let n = self.compute(&format!("layer{l}/norm{tag}"), elementwise(ew), &x);
        let x = self.tp_gather(l, &format!("mlp{tag}"), vec![n]);
        let up_n = if m.gated_mlp { 2 } else { 1 } * u64::from(m.ffn) / tp;
        let ffn_local = u64::from(m.ffn) / tp;
        let down = if m.is_moe() {
            let r = self.compute(
                &format!("layer{l}/router{tag}"),
                gemm(tok, u64::from(m.experts), d, 1.0 / tp as f64),
                &x,
            );
            let perm = elementwise(self.permute_bytes());
            let p = self.compute(&format!("layer{l}/permute{tag}"), perm, &[r]);
            let a2a = self.a2a_bytes();
            let x = self.coll(
                &format!("layer{l}/dispatch-ep-all-to-all{tag}"),
                Collective::AllToAll,
                a2a,
                self.ep,
                vec![p],
            );
            let routed = tok * u64::from(m.top_k);
            let up = self.compute(
                &format!("layer{l}/expert-up{tag}"),
                gemm(routed, up_n, d, 1.0),
                &x,
            );
            let act = self.activation(routed, false);
            let a = self.compute(&format!("layer{l}/expert-act{tag}"), act, &[up]);
            let dn = self.compute(
                &format!("layer{l}/expert-down{tag}"),
                gemm(routed, d, ffn_local, 1.0),
                &[a],
            );
            let x = self.coll(
                &format!("layer{l}/combine-ep-all-to-all{tag}"),
                Collective::AllToAll,
                a2a,
                self.ep,
                vec![dn],
            );
            vec![self.compute(&format!("layer{l}/unpermute{tag}"), perm, &x)]
        } else {
            let up = self.compute(
                &format!("layer{l}/mlp-up{tag}"),
                gemm(tok, up_n, d, 1.0),
                &x,
            );
            let act = self.activation(tok, false);
            let a = self.compute(&format!("layer{l}/mlp-act{tag}"), act, &[up]);
            vec![self.compute(
                &format!("layer{l}/mlp-down{tag}"),
                gemm(tok, d, ffn_local, 1.0),
                &[a],
            )]
        };
        let x = self.tp_reduce(l, &format!("mlp{tag}"), down);
        vec![self.compute(&format!("layer{l}/residual{tag}"), elementwise(ew), &x)]
    }

    fn a2a_bytes(&self) -> u64 {
        let shard = if self.t.parallel.sp { self.tp() } else { 1 };
        self.act_bytes() * u64::from(self.t.model.top_k) / shard
    }

    /// One layer's backward; returns the op its input gradient depends on.
    fn layer_backward(&mut self, l: u32, grad: Vec<u32>) -> Vec<u32> {
        let t = self.t;
        let m = &t.model;
        let (tok, d, tp) = (self.tokens(), u64::from(m.d_model), self.tp());
        let hd = m.head_dim();
        let ew = self.ew_bytes();
        let r = self.compute(&format!("layer{l}/residual-bwd"), elementwise(ew), &grad);
        let x = self.tp_reduce_bwd(l, "mlp", vec![r]);
        let up_n = if m.gated_mlp { 2 } else { 1 } * u64::from(m.ffn) / tp;
        let ffn_local = u64::from(m.ffn) / tp;
        let x = if m.is_moe() {
            let perm = elementwise(self.permute_bytes());
            let u = self.compute(&format!("layer{l}/unpermute-bwd"), perm, &x);
            let a2a = self.a2a_bytes();
            let x = self.coll(
                &format!("layer{l}/combine-bwd-ep-all-to-all"),
                Collective::AllToAll,
                a2a,
                self.ep,
                vec![u],
            );
            let routed = tok * u64::from(m.top_k);
            let dn = self.compute(
                &format!("layer{l}/expert-down-bwd"),
                gemm(routed, d, ffn_local, 2.0),
                &x,
            );
            let act = self.activation(routed, true);
            let a = self.compute(&format!("layer{l}/expert-act-bwd"), act, &[dn]);
            let up = self.compute(
                &format!("layer{l}/expert-up-bwd"),
                gemm(routed, up_n, d, 2.0),
                &[a],
            );
            let x = self.coll(
                &format!("layer{l}/dispatch-bwd-ep-all-to-all"),
                Collective::AllToAll,
                a2a,
                self.ep,
                vec![up],
            );
            let p = self.compute(&format!("layer{l}/permute-bwd"), perm, &x);
            vec![self.compute(
                &format!("layer{l}/router-bwd"),
                gemm(tok, u64::from(m.experts), d, 2.0 / tp as f64),
                &[p],
            )]
        } else {
            let dn = self.compute(
                &format!("layer{l}/mlp-down-bwd"),
                gemm(tok, d, ffn_local, 2.0),
                &x,
            );
            let act = self.activation(tok, true);
            let a = self.compute(&format!("layer{l}/mlp-act-bwd"), act, &[dn]);
            vec![self.compute(
                &format!("layer{l}/mlp-up-bwd"),
                gemm(tok, up_n, d, 2.0),
                &[a],
            )]
        };
        let x = self.tp_gather_bwd(l, "mlp", x);
        let n = self.compute(&format!("layer{l}/norm-bwd"), elementwise(ew), &x);
        let x = self.tp_reduce_bwd(l, "attn", vec![n]);
        let heads_local = u64::from(m.heads) * hd / tp;
        let o = self.compute(
            &format!("layer{l}/out-proj-bwd"),
            gemm(tok, d, heads_local, 2.0),
            &x,
        );
        if self.t.recompute == Recompute::Selective {
            let att = self.attention(OpClass::Attention);
            self.compute(&format!("layer{l}/attention-recompute"), att, &[o]);
        }
        let att = self.attention(OpClass::AttentionBackward);
        let a = self.compute(&format!("layer{l}/attention-bwd"), att, &[o]);
        let kv = self.kv_bytes();
        let x = self.coll(
            &format!("layer{l}/dkv-cp-reduce-scatter"),
            Collective::ReduceScatter,
            kv,
            self.cp,
            vec![a],
        );
        let qkv_n = (u64::from(m.heads) + 2 * u64::from(m.kv_heads)) * hd / tp;
        let q = self.compute(&format!("layer{l}/qkv-bwd"), gemm(tok, qkv_n, d, 2.0), &x);
        self.tp_gather_bwd(l, "attn", vec![q])
    }

    /// Parameters of layer `l` on this rank that the DP (dense) and expert-DP groups reduce.
    fn layer_grads(&self) -> (u64, u64) {
        let m = &self.t.model;
        let p = &self.t.parallel;
        let tp = self.tp();
        let dense = (m.attention_params() + m.router_params() + 2 * u64::from(m.d_model)) / tp;
        let experts = u64::from(m.experts) * m.mlp_params() / u64::from(p.ep) / tp;
        if m.is_moe() {
            (dense, experts)
        } else {
            (dense + experts, 0)
        }
    }

    fn reduce_grads(
        &mut self,
        label: &str,
        params: u64,
        slot: Option<u16>,
        deps: Vec<u32>,
    ) -> Vec<u32> {
        let bytes = params * u64::from(self.t.grad_bytes);
        let op = match self.t.parallel.dp_mode {
            DpMode::Ddp => Collective::AllReduce,
            DpMode::Fsdp => Collective::ReduceScatter,
        };
        if params == 0 || slot.is_none() {
            return Vec::new();
        }
        self.coll(
            &format!("{label}-grad-{}", op.name()),
            op,
            bytes,
            slot,
            deps,
        )
    }

    fn stage(&mut self, stage: u32) {
        let t = self.t;
        let p = &t.parallel;
        let m = &t.model;
        let mb = t.micro_batches();
        let actions = stage_actions(stage, p.pp, p.vpp, mb);
        let last_vs = |chunk: u32| chunk == p.vpp - 1 && stage == p.pp - 1;
        let first_vs = |chunk: u32| chunk == 0 && stage == 0;
        let send_bytes = {
            let shard = if p.sp { self.tp() } else { 1 };
            self.act_bytes() / shard
        };
        let tag = |mbi: u32, vs: u32, dir: u64| {
            (u64::from(mbi) * u64::from(p.pp * p.vpp) + u64::from(vs)) * 2 + dir
        };
        // Per chunk: backwards left (the last one triggers the gradient reduction), weights
        // gathered (FSDP).
        let mut backwards_left = vec![mb; p.vpp as usize];
        let mut gathered = vec![false; p.vpp as usize];
        let mut grad_ops: Vec<u32> = Vec::new();
        let (tok, d, tp) = (self.tokens(), u64::from(m.d_model), self.tp());
        let fsdp = p.dp_mode == DpMode::Fsdp && self.dp.is_some();
        for a in actions {
            let layers = t.layers_of(stage, a.chunk);
            let vs = a.chunk * p.pp + stage;
            match a.pass {
                Pass::Forward => {
                    let mut x = if first_vs(a.chunk) {
                        vec![self.compute("embedding", elementwise(2 * self.act_bytes()), &[])]
                    } else {
                        let kind = OpKind::Recv {
                            peer: PREV,
                            bytes: send_bytes,
                            tag: tag(a.micro_batch, vs - 1, 0),
                        };
                        vec![self.op("recv-activations", kind, &[])]
                    };
                    let gather = fsdp && !std::mem::replace(&mut gathered[a.chunk as usize], true);
                    let (dense, experts) = self.layer_grads();
                    let weight_bytes = (dense + experts) * BF16;
                    let mut prev_ag: Vec<u32> = Vec::new();
                    if gather {
                        prev_ag = self.coll(
                            &format!("layer{}/weights-dp-all-gather", layers.start),
                            Collective::AllGather,
                            weight_bytes,
                            self.dp,
                            Vec::new(),
                        );
                    }
                    for l in layers.clone() {
                        let mut input = x.clone();
                        if gather {
                            input.extend(&prev_ag);
                            if l + 1 < layers.end {
                                let mut deps = prev_ag.clone();
                                deps.extend(self.stream);
                                prev_ag = self.coll(
                                    &format!("layer{}/weights-dp-all-gather", l + 1),
                                    Collective::AllGather,
                                    weight_bytes,
                                    self.dp,
                                    deps,
                                );
                            }
                        }
                        x = self.layer_forward(l, input, "");
                    }
                    if last_vs(a.chunk) {
                        let vocab_local = u64::from(m.vocab).div_ceil(tp);
                        let h = self.compute("lm-head", gemm(tok, vocab_local, d, 1.0), &x);
                        self.compute("loss", elementwise(4 * tok * vocab_local), &[h]);
                    } else {
                        let kind = OpKind::Send {
                            peer: NEXT,
                            bytes: send_bytes,
                            tag: tag(a.micro_batch, vs, 0),
                        };
                        self.op("send-activations", kind, &x);
                    }
                }
                Pass::Backward => {
                    let mut g = if last_vs(a.chunk) {
                        let vocab_local = u64::from(m.vocab).div_ceil(tp);
                        vec![self.compute("lm-head-bwd", gemm(tok, vocab_local, d, 2.0), &[])]
                    } else {
                        let kind = OpKind::Recv {
                            peer: NEXT,
                            bytes: send_bytes,
                            tag: tag(a.micro_batch, vs + 1, 1),
                        };
                        vec![self.op("recv-gradients", kind, &[])]
                    };
                    let left = &mut backwards_left[a.chunk as usize];
                    *left -= 1;
                    let reduce = *left == 0;
                    for l in layers.clone().rev() {
                        if t.recompute == Recompute::Full {
                            let last = self.stream.into_iter().collect();
                            self.layer_forward(l, last, "-recompute");
                        }
                        g = self.layer_backward(l, g);
                        if reduce {
                            let (dense, experts) = self.layer_grads();
                            let dep: Vec<u32> = self.stream.into_iter().collect();
                            let (dp, edp) = (self.dp, self.edp);
                            grad_ops.extend(self.reduce_grads(
                                &format!("layer{l}/dense"),
                                dense,
                                dp,
                                dep.clone(),
                            ));
                            grad_ops.extend(self.reduce_grads(
                                &format!("layer{l}/expert"),
                                experts,
                                edp,
                                dep,
                            ));
                        }
                    }
                    if first_vs(a.chunk) {
                        self.compute("embedding-bwd", elementwise(2 * self.act_bytes()), &g);
                    } else {
                        let kind = OpKind::Send {
                            peer: PREV,
                            bytes: send_bytes,
                            tag: tag(a.micro_batch, vs, 1),
                        };
                        self.op("send-gradients", kind, &g);
                    }
                    if reduce && (first_vs(a.chunk) || last_vs(a.chunk)) {
                        let dep: Vec<u32> = self.stream.into_iter().collect();
                        let dp = self.dp;
                        let params = m.embedding_params() / tp;
                        grad_ops.extend(self.reduce_grads("embedding", params, dp, dep));
                    }
                }
            }
        }
        // Optimizer step: Adam reads and writes its FP32 state and the gradient shard, writes
        // BF16 weights (about 30 bytes per parameter of the shard).
        let params: u64 = crate::llm::memory(t)[stage as usize].params;
        let shard = if p.dp_mode == DpMode::Fsdp {
            u64::from(p.dp)
        } else {
            1
        };
        self.compute(
            "optimizer-step",
            elementwise(30 * params / shard),
            &grad_ops,
        );
    }
}
