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

use crate::layout::Ranks;

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
/// Built by [`Schedule::push`] with each transfer's dependencies, then [`Schedule::finish`]ed,
/// which turns them around into each transfer's *dependents*, the form an execution reads
/// (what a transfer's arrival releases), so that only one of the two is ever held with the
/// transfers.
#[derive(Clone, Debug)]
pub struct Schedule {
    transfers: Vec<Packed>,
    /// Until [`Schedule::finish`]: each transfer's dependencies, in CSR form; no offsets until
    /// a transfer has one (a pipelined schedule's transfers have none).
    dep_offsets: Vec<u32>,
    deps: Vec<u32>,
    /// Once finished: each transfer's dependents.
    dependents: Option<Csr>,
    pub groups: Vec<Group>,
    /// Per group, the groups that must be done before it starts, in CSR form (an all-to-all
    /// has a group per message: a vector in each would double the groups' memory).
    after_offsets: Vec<u32>,
    after: Vec<u32>,
    /// Per group, its channel (its first transfer's).
    channels: Vec<u32>,
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
            dep_offsets: Vec::new(),
            deps: Vec::new(),
            dependents: None,
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
        self.groups.push(group);
        self.channels.push(NONE);
        self.after.extend(after);
        self.after_offsets.push(self.after.len() as u32);
        self.groups.len() as u32 - 1
    }

    /// The groups that must be done before group `g` starts.
    pub fn after(&self, g: u32) -> &[u32] {
        let (a, b) = (
            self.after_offsets[g as usize],
            self.after_offsets[g as usize + 1],
        );
        &self.after[a as usize..b as usize]
    }

    /// Adds `t`, which starts once every transfer in `deps` has arrived and, unless `prev` is
    /// [`NONE`], once `prev`, the previous transfer on its connection, has left its sender;
    /// returns its index.
    pub fn push(&mut self, t: Transfer, prev: u32, deps: impl IntoIterator<Item = u32>) -> u32 {
        debug_assert!(
            self.dependents.is_none(),
            "a finished schedule takes no more transfers"
        );
        let id = self.transfers.len() as u32;
        let channel = &mut self.channels[t.group as usize];
        debug_assert!(
            *channel == NONE || *channel == t.channel,
            "a group has one channel"
        );
        *channel = t.channel;
        if prev != NONE {
            debug_assert!(prev < id);
            debug_assert_eq!(self.transfers[prev as usize].next, NONE);
            self.transfers[prev as usize].next = id;
        }
        self.transfers.push(Packed {
            src: t.src,
            dst: t.dst,
            bytes: [t.bytes as u32, (t.bytes >> 32) as u32],
            group: t.group,
            next: NONE,
            word: Packed::word(t.path, t.step_start, prev != NONE),
        });
        for d in deps {
            if d != NONE {
                debug_assert!(d < id, "dependencies come first");
                self.deps.push(d);
            }
        }
        if !self.deps.is_empty() {
            // Every transfer before the first with a dependency had none.
            self.dep_offsets.resize(id as usize + 1, 0);
            self.dep_offsets.push(self.deps.len() as u32);
        }
        id
    }

    /// Turns each transfer's dependencies into its dependents, each list in transfer order.
    pub fn finish(&mut self) {
        if self.dependents.is_some() {
            return;
        }
        let (offsets, deps) = (&self.dep_offsets, &self.deps);
        let edges = (0..offsets.len().saturating_sub(1)).flat_map(|t| {
            deps[offsets[t] as usize..offsets[t + 1] as usize]
                .iter()
                .map(move |&d| (d, t as u32))
        });
        self.dependents = Some(if deps.is_empty() {
            Csr::default()
        } else {
            Csr::new(self.transfers.len(), edges)
        });
        (self.dep_offsets, self.deps) = (Vec::new(), Vec::new());
    }

    pub fn len(&self) -> usize {
        self.transfers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.transfers.is_empty()
    }

    /// Transfer `i`.
    pub fn transfer(&self, i: u32) -> Transfer {
        let p = &self.transfers[i as usize];
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

    /// Every transfer, in order.
    pub fn transfers(&self) -> impl ExactSizeIterator<Item = Transfer> + Clone + '_ {
        (0..self.transfers.len() as u32).map(|i| self.transfer(i))
    }

    /// Whether transfer `i` follows another on its connection.
    pub fn has_prev(&self, i: u32) -> bool {
        self.transfers[i as usize].word & HAS_PREV != 0
    }

    /// The transfer after `i` on its connection, or [`NONE`].
    pub fn next(&self, i: u32) -> u32 {
        self.transfers[i as usize].next
    }

    /// The transfers whose dependencies include `i`.
    pub fn dependents(&self, i: u32) -> &[u32] {
        self.dependents
            .as_ref()
            .expect("dependents are known once the schedule is finished")
            .get(i)
    }

    /// Payload bytes each rank sends (NVLS: into its switch) and receives.
    pub fn volumes(&self, ranks: &Ranks) -> (Vec<u64>, Vec<u64>) {
        let mut sent = vec![0; ranks.len()];
        let mut received = vec![0; ranks.len()];
        for t in self.transfers() {
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
        for (i, _) in pairs.clone() {
            offsets[i as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut items = vec![0u32; offsets[n] as usize];
        // Each list's start serves as its cursor, and ends at the next list's start.
        for (i, x) in pairs {
            items[offsets[i as usize] as usize] = x;
            offsets[i as usize] += 1;
        }
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
    let parts = u64::from(parts.max(1));
    (0..parts)
        .map(|i| (i + 1) * total / parts - i * total / parts)
        .collect()
}

/// How many chunks of at most `chunk` bytes `bytes` makes (at least one).
pub fn chunk_count(bytes: u64, chunk: u64) -> u32 {
    bytes.div_ceil(chunk.max(1)).clamp(1, u64::from(u32::MAX)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transfer(src: u32, dst: u32, bytes: u64, path: Path, group: u32) -> Transfer {
        Transfer {
            src,
            dst,
            bytes,
            channel: 3,
            path,
            group,
            step_start: src.is_multiple_of(2),
        }
    }

    #[test]
    fn a_transfer_is_held_in_28_bytes_and_read_back_whole() {
        assert_eq!(std::mem::size_of::<Packed>(), 28);
        let mut s = Schedule::new();
        let g = s.add_group(Group::default(), []);
        let paths = [
            Path::Direct,
            Path::Via(RANK_MASK),
            Path::NvlsUp,
            Path::NvlsDown,
        ];
        let mut ids = Vec::new();
        for (i, &path) in paths.iter().enumerate() {
            let t = transfer(i as u32, 7, (5 << 40) + i as u64, path, g);
            let prev = ids.last().copied().unwrap_or(NONE);
            ids.push(s.push(t, prev, [NONE]));
            assert_eq!(s.transfer(ids[i]), t);
        }
        assert!(!s.has_prev(ids[0]) && s.has_prev(ids[3]));
        assert_eq!((s.next(ids[0]), s.next(ids[3])), (ids[1], NONE));
    }

    #[test]
    fn finishing_turns_every_dependency_into_a_dependent() {
        // Transfer t depends on every earlier transfer that divides it (1-based).
        let mut s = Schedule::new();
        let g = s.add_group(Group::default(), []);
        let n = 40u32;
        let deps = |t: u32| (0..t).filter(move |&d| (t + 1).is_multiple_of(d + 1));
        for t in 0..n {
            s.push(transfer(t, t + 1, 1, Path::Direct, g), NONE, deps(t));
        }
        s.finish();
        for d in 0..n {
            let expected: Vec<u32> = (d + 1..n).filter(|&t| deps(t).any(|x| x == d)).collect();
            assert_eq!(s.dependents(d), expected, "dependents of {d}");
        }
    }
}
