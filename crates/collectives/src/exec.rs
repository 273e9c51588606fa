//! Runs a [`Schedule`] on a [`Network`]: transfers (step fidelity) or groups (pipelined) become
//! bundles in the engine, released as their dependencies complete, with the protocol's overhead
//! and latencies ([`crate::model::Costing`]) added as [`crate::schedule`] describes. An NVLS
//! transfer weighs NCCL's NVLS efficiency on its port; LL runs under NCCL's cap.
//!
//! An [`Execution`] is a passive state machine like the engines: it has a small event queue of
//! its own (submissions, arrivals after a path and step latency, groups finishing); its driver merges that queue with the engine's and with whatever else shares the
//! network, tells it which of its flows completed ([`Execution::flow_done`]) and lets it act at
//! an instant ([`Execution::fire`]). [`run`] drives one execution alone; the cluster's
//! orchestrator drives many at once on one fabric.
//!
//! Keys: a transfer on channel `c` between GPUs `a` and `b` uses the connection `a -> b` of
//! channel `c` (its own UDP source port: NCCL opens a connection per channel) and, with `qps`
//! QPs per connection, destination QPs `c·qps .. c·qps + qps`. QPs only matter on the network:
//! NVLink legs are single strands.
//!
//! QPs: with `split`, each transfer's bytes are split evenly over the connection's QPs (step
//! fidelity: one flow per QP, done when all are) and the connection sends one transfer at a
//! time; with `round-robin` and `dynamic`, each transfer goes whole on one QP, several in flight
//! ([`crate::qp_window`]). Pipelined fidelity carries an edge's bytes evenly over its QPs in
//! every mode (their fluid limit).

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use fabricsim_netsim::window::Window;
use fabricsim_netsim::{Engine, FlowId, Leg, Legs, Network, NetworkError, PlacedBundle, Strand};
use fabricsim_routing::key::mix;
use fabricsim_routing::select::Ticket;
use fabricsim_routing::{FlowKey, PathSelection};
use fabricsim_topology::{LinkId, Nanos, NodeId, NodeKind, Topology};

use crate::algo::{Fidelity, Request};
use crate::hardware::Generation;
use crate::layout::Ranks;
use crate::model::{Costing, Platform};
use crate::protocol::{HopKind, Protocol};
use crate::qp_window::QpWindow;
use crate::schedule::{Csr, Path, Schedule, Transfer, NONE};

mod agenda;
use agenda::Agenda;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpMode {
    Split,
    RoundRobin,
    Dynamic,
}

impl QpMode {
    pub const ALL: [QpMode; 3] = [QpMode::Split, QpMode::RoundRobin, QpMode::Dynamic];

    pub fn name(self) -> &'static str {
        match self {
            QpMode::Split => "split",
            QpMode::RoundRobin => "round-robin",
            QpMode::Dynamic => "dynamic",
        }
    }

    pub fn parse(s: &str) -> Option<QpMode> {
        QpMode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
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
    /// The GPUs' generation: their transports' efficiencies and NCCL's protocol caps.
    pub gpu: Generation,
}

/// What a run took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// From the call to the last byte arriving, NCCL's base latency included.
    pub time: Nanos,
    /// Engine variables submitted.
    pub flows: u64,
    /// Step fidelity: the most transfers the run held records of at once (waiting for some of
    /// their dependencies, or in flight); 0 under pipelined fidelity.
    pub most_held: usize,
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

/// Per-transfer bookkeeping of step fidelity (what a transfer releases is the schedule's), held
/// only for transfers under way: memory follows the transfers in flight, not the schedule's.
struct Steps {
    /// Per transfer some but not all of whose dependencies (data, and the previous transfer on
    /// its connection) are met, how many are left.
    pending: FxHashMap<u32, u32>,
    /// Per transfer in flight, its flows not yet drained.
    flows_left: FxHashMap<u32, u32>,
    /// Whole messages on QPs, several in flight (`round-robin`, `dynamic`).
    window: Option<QpWindow>,
    ran: usize,
    /// The most transfers held at once in `pending` and `flows_left`.
    most_held: usize,
}

/// Per-group bookkeeping of pipelined fidelity.
struct Groups {
    /// Each group's transfers; `None`: group `i` is transfer `i` alone (an all-to-all's).
    members: Option<Csr>,
    /// Per group, the groups before it not done yet, and the groups that come after each
    /// group (both empty where no group waits for another).
    waiting: Vec<u32>,
    followers: Csr,
    /// Per group, once submitted: whether an edge crosses the network, its pipeline fill, and
    /// its bundle's latency (a vector, not a map: in an all-to-all every group is in flight).
    crosses: Vec<bool>,
    fill: Vec<u64>,
    latency: Vec<u64>,
    finished: usize,
}

enum State {
    Steps(Steps),
    Groups(Groups),
}

/// One collective in flight on a network.
pub struct Execution {
    sched: Arc<Schedule>,
    ranks: Ranks,
    transport: Transport,
    costing: Costing,
    platform: Platform,
    queue: Agenda,
    /// Per transfer in flight (step fidelity): its latency, known once submitted.
    latency: FxHashMap<u32, u64>,
    state: State,
    start: u64,
    end: u64,
    flows: u64,
    /// Per owner (transfer or group), the tickets of the hosts' path selection its messages
    /// took (empty under hashed selection), handed back once it is done.
    tickets: BTreeMap<u32, Vec<Ticket>>,
    /// Owners done since the last [`Execution::fire`], and when.
    released: Vec<(u32, u64)>,
    /// Per group (pipelined fidelity), where its bundle was placed the last time this plan ran
    /// on these ranks ([`Execution::placing`]); empty: none kept.
    placements: Vec<Option<PlacedBundle>>,
    /// The group being submitted: its transfers, their wire bytes and hops.
    edges: Vec<(Transfer, u64, HopKind)>,
}

impl Execution {
    /// Prepares `sched` (planned for `req`) to start at `now`; call [`Execution::fire`] at `now`
    /// to submit its first flows.
    pub fn new(
        topo: &Topology,
        sched: Arc<Schedule>,
        req: &Request<'_>,
        transport: Transport,
        now: Nanos,
    ) -> Execution {
        let state = match req.fidelity {
            Fidelity::Step => State::Steps(Steps::new(transport.qp_mode)),
            Fidelity::Pipelined => State::Groups(Groups::new(&sched)),
        };
        let n = match &state {
            State::Steps(_) => sched.len(),
            State::Groups(_) => sched.groups.len(),
        };
        let mut x = Execution {
            sched,
            ranks: req.ranks.clone(),
            transport,
            costing: Costing::new(
                req.algorithm,
                transport.protocol,
                req.ranks,
                req.channels,
                transport.gpu,
            ),
            platform: Platform::of(topo, req.ranks, transport.gpu),
            queue: Agenda::default(),
            latency: FxHashMap::default(),
            state,
            start: now.0,
            end: now.0,
            flows: 0,
            tickets: BTreeMap::new(),
            released: Vec::new(),
            placements: Vec::new(),
            edges: Vec::new(),
        };
        let first = match &x.state {
            State::Steps(_) => x.sched.starts(),
            State::Groups(g) => (0..n as u32)
                .filter(|&i| g.waiting.get(i as usize).is_none_or(|&w| w == 0))
                .collect(),
        };
        x.queue = Agenda::starting(now.0, SUBMIT, first);
        x
    }

    /// Places each group's bundle where `placements` says the same group went the last time
    /// this schedule ran on these ranks with this transport, and keeps where each goes now
    /// ([`Network::submit_bundle_on`]); hand them back with [`Execution::take_placements`]
    /// for the next run. Pipelined fidelity under hashed path selection only, where a group's
    /// strands are a function of the schedule, the ranks and the transport alone.
    pub fn placing(mut self, mut placements: Vec<Option<PlacedBundle>>) -> Execution {
        if let State::Groups(_) = self.state {
            placements.resize(self.sched.groups.len(), None);
            self.placements = placements;
        }
        self
    }

    /// The placements kept ([`Execution::placing`]).
    pub fn take_placements(&mut self) -> Vec<Option<PlacedBundle>> {
        std::mem::take(&mut self.placements)
    }

    /// When the execution next acts on its own (a submission, an arrival, a group finishing).
    pub fn next_event(&self) -> Option<Nanos> {
        self.queue.peek().map(|(t, _, _)| Nanos(t))
    }

    /// Whether every transfer (group) has run.
    pub fn is_done(&self) -> bool {
        match &self.state {
            State::Steps(s) => s.ran == self.sched.len(),
            State::Groups(g) => g.finished == self.sched.groups.len(),
        }
    }

    /// What the collective took, once done: from its start to the last byte arriving, NCCL's
    /// base latency included.
    pub fn outcome(&self) -> Outcome {
        let base = if self.sched.is_empty() {
            0
        } else {
            self.costing.base_latency().0
        };
        Outcome {
            time: Nanos(self.end - self.start + base),
            flows: self.flows,
            most_held: match &self.state {
                State::Steps(s) => s.most_held,
                State::Groups(_) => 0,
            },
        }
    }

    /// The work that never ran, for a stall diagnosis: (left, total).
    pub fn left(&self) -> (usize, usize) {
        match &self.state {
            State::Steps(s) => (self.sched.len() - s.ran, self.sched.len()),
            State::Groups(g) => (
                self.sched.groups.len() - g.finished,
                self.sched.groups.len(),
            ),
        }
    }

    /// The engine finished the flow this execution submitted for `owner` at `at`.
    pub fn flow_done(&mut self, owner: u32, at: Nanos) {
        let at = at.0;
        self.end = self.end.max(at);
        match &mut self.state {
            State::Steps(s) => {
                let left = s.flows_left.get_mut(&owner).expect("a transfer in flight");
                *left -= 1;
                if *left == 0 {
                    s.flows_left.remove(&owner);
                    if !self.tickets.is_empty() {
                        self.released.push((owner, at));
                    }
                    // Drained: the connection may send its next transfer (or, with several in
                    // flight, the one waiting for a slot); bytes arrive later.
                    let next = match &mut s.window {
                        None => {
                            let next = self.sched.next(owner);
                            (next != NONE && s.release(&self.sched, next)).then_some(next)
                        }
                        Some(w) => w.drained(owner),
                    };
                    if let Some(next) = next {
                        self.ready(next, at);
                    }
                    self.queue
                        .push((at + self.latency.remove(&owner).unwrap_or(0), ARRIVE, owner));
                }
            }
            State::Groups(g) => {
                if !self.tickets.is_empty() {
                    self.released.push((owner, at));
                }
                let i = owner as usize;
                // The bundle's latency is its slowest strand's: the network path when an edge
                // crosses the network, else the NVLink path.
                let path = Nanos(g.latency[i]);
                let (nvlink, network) = if g.crosses[i] {
                    (self.platform.nvlink_path, path)
                } else {
                    (path, Nanos(0))
                };
                let extra = self.costing.group_latency(
                    &self.sched.groups[i],
                    g.crosses[i],
                    nvlink,
                    network,
                );
                self.queue
                    .push((at + extra.0 + g.fill[i], GROUP_DONE, owner));
            }
        }
    }

    /// Handles every own event due by `at`, submitting flows on `net`; each submitted flow is
    /// appended to `submitted` with the owner to pass back to [`Execution::flow_done`].
    pub fn fire<E: Engine>(
        &mut self,
        net: &mut Network<'_, E>,
        at: Nanos,
        submitted: &mut Vec<(FlowId, u32)>,
    ) -> Result<(), ExecError> {
        for (owner, when) in std::mem::take(&mut self.released) {
            for t in self.tickets.remove(&owner).unwrap_or_default() {
                net.message_done(t, Nanos(when));
            }
        }
        while let Some((when, kind, i)) = self.queue.peek() {
            if when > at.0 {
                break;
            }
            self.queue.pop();
            self.end = self.end.max(when);
            match (kind, &self.state) {
                (SUBMIT, State::Steps(_)) => self.submit_transfer(net, i, submitted)?,
                (SUBMIT, State::Groups(_)) => self.submit_group(net, i, submitted)?,
                (_, State::Steps(_)) => self.arrived(i, when),
                (_, State::Groups(_)) => self.group_done(i, when),
            }
        }
        Ok(())
    }

    fn hop(&self, t: &Transfer) -> HopKind {
        if self.ranks.same_host(t.src, t.dst) {
            HopKind::NvLink
        } else {
            HopKind::Network
        }
    }

    fn nvswitch_port(topo: &Topology, gpu: NodeId) -> Result<LinkId, ExecError> {
        topo.out_links(gpu)
            .iter()
            .copied()
            .find(|&l| topo.kind(topo.link(l).dst) == NodeKind::NvSwitch)
            .ok_or_else(|| ExecError::NoNvSwitch {
                gpu: topo.node_name(gpu).to_string(),
            })
    }

    /// The strand of `t` on QP `qp`, carrying `weight` and `bytes`, issued at `now` for `owner`:
    /// its network leg goes where the hosts' path selection puts it.
    #[allow(clippy::too_many_arguments)]
    fn strand<E: Engine>(
        &mut self,
        net: &mut Network<'_, E>,
        t: &Transfer,
        qp: u32,
        weight: f64,
        bytes: u64,
        now: u64,
        owner: u32,
    ) -> Result<Strand, ExecError> {
        let topo = net.topology();
        let tickets = &mut self.tickets;
        let mut select = |key: FlowKey| -> Legs {
            if net.path_selection() == PathSelection::Hashed {
                return Legs::from_iter([Leg::Routed(key)]);
            }
            let (legs, ticket) = net.select(key, bytes, Nanos(now));
            if let Some(ticket) = ticket {
                tickets.entry(owner).or_default().push(ticket);
            }
            legs
        };
        // A connection per (pair, channel, QP), its source port seeded per channel.
        let key = |a, b, q| {
            let seed = mix(self.transport.seed ^ (u64::from(t.channel) << 40));
            FlowKey::connection(
                self.ranks.gpu(a),
                self.ranks.gpu(b),
                t.channel * self.transport.qps + q,
                seed,
            )
        };
        let legs = match t.path {
            Path::Direct if self.ranks.same_host(t.src, t.dst) => {
                Legs::from_iter([Leg::Routed(key(t.src, t.dst, qp))])
            }
            Path::Direct => select(key(t.src, t.dst, qp)),
            Path::Via(p) => {
                let mut legs = Legs::from_iter([Leg::Routed(key(t.src, p, 0))]);
                legs.extend(select(key(p, t.dst, qp)));
                legs
            }
            Path::NvlsUp => {
                Legs::from_iter([Leg::Link(Self::nvswitch_port(topo, self.ranks.gpu(t.src))?)])
            }
            Path::NvlsDown => Legs::from_iter([Leg::Link(
                Self::nvswitch_port(topo, self.ranks.gpu(t.dst))?.reverse(),
            )]),
        };
        // In-switch reduction and multicast sustain NCCL's NVLS efficiency of the port.
        let weight = match t.path {
            Path::NvlsUp | Path::NvlsDown => weight * self.costing.nvls_weight,
            _ => weight,
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

    fn submit<E: Engine>(
        &mut self,
        net: &mut Network<'_, E>,
        strands: Vec<Strand>,
        bytes: u64,
        owner: u32,
        submitted: &mut Vec<(FlowId, u32)>,
    ) -> Result<u64, ExecError> {
        let cap = self
            .costing
            .group_cap
            .map(|c| fabricsim_topology::Bandwidth(c.round() as u64));
        // A group's bundle goes where it went the last time, if kept (`placing`).
        let kept =
            matches!(self.state, State::Groups(_)) && net.path_selection() == PathSelection::Hashed;
        let (id, latency) = match self.placements.get_mut(owner as usize).filter(|_| kept) {
            Some(at) => net.submit_bundle_on(strands, bytes, cap, at)?,
            None => net.submit_bundle(strands, bytes, cap)?,
        };
        submitted.push((id, owner));
        self.flows += 1;
        Ok(latency.0)
    }

    /// Schedules `t`'s submission.
    fn ready(&mut self, t: u32, at: u64) {
        self.queue.push((at, SUBMIT, t));
    }

    fn submit_transfer<E: Engine>(
        &mut self,
        net: &mut Network<'_, E>,
        t: u32,
        submitted: &mut Vec<(FlowId, u32)>,
    ) -> Result<(), ExecError> {
        let tr = self.sched.transfer(t);
        let wire = self.costing.wire(tr.bytes);
        let qps = self.qps_for(&tr);
        let State::Steps(s) = &mut self.state else {
            unreachable!("step submissions only in step fidelity")
        };
        let parts: Vec<(u32, u64)> = match &mut s.window {
            None => crate::schedule::split(wire, qps)
                .into_iter()
                .enumerate()
                .map(|(q, b)| (q as u32, b))
                .collect(),
            Some(w) => {
                let Some(qp) = w.start(t, (tr.src, tr.dst, tr.channel), qps, wire) else {
                    return Ok(()); // no free slot: it goes when one frees
                };
                // Posted: the next transfer on the connection may be posted too.
                let next = self.sched.next(t);
                if next != NONE && s.release(&self.sched, next) {
                    self.queue.push((self.end, SUBMIT, next));
                }
                vec![(qp, wire)]
            }
        };
        // Started: its data has left the receive slots of what it forwards (`NCCL_STEPS`).
        for f in self.sched.freed_by_start(t) {
            if s.release(&self.sched, f) {
                self.queue.push((self.end, SUBMIT, f));
            }
        }
        let count = parts.len() as u32;
        let mut latency = 0;
        let now = self.end;
        for (q, bytes) in parts {
            let strand = self.strand(net, &tr, q, 1.0, bytes, now, t)?;
            latency = latency.max(self.submit(net, vec![strand], bytes, t, submitted)?);
        }
        if let State::Steps(s) = &mut self.state {
            s.flows_left.insert(t, count);
            s.note_held();
        }
        // A transfer that opens an algorithm step arrives the protocol's per-step latency after
        // its path's: NCCL's step latency is the handshake of a step, paid once per chunk on
        // the critical path, while the connection goes on streaming.
        let step = if tr.step_start {
            self.costing.step_latency(self.hop(&tr)).0
        } else {
            0
        };
        self.latency.insert(t, latency + step);
        Ok(())
    }

    fn arrived(&mut self, t: u32, at: u64) {
        let State::Steps(s) = &mut self.state else {
            return;
        };
        s.ran += 1;
        let freed = self.sched.freed_by_arrival(t);
        for d in self
            .sched
            .dependents(t)
            .chain((freed != NONE).then_some(freed))
        {
            if s.release(&self.sched, d) {
                self.queue.push((at, SUBMIT, d));
            }
        }
    }

    fn submit_group<E: Engine>(
        &mut self,
        net: &mut Network<'_, E>,
        i: u32,
        submitted: &mut Vec<(FlowId, u32)>,
    ) -> Result<(), ExecError> {
        let State::Groups(g) = &self.state else {
            unreachable!("group submissions only in pipelined fidelity")
        };
        // The group's edges, their wire bytes and hops, in a buffer kept from group to group.
        let mut edges = std::mem::take(&mut self.edges);
        edges.clear();
        let edge = |t: u32| {
            let tr = self.sched.transfer(t);
            (tr, self.costing.wire(tr.bytes), self.hop(&tr))
        };
        match &g.members {
            Some(m) => edges.extend(m.get(i).iter().map(|&t| edge(t))),
            None => edges.push(edge(i)),
        }
        let most = edges.iter().map(|&(_, w, _)| w).max().unwrap_or(0);
        let mut strands = Vec::with_capacity(edges.len());
        let now = self.end;
        for &(tr, w, _) in &edges {
            let qps = self.qps_for(&tr);
            let share = if most > 0 {
                w as f64 / most as f64
            } else {
                1.0
            };
            for q in 0..qps {
                let bytes = w / u64::from(qps);
                strands.push(self.strand(net, &tr, q, share / f64::from(qps), bytes, now, i)?);
            }
        }
        let crosses = edges.iter().any(|&(_, _, hop)| hop == HopKind::Network);
        let fill = self.costing.fill_time(
            &self.sched.groups[i as usize],
            edges.iter().map(|&(_, w, hop)| (w, hop)),
            &self.platform,
        );
        self.edges = edges;
        let latency = self.submit(net, strands, most, i, submitted)?;
        if let State::Groups(g) = &mut self.state {
            g.crosses[i as usize] = crosses;
            g.fill[i as usize] = fill.0;
            g.latency[i as usize] = latency;
        }
        Ok(())
    }

    fn group_done(&mut self, i: u32, at: u64) {
        let State::Groups(g) = &mut self.state else {
            return;
        };
        g.finished += 1;
        for &f in g.followers.get(i) {
            g.waiting[f as usize] -= 1;
            if g.waiting[f as usize] == 0 {
                self.queue.push((at, SUBMIT, f));
            }
        }
    }
}

impl Steps {
    fn new(qp_mode: QpMode) -> Steps {
        Steps {
            pending: FxHashMap::default(),
            flows_left: FxHashMap::default(),
            window: QpWindow::new(qp_mode),
            ran: 0,
            most_held: 0,
        }
    }

    /// Meets one of `t`'s dependencies; whether it was the last.
    fn release(&mut self, sched: &Schedule, t: u32) -> bool {
        let left = self.pending.entry(t).or_insert_with(|| sched.waits(t));
        *left -= 1;
        if *left > 0 {
            self.note_held();
            return false;
        }
        self.pending.remove(&t);
        true
    }

    fn note_held(&mut self) {
        self.most_held = self
            .most_held
            .max(self.pending.len() + self.flows_left.len());
    }
}

impl Groups {
    fn new(sched: &Schedule) -> Groups {
        let g = sched.groups.len();
        let each_alone = sched.len() == g && sched.transfer_groups().eq(0..g as u32);
        let members = (!each_alone).then(|| {
            Csr::new(
                g,
                sched
                    .transfer_groups()
                    .enumerate()
                    .map(|(i, g)| (g, i as u32)),
            )
        });
        let (waiting, followers) = if sched.has_after() {
            (
                (0..g as u32).map(|i| sched.after(i).len() as u32).collect(),
                Csr::new(
                    g,
                    (0..g as u32).flat_map(|i| sched.after(i).iter().map(move |&a| (a, i))),
                ),
            )
        } else {
            (Vec::new(), Csr::default())
        };
        Groups {
            members,
            waiting,
            followers,
            crosses: vec![false; g],
            fill: vec![0; g],
            latency: vec![0; g],
            finished: 0,
        }
    }
}

/// Runs `sched` (planned for `req`) alone on `net` from the engine's current time, to the end.
pub fn run<E: Engine>(
    net: &mut Network<'_, E>,
    sched: Arc<Schedule>,
    req: &Request<'_>,
    transport: Transport,
) -> Result<Outcome, ExecError> {
    run_with_progress(net, sched, req, transport, &mut |_| {})
}

/// How far a run has come: the schedule's work done (transfers in step fidelity, groups of
/// them in pipelined), of how much, and the simulated time.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub at: Nanos,
}

/// Engine steps between two reports of [`run_with_progress`].
const REPORT_EVERY: u32 = 4096;

/// [`run`], telling `progress` how far it has come now and then, and at the end.
pub fn run_with_progress<E: Engine>(
    net: &mut Network<'_, E>,
    sched: Arc<Schedule>,
    req: &Request<'_>,
    transport: Transport,
    progress: &mut dyn FnMut(Progress),
) -> Result<Outcome, ExecError> {
    let now = net.engine().now();
    let mut x = Execution::new(net.topology(), sched, req, transport, now);
    let mut submitted = Vec::new();
    // Owners of this run's flows, by flow id from the oldest in flight (`NONE`: done). Only
    // this run submits on `net` while it runs, so its flows' ids follow one another.
    let mut owner: Window<u32> = Window::default();
    let mut done = Vec::new();
    let mut at = now;
    let mut steps = 0u32;
    let report = |x: &Execution, at: Nanos, progress: &mut dyn FnMut(Progress)| {
        let (left, total) = x.left();
        progress(Progress {
            done: total - left,
            total,
            at,
        });
    };
    loop {
        steps = steps.wrapping_add(1);
        if steps.is_multiple_of(REPORT_EVERY) {
            report(&x, at, progress);
        }
        submitted.clear();
        x.fire(net, at, &mut submitted)?;
        for &(id, o) in &submitted {
            if owner.is_empty() {
                owner = Window::starting_at(id.0);
            }
            let kept = owner.push(o);
            assert_eq!(kept, id.0, "only this run submits flows while it runs");
        }
        let next = match (net.engine().next_event(), x.next_event()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => break,
            },
        };
        done.clear();
        net.advance(next, &mut done);
        for c in &done {
            let o = owner
                .get_mut(c.flow.0)
                .map(|o| std::mem::replace(o, NONE))
                .filter(|&o| o != NONE)
                .expect("a completion of this run's flow");
            x.flow_done(o, next);
        }
        owner.trim(|&o| o == NONE);
        at = next;
    }
    if !x.is_done() {
        let (left, total) = x.left();
        return Err(ExecError::Stalled { left, total });
    }
    report(&x, at, progress);
    Ok(x.outcome())
}
