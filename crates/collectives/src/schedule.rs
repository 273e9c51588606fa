//! What an algorithm produces: transfers between ranks, their dependencies, and *groups* —
//! the sets of transfers that run as one coupled variable under pipelined fidelity.
//!
//! Under **step** fidelity every transfer is a flow. It starts when every transfer it depends
//! on has *arrived* (its last byte delivered) and, if it has one, when the previous transfer on
//! its connection has *left* its sender (a sender streams chunks back to back); a transfer that
//! opens an algorithm step arrives the protocol's per-step latency after its last byte lands.
//!
//! Under **pipelined** fidelity a generator emits one transfer per edge of a group carrying all
//! the edge's bytes; the group runs as one variable (every edge at the same rate, the pace of the
//! slowest) once the groups it comes after are done, and is done `steps` per-step latencies
//! plus the pipeline fill after its bytes drain (see [`Group`]). Either way, a group's edges
//! form one NCCL channel of the algorithm (or one phase of it).

use either::Either;

use crate::layout::Ranks;

mod formula;
mod pairs;
mod pipeline;
mod ring_steps;
#[cfg(test)]
mod tests;

use formula::Formula;
pub use pairs::pxn_path;
pub use ring_steps::edge_totals;

pub const NONE: u32 = u32::MAX;

/// How a transfer's bytes travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// Routed from the source GPU to the destination GPU (NVLink inside a host).
    Direct,
    /// Over NVLink to the proxy rank's GPU, then routed from there (PXN; a rail-aligned ring
    /// leaving a host through its channel's NIC).
    Via(u32),
    /// From the source GPU into its NVSwitch (NVLS); `dst` is the source itself.
    NvlsUp,
    /// From the NVSwitch to the destination GPU (NVLS); `src` is the destination itself.
    NvlsDown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub src: u32,
    pub dst: u32,
    /// Payload bytes (the protocol's overhead is added when the transfer runs).
    pub bytes: u64,
    /// The NCCL channel; every transfer of a group is on the group's channel.
    pub channel: u32,
    pub path: Path,
    pub group: u32,
    /// Whether this transfer opens an algorithm step (and pays the per-step latency).
    pub step_start: bool,
}

/// A transfer as the schedule holds it: 28 bytes, since a step-fidelity schedule holds
/// millions (a 1,024-rank, 4-channel ring all-reduce, 8.4 million). The channel is its group's.
#[derive(Clone, Copy, Debug)]
struct Packed {
    src: u32,
    dst: u32,
    /// `bytes` in two halves, so that the record needs no 8-byte alignment.
    bytes: [u32; 2],
    group: u32,
    /// The next transfer on the same connection, or [`NONE`].
    next: u32,
    /// The path's kind, two flags and the proxy rank of a [`Path::Via`] ([`Packed::word`]).
    word: u32,
}

const KIND_SHIFT: u32 = 30;
const STEP_START: u32 = 1 << 29;
const HAS_PREV: u32 = 1 << 28;
const RANK_MASK: u32 = HAS_PREV - 1;

impl Packed {
    fn word(path: Path, step_start: bool, has_prev: bool) -> u32 {
        let (kind, rank) = match path {
            Path::Direct => (0, 0),
            Path::Via(p) => {
                assert!(p <= RANK_MASK, "proxy rank {p} beyond 2^28 ranks");
                (1, p)
            }
            Path::NvlsUp => (2, 0),
            Path::NvlsDown => (3, 0),
        };
        kind << KIND_SHIFT
            | rank
            | if step_start { STEP_START } else { 0 }
            | if has_prev { HAS_PREV } else { 0 }
    }

    fn path(&self) -> Path {
        match self.word >> KIND_SHIFT {
            0 => Path::Direct,
            1 => Path::Via(self.word & RANK_MASK),
            2 => Path::NvlsUp,
            _ => Path::NvlsDown,
        }
    }
}

/// A set of transfers that pipelined fidelity runs as one variable.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Group {
    /// Sequential algorithm steps on the group's critical path (a piece going round a ring, a
    /// chunk going up and down a tree). Each costs the protocol's per-step latency and the
    /// path latency of its hop kind, as NCCL's model charges them (`tuning.cc`): `inter_steps`
    /// of them at the network's, the rest at NVLink's.
    pub steps: u32,
    /// Of `steps`, those that cross the network (ignored when no edge of the group does):
    /// 2(h − 1) of a ring all-reduce's 2(n − 1) over h hosts, twice the host tree's height
    /// for a tree all-reduce.
    pub inter_steps: u32,
    /// Extra chunk times on the critical path beyond one edge's bytes (a pipeline of `d` hops
    /// fills in `d - 1` chunks); a chunk time is the mean, over the group's edges, of a chunk
    /// (an edge's bytes over `chunks`) at the edge's payload rate (NVLink, or the GPU's network
    /// rate).
    pub fill: u32,
    pub chunks: u32,
}

/// Transfers, their dependencies and groups.
///
/// Built by [`Schedule::push`] with each transfer's dependencies, and by
/// [`Schedule::push_ring_steps`], [`Schedule::push_pipeline`] and [`Schedule::push_pairs`]
/// (a ring pass; a tree's, a chain's or an NVLS tree's chunks; an all-to-all's pairs: in
/// closed form), then [`Schedule::finish`]ed, which turns the dependencies
/// around into each transfer's *dependents*, the form an execution reads (what a transfer's
/// arrival releases), so that only one of the two is ever held with the transfers.
///
/// Transfer ids run over *runs*: spans of transfers held one by one, and formulas that compute
/// each transfer from its id ([`formula`]), so that a step schedule holds O(n) per ring, tree or
/// chain and channel, however many steps or chunks it makes, and O(n) per all-to-all.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// The transfers held one by one, in id order.
    transfers: Vec<Packed>,
    /// Spans of ids in order, each from its start to the next one's.
    runs: Vec<Run>,
    formulas: Vec<Formula>,
    len: u32,
    /// Whether a formula would have taken the ids past `u32::MAX` (and was left out).
    too_large: bool,
    /// Each held transfer's dependencies, in CSR form (by its place in `transfers`); no
    /// offsets until a transfer has one (a pipelined schedule's transfers have none). The
    /// offsets stay once finished: they count what each waits for.
    dep_offsets: Vec<u32>,
    deps: Vec<u32>,
    /// Once finished: each held transfer's dependents.
    dependents: Option<Csr>,
    /// Once finished: (transfer, dependent) for the dependents of formulas' transfers that
    /// their closed form does not give (a later phase's first step, a transfer held one by
    /// one), in order.
    outside: Vec<(u32, u32)>,
    pub groups: Vec<Group>,
    /// Per group, the groups that must be done before it starts, in CSR form (an all-to-all
    /// has a group per message: a vector in each would double the groups' memory). Offsets
    /// start at the first group that waits for another (none does in an all-to-all): every
    /// group before it waits for none.
    after_offsets: Vec<u32>,
    after: Vec<u32>,
    /// Per group, its channel (its first transfer's).
    channels: Vec<u32>,
}

/// A span of transfer ids: held transfers from `index` on in `transfers`, or formula `index`.
#[derive(Clone, Copy, Debug)]
struct Run {
    start: u32,
    held: bool,
    index: u32,
}

/// Where a transfer is kept.
enum Kept<'a> {
    Held(usize),
    Formula(&'a Formula),
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule::new()
    }
}

impl Schedule {
    pub fn new() -> Schedule {
        Schedule {
            transfers: Vec::new(),
            runs: Vec::new(),
            formulas: Vec::new(),
            len: 0,
            too_large: false,
            dep_offsets: Vec::new(),
            deps: Vec::new(),
            dependents: None,
            outside: Vec::new(),
            groups: Vec::new(),
            after_offsets: vec![0],
            after: Vec::new(),
            channels: Vec::new(),
        }
    }

    /// Makes room for `transfers` more transfers of one dependency each at most.
    pub fn reserve(&mut self, transfers: usize) {
        self.transfers.reserve(transfers);
        self.dep_offsets.reserve(transfers);
        self.deps.reserve(transfers);
    }

    /// Adds `group`, to start once every group in `after` is done; returns its index.
    pub fn add_group(&mut self, group: Group, after: impl IntoIterator<Item = u32>) -> u32 {
        let g = self.groups.len();
        self.groups.push(group);
        self.channels.push(NONE);
        let before = self.after.len() as u32;
        self.after.extend(after);
        if !self.after.is_empty() {
            // Every group before the first that waits for one waited for none.
            self.after_offsets.resize(g + 1, before);
            self.after_offsets.push(self.after.len() as u32);
        }
        g as u32
    }

    /// Whether some group waits for another.
    pub fn has_after(&self) -> bool {
        !self.after.is_empty()
    }

    /// The groups that must be done before group `g` starts.
    pub fn after(&self, g: u32) -> &[u32] {
        match self.after_offsets.get(g as usize..g as usize + 2) {
            Some(&[a, b]) => &self.after[a as usize..b as usize],
            _ => &[],
        }
    }

    fn set_channel(&mut self, group: u32, channel: u32) {
        let c = &mut self.channels[group as usize];
        debug_assert!(*c == NONE || *c == channel, "a group has one channel");
        *c = channel;
    }

    #[inline]
    fn kept(&self, i: u32) -> Kept<'_> {
        debug_assert!(i < self.len, "transfer {i} of {}", self.len);
        // Most schedules (every pipelined one) are one run of held transfers.
        let run = match &self.runs[..] {
            [only] => *only,
            runs => runs[runs.partition_point(|r| r.start <= i) - 1],
        };
        if run.held {
            Kept::Held((run.index + (i - run.start)) as usize)
        } else {
            Kept::Formula(&self.formulas[run.index as usize])
        }
    }

    /// The end of run `j`'s ids.
    fn run_end(&self, j: usize) -> u32 {
        self.runs.get(j + 1).map_or(self.len, |r| r.start)
    }

    /// Adds `t`, which starts once every transfer in `deps` has arrived and, unless `prev` is
    /// [`NONE`], once `prev`, the previous transfer on its connection, has left its sender;
    /// returns its index. `prev` is a transfer added by this method.
    pub fn push(&mut self, t: Transfer, prev: u32, deps: impl IntoIterator<Item = u32>) -> u32 {
        debug_assert!(
            self.dependents.is_none(),
            "a finished schedule takes no more transfers"
        );
        let id = self.len;
        assert!(id < NONE - 1, "a schedule of 2^32 transfers");
        self.set_channel(t.group, t.channel);
        if !self.runs.last().is_some_and(|r| r.held) {
            self.runs.push(Run {
                start: id,
                held: true,
                index: self.transfers.len() as u32,
            });
        }
        if prev != NONE {
            debug_assert!(prev < id);
            let Kept::Held(p) = self.kept(prev) else {
                panic!("the transfer before {id} on its connection must be held, not in a formula")
            };
            debug_assert_eq!(self.transfers[p].next, NONE);
            self.transfers[p].next = id;
        }
        let held = self.transfers.len();
        self.transfers.push(Packed {
            src: t.src,
            dst: t.dst,
            bytes: [t.bytes as u32, (t.bytes >> 32) as u32],
            group: t.group,
            next: NONE,
            word: Packed::word(t.path, t.step_start, prev != NONE),
        });
        self.len += 1;
        for d in deps {
            if d != NONE {
                debug_assert!(d < id, "dependencies come first");
                self.deps.push(d);
            }
        }
        if !self.deps.is_empty() {
            // Every transfer before the first with a dependency had none.
            self.dep_offsets.resize(held + 1, 0);
            self.dep_offsets.push(self.deps.len() as u32);
        }
        id
    }

    /// Adds `f`, numbered from the next id, on its group's `channel`; whether it fits under
    /// 2^32 transfers (if not, it is left out and the schedule is [`Schedule::too_large`]).
    fn push_formula(&mut self, f: Formula, channel: u32) -> bool {
        debug_assert!(self.dependents.is_none());
        debug_assert_eq!(f.start(), self.len);
        self.set_channel(f.group(), channel);
        let end = u64::from(self.len) + f.len();
        if end >= u64::from(NONE - 1) {
            self.too_large = true;
            return false;
        }
        if f.len() > 0 {
            self.runs.push(Run {
                start: self.len,
                held: false,
                index: self.formulas.len() as u32,
            });
            self.len = end as u32;
            self.formulas.push(f);
        }
        true
    }

    /// Whether a formula was left out because the schedule would have passed 2^32 transfers.
    pub fn too_large(&self) -> bool {
        self.too_large
    }

    /// Turns each transfer's dependencies into its dependents, each list in transfer order.
    pub fn finish(&mut self) {
        if self.dependents.is_some() {
            return;
        }
        if self.deps.is_empty() && self.formulas.iter().all(|f| f.entries().next().is_none()) {
            // Nothing waits for anything a formula does not give (every pipelined schedule).
            self.dependents = Some(Csr::default());
            return;
        }
        // A held transfer's dependents by a counting sort (no table but the result), a
        // formula's transfer's that its closed form does not give in a sorted list (a few per
        // formula).
        let dependents = {
            let held = self.listed_edges().filter_map(|(d, t)| match self.kept(d) {
                Kept::Held(p) => Some((p as u32, t)),
                Kept::Formula(_) => None,
            });
            if held.clone().next().is_none() {
                Csr::default()
            } else {
                Csr::new(self.transfers.len(), held)
            }
        };
        let mut outside: Vec<(u32, u32)> = self
            .listed_edges()
            .filter(|&(d, _)| matches!(self.kept(d), Kept::Formula(_)))
            .collect();
        outside.sort_unstable();
        self.dependents = Some(dependents);
        self.outside = outside;
        self.deps = Vec::new();
    }

    /// Every dependency `(d, t)` that no formula gives (held transfers' dependencies, rings'
    /// entries), by `t` in order.
    fn listed_edges(&self) -> impl Iterator<Item = (u32, u32)> + Clone + '_ {
        self.runs.iter().enumerate().flat_map(move |(j, run)| {
            let held = run.held.then(|| {
                (run.start..self.run_end(j)).flat_map(move |id| {
                    let h = (run.index + (id - run.start)) as usize;
                    let o = &self.dep_offsets;
                    let deps = if h + 1 < o.len() {
                        &self.deps[o[h] as usize..o[h + 1] as usize]
                    } else {
                        &[]
                    };
                    deps.iter().map(move |&d| (d, id))
                })
            });
            let formula = (!run.held).then(|| self.formulas[run.index as usize].entries());
            held.into_iter()
                .flatten()
                .chain(formula.into_iter().flatten())
        })
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Transfers held one by one (the rest are in closed form).
    pub fn held(&self) -> usize {
        self.transfers.len()
    }

    /// Transfer `i`.
    #[inline]
    pub fn transfer(&self, i: u32) -> Transfer {
        match self.kept(i) {
            Kept::Held(h) => self.held_transfer(h),
            Kept::Formula(f) => self.formula_transfer(f, i),
        }
    }

    /// Transfer `i` of formula `f`, out of the held transfers' way.
    #[inline(never)]
    fn formula_transfer(&self, f: &Formula, i: u32) -> Transfer {
        f.transfer(i, self.channels[f.group() as usize])
    }

    /// The transfer at place `h` in `transfers`.
    #[inline(always)]
    fn held_transfer(&self, h: usize) -> Transfer {
        self.packed_transfer(&self.transfers[h])
    }

    #[inline(always)]
    fn packed_transfer(&self, p: &Packed) -> Transfer {
        Transfer {
            src: p.src,
            dst: p.dst,
            bytes: u64::from(p.bytes[0]) | u64::from(p.bytes[1]) << 32,
            channel: self.channels[p.group as usize],
            path: p.path(),
            group: p.group,
            step_start: p.word & STEP_START != 0,
        }
    }

    /// Every transfer's group, in order.
    pub fn transfer_groups(&self) -> impl Iterator<Item = u32> + Clone + '_ {
        if self.formulas.is_empty() {
            Either::Left(self.transfers.iter().map(|p| p.group))
        } else {
            Either::Right(self.transfers().map(|t| t.group))
        }
    }

    /// Every transfer, in order: the held ones read straight through where there is no
    /// formula, else run after run (no search for each).
    pub fn transfers(&self) -> impl ExactSizeIterator<Item = Transfer> + Clone + '_ {
        if self.formulas.is_empty() {
            Either::Left(self.transfers.iter().map(|p| self.packed_transfer(p)))
        } else {
            Either::Right(Transfers {
                sched: self,
                next: 0,
                run: 0,
            })
        }
    }

    /// Whether transfer `i` follows another on its connection.
    pub fn has_prev(&self, i: u32) -> bool {
        match self.kept(i) {
            Kept::Held(h) => self.transfers[h].word & HAS_PREV != 0,
            Kept::Formula(f) => f.has_prev(i),
        }
    }

    /// What transfer `i` waits for before it may start: the transfers it depends on, and the
    /// previous one on its connection. Once finished.
    pub fn waits(&self, i: u32) -> u32 {
        match self.kept(i) {
            Kept::Held(h) => {
                let o = &self.dep_offsets;
                let deps = if h + 1 < o.len() { o[h + 1] - o[h] } else { 0 };
                deps + u32::from(self.transfers[h].word & HAS_PREV != 0)
            }
            Kept::Formula(f) => f.waits(i),
        }
    }

    /// The transfers that wait for nothing, in order. Once finished.
    pub fn starts(&self) -> Vec<u32> {
        let mut starts = Vec::new();
        for (j, run) in self.runs.iter().enumerate() {
            if run.held {
                starts.extend((run.start..self.run_end(j)).filter(|&t| self.waits(t) == 0));
            } else {
                starts.extend(self.formulas[run.index as usize].starts());
            }
        }
        starts
    }

    /// The transfer after `i` on its connection, or [`NONE`].
    pub fn next(&self, i: u32) -> u32 {
        match self.kept(i) {
            Kept::Held(h) => self.transfers[h].next,
            Kept::Formula(f) => f.next(i),
        }
    }

    /// The transfers whose dependencies include `i`, in transfer order. Once finished.
    pub fn dependents(&self, i: u32) -> Dependents<'_> {
        let finished = self
            .dependents
            .as_ref()
            .expect("dependents are known once the schedule is finished");
        match self.kept(i) {
            Kept::Held(h) => Dependents {
                listed: finished.get(h as u32).iter(),
                offset: 0,
                forward: NONE,
                outside: [].iter(),
            },
            Kept::Formula(f) => {
                let from = self.outside.partition_point(|&(d, _)| d < i);
                let to = from + self.outside[from..].partition_point(|&(d, _)| d == i);
                let released = f.released(i);
                Dependents {
                    listed: released.listed.iter(),
                    offset: released.offset,
                    forward: released.forward,
                    outside: self.outside[from..to].iter(),
                }
            }
        }
    }

    /// The transfers whose receive slot `i` frees as it starts, each waiting for it: a ring
    /// step or a pipeline chunk `NCCL_STEPS` later on the connections whose data `i` forwards
    /// (`ring_steps.rs`, `pipeline.rs`). Held transfers keep no slots.
    pub fn freed_by_start(&self, i: u32) -> Dependents<'_> {
        let freed = match self.kept(i) {
            Kept::Held(_) => formula::Released::one(NONE),
            Kept::Formula(f) => f.freed_by_start(i),
        };
        Dependents {
            listed: freed.listed.iter(),
            offset: freed.offset,
            forward: freed.forward,
            outside: [].iter(),
        }
    }

    /// The transfer whose receive slot `i` frees as it arrives, where nothing forwards its
    /// data (a pipeline's last edges), or [`NONE`].
    pub fn freed_by_arrival(&self, i: u32) -> u32 {
        match self.kept(i) {
            Kept::Held(_) => NONE,
            Kept::Formula(f) => f.freed_by_arrival(i),
        }
    }

    /// Every transfer, but the transfers of a formula's edge (a ring position's steps, a
    /// pipeline edge's chunks) as one, its first carrying the bytes of them all: what each
    /// connection moves over the schedule, read in O(n) per ring or pipeline (where
    /// [`Schedule::transfers`] makes its channels × steps × n).
    pub fn sends(&self) -> impl Iterator<Item = Transfer> + '_ {
        if self.formulas.is_empty() {
            return Either::Left(self.transfers());
        }
        Either::Right(self.runs.iter().enumerate().flat_map(move |(j, run)| {
            let n = (self.run_end(j) - run.start) as usize;
            let held = run.held.then(|| {
                self.transfers[run.index as usize..][..n]
                    .iter()
                    .map(|p| self.packed_transfer(p))
            });
            let formula = (!run.held).then(|| {
                let f = &self.formulas[run.index as usize];
                f.sends(self.channels[f.group() as usize])
            });
            held.into_iter()
                .flatten()
                .chain(formula.into_iter().flatten())
        }))
    }

    /// Payload bytes each rank sends (NVLS: into its switch) and receives.
    pub fn volumes(&self, ranks: &Ranks) -> (Vec<u64>, Vec<u64>) {
        let mut sent = vec![0; ranks.len()];
        let mut received = vec![0; ranks.len()];
        for t in self.sends() {
            match t.path {
                Path::NvlsUp => sent[t.src as usize] += t.bytes,
                Path::NvlsDown => received[t.dst as usize] += t.bytes,
                Path::Direct | Path::Via(_) => {
                    sent[t.src as usize] += t.bytes;
                    received[t.dst as usize] += t.bytes;
                }
            }
        }
        (sent, received)
    }
}

/// Every transfer of a schedule, in order ([`Schedule::transfers`]).
#[derive(Clone, Debug)]
pub struct Transfers<'a> {
    sched: &'a Schedule,
    next: u32,
    /// The run that holds `next`.
    run: usize,
}

impl Iterator for Transfers<'_> {
    type Item = Transfer;

    #[inline(always)]
    fn next(&mut self) -> Option<Transfer> {
        let s = self.sched;
        let i = self.next;
        if i >= s.len {
            return None;
        }
        while s.run_end(self.run) <= i {
            self.run += 1;
        }
        self.next += 1;
        let run = s.runs[self.run];
        Some(if run.held {
            s.held_transfer((run.index + (i - run.start)) as usize)
        } else {
            s.formula_transfer(&s.formulas[run.index as usize], i)
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.sched.len - self.next) as usize;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Transfers<'_> {}

/// The dependents of one transfer ([`Schedule::dependents`]).
#[derive(Clone, Debug)]
pub struct Dependents<'a> {
    /// Held dependents, or a pipeline's edges from `offset`.
    listed: std::slice::Iter<'a, u32>,
    offset: u32,
    /// A ring step's successor that forwards its data.
    forward: u32,
    outside: std::slice::Iter<'a, (u32, u32)>,
}

impl Iterator for Dependents<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if let Some(&t) = self.listed.next() {
            return Some(t + self.offset);
        }
        if self.forward != NONE {
            return Some(std::mem::replace(&mut self.forward, NONE));
        }
        self.outside.next().map(|&(_, t)| t)
    }
}

/// The edges every chunk of a pipeline crosses ([`Schedule::push_pipeline`]), in order, each
/// with the edges before it that it waits for in its chunk.
#[derive(Clone, Debug, Default)]
pub struct Pattern {
    edges: Vec<(u32, u32, Path)>,
    deps: Vec<Vec<u32>>,
}

impl Pattern {
    /// Adds the edge `src -> dst` on `path`, waiting for the edges `deps`; returns its index.
    pub fn add(&mut self, src: u32, dst: u32, path: Path, deps: Vec<u32>) -> u32 {
        let q = self.edges.len() as u32;
        debug_assert!(
            deps.iter().all(|&d| d < q),
            "an edge waits for edges before it"
        );
        self.edges.push((src, dst, path));
        self.deps.push(deps);
        q
    }
}

/// Lists of `u32` per index in one table (with no offsets, every list empty).
#[derive(Clone, Debug, Default)]
pub struct Csr {
    offsets: Vec<u32>,
    items: Vec<u32>,
}

impl Csr {
    /// The lists of `n` indices from (index, item) pairs, each list in the pairs' order: a
    /// counting sort holding no table but the result.
    pub fn new(n: usize, pairs: impl Iterator<Item = (u32, u32)> + Clone) -> Csr {
        let mut offsets = vec![0u32; n + 1];
        pairs
            .clone()
            .for_each(|(i, _)| offsets[i as usize + 1] += 1);
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut items = vec![0u32; offsets[n] as usize];
        // Each list's start serves as its cursor, and ends at the next list's start.
        pairs.for_each(|(i, x)| {
            items[offsets[i as usize] as usize] = x;
            offsets[i as usize] += 1;
        });
        offsets.copy_within(0..n, 1);
        offsets[0] = 0;
        Csr { offsets, items }
    }

    pub fn get(&self, i: u32) -> &[u32] {
        if self.offsets.is_empty() {
            return &[];
        }
        &self.items[self.offsets[i as usize] as usize..self.offsets[i as usize + 1] as usize]
    }
}

/// `total` split into `parts` sizes that differ by at most one and sum to `total`.
pub fn split(total: u64, parts: u32) -> Vec<u64> {
    (0..parts.max(1))
        .map(|i| split_piece(total, parts, i))
        .collect()
}

/// Piece `i` of [`split`]`(total, parts)`.
#[inline]
pub fn split_piece(total: u64, parts: u32, i: u32) -> u64 {
    let (parts, i) = (u64::from(parts.max(1)), u64::from(i));
    (i + 1) * total / parts - i * total / parts
}

/// How many chunks of at most `chunk` bytes `bytes` makes (at least one).
pub fn chunk_count(bytes: u64, chunk: u64) -> u32 {
    bytes.div_ceil(chunk.max(1)).clamp(1, u64::from(u32::MAX)) as u32
}
