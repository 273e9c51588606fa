//! A job's summary: the figures of `docs/outputs.md`, as text and as JSON.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::stats::{CommScope, JobStats};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CollectiveRow {
    pub op: &'static str,
    /// The communicator kind (`tp`, `dp`, `world`, ...).
    pub scope: String,
    pub ranks: usize,
    /// The algorithm and protocol that ran it (`ring/Simple`; `-` for one rank).
    pub algorithm: String,
    pub count: u64,
    /// nccl-tests size summed over instances.
    pub bytes: u64,
    /// Summed over instances, ms.
    pub time_ms: f64,
    pub mean_us: f64,
    /// nccl-tests bus bandwidth over all instances: Σ size × factor / Σ time, GB/s.
    pub busbw_gbps: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransferRow {
    pub count: u64,
    pub bytes: u64,
    pub time_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobReport {
    pub name: String,
    pub gpus: u32,
    pub gpu: &'static str,
    /// Simulated time of the iteration, ms.
    pub iteration_ms: f64,
    pub tokens: u64,
    pub tokens_per_s: f64,
    /// Model FLOPs (no recomputation) per GPU per second, TFLOP/s.
    pub model_tflops_per_gpu: f64,
    /// Model FLOPs utilisation: the above over the GPU's dense BF16 peak.
    pub mfu: f64,
    /// Every kernel's FLOPs (recomputation included) per GPU per second, TFLOP/s.
    pub hardware_tflops_per_gpu: f64,
    /// Shares of the iteration, averaged over ranks (they sum to 1).
    pub compute_fraction: f64,
    pub exposed_comm_fraction: f64,
    /// The exposed communication's share of the iteration by what it serves (`tp`, `cp`,
    /// `pp` for pipeline sends and receives, `dp`, `ep`, `other`), scopes with none left out.
    pub exposed_comm_by_scope: BTreeMap<&'static str, f64>,
    pub idle_fraction: f64,
    pub collectives: Vec<CollectiveRow>,
    pub transfers: TransferRow,
}

impl JobReport {
    pub fn new(s: &JobStats) -> JobReport {
        let secs = s.iteration_ns as f64 * 1e-9;
        let per_gpu = |flops: f64| {
            if secs > 0.0 {
                flops / f64::from(s.ranks.max(1)) / secs
            } else {
                0.0
            }
        };
        let span = s.iteration_ns as f64 * f64::from(s.ranks.max(1));
        let frac = |ns: u64| if span > 0.0 { ns as f64 / span } else { 0.0 };
        let (compute, exposed) = (frac(s.compute_ns), frac(s.exposed_comm_ns));
        JobReport {
            name: s.name.clone(),
            gpus: s.ranks,
            gpu: s.gpu,
            iteration_ms: s.iteration_ns as f64 * 1e-6,
            tokens: s.tokens,
            tokens_per_s: if secs > 0.0 {
                s.tokens as f64 / secs
            } else {
                0.0
            },
            model_tflops_per_gpu: per_gpu(s.model_flops) * 1e-12,
            mfu: per_gpu(s.model_flops) / s.peak_flops,
            hardware_tflops_per_gpu: per_gpu(s.hardware_flops) * 1e-12,
            compute_fraction: compute,
            exposed_comm_fraction: exposed,
            exposed_comm_by_scope: CommScope::ALL
                .iter()
                .zip(s.exposed_by_scope)
                .filter(|(_, ns)| *ns > 0)
                .map(|(scope, ns)| (scope.name(), frac(ns)))
                .collect(),
            idle_fraction: (1.0 - compute - exposed).max(0.0),
            collectives: s
                .collectives
                .iter()
                .map(|(k, t)| {
                    let time = t.time_ns as f64;
                    CollectiveRow {
                        op: k.op.name(),
                        scope: k.scope.clone(),
                        ranks: k.ranks,
                        algorithm: k
                            .algorithm
                            .map_or("-".to_string(), |(a, p)| format!("{a}/{p}")),
                        count: t.count,
                        bytes: t.bytes,
                        time_ms: time * 1e-6,
                        mean_us: time * 1e-3 / t.count.max(1) as f64,
                        busbw_gbps: if time > 0.0 {
                            t.bytes as f64 * k.op.busbw_factor(k.ranks) / time
                        } else {
                            0.0
                        },
                    }
                })
                .collect(),
            transfers: TransferRow {
                count: s.transfers.count,
                bytes: s.transfers.bytes,
                time_ms: s.transfers.time_ns as f64 * 1e-6,
            },
        }
    }

    /// The readable summary.
    pub fn render(&self) -> String {
        let mut out = format!(
            "job {}: {} × {}\n  iteration        {:>12.3} ms\n",
            self.name, self.gpus, self.gpu, self.iteration_ms
        );
        if self.tokens > 0 {
            out += &format!(
                "  throughput       {:>12.0} tokens/s\n  model TFLOP/s    {:>12.1} per GPU (MFU {:.1} %)\n",
                self.tokens_per_s,
                self.model_tflops_per_gpu,
                self.mfu * 100.0
            );
        }
        // Scopes in CommScope order, as the split is kept.
        let scopes: Vec<String> = CommScope::ALL
            .iter()
            .filter_map(|s| {
                self.exposed_comm_by_scope
                    .get(s.name())
                    .map(|f| format!("{} {:.1}", s.name(), f * 100.0))
            })
            .collect();
        let by_scope = if scopes.is_empty() {
            String::new()
        } else {
            format!(" ({})", scopes.join(" · "))
        };
        out += &format!(
            "  hardware TFLOP/s {:>12.1} per GPU\n  time split       compute {:.1} % · exposed communication {:.1} %{by_scope} · idle {:.1} %\n",
            self.hardware_tflops_per_gpu,
            self.compute_fraction * 100.0,
            self.exposed_comm_fraction * 100.0,
            self.idle_fraction * 100.0
        );
        if !self.collectives.is_empty() {
            out += "  collectives      op              scope  ranks  algorithm          count         bytes    time ms    mean µs  busbw GB/s\n";
            for c in &self.collectives {
                out += &format!(
                    "                   {:<15} {:<6} {:>5}  {:<15} {:>8} {:>13} {:>10.3} {:>10.1} {:>11.1}\n",
                    c.op,
                    c.scope,
                    c.ranks,
                    c.algorithm,
                    c.count,
                    c.bytes,
                    c.time_ms,
                    c.mean_us,
                    c.busbw_gbps
                );
            }
        }
        if self.transfers.count > 0 {
            out += &format!(
                "  send/recv        {} transfers, {} bytes, {:.3} ms in all\n",
                self.transfers.count, self.transfers.bytes, self.transfers.time_ms
            );
        }
        out
    }
}
