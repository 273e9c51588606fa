//! Memory per GPU, per pipeline stage (the model in `docs/workloads.md`):
//!
//! - parameters on a rank `P` = its stage's layers (experts divided by EP) and, on the first and
//!   last stage, the embedding and LM head, all divided by TP;
//! - weights: BF16, `2·P` (FSDP as Llama 3 runs it keeps the gathered weights through the
//!   iteration, so the working copy is whole too);
//! - gradients: `grad_bytes·P` (FP32 accumulation), divided by DP under FSDP;
//! - optimizer: Adam's FP32 master copy and two moments, `12·P`, divided by DP under FSDP;
//! - activations per layer per micro-batch: the tensors a layer keeps for its backward, counted
//!   from the model's shapes in BF16 as Korthikanti et al. count them ("Reducing Activation
//!   Recomputation in Large Transformer Models", §4), with fused (flash) attention so no score
//!   matrix is kept and no dropout (Llama and Mixtral train without): per token, attention keeps
//!   its norm's input, the QKV projection's input, Q, K, V and its output
//!   (`2d + 2·h·hd + 2·kv·hd` elements); a gated MLP keeps its norm's input, its input, the gate
//!   and up projections and their product (`2d + 3·ffn`, times `top_k` for the MLP part of MoE),
//!   a GELU MLP its norm's and its input, the GELU's input and output (`2d + 2·ffn`). With
//!   sequence parallelism everything is divided by `t`; without it the norms' and projections'
//!   inputs (`4d`) are whole. Tokens per micro-batch `s·b`, `s` = sequence / CP. (For GPT-3's
//!   shapes this is Korthikanti's `34·s·b·d/t` less the dropout masks.) Under full
//!   recomputation only each layer's input, `2·s·b·d` (divided by `t` with SP), plus one
//!   layer's full set for the layer being recomputed; times the (micro-batch, chunk) pairs the
//!   stage's schedule holds at once, each with its chunk's layers
//!   ([`super::schedule::in_flight_layers`]);
//! - the last stage's FP32 logits, `4·s·b·vocab/t`.

use serde::Serialize;

use super::schedule::in_flight_layers;
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
    let full_layer = layer_activations(t, s * b);
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
            let live = in_flight_layers(stage, p.pp, p.vpp, micro_batches, |c| {
                t.layers_of(stage, c).len() as u64
            });
            let mut activations = live * kept_layer;
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

/// Bytes one layer keeps for its backward for `tokens` tokens of a micro-batch (module docs).
fn layer_activations(t: &Training, tokens: u64) -> u64 {
    let m = &t.model;
    let (d, hd, ffn) = (u64::from(m.d_model), m.head_dim(), u64::from(m.ffn));
    let q = u64::from(m.heads) * hd;
    let kv = u64::from(m.kv_heads) * hd;
    let mlp = if m.gated_mlp { 3 * ffn } else { 2 * ffn } * u64::from(m.top_k);
    // Inputs of the two norms and of the two projections they feed.
    let whole = 4 * d;
    let sharded = 2 * q + 2 * kv + mlp;
    let tp = u64::from(t.parallel.tp);
    let per_token = if t.parallel.sp {
        (whole + sharded) / tp
    } else {
        whole + sharded / tp
    };
    2 * per_token * tokens
}
