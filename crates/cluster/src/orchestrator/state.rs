//! The orchestrator's per-job state: each program's reverse dependencies and kernel times, each
//! rank's streams and time accounting, each communicator's collectives in flight and the choice
//! and plan each (operation, size) got, point-to-point transfers, and the packed events of the
//! orchestrator's queue.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use fabricsim_collectives::tuner::{predict, settle};
use fabricsim_collectives::{Algorithm, Collective, Execution, Platform, Ranks, Request, Schedule};
use fabricsim_netsim::window::Window;
use fabricsim_netsim::FlowId;
use fabricsim_routing::select::Ticket;
use fabricsim_workload::{ComputeModel, OpKind, Program};

use super::kernels::{chains, UNCHAINED};
use crate::job::{CommConfig, JobSpec};
use crate::p2p::P2p;
use crate::stats::{CommScope, Detail, JobStats, Lane, Slice, Tally};

/// Reverse dependency edges of a program (CSR) and each op's sequence number on its
/// communicator slot.
pub(super) struct ProgramIndex {
    pub(super) offsets: Vec<u32>,
    pub(super) dependents: Vec<u32>,
    /// Per op: its index among the collectives of its group slot, in issue order.
    pub(super) coll_seq: Vec<u32>,
    /// Per kernel: the kernel that runs next in its fused chain ([`super::kernels`]), or
    /// [`UNCHAINED`].
    pub(super) next: Vec<u32>,
    /// Per op: how long its kernel runs (ns) under the job's compute model, with those after
    /// it in its chain; 0 for others.
    pub(super) run_ns: Vec<u64>,
    /// Per op: where its dependency counter lies among the program's ops that wait on two or
    /// more, or [`UNCOUNTED`]: an op that waits on one is ready when that one is done, and
    /// needs no counter.
    pub(super) counted: Vec<u32>,
    /// How many ops have a counter.
    pub(super) counters: usize,
    /// The floating-point operations of all its compute kernels, summed in op order.
    pub(super) flops: f64,
}

/// An op with no dependency counter (it waits on one op or none).
pub(super) const UNCOUNTED: u32 = u32::MAX;

impl ProgramIndex {
    pub(super) fn new(p: &Program, compute: &ComputeModel) -> ProgramIndex {
        let n = p.len();
        let (offsets, dependents) = p.dependents();
        // Sequence numbers follow a topological order: a trace's file order need not be the
        // order its collectives are issued in, but every rank of a communicator issues them in
        // dependency order. Ops on a cycle never run; they are numbered after the rest.
        let mut order = p.topological_order();
        if order.len() < n {
            let mut seen = vec![false; n];
            for &i in &order {
                seen[i as usize] = true;
            }
            order.extend((0..n as u32).filter(|&i| !seen[i as usize]));
        }
        let mut per_slot = vec![0u32; usize::from(p.group_slots)];
        let mut coll_seq = vec![u32::MAX; n];
        for i in order {
            if let OpKind::Collective { group, .. } = p.ops[i as usize].kind {
                let s = &mut per_slot[group as usize];
                coll_seq[i as usize] = *s;
                *s += 1;
            }
        }
        let next = chains(p, &offsets, &dependents);
        let mut run_ns: Vec<u64> = p
            .ops
            .iter()
            .map(|op| match op.kind {
                OpKind::Compute(c) => compute.time(&c).0,
                OpKind::Memory { bytes, .. } => compute.memory_time(bytes).0,
                _ => 0,
            })
            .collect();
        // A chain's next kernel comes later in the program: sum from the end.
        for i in (0..n).rev() {
            if next[i] != UNCHAINED {
                run_ns[i] = run_ns[i].saturating_add(run_ns[next[i] as usize]);
            }
        }
        let flops = p
            .ops
            .iter()
            .map(|op| match op.kind {
                OpKind::Compute(c) => c.flops,
                _ => 0.0,
            })
            .sum();
        let mut counted = vec![UNCOUNTED; n];
        let mut counters = 0;
        for (i, slot) in counted.iter_mut().enumerate() {
            if p.deps(i as u32).len() > 1 {
                *slot = counters as u32;
                counters += 1;
            }
        }
        ProgramIndex {
            offsets,
            dependents,
            coll_seq,
            next,
            run_ns,
            counted,
            counters,
            flops,
        }
    }

    /// How long kernel `op` runs alone.
    pub(super) fn kernel_ns(&self, op: u32) -> u64 {
        let after = self.next[op as usize];
        let rest = if after == UNCHAINED {
            0
        } else {
            self.run_ns[after as usize]
        };
        self.run_ns[op as usize] - rest
    }

    pub(super) fn dependents(&self, op: u32) -> &[u32] {
        &self.dependents[self.offsets[op as usize] as usize..self.offsets[op as usize + 1] as usize]
    }
}

#[derive(Default)]
pub(super) struct Stream {
    pub(super) queue: VecDeque<u32>,
    pub(super) busy: bool,
    /// The running kernel, and when it started.
    pub(super) op: u32,
    pub(super) since: u64,
}

/// Per rank: streams and the time accounting of [`JobStats`].
#[derive(Default)]
pub(super) struct RankState {
    pub(super) compute: Stream,
    pub(super) memory: Stream,
    /// Communication ops in flight (a collective from the rank's arrival, a transfer from its
    /// start), by [`CommScope`].
    pub(super) comm_active: [u32; 6],
    pub(super) last: u64,
    pub(super) compute_ns: u64,
    /// Exposed communication by scope.
    pub(super) exposed_ns: [u64; 6],
}

impl RankState {
    pub(super) fn stream(&mut self, memory: bool) -> &mut Stream {
        if memory {
            &mut self.memory
        } else {
            &mut self.compute
        }
    }

    /// Adds the time since the last change to the bucket of the state the rank was in.
    pub(super) fn account(&mut self, now: u64) {
        let dt = now.saturating_sub(self.last);
        if dt == 0 {
            // Ranks in lock step account many events at one instant.
            return;
        }
        if self.compute.busy {
            self.compute_ns += dt;
        } else {
            // Shared equally by the scopes in flight, the remainder to the first (one scope,
            // the common case, takes it all without a division).
            let active = self.comm_active.iter().filter(|&&c| c > 0).count() as u64;
            if active == 1 {
                let i = self.comm_active.iter().position(|&c| c > 0).unwrap_or(0);
                self.exposed_ns[i] += dt;
            } else if active > 0 {
                let mut rest = dt % active;
                for (i, &c) in self.comm_active.iter().enumerate() {
                    if c > 0 {
                        self.exposed_ns[i] += dt / active + rest;
                        rest = 0;
                    }
                }
            }
        }
        self.last = now;
    }

    pub(super) fn comm_began(&mut self, now: u64, scope: CommScope) {
        self.account(now);
        self.comm_active[scope as usize] += 1;
    }
}

/// A collective instance waiting for members or running.
pub(super) struct Instance {
    pub(super) job: u32,
    pub(super) group: u32,
    pub(super) op: Collective,
    pub(super) bytes: u64,
    /// (rank, op, arrival time)
    pub(super) members: Vec<(u32, u32, u64)>,
    pub(super) start: u64,
    /// Its (operation, size)'s index in the group's memo, once started.
    pub(super) memo: u32,
    /// What runs it, once started (`None` for one rank).
    pub(super) algorithm: Option<Ran>,
    /// Boxed: an instance is moved whole when its slot is reused, and most never run one
    /// (a collective inside one host is a closed form).
    pub(super) exec: Option<Box<Execution>>,
    /// The time an own event of the execution is scheduled at (to avoid duplicates).
    pub(super) wake: u64,
}

pub(super) struct GroupState {
    /// The sequence number allowed to start next.
    pub(super) next: u32,
    pub(super) busy: bool,
    /// Instances by sequence number: arrived members.
    pub(super) pending: Pending,
    pub(super) ranks: Option<Ranks>,
    /// Per (operation, size) the group has run: what was chosen and planned the first time,
    /// and the collectives done.
    pub(super) memo: Vec<Memo>,
    /// The seed of its connections' ports, once computed (see `try_start`).
    pub(super) seed: Option<u64>,
}

impl GroupState {
    /// The memo entry of `(op, bytes)` and its choice, if the group ran it before as a
    /// closed form.
    pub(super) fn closed_form(&self, op: Collective, bytes: u64) -> Option<(u32, Choice)> {
        let i = self
            .memo
            .iter()
            .position(|m| (m.op, m.bytes) == (op, bytes))?;
        match self.memo[i].choice {
            Some(choice @ (_, _, Some(_))) => Some((i as u32, choice)),
            _ => None,
        }
    }
}

/// A group's collectives that members have reached but that have not started, by sequence
/// number: a window from the first not started (slot 0) on, so finding, adding and starting
/// one costs O(1), with no allocation once the window has grown to its widest.
#[derive(Default)]
pub(super) struct Pending {
    first: u32,
    slots: VecDeque<u32>,
}

impl Pending {
    const EMPTY: u32 = u32::MAX;

    pub(super) fn get(&self, seq: u32) -> Option<u32> {
        let i = seq.checked_sub(self.first)? as usize;
        self.slots.get(i).copied().filter(|&x| x != Self::EMPTY)
    }

    /// Records instance `inst` for `seq` (not started yet, so at or after the window's start).
    pub(super) fn insert(&mut self, seq: u32, inst: u32) {
        debug_assert!(seq >= self.first);
        let i = (seq - self.first) as usize;
        // Nearly always the next slot: pushed, rather than through `resize`, which is not inlined.
        while self.slots.len() <= i {
            self.slots.push_back(Self::EMPTY);
        }
        self.slots[i] = inst;
    }

    /// Starts `seq`, the window's first.
    pub(super) fn start(&mut self, seq: u32) {
        debug_assert_eq!(seq, self.first);
        self.slots.pop_front();
        self.first += 1;
    }

    /// (sequence number, instance) of each collective waiting, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (self.first..)
            .zip(self.slots.iter().copied())
            .filter(|&(_, x)| x != Self::EMPTY)
    }
}

/// What a group's collective of one operation and size was given the first time; the same
/// inputs give the same choice and the same plan, so later instances reuse them. Laid out so
/// that starting a collective (which reads the key and the choice) and finishing it (which
/// counts it in the tally) touch one cache line.
#[repr(C, align(64))]
pub(super) struct Memo {
    pub(super) op: Collective,
    /// What ran the collectives done, named when the run ends.
    pub(super) algorithm: Option<Ran>,
    pub(super) bytes: u64,
    pub(super) choice: Option<Choice>,
    /// The collectives done, folded into the job's statistics when the run ends (a tally
    /// found per collective cost a search of the job's keys, millions of times).
    pub(super) tally: Tally,
    pub(super) schedule: Option<Arc<Schedule>>,
    /// Where the schedule's bundles went the last time it ran on the group
    /// ([`fabricsim_collectives::Execution::placing`]).
    pub(super) placements: Vec<Option<fabricsim_netsim::PlacedBundle>>,
}

const _: () = assert!(
    std::mem::offset_of!(Memo, schedule) == 64,
    "the hot fields fill line one"
);

/// The algorithm and protocol that ran a collective.
pub(super) type Ran = (
    fabricsim_collectives::Algorithm,
    fabricsim_collectives::Protocol,
);

/// Their names, as the statistics keep them.
pub(super) fn names(ran: Option<Ran>) -> Option<(&'static str, &'static str)> {
    ran.map(|(a, p)| (a.name(), p.name()))
}

/// Algorithm, protocol, and the closed-form time (ns) of a collective inside one host.
pub(crate) type Choice = (
    fabricsim_collectives::Algorithm,
    fabricsim_collectives::Protocol,
    Option<u64>,
);

/// What NCCL's tuner picks for `op` of `bytes` on `ranks` (on `platform`), within the job's
/// settings, and the closed-form time inside one host.
pub(crate) fn choice(
    platform: &Platform,
    ranks: &Ranks,
    comm: &CommConfig,
    op: Collective,
    bytes: u64,
) -> Choice {
    let req = Request {
        op,
        bytes,
        ranks,
        algorithm: fabricsim_collectives::Algorithm::Ring,
        channels: comm.channels,
        chunk: comm.chunk,
        fidelity: comm.fidelity,
        sizes: None,
    };
    let (algorithm, protocol) = settle(
        &req,
        platform,
        comm.algorithm.filter(|a| a.supports(op)),
        comm.protocol,
    );
    let closed = (comm.host_closed_form && ranks.hosts().len() == 1)
        .then(|| predict(&Request { algorithm, ..req }, platform, protocol).ok())
        .flatten()
        .map(|us| (us * 1e3).round() as u64);
    (algorithm, protocol, closed)
}

/// Tuner choices and plans a job's groups share: groups whose ranks lie alike on their hosts
/// ([`Ranks::same_layout`]) get the same plan of a collective (a schedule names ranks, not
/// GPUs), and the same choice where they also see the same platform; the 2,048 tensor-parallel
/// groups of a 16K-GPU job are then tuned once. Scanned, not hashed: a job has few layouts.
#[derive(Default)]
pub(super) struct Shared {
    choices: Vec<(Collective, u64, Platform, Ranks, Choice)>,
    schedules: Vec<(Collective, u64, Algorithm, Ranks, Arc<Schedule>)>,
}

impl Shared {
    pub(super) fn choice(
        &self,
        op: Collective,
        bytes: u64,
        platform: &Platform,
        ranks: &Ranks,
    ) -> Option<Choice> {
        self.choices
            .iter()
            .find(|(o, b, p, r, _)| {
                (*o, *b) == (op, bytes) && p == platform && r.same_layout(ranks)
            })
            .map(|&(.., choice)| choice)
    }

    pub(super) fn keep_choice(
        &mut self,
        op: Collective,
        bytes: u64,
        platform: Platform,
        ranks: &Ranks,
        choice: Choice,
    ) {
        self.choices
            .push((op, bytes, platform, ranks.clone(), choice));
    }

    pub(super) fn schedule(
        &self,
        op: Collective,
        bytes: u64,
        algorithm: Algorithm,
        ranks: &Ranks,
    ) -> Option<Arc<Schedule>> {
        self.schedules
            .iter()
            .find(|(o, b, a, r, _)| (*o, *b, *a) == (op, bytes, algorithm) && r.same_layout(ranks))
            .map(|(.., schedule)| Arc::clone(schedule))
    }

    pub(super) fn keep_schedule(
        &mut self,
        op: Collective,
        bytes: u64,
        algorithm: Algorithm,
        ranks: &Ranks,
        schedule: &Arc<Schedule>,
    ) {
        self.schedules
            .push((op, bytes, algorithm, ranks.clone(), Arc::clone(schedule)));
    }
}

/// The index of `(op, bytes)` in the group's memo, added if new.
pub(super) fn gs_memo_index(gs: &mut GroupState, op: Collective, bytes: u64) -> usize {
    match gs.memo.iter().position(|m| (m.op, m.bytes) == (op, bytes)) {
        Some(i) => i,
        None => {
            gs.memo.push(Memo {
                op,
                algorithm: None,
                bytes,
                choice: None,
                tally: Tally::default(),
                schedule: None,
                placements: Vec::new(),
            });
            gs.memo.len() - 1
        }
    }
}

pub(super) struct Transfer {
    pub(super) job: u32,
    /// The sending rank and op.
    pub(super) src: (u32, u32),
    pub(super) key: P2pKey,
    /// The receiver's mailbox for the sender ([`P2p::peer_mailbox`]), if it has one.
    pub(super) mailbox: Option<usize>,
    /// The receive it was matched with, and since when: (op, time).
    pub(super) recv: Option<(u32, u64)>,
    pub(super) start: u64,
    pub(super) bytes: u64,
    /// The hosts' path selection's record of the message, handed back when it has arrived.
    pub(super) ticket: Option<Ticket>,
}

#[derive(Clone, Copy)]
pub(super) enum FlowOwner {
    Exec { instance: u32, owner: u32 },
    Transfer(u32),
}

/// Who each flow in flight belongs to, by flow id. Ids are handed out in submission order and
/// flows finish in about that order, so a window from the oldest unfinished flow on holds
/// about the flows in flight, each found by its place rather than hashed.
#[derive(Default)]
pub(super) struct Owners(Window<Option<FlowOwner>>);

impl Owners {
    /// `flow`, just submitted, belongs to `owner`.
    pub(super) fn insert(&mut self, flow: FlowId, owner: FlowOwner) {
        while self.0.end() < flow.0 {
            self.0.push(None);
        }
        debug_assert_eq!(
            self.0.end(),
            flow.0,
            "flows are owned as they are submitted"
        );
        self.0.push(Some(owner));
    }

    /// The owner of `flow`, which is done: it is forgotten.
    pub(super) fn remove(&mut self, flow: FlowId) -> Option<FlowOwner> {
        let owner = self.0.get_mut(flow.0)?.take();
        self.0.trim(Option::is_none);
        owner
    }
}

/// Dependency counters, two bytes each (a 16K-GPU job has tens of millions): the rare op with
/// more dependencies than that holds keeps its count in a side table, its counter reading
/// [`Counters::MANY`].
pub(super) struct Counters {
    small: Vec<u16>,
    many: FxHashMap<usize, usize>,
}

impl Counters {
    const MANY: u16 = u16::MAX;

    pub(super) fn new(len: usize) -> Counters {
        Counters {
            small: vec![0; len],
            many: FxHashMap::default(),
        }
    }

    /// Sets counters `at` (a run of them side by side) to `n`.
    pub(super) fn set(&mut self, at: std::ops::Range<usize>, n: usize) {
        match u16::try_from(n) {
            Ok(n) if n < Self::MANY => self.small[at].fill(n),
            _ => {
                self.small[at.clone()].fill(Self::MANY);
                self.many.extend(at.map(|i| (i, n)));
            }
        }
    }

    /// Counts one of counter `i`'s dependencies done; whether none is left.
    pub(super) fn release(&mut self, i: usize) -> bool {
        let c = &mut self.small[i];
        if *c != Self::MANY {
            *c -= 1;
            return *c == 0;
        }
        let n = self.many.get_mut(&i).expect("set with its count");
        *n -= 1;
        if *n > 0 {
            return false;
        }
        self.many.remove(&i);
        *c = 0;
        true
    }
}

pub(super) struct JobState {
    pub(super) spec: JobSpec,
    pub(super) index: Vec<ProgramIndex>,
    /// Per rank: where its counters start in `remaining`, and the stride between its ops'.
    pub(super) counters: Vec<(usize, usize)>,
    /// Per (rank, op waiting on two or more): dependencies not yet done. Laid out per program,
    /// op-major with the ranks that share the program side by side, so the ranks of a
    /// tensor-parallel group, which finish the same op at the same instant, touch one cache
    /// line, not eight. Ops that wait on one have none (two thirds of the Llama 3 405B's ops):
    /// the array is a third the size, and an op's one dependency done touches no counter.
    pub(super) remaining: Counters,
    pub(super) ranks: Vec<RankState>,
    pub(super) groups: Vec<GroupState>,
    /// Choices and plans shared by groups of one layout.
    pub(super) shared: Shared,
    /// Per group, what its collectives serve (read from its name once).
    pub(super) scopes: Vec<CommScope>,
    pub(super) done: u64,
    pub(super) total: u64,
    pub(super) stats: JobStats,
    /// Point-to-point matching by (src, dst, tag).
    pub(super) p2p: P2p,
    /// Per mailbox: where the network placed its sender's last message to it.
    pub(super) placements: Vec<Option<fabricsim_netsim::Placement>>,
    /// Per rank, whether it is simulated (all are, unless one representative per orbit
    /// stands for the others: [`crate::symmetry`]).
    pub(super) active: Vec<bool>,
    /// Per group, its simulated members (a collective starts when they have all arrived).
    pub(super) members: Vec<u32>,
    /// Per group, how many groups its collectives stand for.
    pub(super) weight: Vec<u32>,
    /// Ranks each simulated rank stands for (1: every rank is simulated).
    pub(super) order: u32,
    /// Tensor-parallel gangs ([`super::gang`]).
    pub(super) gangs: super::gang::Gangs,
}

impl JobState {
    /// The state of `spec` at time 0, simulating the representatives of `orbits` (every rank
    /// without), and recording slices of the first `options.trace_ranks` ranks.
    pub(super) fn new(
        spec: JobSpec,
        options: &super::RunOptions,
        orbits: Option<(&crate::symmetry::JobOrbits, u32)>,
    ) -> JobState {
        let w = &spec.workload;
        let n = w.ranks.len();
        let (active, weight, order) = match orbits {
            Some((o, order)) => (o.active.clone(), o.weight.clone(), order),
            None => (vec![true; n], vec![1; w.groups.len()], 1),
        };
        let index: Vec<ProgramIndex> = w
            .programs
            .iter()
            .map(|p| ProgramIndex::new(p, &spec.compute))
            .collect();
        // Simulated ranks per program, each one's place among them, then where each program's
        // block of counters starts.
        let mut sharing = vec![0usize; w.programs.len()];
        let mut counters: Vec<(usize, usize)> = w
            .ranks
            .iter()
            .zip(&active)
            .map(|(b, &a)| {
                let local = sharing[b.program as usize];
                sharing[b.program as usize] += usize::from(a);
                (local, 0)
            })
            .collect();
        let mut start = Vec::with_capacity(w.programs.len());
        let mut slots = 0usize;
        for (p, ix) in index.iter().enumerate() {
            start.push(slots);
            slots += ix.counters * sharing[p];
        }
        let total: usize = (w.programs.iter().zip(&sharing))
            .map(|(prog, &ranks)| prog.len() * ranks)
            .sum();
        for (r, b) in w.ranks.iter().enumerate() {
            if active[r] {
                let p = b.program as usize;
                counters[r] = (start[p] + counters[r].0, sharing[p]);
            }
        }
        // An op's counters of the ranks sharing its program lie side by side and start at the
        // same count: one run per op.
        let mut remaining = Counters::new(slots);
        for (p, prog) in w.programs.iter().enumerate() {
            let (start, ranks) = (start[p], sharing[p]);
            if ranks == 0 {
                continue;
            }
            for (i, &c) in index[p].counted.iter().enumerate() {
                if c != UNCOUNTED {
                    let at = start + c as usize * ranks;
                    remaining.set(at..at + ranks, prog.deps(i as u32).len());
                }
            }
        }
        let groups = w
            .groups
            .iter()
            .map(|_| GroupState {
                next: 0,
                busy: false,
                pending: Pending::default(),
                ranks: None,
                memo: Vec::new(),
                seed: None,
            })
            .collect();
        let members = w
            .groups
            .iter()
            .map(|g| g.ranks.iter().filter(|&&r| active[r as usize]).count() as u32)
            .collect();
        let p2p = P2p::new(&spec.workload);
        let trace_ranks = options.trace_ranks;
        let alone = options.lone_ranks || orbits.is_some();
        let gangs = super::gang::Gangs::new(&spec, &index, &counters, trace_ranks, alone);
        JobState {
            placements: vec![None; p2p.len()],
            index,
            counters,
            remaining,
            ranks: (0..n).map(|_| RankState::default()).collect(),
            groups,
            shared: Shared::default(),
            scopes: w
                .groups
                .iter()
                .map(|g| CommScope::of_group(&g.name))
                .collect(),
            done: 0,
            total: total as u64,
            stats: JobStats::new(&spec, trace_ranks),
            p2p,
            active,
            members,
            weight,
            order,
            gangs,
            spec,
        }
    }
}

/// (source rank, destination rank, tag) of a send and its receive.
pub(super) type P2pKey = (u32, u32, u64);

/// An event of the orchestrator's own queue (`queue.rs`), packed into one integer:
/// time (64 bits), kind (2), then job (30) and rank for a kernel, or 0 and the instance for a
/// collective. Ordered, so one instant's events go in a fixed order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Event(u128);

impl Event {
    pub(super) fn new(t: u64, kind: u8, a: u32, b: u32) -> Event {
        debug_assert!(kind < 4 && a < 1 << 30);
        Event(u128::from(t) << 64 | u128::from(kind) << 62 | u128::from(a) << 32 | u128::from(b))
    }

    /// Its time and the rest of its key.
    pub(super) fn parts(self) -> (u64, u64) {
        ((self.0 >> 64) as u64, self.0 as u64)
    }

    pub(super) fn from_parts(t: u64, low: u64) -> Event {
        Event(u128::from(t) << 64 | u128::from(low))
    }

    pub(super) fn kind(self) -> u8 {
        (self.0 >> 62) as u8 & 3
    }

    pub(super) fn a(self) -> u32 {
        (self.0 >> 32) as u32 & ((1 << 30) - 1)
    }

    pub(super) fn b(self) -> u32 {
        self.0 as u32
    }
}

impl JobState {
    /// Rank `r`'s communication op `op` for `scope`, in flight since `since`, ends at `t`; a
    /// collective ran `algorithm`.
    pub(super) fn comm_ended(
        &mut self,
        r: u32,
        op: u32,
        scope: CommScope,
        since: u64,
        t: u64,
        algorithm: Option<Ran>,
    ) {
        let rank = &mut self.ranks[r as usize];
        rank.account(t);
        rank.comm_active[scope as usize] -= 1;
        if r >= self.stats.trace_ranks {
            return;
        }
        let binding = &self.spec.workload.ranks[r as usize];
        let the_op = self.spec.workload.program_of(r).ops[op as usize];
        let detail = match the_op.kind {
            OpKind::Collective { bytes, group, .. } => Detail {
                bytes,
                group: Some(binding.groups[group as usize]),
                algorithm: names(algorithm),
                ..Detail::default()
            },
            OpKind::Send { peer, bytes, .. } | OpKind::Recv { peer, bytes, .. } => Detail {
                bytes,
                peer: Some(binding.peers[peer as usize]),
                ..Detail::default()
            },
            _ => Detail::default(),
        };
        self.stats.slice(Slice {
            rank: r,
            lane: Lane::Comm,
            label: the_op.label,
            start: since,
            end: t,
            detail,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_release_at_zero_two_bytes_or_more() {
        let mut c = Counters::new(5);
        c.set(0..1, 2);
        c.set(1..3, 70_000);
        c.set(3..5, 65_535);
        assert!(!c.release(0));
        assert!(c.release(0));
        for (i, n) in [(1, 70_000), (2, 70_000), (3, 65_535), (4, 65_535)] {
            for _ in 1..n {
                assert!(!c.release(i));
            }
            assert!(c.release(i), "counter {i}");
        }
    }
}
