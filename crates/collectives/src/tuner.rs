//! Choosing an algorithm and protocol as NCCL's tuner does: for each candidate, a predicted time
//! = base latency + steps × per-step latency + bus bytes / (bus bandwidth × derating), and the
//! fastest wins (REFERENCE.md §4, NVIDIA/nccl `src/graph/tuning.cc`). The prediction is the
//! cost model's, not the simulator's: the simulation then runs the chosen pair on the fabric.
//!
//! Bandwidths come from the fabric: NVLink per GPU (GPU → NVSwitch link) and the network per GPU
//! (the slower of PCIe and the NIC's uplink). A multi-host ring or tree moves a host's traffic
//! over all its ranks' NICs. Derating as NCCL: LL halves bandwidth, LL128 × 0.92, tree
//! all-reduce × 0.92, NVLS × 0.85 (Hopper).

use fabricsim_topology::{NodeKind, Topology};

use crate::algo::Algorithm;
use crate::layout::Ranks;
use crate::op::Collective;
use crate::protocol::{HopKind, Protocol};

/// A candidate and its predicted time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    /// The cost model's prediction, in µs.
    pub predicted_us: f64,
}

/// Per-GPU bandwidths (bytes/s) the cost model uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bandwidths {
    pub nvlink: f64,
    pub network: f64,
}

impl Bandwidths {
    /// Read off the fabric at `ranks`' first GPU.
    pub fn of(topo: &Topology, ranks: &Ranks) -> Bandwidths {
        let gpu = ranks.gpu(0);
        let mut nvlink = 0.0f64;
        let mut network = f64::INFINITY;
        for &l in topo.out_links(gpu) {
            let link = topo.link(l);
            match topo.kind(link.dst) {
                NodeKind::NvSwitch => nvlink = nvlink.max(link.capacity.0 as f64),
                NodeKind::Nic => {
                    network = network.min(link.capacity.0 as f64);
                    for &u in topo.out_links(link.dst) {
                        let up = topo.link(u);
                        if matches!(topo.kind(up.dst), NodeKind::Switch(_)) {
                            network = network.min(up.capacity.0 as f64);
                        }
                    }
                }
                _ => {}
            }
        }
        Bandwidths {
            nvlink,
            network: if network.is_finite() { network } else { 0.0 },
        }
    }
}

/// Candidates the tuner weighs for `op` (NCCL's, plus PXN for point-to-point).
fn candidates(op: Collective, ranks: &Ranks) -> Vec<Algorithm> {
    let one_host = ranks.hosts().len() == 1;
    match op {
        Collective::AllReduce if one_host => {
            vec![Algorithm::Ring, Algorithm::Tree, Algorithm::Nvls]
        }
        Collective::AllReduce => vec![Algorithm::Ring, Algorithm::Tree],
        Collective::AllGather | Collective::ReduceScatter if one_host => {
            vec![Algorithm::Ring, Algorithm::Nvls]
        }
        Collective::AllGather | Collective::ReduceScatter => vec![Algorithm::Ring],
        Collective::Broadcast | Collective::Reduce => vec![Algorithm::Ring],
        Collective::AllToAll | Collective::AllToAllV | Collective::SendRecv
            if !one_host && ranks.hosts().iter().any(|h| h.len() > 1) =>
        {
            vec![Algorithm::Pxn]
        }
        _ => vec![Algorithm::Direct],
    }
}

/// The cost model's time for one candidate, in µs.
pub fn predict(
    op: Collective,
    bytes: u64,
    ranks: &Ranks,
    bw: Bandwidths,
    algorithm: Algorithm,
    protocol: Protocol,
) -> f64 {
    let n = ranks.len() as f64;
    let hosts = ranks.hosts().len() as f64;
    let k = (n / hosts).max(1.0);
    let hop = if hosts > 1.0 {
        HopKind::Network
    } else {
        HopKind::NvLink
    };
    let lat = protocol.step_latency(hop).0 as f64 / 1e3;
    let nv_lat = protocol.step_latency(HopKind::NvLink).0 as f64 / 1e3;
    let base = protocol.base_latency(algorithm.tree_like()).0 as f64 / 1e3;
    let derate = match protocol {
        Protocol::Ll => 0.5,
        Protocol::Ll128 => 0.92,
        Protocol::Simple => 1.0,
    };
    // Bus bandwidth of a host's traffic: NVLink inside one host, else all its NICs.
    let bus = if hosts > 1.0 {
        bw.nvlink.min(bw.network * k)
    } else {
        bw.nvlink
    };
    let s = bytes as f64;
    let (steps_lat, volume, bandwidth) = match algorithm {
        Algorithm::Ring => {
            let steps = match op {
                Collective::AllReduce => 2.0 * (n - 1.0),
                _ => n - 1.0,
            };
            (
                steps * lat,
                s * op.busbw_factor(ranks.len()).max(1.0 / n),
                bus,
            )
        }
        Algorithm::Tree => {
            let depth = hosts.log2().ceil() + (k - 1.0);
            let passes = if op == Collective::AllReduce {
                2.0
            } else {
                1.0
            };
            (passes * depth * lat, s, bus * 0.92)
        }
        Algorithm::Nvls => (2.0 * nv_lat, s * (n + 1.0) / n, bw.nvlink * 0.85),
        _ => (lat, s * op.busbw_factor(ranks.len()).max(1.0 / n), bus),
    };
    base + steps_lat + volume / (bandwidth * derate).max(1.0) * 1e6
}

/// The fastest candidate for `op` at `bytes`, and every candidate weighed.
pub fn choose(op: Collective, bytes: u64, ranks: &Ranks, bw: Bandwidths) -> (Choice, Vec<Choice>) {
    let mut all = Vec::new();
    for algorithm in candidates(op, ranks) {
        for protocol in Protocol::ALL {
            all.push(Choice {
                algorithm,
                protocol,
                predicted_us: predict(op, bytes, ranks, bw, algorithm, protocol),
            });
        }
    }
    let best = *all
        .iter()
        .min_by(|a, b| a.predicted_us.total_cmp(&b.predicted_us))
        .expect("every operation has a candidate");
    (best, all)
}
