//! The LLM training workload generator: a model, a parallel layout and a batch become per-rank op
//! DAGs ([`generate`]), with the memory each rank needs ([`memory`]).
//!
//! Ranks are laid out in a chosen order ([`RankOrder`]), by default Llama 3's `[TP, CP, PP, DP]`,
//! innermost first: `rank = tp + TP·(cp + CP·(pp + PP·dp))`. Expert parallelism splits the DP
//! dimension ([`layout`]).

pub mod generate;
pub mod layout;
pub mod memory;
pub mod model;
pub mod schedule;

use serde::Serialize;

pub use generate::generate;
pub use layout::RankOrder;
pub use memory::{memory, MemoryBreakdown};
pub use model::ModelSpec;

use crate::compute::GpuSpec;

/// How data parallelism shards state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DpMode {
    /// Replicated weights and optimizer; gradients all-reduced per layer after the last
    /// micro-batch's backward.
    Ddp,
    /// FSDP as Llama 3 runs it: weights all-gathered per layer before the first forward (one
    /// layer of prefetch, not resharded after forward, so no second all-gather in backward);
    /// gradients reduce-scattered per layer after the last micro-batch's backward; gradients and
    /// optimizer state sharded.
    Fsdp,
}

/// Activation recomputation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recompute {
    None,
    /// Attention core recomputed in backward; its activations are not kept.
    Selective,
    /// Each layer's forward replayed before its backward; only layer inputs are kept.
    Full,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Parallelism {
    pub tp: u32,
    /// Sequence parallelism inside the TP group (all-gather / reduce-scatter instead of
    /// all-reduce; activations sharded by TP).
    pub sp: bool,
    pub cp: u32,
    pub pp: u32,
    /// Virtual stages per pipeline rank (interleaved 1F1B when above 1).
    pub vpp: u32,
    pub dp: u32,
    pub dp_mode: DpMode,
    pub ep: u32,
    /// How the TP, CP, PP and DP coordinates are laid onto consecutive ranks.
    pub order: RankOrder,
}

impl Parallelism {
    pub fn world(&self) -> u32 {
        self.tp * self.cp * self.pp * self.dp
    }
}

/// One training job's workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Training {
    pub model: ModelSpec,
    pub parallel: Parallelism,
    pub seq: u32,
    pub micro_batch: u32,
    /// Sequences per iteration over all data-parallel replicas.
    pub global_batch: u32,
    pub recompute: Recompute,
    /// Bytes per gradient element in the data-parallel reduction (4: FP32, as Llama 3).
    pub grad_bytes: u32,
    pub gpu: GpuSpec,
}

/// A configuration that cannot be generated.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("{what} must be at least 1")]
    Zero { what: &'static str },
    #[error("{what} ({value}) must divide {of} ({total})")]
    Divides {
        what: &'static str,
        value: u32,
        of: &'static str,
        total: u32,
    },
    #[error("{layers} layers cannot fill {pp} pipeline stages × {vpp} virtual stages")]
    TooFewLayers { layers: u32, pp: u32, vpp: u32 },
    #[error("interleaved 1F1B needs the micro-batch count ({micro_batches}) to be a multiple of PP ({pp})")]
    Interleave { micro_batches: u32, pp: u32 },
    #[error("expert parallelism needs a mixture-of-experts model; `{model}` is dense")]
    DenseEp { model: String },
    #[error("stage {stage} needs {need:.1} GB per GPU (weights {weights:.1}, gradients {grads:.1}, optimizer {optimizer:.1}, activations {activations:.1}) but a {gpu} has {have:.1} GB")]
    OutOfMemory {
        stage: u32,
        need: f64,
        weights: f64,
        grads: f64,
        optimizer: f64,
        activations: f64,
        gpu: &'static str,
        have: f64,
    },
}

impl Training {
    /// Micro-batches per data-parallel replica.
    pub fn micro_batches(&self) -> u32 {
        self.global_batch / (self.micro_batch * self.parallel.dp).max(1)
    }

    /// Tokens per iteration.
    pub fn tokens(&self) -> u64 {
        u64::from(self.global_batch) * u64::from(self.seq)
    }

    /// Checks the layout against the model and the batch.
    pub fn check(&self) -> Result<(), LlmError> {
        let p = &self.parallel;
        let m = &self.model;
        for (what, v) in [
            ("tp", p.tp),
            ("cp", p.cp),
            ("pp", p.pp),
            ("vpp", p.vpp),
            ("dp", p.dp),
            ("ep", p.ep),
            ("seq", self.seq),
            ("micro_batch", self.micro_batch),
            ("global_batch", self.global_batch),
            ("layers", m.layers),
            ("heads", m.heads),
            ("kv_heads", m.kv_heads),
            ("d_model", m.d_model),
            ("ffn", m.ffn),
            ("vocab", m.vocab),
            ("experts", m.experts),
            ("top_k", m.top_k),
        ] {
            if v == 0 {
                return Err(LlmError::Zero { what });
            }
        }
        let divides = |what, value: u32, of, total: u32| {
            if total.is_multiple_of(value) {
                Ok(())
            } else {
                Err(LlmError::Divides {
                    what,
                    value,
                    of,
                    total,
                })
            }
        };
        divides("tp", p.tp, "heads", m.heads)?;
        divides("heads", m.heads, "d_model", m.d_model)?;
        divides("tp", p.tp, "ffn", m.ffn)?;
        divides("2 × cp", 2 * p.cp, "seq", self.seq)?;
        divides(
            "micro_batch × dp",
            self.micro_batch * p.dp,
            "global_batch",
            self.global_batch,
        )?;
        if p.ep > 1 && !m.is_moe() {
            return Err(LlmError::DenseEp {
                model: m.name.clone(),
            });
        }
        divides("ep", p.ep, "dp", p.dp)?;
        divides("ep", p.ep, "experts", m.experts)?;
        if m.layers < p.pp * p.vpp {
            return Err(LlmError::TooFewLayers {
                layers: m.layers,
                pp: p.pp,
                vpp: p.vpp,
            });
        }
        if p.vpp > 1 && !self.micro_batches().is_multiple_of(p.pp) {
            return Err(LlmError::Interleave {
                micro_batches: self.micro_batches(),
                pp: p.pp,
            });
        }
        Ok(())
    }

    /// Layers of virtual stage `v·PP + stage`: as even as possible, earlier stages taking the
    /// remainder's extra layers last (so the first and last stage, which also hold the
    /// embedding and the LM head, get the fewer layers when they do not divide).
    pub fn layers_of(&self, stage: u32, chunk: u32) -> std::ops::Range<u32> {
        let p = &self.parallel;
        let parts = p.pp * p.vpp;
        let i = chunk * p.pp + stage;
        let (base, extra) = (self.model.layers / parts, self.model.layers % parts);
        // Spread the extra layers over the middle virtual stages.
        let first_extra = (parts - extra) / 2;
        let gets = |j: u32| u32::from(j >= first_extra && j < first_extra + extra);
        let start: u32 = (0..i).map(|j| base + gets(j)).sum();
        start..start + base + gets(i)
    }
}
