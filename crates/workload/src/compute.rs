//! The compute and memory model: how long a kernel takes on a GPU.
//!
//! Model: a roofline with per-class efficiencies. The peaks are the vendors' dense BF16 rates and
//! HBM bandwidths; the efficiencies were fitted to kernels measured on an H100 SXM (cuBLAS GEMMs
//! and cuDNN fused attention at Llama 3 shapes, `docs/calibration.md`, the measurements in
//! `docs/calibration/h100-sxm.csv`) and are assumed for the other GPUs:
//!
//! `time = max(flops / (peak · e_class), bytes / (hbm · e_mem)) + t_fixed`
//!
//! - GEMM: `e = e_gemm · q(m, 128) · q(n, 128) · q(k, 64)`, where `q(d, t) = d / (t·⌈d/t⌉)` is
//!   tile quantisation (a dimension that is not a multiple of the tile wastes the last tile).
//!   Small GEMMs are slow through `t_fixed` alone: the fit found no further small-problem term.
//! - Fused causal attention, forward and backward apart: `e = e_attn · B / (B + B₀)` with
//!   `B = heads · ⌈q/128⌉` the kernel's blocks (its shape is `[q tokens, key tokens, heads]`):
//!   few heads on short sequences leave SMs idle.
//! - Element-wise and other: compute at `e_gemm`, usually memory-bound.
//! - A kernel with a measured time and no FLOP count (a trace's `duration_micros`) takes that time.

use fabricsim_topology::Nanos;

use crate::graph::{Compute, OpClass};

/// A GPU's peak rates and memory.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct GpuSpec {
    pub name: &'static str,
    /// Dense BF16 tensor-core peak, FLOP/s.
    pub peak_flops: f64,
    /// HBM bandwidth, bytes/s.
    pub hbm_bandwidth: f64,
    /// HBM capacity, bytes.
    pub hbm_bytes: u64,
}

/// The efficiencies of the roofline.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Efficiency {
    pub gemm: f64,
    /// Fused causal attention, forward; of its executed FLOPs.
    pub attention: f64,
    /// Its backward.
    pub attention_bwd: f64,
    /// Blocks at which attention reaches half its efficiency, forward and backward.
    pub attention_blocks: f64,
    pub attention_bwd_blocks: f64,
    pub memory: f64,
    /// Fixed time per kernel (launch and ramp), ns.
    pub launch_ns: u64,
}

impl Default for Efficiency {
    /// Fitted to an H100 SXM (`tools/calibrate/fit.py` on `docs/calibration/h100-sxm.csv`):
    /// 163 GEMMs within 5.2 % RMS, 18 attention forwards within 3.2 %, 18 backwards within
    /// 5.0 %; the memory figure is the median of a device copy and residual adds.
    fn default() -> Self {
        Efficiency {
            gemm: 0.72,
            attention: 0.605,
            attention_bwd: 0.40,
            attention_blocks: 120.0,
            attention_bwd_blocks: 105.0,
            memory: 0.89,
            launch_ns: 6_500,
        }
    }
}

const GB: u64 = 1_000_000_000;

/// Vendor datasheet figures (dense, no sparsity).
pub const GPUS: [GpuSpec; 4] = [
    GpuSpec {
        name: "H100",
        peak_flops: 989e12,
        hbm_bandwidth: 3.35e12,
        hbm_bytes: 80 * GB,
    },
    GpuSpec {
        name: "H200",
        peak_flops: 989e12,
        hbm_bandwidth: 4.8e12,
        hbm_bytes: 141 * GB,
    },
    GpuSpec {
        name: "B200",
        peak_flops: 2250e12,
        hbm_bandwidth: 8.0e12,
        hbm_bytes: 192 * GB,
    },
    GpuSpec {
        name: "A100",
        peak_flops: 312e12,
        hbm_bandwidth: 2.039e12,
        hbm_bytes: 80 * GB,
    },
];

impl GpuSpec {
    /// Case-insensitive: `h100`, `H200`, ...
    pub fn named(name: &str) -> Option<GpuSpec> {
        GPUS.into_iter().find(|g| g.name.eq_ignore_ascii_case(name))
    }

    pub fn names() -> Vec<&'static str> {
        GPUS.iter().map(|g| g.name).collect()
    }
}

/// A GPU and the efficiencies it runs at.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ComputeModel {
    pub gpu: GpuSpec,
    pub efficiency: Efficiency,
}

fn quantisation(d: u32, tile: u32) -> f64 {
    if d == 0 {
        return 1.0;
    }
    let tiles = d.div_ceil(tile);
    f64::from(d) / f64::from(tiles * tile)
}

/// `B / (B + B₀)` for an attention kernel of shape `[q, key tokens, heads]`; 1 without a shape.
fn occupancy(c: &Compute, half: f64) -> f64 {
    match c.shape {
        Some([q, _, heads]) => {
            let blocks = f64::from(heads) * f64::from(q.div_ceil(128));
            blocks / (blocks + half)
        }
        None => 1.0,
    }
}

impl ComputeModel {
    pub fn new(gpu: GpuSpec) -> ComputeModel {
        ComputeModel {
            gpu,
            efficiency: Efficiency::default(),
        }
    }

    /// The fraction of peak a kernel of this class and shape reaches when compute-bound.
    pub fn compute_efficiency(&self, c: &Compute) -> f64 {
        let e = &self.efficiency;
        match c.class {
            OpClass::Gemm => match c.shape {
                Some([m, n, k]) => {
                    e.gemm * quantisation(m, 128) * quantisation(n, 128) * quantisation(k, 64)
                }
                None => e.gemm,
            },
            OpClass::Attention => e.attention * occupancy(c, e.attention_blocks),
            OpClass::AttentionBackward => e.attention_bwd * occupancy(c, e.attention_bwd_blocks),
            OpClass::Elementwise | OpClass::Other => e.gemm,
        }
    }

    /// How long `c` takes.
    pub fn time(&self, c: &Compute) -> Nanos {
        if c.flops <= 0.0 && c.bytes <= 0.0 {
            return c.duration.unwrap_or(Nanos(0));
        }
        let compute = c.flops / (self.gpu.peak_flops * self.compute_efficiency(c));
        let memory = c.bytes / (self.gpu.hbm_bandwidth * self.efficiency.memory);
        let ns = compute.max(memory) * 1e9;
        Nanos(ns.round() as u64 + self.efficiency.launch_ns)
    }

    /// A memory op of `bytes` at HBM bandwidth.
    pub fn memory_time(&self, bytes: u64) -> Nanos {
        let ns = bytes as f64 / (self.gpu.hbm_bandwidth * self.efficiency.memory) * 1e9;
        Nanos(ns.round() as u64)
    }
}
