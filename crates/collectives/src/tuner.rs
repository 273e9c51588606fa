//! Choosing an algorithm and protocol as NCCL's tuner does (NVIDIA/nccl `src/graph/tuning.cc`):
//! for each candidate a predicted time, and the fastest wins.
//!
//! The prediction runs on the figures the simulation runs on ([`crate::model`]): the candidate
//! is planned (pipelined), and its time is NCCL's base latency plus, phase by phase (groups
//! that wait on no unfinished group run together), the busiest GPU port's wire bytes over its
//! payload rate (NVLink, PCIe, NIC; NCCL's LL cap where it binds) and the slowest group's step
//! latencies and pipeline fill. Where nothing in the fabric is congested this is the time the
//! simulation gives, to within a few percent (`tests/tuner.rs` holds them to 2 %).
//!
//! Candidates as NCCL weighs them: ring, tree and, inside one NVSwitch domain of a generation
//! with NVLS, NVLS for all-reduce; ring and NVLS for all-gather and reduce-scatter; ring for
//! broadcast and reduce; NVLS runs only Simple. Point-to-point operations go direct (PXN when
//! several ranks share a host).

use fabricsim_topology::Nanos;

use crate::algo::{plan, Algorithm, Fidelity, Request};
use crate::layout::Ranks;
use crate::model::{Costing, Platform};
use crate::op::Collective;
use crate::protocol::{HopKind, Protocol};
use crate::schedule::{Path, Schedule};
use crate::PlanError;

/// A candidate and its predicted time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    /// The cost model's prediction, in µs.
    pub predicted_us: f64,
}

/// Candidates the tuner weighs for `op`.
fn candidates(op: Collective, ranks: &Ranks, platform: &Platform) -> Vec<Algorithm> {
    let one_host = ranks.hosts().len() == 1;
    let nvls = one_host && platform.nvlink > 0.0 && platform.gpu.nvls_efficiency().is_some();
    let mut out = match op {
        Collective::AllReduce => vec![Algorithm::Ring, Algorithm::Tree],
        Collective::AllGather | Collective::ReduceScatter => vec![Algorithm::Ring],
        Collective::Broadcast | Collective::Reduce => vec![Algorithm::Ring],
        Collective::AllToAll | Collective::AllToAllV | Collective::SendRecv
            if !one_host && ranks.hosts().iter().any(|h| h.len() > 1) =>
        {
            vec![Algorithm::Pxn]
        }
        _ => vec![Algorithm::Direct],
    };
    if nvls && Algorithm::Nvls.supports(op) {
        out.push(Algorithm::Nvls);
    }
    // Across NVSwitch hosts of a generation with NVLS, NCCL adds NVLS-tree for all-reduce.
    let nvls_tree = !one_host && platform.nvlink > 0.0 && platform.gpu.nvls_efficiency().is_some();
    if nvls_tree && op == Collective::AllReduce {
        out.push(Algorithm::NvlsTree);
    }
    out
}

/// Protocols NCCL runs `algorithm` with.
fn protocols(algorithm: Algorithm) -> &'static [Protocol] {
    match algorithm {
        Algorithm::Nvls | Algorithm::NvlsTree => &[Protocol::Simple],
        _ => &Protocol::ALL,
    }
}

/// What a planned collective puts on each GPU port, phase by phase, independent of protocol.
struct Loads {
    /// Per phase: payload bytes per (rank, port), ports as in [`Port`].
    ports: Vec<Vec<f64>>,
    /// Per group: its phase, its largest edge (payload), whether it crosses the network, the
    /// path latency of its slowest edge, and its edges' (payload, hop) for the fill.
    groups: Vec<GroupLoad>,
    phases: usize,
}

struct GroupLoad {
    phase: usize,
    most: u64,
    crosses: bool,
    path: u64,
    edges: Vec<(u64, HopKind)>,
}

#[derive(Clone, Copy)]
enum Port {
    NvOut,
    NvIn,
    PcieOut,
    PcieIn,
    NicOut,
    NicIn,
}
const PORTS: usize = 6;

impl Loads {
    fn of(sched: &Schedule, ranks: &Ranks, platform: &Platform, nvls_weight: f64) -> Loads {
        let mut phase_of = vec![0usize; sched.groups.len()];
        for g in 0..sched.groups.len() {
            phase_of[g] = sched
                .after(g as u32)
                .iter()
                .map(|&a| phase_of[a as usize] + 1)
                .max()
                .unwrap_or(0);
        }
        let phases = phase_of.iter().copied().max().map_or(0, |p| p + 1);
        let mut ports = vec![vec![0.0; ranks.len() * PORTS]; phases];
        let mut groups: Vec<GroupLoad> = phase_of
            .iter()
            .map(|&phase| GroupLoad {
                phase,
                most: 0,
                crosses: false,
                path: 0,
                edges: Vec::new(),
            })
            .collect();
        let nv = platform.nvlink_path.0;
        for t in sched.transfers() {
            let gl = &mut groups[t.group as usize];
            let load = &mut ports[gl.phase];
            let b = t.bytes as f64;
            let mut add = |r: u32, port: Port, bytes: f64| {
                load[r as usize * PORTS + port as usize] += bytes;
            };
            let (hop, path) = match t.path {
                Path::NvlsUp => {
                    add(t.src, Port::NvOut, b * nvls_weight);
                    (HopKind::NvLink, nv / 2)
                }
                Path::NvlsDown => {
                    add(t.dst, Port::NvIn, b * nvls_weight);
                    (HopKind::NvLink, nv / 2)
                }
                Path::Direct if ranks.same_host(t.src, t.dst) => {
                    add(t.src, Port::NvOut, b);
                    add(t.dst, Port::NvIn, b);
                    (HopKind::NvLink, nv)
                }
                Path::Direct | Path::Via(_) => {
                    let net = platform.network_path_between(ranks, t.src, t.dst).0;
                    let (from, extra) = match t.path {
                        Path::Via(p) => {
                            add(t.src, Port::NvOut, b);
                            add(p, Port::NvIn, b);
                            (p, nv)
                        }
                        _ => (t.src, 0),
                    };
                    add(from, Port::PcieOut, b);
                    add(from, Port::NicOut, b);
                    add(t.dst, Port::NicIn, b);
                    add(t.dst, Port::PcieIn, b);
                    (HopKind::Network, net + extra)
                }
            };
            gl.most = gl.most.max(t.bytes);
            gl.crosses |= hop == HopKind::Network;
            gl.path = gl.path.max(path);
            gl.edges.push((t.bytes, hop));
        }
        Loads {
            ports,
            groups,
            phases,
        }
    }

    /// The predicted time, ns, under `costing`.
    fn time(&self, sched: &Schedule, platform: &Platform, costing: &Costing) -> f64 {
        // Port rates, in `Port` order.
        let rates = [
            platform.nvlink,
            platform.nvlink,
            platform.pcie,
            platform.pcie,
            platform.nic,
            platform.nic,
        ];
        // Wire bytes per payload byte.
        let wire = 1.0 / costing.efficiency;
        let mut drain = vec![0.0f64; self.phases];
        let mut tail = vec![0.0f64; self.phases];
        for (p, load) in self.ports.iter().enumerate() {
            for (i, &bytes) in load.iter().enumerate() {
                if bytes > 0.0 {
                    drain[p] = drain[p].max(bytes * wire / rates[i % PORTS].max(1.0) * 1e9);
                }
            }
        }
        for (g, gl) in self.groups.iter().enumerate() {
            if let Some(cap) = costing.group_cap {
                drain[gl.phase] = drain[gl.phase].max(gl.most as f64 * wire / cap * 1e9);
            }
            let group = &sched.groups[g];
            let (nvlink, network) = if gl.crosses {
                (platform.nvlink_path, Nanos(gl.path))
            } else {
                (Nanos(gl.path), Nanos(0))
            };
            let latency = costing.group_latency(group, gl.crosses, nvlink, network);
            let fill = costing.fill_time(
                group,
                gl.edges.iter().map(|&(b, hop)| (costing.wire(b), hop)),
                platform,
            );
            tail[gl.phase] = tail[gl.phase].max((latency.0 + fill.0) as f64);
        }
        let base = if sched.is_empty() {
            0.0
        } else {
            costing.base_latency().0 as f64
        };
        base + drain.iter().sum::<f64>() + tail.iter().sum::<f64>()
    }
}

/// The cost model's time for `req`'s algorithm under `protocol`, in µs.
pub fn predict(
    req: &Request<'_>,
    platform: &Platform,
    protocol: Protocol,
) -> Result<f64, PlanError> {
    let (sched, loads) = pipelined(req, platform)?;
    let costing = Costing::new(
        req.algorithm,
        protocol,
        req.ranks,
        req.channels,
        platform.gpu,
    );
    Ok(loads.time(&sched, platform, &costing) / 1e3)
}

/// `req`'s pipelined plan and the port loads of its phases.
fn pipelined(req: &Request<'_>, platform: &Platform) -> Result<(Schedule, Loads), PlanError> {
    let sched = plan(&Request {
        fidelity: Fidelity::Pipelined,
        ..*req
    })?;
    let loads = Loads::of(
        &sched,
        req.ranks,
        platform,
        Costing::nvls_weight(platform.gpu),
    );
    Ok((sched, loads))
}

/// Every protocol of `req`'s algorithm, weighed (none if it cannot be planned on these ranks).
pub fn weigh(req: &Request<'_>, platform: &Platform) -> Vec<Choice> {
    let Ok((sched, loads)) = pipelined(req, platform) else {
        return Vec::new();
    };
    protocols(req.algorithm)
        .iter()
        .map(|&protocol| {
            let costing = Costing::new(
                req.algorithm,
                protocol,
                req.ranks,
                req.channels,
                platform.gpu,
            );
            Choice {
                algorithm: req.algorithm,
                protocol,
                predicted_us: loads.time(&sched, platform, &costing) / 1e3,
            }
        })
        .collect()
}

/// The fastest of `choices`.
fn fastest(choices: &[Choice]) -> Option<Choice> {
    choices
        .iter()
        .min_by(|a, b| a.predicted_us.total_cmp(&b.predicted_us))
        .copied()
}

/// The fastest candidate for `req`'s operation (its algorithm is ignored), and every candidate
/// weighed. Candidates that cannot be planned on these ranks are left out; if none can, ring
/// with Simple is returned with no prediction (infinite).
pub fn choose(req: &Request<'_>, platform: &Platform) -> (Choice, Vec<Choice>) {
    let mut all = Vec::new();
    for algorithm in candidates(req.op, req.ranks, platform) {
        all.extend(weigh(&Request { algorithm, ..*req }, platform));
    }
    let best = fastest(&all).unwrap_or(Choice {
        algorithm: Algorithm::Ring,
        protocol: Protocol::Simple,
        predicted_us: f64::INFINITY,
    });
    (best, all)
}

/// What runs `req`'s operation: the given algorithm and protocol, the tuner's choice for what is
/// left open (the protocol its model prefers for a given algorithm).
pub fn settle(
    req: &Request<'_>,
    platform: &Platform,
    algorithm: Option<Algorithm>,
    protocol: Option<Protocol>,
) -> (Algorithm, Protocol) {
    let algorithm = algorithm.unwrap_or_else(|| choose(req, platform).0.algorithm);
    let protocol = protocol.unwrap_or_else(|| {
        fastest(&weigh(&Request { algorithm, ..*req }, platform))
            .map_or(Protocol::Simple, |c| c.protocol)
    });
    (algorithm, protocol)
}
