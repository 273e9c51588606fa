//! Runs a [`Schedule`] on a [`Network`]: transfers (step fidelity) or groups (pipelined) become
//! bundles in the engine, released as their dependencies complete, with the protocol's overhead
//! and latencies added as [`crate::schedule`] describes. The executor owns a small event queue
//! (submissions after a per-step latency, arrivals after a path latency, groups finishing) and
//! merges it with the engine's next event; time only moves forward.
//!
//! Keys: a transfer on channel `c` between GPUs `a` and `b` uses the connection `a -> b` of
//! channel `c` (its own UDP source port: NCCL opens a connection per channel) and, with `qps`
//! QPs per connection, destination QPs `c·qps .. c·qps + qps`. QPs only matter on the network:
//! NVLink legs are single strands.
//!
//! QPs: with `split`, each transfer's bytes are split evenly over the connection's QPs (step
//! fidelity: one flow per QP, done when all are); with `round-robin`, each transfer goes whole on
//! the connection's next QP. Pipelined fidelity carries an edge's bytes evenly over its QPs in
//! both modes (their fluid limit).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use fabricsim_netsim::{Completion, Engine, FlowId, Leg, Network, NetworkError, Strand};
use fabricsim_routing::key::mix;
use fabricsim_routing::FlowKey;
use fabricsim_topology::{LinkId, Nanos, NodeId, NodeKind, Topology};

use crate::algo::{Fidelity, Request};
use crate::layout::Ranks;
use crate::protocol::{HopKind, Protocol};
use crate::schedule::{Path, Schedule, Transfer, NONE};
use crate::tuner::Bandwidths;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpMode {
    Split,
    RoundRobin,
}

impl QpMode {
    pub fn name(self) -> &'static str {
        match self {
            QpMode::Split => "split",
            QpMode::RoundRobin => "round-robin",
        }
    }

    pub fn parse(s: &str) -> Option<QpMode> {
        [QpMode::Split, QpMode::RoundRobin]
            .into_iter()
            .find(|m| m.name() == s)
    }
}

/// How transfers become flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transport {
    pub protocol: Protocol,
    pub qps: u32,
    pub qp_mode: QpMode,
    /// Seeds the connections' UDP source ports.
    pub seed: u64,
}

/// What a run took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// From the call to the last byte arriving, NCCL's base latency included.
    pub time: Nanos,
    /// Engine variables submitted.
    pub flows: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(transparent)]
    Network(#[from] NetworkError),
    #[error("`{gpu}` has no NVSwitch port (NVLS needs one)")]
    NoNvSwitch { gpu: String },
    #[error("the collective stalled: {left} of {total} transfers never ran")]
    Stalled { left: usize, total: usize },
}

/// Events of the executor's own queue, in the order they are handled at one instant.
const SUBMIT: u8 = 0;
const ARRIVE: u8 = 1;
const GROUP_DONE: u8 = 2;

struct Exec<'r, 'n, 't, E: Engine> {
    net: &'n mut Network<'t, E>,
    topo: &'t Topology,
    ranks: &'r Ranks,
    transport: Transport,
    queue: BinaryHeap<Reverse<(u64, u8, u32)>>,
    /// Per submitted engine flow (by id, from `first_flow`): the transfer or group it serves.
    owner: Vec<u32>,
    first_flow: u32,
    /// Per transfer or group: its latency, known once submitted.
    latency: Vec<u64>,
    flows: u64,
    end: u64,
}

/// Runs `sched` (planned for `req`) on `net` from the engine's current time.
pub fn run<E: Engine>(
    net: &mut Network<'_, E>,
    sched: &Schedule,
    req: &Request<'_>,
    transport: Transport,
) -> Result<Outcome, ExecError> {
    let start = net.engine().now();
    let topo = net.topology();
    let mut exec = Exec {
        topo,
        ranks: req.ranks,
        transport,
        queue: BinaryHeap::new(),
        owner: Vec::new(),
        first_flow: u32::MAX,
        latency: Vec::new(),
        flows: 0,
        end: start.0,
        net,
    };
    match req.fidelity {
        Fidelity::Step => exec.run_steps(sched)?,
        Fidelity::Pipelined => exec.run_groups(sched)?,
    }
    let base = transport.protocol.base_latency(req.algorithm.tree_like());
    Ok(Outcome {
        time: Nanos(
            exec.end - start.0
                + if sched.transfers.is_empty() {
                    0
                } else {
                    base.0
                },
        ),
        flows: exec.flows,
    })
}

impl<E: Engine> Exec<'_, '_, '_, E> {
    fn hop(&self, t: &Transfer) -> HopKind {
        if self.ranks.same_host(t.src, t.dst) {
            HopKind::NvLink
        } else {
            HopKind::Network
        }
    }

    fn key(&self, a: u32, b: u32, channel: u32, qp: u32) -> FlowKey {
        let seed = mix(self.transport.seed ^ (u64::from(channel) << 40));
        FlowKey::connection(
            self.ranks.gpu(a),
            self.ranks.gpu(b),
            channel * self.transport.qps + qp,
            seed,
        )
    }

    fn nvswitch_port(&self, gpu: NodeId) -> Result<LinkId, ExecError> {
        self.topo
            .out_links(gpu)
            .iter()
            .copied()
            .find(|&l| self.topo.kind(self.topo.link(l).dst) == NodeKind::NvSwitch)
            .ok_or_else(|| ExecError::NoNvSwitch {
                gpu: self.topo.node_name(gpu).to_string(),
            })
    }

    /// The strand of `t` on QP `qp`, carrying `weight`.
    fn strand(&self, t: &Transfer, qp: u32, weight: f64) -> Result<Strand, ExecError> {
        let legs = match t.path {
            Path::Direct => vec![Leg::Routed(self.key(t.src, t.dst, t.channel, qp))],
            Path::Via(p) => vec![
                Leg::Routed(self.key(t.src, p, t.channel, 0)),
                Leg::Routed(self.key(p, t.dst, t.channel, qp)),
            ],
            Path::NvlsUp => vec![Leg::Link(self.nvswitch_port(self.ranks.gpu(t.src))?)],
            Path::NvlsDown => vec![Leg::Link(
                self.nvswitch_port(self.ranks.gpu(t.dst))?.reverse(),
            )],
        };
        Ok(Strand { legs, weight })
    }

    /// Whether QPs apply to `t` (it crosses the network).
    fn qps_for(&self, t: &Transfer) -> u32 {
        match t.path {
            Path::NvlsUp | Path::NvlsDown => 1,
            _ if self.hop(t) == HopKind::NvLink => 1,
            _ => self.transport.qps.max(1),
        }
    }

    fn submit(&mut self, strands: Vec<Strand>, bytes: u64, owner: u32) -> Result<u64, ExecError> {
        let (id, latency) = self.net.submit_bundle(strands, bytes, None)?;
        if self.first_flow == u32::MAX {
            self.first_flow = id.0;
        }
        let slot = (id.0 - self.first_flow) as usize;
        if self.owner.len() <= slot {
            self.owner.resize(slot + 1, NONE);
        }
        self.owner[slot] = owner;
        self.flows += 1;
        Ok(latency.0)
    }

    fn owner_of(&self, flow: FlowId) -> u32 {
        self.owner[(flow.0 - self.first_flow) as usize]
    }

    /// Moves to the next event (engine or own queue); returns its time and the engine flows that
    /// completed at it, or `None` when nothing is left.
    fn step(&mut self, done: &mut Vec<Completion>) -> Option<u64> {
        let engine = self.net.engine().next_event().map(|t| t.0);
        let own = self.queue.peek().map(|Reverse((t, _, _))| *t);
        let t = match (engine, own) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        done.clear();
        self.net.advance(Nanos(t), done);
        self.end = self.end.max(t);
        Some(t)
    }

    fn run_steps(&mut self, sched: &Schedule) -> Result<(), ExecError> {
        let n = sched.transfers.len();
        // Waiting counts and reverse edges: arrivals release data dependents, drains release
        // the next transfer on the same connection.
        let mut waiting = vec![0u32; n];
        let mut next_on_conn = vec![NONE; n];
        let mut offsets = vec![0u32; n + 1];
        for t in 0..n as u32 {
            for &d in sched.deps(t) {
                offsets[d as usize + 1] += 1;
            }
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut dependents = vec![0u32; offsets[n] as usize];
        for t in 0..n as u32 {
            let tr = &sched.transfers[t as usize];
            waiting[t as usize] = sched.deps(t).len() as u32 + u32::from(tr.prev != NONE);
            if tr.prev != NONE {
                next_on_conn[tr.prev as usize] = t;
            }
            for &d in sched.deps(t) {
                dependents[fill[d as usize] as usize] = t;
                fill[d as usize] += 1;
            }
        }
        self.latency = vec![0; n];
        let mut flows_left = vec![0u32; n];
        // Round-robin: each transfer's turn on its connection, in the order the connection
        // sends them (schedule order: a connection's transfers depend on each other in turn).
        let mut turn = vec![0u32; n];
        if self.transport.qp_mode == QpMode::RoundRobin {
            let mut sent: BTreeMap<(u32, u32, u32), u32> = BTreeMap::new();
            for (t, tr) in sched.transfers.iter().enumerate() {
                let count = sent.entry((tr.src, tr.dst, tr.channel)).or_insert(0);
                turn[t] = *count;
                *count += 1;
            }
        }
        let mut ran = 0usize;
        let now = self.net.engine().now().0;
        for t in 0..n as u32 {
            if waiting[t as usize] == 0 {
                self.ready(sched, t, now);
            }
        }
        let mut done = Vec::new();
        let release = |this: &mut Self, t: u32, at: u64, waiting: &mut [u32]| {
            waiting[t as usize] -= 1;
            if waiting[t as usize] == 0 {
                this.ready(sched, t, at);
            }
        };
        while let Some(at) = self.step(&mut done) {
            for c in &done {
                let t = self.owner_of(c.flow);
                flows_left[t as usize] -= 1;
                if flows_left[t as usize] == 0 {
                    // Drained: the connection may send its next transfer; bytes arrive later.
                    if next_on_conn[t as usize] != NONE {
                        release(self, next_on_conn[t as usize], at, &mut waiting);
                    }
                    let arrive = at + self.latency[t as usize];
                    self.queue.push(Reverse((arrive, ARRIVE, t)));
                }
            }
            while let Some(&Reverse((when, kind, t))) = self.queue.peek() {
                if when != at {
                    break;
                }
                self.queue.pop();
                if kind == SUBMIT {
                    let tr = sched.transfers[t as usize];
                    let wire = self.transport.protocol.wire_bytes(tr.bytes);
                    let qps = self.qps_for(&tr);
                    let parts: Vec<(u32, u64)> = match self.transport.qp_mode {
                        QpMode::Split => crate::schedule::split(wire, qps)
                            .into_iter()
                            .enumerate()
                            .map(|(q, b)| (q as u32, b))
                            .collect(),
                        QpMode::RoundRobin => vec![(turn[t as usize] % qps, wire)],
                    };
                    flows_left[t as usize] = parts.len() as u32;
                    let mut latency = 0;
                    for (q, bytes) in parts {
                        let strand = self.strand(&tr, q, 1.0)?;
                        latency = latency.max(self.submit(vec![strand], bytes, t)?);
                    }
                    self.latency[t as usize] = latency;
                } else {
                    ran += 1;
                    let (a, b) = (offsets[t as usize], offsets[t as usize + 1]);
                    for i in a..b {
                        release(self, dependents[i as usize], at, &mut waiting);
                    }
                }
            }
        }
        if ran < n {
            return Err(ExecError::Stalled {
                left: n - ran,
                total: n,
            });
        }
        Ok(())
    }

    /// Schedules `t`'s submission: after the protocol's per-step latency if it opens a step.
    fn ready(&mut self, sched: &Schedule, t: u32, at: u64) {
        let tr = &sched.transfers[t as usize];
        let delay = if tr.step_start {
            self.transport.protocol.step_latency(self.hop(tr)).0
        } else {
            0
        };
        self.queue.push(Reverse((at + delay, SUBMIT, t)));
    }

    fn run_groups(&mut self, sched: &Schedule) -> Result<(), ExecError> {
        let g = sched.groups.len();
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); g];
        for (i, t) in sched.transfers.iter().enumerate() {
            members[t.group as usize].push(i as u32);
        }
        let mut waiting: Vec<u32> = sched.groups.iter().map(|x| x.after.len() as u32).collect();
        let mut followers: Vec<Vec<u32>> = vec![Vec::new(); g];
        for (i, x) in sched.groups.iter().enumerate() {
            for &a in &x.after {
                followers[a as usize].push(i as u32);
            }
        }
        self.latency = vec![0; g];
        let mut step_latency = vec![0u64; g];
        let mut mean_hop = vec![0u64; g];
        // Per group: the mean time one chunk takes on an edge at its path's line rate (NVLink
        // or the GPU's network rate), the unit of the pipeline fill.
        let mut chunk_time = vec![0f64; g];
        let line = Bandwidths::of(self.topo, self.ranks);
        let mut finished = 0usize;
        let now = self.net.engine().now().0;
        for i in 0..g as u32 {
            if waiting[i as usize] == 0 {
                self.queue.push(Reverse((now, SUBMIT, i)));
            }
        }
        let mut done = Vec::new();
        while let Some(at) = self.step(&mut done) {
            for c in &done {
                let i = self.owner_of(c.flow) as usize;
                let group = &sched.groups[i];
                let fill = (f64::from(group.fill) * chunk_time[i]).round() as u64;
                let per_step = if group.lockstep {
                    step_latency[i] + self.latency[i]
                } else {
                    mean_hop[i]
                };
                let extra = u64::from(group.steps) * per_step;
                self.queue
                    .push(Reverse((at + extra + fill, GROUP_DONE, i as u32)));
            }
            while let Some(&Reverse((when, kind, i))) = self.queue.peek() {
                if when != at {
                    break;
                }
                self.queue.pop();
                if kind == SUBMIT {
                    let edges = &members[i as usize];
                    let wire: Vec<u64> = edges
                        .iter()
                        .map(|&t| {
                            self.transport
                                .protocol
                                .wire_bytes(sched.transfers[t as usize].bytes)
                        })
                        .collect();
                    let most = wire.iter().copied().max().unwrap_or(0);
                    let mut strands = Vec::new();
                    let (mut alpha, mut hop_sum) = (0, 0);
                    for (&t, &w) in edges.iter().zip(&wire) {
                        let tr = sched.transfers[t as usize];
                        let step = self.transport.protocol.step_latency(self.hop(&tr)).0;
                        alpha = alpha.max(step);
                        let qps = self.qps_for(&tr);
                        let share = if most > 0 {
                            w as f64 / most as f64
                        } else {
                            1.0
                        };
                        for q in 0..qps {
                            strands.push(self.strand(&tr, q, share / f64::from(qps))?);
                        }
                        if !sched.groups[i as usize].lockstep {
                            let path = self.net.strand_latency(&strands[strands.len() - 1])?;
                            hop_sum += step + path.0;
                        }
                    }
                    mean_hop[i as usize] = hop_sum / edges.len().max(1) as u64;
                    let chunks = f64::from(sched.groups[i as usize].chunks.max(1));
                    chunk_time[i as usize] = edges
                        .iter()
                        .zip(&wire)
                        .map(|(&t, &w)| {
                            let rate = match self.hop(&sched.transfers[t as usize]) {
                                HopKind::NvLink => line.nvlink,
                                HopKind::Network => line.network,
                            };
                            w as f64 / chunks / rate.max(1.0) * 1e9
                        })
                        .sum::<f64>()
                        / edges.len().max(1) as f64;
                    step_latency[i as usize] = alpha;
                    self.latency[i as usize] = self.submit(strands, most, i)?;
                } else {
                    finished += 1;
                    for &f in &followers[i as usize] {
                        waiting[f as usize] -= 1;
                        if waiting[f as usize] == 0 {
                            self.queue.push(Reverse((at, SUBMIT, f)));
                        }
                    }
                }
            }
        }
        if finished < g {
            return Err(ExecError::Stalled {
                left: g - finished,
                total: g,
            });
        }
        Ok(())
    }
}
