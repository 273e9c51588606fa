//! The compute and memory model: how long a kernel takes on a GPU.
//!
//! Model: a roofline with per-class efficiencies (not calibrated on hardware in this repository;
//! the figures are the vendors' dense BF16 peaks and HBM bandwidths, and the efficiencies are
//! documented assumptions in `docs/workloads.md`):
//!
//! `time = max(flops / (peak · e_class), bytes / (hbm · e_mem)) + launch`
//!
//! - GEMM: `e = e_gemm · q(m, 128) · q(n, 128) · q(k, 64) · s`, where `q(d, t) = d / (t·⌈d/t⌉)`
//!   is tile quantisation (a dimension that is not a multiple of the tile wastes the last tile)
//!   and `s = W / (W + W₀)` a small-problem factor for GEMMs too small to fill the SMs
//!   (`W = m·n·k`, `W₀ = 2²⁴`, about a 256³ GEMM, where half the peak is reached).
//! - Attention (fused, flash-attention style): `e_attn`.
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
    pub attention: f64,
    pub memory: f64,
    /// Fixed cost per kernel, ns.
    pub launch_ns: u64,
}

impl Default for Efficiency {
    /// Large BF16 GEMMs reach 70-80 % of the dense peak on Hopper; fused attention about 60 %
    /// of it in the forward pass and less in the backward, taken together as 55 %; streaming
    /// kernels reach about 85 % of HBM bandwidth.
    fn default() -> Self {
        Efficiency {
            gemm: 0.75,
            attention: 0.55,
            memory: 0.85,
            launch_ns: 2_000,
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
                    let work = f64::from(m) * f64::from(n) * f64::from(k);
                    let small = work / (work + (1u64 << 24) as f64);
                    e.gemm
                        * quantisation(m, 128)
                        * quantisation(n, 128)
                        * quantisation(k, 64)
                        * small
                }
                None => e.gemm,
            },
            OpClass::Attention => e.attention,
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
