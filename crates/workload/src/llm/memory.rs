//! Memory per GPU, per pipeline stage (the model in `docs/workloads.md`):
//!
//! - parameters on a rank `P` = its stage's layers (experts divided by EP) and, on the first and
//!   last stage, the embedding and LM head, all divided by TP;
//! - weights: BF16, `2·P` (FSDP as Llama 3 runs it keeps the gathered weights through the
//!   iteration, so the working copy is whole too);
//! - gradients: `grad_bytes·P` (FP32 accumulation), divided by DP under FSDP;
//! - optimizer: Adam's FP32 master copy and two moments, `12·P`, divided by DP under FSDP;
//! - activations per layer per micro-batch (Korthikanti et al., "Reducing Activation
//!   Recomputation in Large Transformer Models", with fused attention so no score matrix is
//!   kept): `s·b·d·(10 + 24/t)` bytes without sequence parallelism, `34·s·b·d/t` with it
//!   (`s` = sequence / CP); under full recomputation only each layer's input, `2·s·b·d`
//!   (divided by `t` with SP), plus one layer's full set for the layer being recomputed; times
//!   the (micro-batch, chunk) pairs the stage's schedule holds at once
//!   ([`super::schedule::in_flight`]);
//! - the last stage's FP32 logits, `4·s·b·vocab/t`.

use serde::Serialize;

use super::schedule::in_flight;
use super::{DpMode, Recompute, Training};

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MemoryBreakdown {
    pub stage: u32,
    /// Parameters held by one GPU of the stage.
    pub params: u64,
    pub weights: u64,
    pub grads: u64,
    pub optimizer: u64,
    pub activations: u64,
    pub total: u64,
    pub hbm: u64,
}

/// The memory of each stage's GPUs.
pub fn memory(t: &Training) -> Vec<MemoryBreakdown> {
    let p = &t.parallel;
    let m = &t.model;
    let tp = u64::from(p.tp);
    let dense_layer = m.attention_params() + m.router_params() + 2 * u64::from(m.d_model);
    let experts_layer = u64::from(m.experts) * m.mlp_params() / u64::from(p.ep);
    let s = u64::from(t.seq / p.cp);
    let b = u64::from(t.micro_batch);
    let d = u64::from(m.d_model);
    let sbd = s * b * d;
    let full_layer = if p.sp {
        34 * sbd / tp
    } else {
        sbd * 10 + 24 * sbd / tp
    };
    let kept_layer = match t.recompute {
        Recompute::None | Recompute::Selective => full_layer,
        Recompute::Full => {
            if p.sp {
                2 * sbd / tp
            } else {
                2 * sbd
            }
        }
    };
    let micro_batches = t.micro_batches();
    (0..p.pp)
        .map(|stage| {
            let layers: u64 = (0..p.vpp)
                .map(|c| u64::from(t.layers_of(stage, c).len() as u32))
                .sum();
            let mut params = layers * (dense_layer + experts_layer);
            if stage == 0 {
                params += m.embedding_params();
            }
            if stage == p.pp - 1 {
                params += m.embedding_params() + d;
            }
            params /= tp;
            let shard = match p.dp_mode {
                DpMode::Ddp => 1,
                DpMode::Fsdp => u64::from(p.dp),
            };
            let weights = 2 * params;
            let grads = u64::from(t.grad_bytes) * params / shard;
            let optimizer = 12 * params / shard;
            let per_chunk_layers = layers / u64::from(p.vpp);
            let live = u64::from(in_flight(stage, p.pp, p.vpp, micro_batches));
            let mut activations = live * per_chunk_layers * kept_layer;
            if t.recompute == Recompute::Full {
                activations += full_layer;
            }
            if stage == p.pp - 1 {
                activations += 4 * s * b * u64::from(m.vocab) / tp;
            }
            let total = weights + grads + optimizer + activations;
            MemoryBreakdown {
                stage,
                params,
                weights,
                grads,
                optimizer,
                activations,
                total,
                hbm: t.gpu.hbm_bytes,
            }
        })
        .collect()
}
