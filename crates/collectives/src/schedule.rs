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
    pub channel: u32,
    pub path: Path,
    pub group: u32,
    /// Whether this transfer opens an algorithm step (and pays the per-step latency).
    pub step_start: bool,
    /// The previous transfer on the same connection, or [`NONE`].
    pub prev: u32,
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
    /// Groups that must be done before this one starts.
    pub after: Vec<u32>,
}

/// Transfers (with dependencies in CSR form) and groups.
#[derive(Clone, Debug, Default)]
pub struct Schedule {
    pub transfers: Vec<Transfer>,
    dep_offsets: Vec<u32>,
    deps: Vec<u32>,
    pub groups: Vec<Group>,
}

impl Schedule {
    pub fn new() -> Schedule {
        Schedule {
            dep_offsets: vec![0],
            ..Schedule::default()
        }
    }

    pub fn add_group(&mut self, group: Group) -> u32 {
        self.groups.push(group);
        self.groups.len() as u32 - 1
    }

    /// Adds `t`, which starts once every transfer in `deps` has arrived; returns its index.
    pub fn push(&mut self, t: Transfer, deps: impl IntoIterator<Item = u32>) -> u32 {
        let id = self.transfers.len() as u32;
        debug_assert!(t.prev == NONE || t.prev < id);
        self.transfers.push(t);
        for d in deps {
            if d != NONE {
                debug_assert!(d < id, "dependencies come first");
                self.deps.push(d);
            }
        }
        self.dep_offsets.push(self.deps.len() as u32);
        id
    }

    pub fn deps(&self, t: u32) -> &[u32] {
        let (a, b) = (
            self.dep_offsets[t as usize] as usize,
            self.dep_offsets[t as usize + 1] as usize,
        );
        &self.deps[a..b]
    }

    /// Payload bytes each rank sends (NVLS: into its switch) and receives.
    pub fn volumes(&self, ranks: &Ranks) -> (Vec<u64>, Vec<u64>) {
        let mut sent = vec![0; ranks.len()];
        let mut received = vec![0; ranks.len()];
        for t in &self.transfers {
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
