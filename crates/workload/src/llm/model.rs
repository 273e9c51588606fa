//! Transformer model descriptions: presets from the papers and parameter / FLOP counts.
//!
//! Parameters (per layer): attention `Q, O: d × (h·hd)` and `K, V: d × (kv·hd)`, MLP per expert
//! `(gated ? 3 : 2) · d · ffn`, a router `d × experts` for MoE layers and two norms `2d`; plus the
//! input embedding and an untied LM head, `vocab × d` each, and a final norm.
//!
//! Model FLOPs per token of training (the usual MFU convention, as the Llama 3 paper and
//! Megatron-LM count it): `6 · P_active + 12 · L · (h·hd) · seq`, where `P_active` counts the
//! matrix-multiply parameters a token goes through (every weight but the input embedding, which
//! is a lookup; `top_k` experts of each MoE layer), and the attention term is non-causal (scores
//! and values, forward and backward).

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModelSpec {
    pub name: String,
    pub layers: u32,
    pub d_model: u32,
    pub ffn: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub vocab: u32,
    /// SwiGLU (three MLP matrices) rather than GELU (two).
    pub gated_mlp: bool,
    /// Experts per MoE layer (1 = dense).
    pub experts: u32,
    /// Experts each token goes through.
    pub top_k: u32,
}

impl ModelSpec {
    fn preset(name: &str, layers: u32, d: u32, ffn: u32, heads: u32, kv: u32, vocab: u32) -> Self {
        ModelSpec {
            name: name.to_string(),
            layers,
            d_model: d,
            ffn,
            heads,
            kv_heads: kv,
            vocab,
            gated_mlp: true,
            experts: 1,
            top_k: 1,
        }
    }

    /// Llama 3 (Table 3 of the Llama 3 paper), GPT-3 175B, Mixtral 8×7B.
    pub fn presets() -> Vec<ModelSpec> {
        vec![
            Self::preset("llama3-8b", 32, 4096, 14336, 32, 8, 128_256),
            Self::preset("llama3-70b", 80, 8192, 28672, 64, 8, 128_256),
            Self::preset("llama3-405b", 126, 16384, 53248, 128, 8, 128_256),
            ModelSpec {
                gated_mlp: false,
                ..Self::preset("gpt3-175b", 96, 12288, 49152, 96, 96, 50_257)
            },
            ModelSpec {
                experts: 8,
                top_k: 2,
                ..Self::preset("mixtral-8x7b", 32, 4096, 14336, 32, 8, 32_000)
            },
        ]
    }

    pub fn named(name: &str) -> Option<ModelSpec> {
        Self::presets()
            .into_iter()
            .find(|m| m.name.eq_ignore_ascii_case(name))
    }

    pub fn head_dim(&self) -> u64 {
        u64::from(self.d_model / self.heads.max(1))
    }

    pub fn is_moe(&self) -> bool {
        self.experts > 1
    }

    /// Q, K, V, O weights of one layer.
    pub fn attention_params(&self) -> u64 {
        let d = u64::from(self.d_model);
        let hd = self.head_dim();
        2 * d * u64::from(self.heads) * hd + 2 * d * u64::from(self.kv_heads) * hd
    }

    /// One expert's (or the dense) MLP weights.
    pub fn mlp_params(&self) -> u64 {
        let m = if self.gated_mlp { 3 } else { 2 };
        m * u64::from(self.d_model) * u64::from(self.ffn)
    }

    pub fn router_params(&self) -> u64 {
        if self.is_moe() {
            u64::from(self.d_model) * u64::from(self.experts)
        } else {
            0
        }
    }

    /// All weights of one layer.
    pub fn layer_params(&self) -> u64 {
        self.attention_params()
            + u64::from(self.experts) * self.mlp_params()
            + self.router_params()
            + 2 * u64::from(self.d_model)
    }

    /// Input embedding or LM head.
    pub fn embedding_params(&self) -> u64 {
        u64::from(self.vocab) * u64::from(self.d_model)
    }

    pub fn total_params(&self) -> u64 {
        u64::from(self.layers) * self.layer_params()
            + 2 * self.embedding_params()
            + u64::from(self.d_model)
    }

    /// Matrix-multiply parameters one token goes through.
    pub fn active_matmul_params(&self) -> u64 {
        u64::from(self.layers)
            * (self.attention_params()
                + u64::from(self.top_k) * self.mlp_params()
                + self.router_params())
            + self.embedding_params()
    }

    /// Training FLOPs per token at sequence length `seq` (module docs).
    pub fn flops_per_token(&self, seq: u64) -> f64 {
        6.0 * self.active_matmul_params() as f64
            + 12.0
                * f64::from(self.layers)
                * (u64::from(self.heads) * self.head_dim()) as f64
                * seq as f64
    }
}
