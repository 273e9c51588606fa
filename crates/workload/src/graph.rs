//! The workload data model: per-rank op DAGs (the Chakra model: docs/workloads.md).
//!
//! A [`Workload`] is a list of ranks. Each rank runs a [`Program`] — ops and the dependencies
//! between them — through a [`Binding`] that says which communicator groups and which peers the
//! program's slots mean for that rank. Ranks that do the same thing share one program: the 16,384
//! ranks of a Llama 3 405B job have 16 programs (one per pipeline stage), and a rank costs only
//! its binding. A Chakra trace's ranks share a program where their files hold the same graph up to
//! peers and communicators (symbolic_tensor_graph's do: one per pipeline stage).
//!
//! Dependencies point to ops of the same program by index; a program's ops are in issue order
//! (the order NCCL-like collectives on one communicator are issued in).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fabricsim_collectives::Collective;
use fabricsim_topology::Nanos;

/// How a compute op's time is modelled (see [`crate::compute`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpClass {
    /// A matrix multiply; its shape sets its efficiency.
    Gemm,
    /// Fused attention (flash-attention style), forward.
    Attention,
    /// Its backward.
    AttentionBackward,
    /// Element-wise and normalisation kernels: memory-bound.
    Elementwise,
    /// Anything else (a traced kernel with a FLOP and byte count).
    Other,
}

impl OpClass {
    pub fn name(self) -> &'static str {
        match self {
            OpClass::Gemm => "gemm",
            OpClass::Attention => "attention",
            OpClass::AttentionBackward => "attention-bwd",
            OpClass::Elementwise => "elementwise",
            OpClass::Other => "other",
        }
    }
}

/// A kernel on the GPU's compute stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Compute {
    pub class: OpClass,
    /// Floating-point operations.
    pub flops: f64,
    /// Bytes moved to and from HBM.
    pub bytes: f64,
    /// GEMM shape `[m, n, k]`, or attention's `[query tokens, key tokens, heads]`, when known.
    pub shape: Option<[u32; 3]>,
    /// A measured time (a trace's `duration_micros`), used when there is no FLOP count.
    pub duration: Option<Nanos>,
}

/// What an op does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OpKind {
    Compute(Compute),
    /// A load from (or store to) memory: `bytes` at HBM bandwidth on the rank's memory stream.
    Memory {
        bytes: u64,
        store: bool,
    },
    /// A collective on the communicator in group slot `group`; `bytes` in nccl-tests terms
    /// ([`fabricsim_collectives::op`]).
    Collective {
        op: Collective,
        bytes: u64,
        group: u16,
    },
    /// Sends `bytes` to the rank in peer slot `peer`, matched with its receive by `tag`.
    Send {
        peer: u16,
        bytes: u64,
        tag: u64,
    },
    /// Receives `bytes` from the rank in peer slot `peer`.
    Recv {
        peer: u16,
        bytes: u64,
        tag: u64,
    },
    /// Takes no time: a dependency point (a trace's CPU op or metadata node).
    Nop,
}

impl OpKind {
    pub fn is_comm(&self) -> bool {
        matches!(
            self,
            OpKind::Collective { .. } | OpKind::Send { .. } | OpKind::Recv { .. }
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Op {
    /// The id the op has in a Chakra trace (its index for generated workloads).
    pub id: u64,
    /// Index into [`Workload::labels`].
    pub label: u32,
    pub kind: OpKind,
}

/// One rank's ops and their dependencies (CSR).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    pub ops: Vec<Op>,
    dep_start: Vec<u32>,
    deps: Vec<u32>,
    /// How many group and peer slots the program uses.
    pub group_slots: u16,
    pub peer_slots: u16,
}

impl Program {
    pub fn new() -> Program {
        Program {
            dep_start: vec![0],
            ..Program::default()
        }
    }

    /// Appends an op that waits for `deps` (indices of earlier or later ops; repeats dropped);
    /// returns its index.
    pub fn push(&mut self, op: Op, deps: &[u32]) -> u32 {
        match op.kind {
            OpKind::Collective { group, .. } => {
                self.group_slots = self.group_slots.max(group + 1);
            }
            OpKind::Send { peer, .. } | OpKind::Recv { peer, .. } => {
                self.peer_slots = self.peer_slots.max(peer + 1);
            }
            _ => {}
        }
        self.ops.push(op);
        let start = self.deps.len();
        for &d in deps {
            if !self.deps[start..].contains(&d) {
                self.deps.push(d);
            }
        }
        self.dep_start.push(self.deps.len() as u32);
        self.ops.len() as u32 - 1
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The ops `op` waits for.
    pub fn deps(&self, op: u32) -> &[u32] {
        let (a, b) = (
            self.dep_start[op as usize] as usize,
            self.dep_start[op as usize + 1] as usize,
        );
        &self.deps[a..b]
    }

    /// A hash of the ops and dependencies, equal for equal programs (to find them quickly).
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        for op in &self.ops {
            (op.id, op.label).hash(&mut h);
            match op.kind {
                OpKind::Compute(c) => {
                    (0u8, c.class, c.flops.to_bits(), c.bytes.to_bits()).hash(&mut h);
                    (c.shape, c.duration.map(|d| d.0)).hash(&mut h);
                }
                OpKind::Memory { bytes, store } => (1u8, bytes, store).hash(&mut h),
                OpKind::Collective { op, bytes, group } => {
                    (2u8, op.name(), bytes, group).hash(&mut h)
                }
                OpKind::Send { peer, bytes, tag } => (3u8, peer, bytes, tag).hash(&mut h),
                OpKind::Recv { peer, bytes, tag } => (4u8, peer, bytes, tag).hash(&mut h),
                OpKind::Nop => 5u8.hash(&mut h),
            }
        }
        (&self.dep_start, &self.deps).hash(&mut h);
        h.finish()
    }

    /// Dependency edges in all.
    pub fn edge_count(&self) -> usize {
        self.deps.len()
    }

    /// The reverse edges, as CSR: `dependents[offsets[i]..offsets[i + 1]]` wait for op `i`.
    pub fn dependents(&self) -> (Vec<u32>, Vec<u32>) {
        let n = self.len();
        let mut offsets = vec![0u32; n + 1];
        for &d in &self.deps {
            offsets[d as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut dependents = vec![0u32; self.deps.len()];
        for i in 0..n as u32 {
            for &d in self.deps(i) {
                dependents[fill[d as usize] as usize] = i;
                fill[d as usize] += 1;
            }
        }
        (offsets, dependents)
    }

    /// A topological order, lowest index first among the ops ready at each step. Ops on or
    /// behind a dependency cycle are missing from it.
    pub fn topological_order(&self) -> Vec<u32> {
        let n = self.len();
        let (offsets, dependents) = self.dependents();
        let mut waiting: Vec<u32> = (0..n as u32).map(|i| self.deps(i).len() as u32).collect();
        let mut ready: BinaryHeap<Reverse<u32>> = (0..n as u32)
            .filter(|&i| waiting[i as usize] == 0)
            .map(Reverse)
            .collect();
        let mut order = Vec::with_capacity(n);
        while let Some(Reverse(i)) = ready.pop() {
            order.push(i);
            for &d in &dependents[offsets[i as usize] as usize..offsets[i as usize + 1] as usize] {
                waiting[d as usize] -= 1;
                if waiting[d as usize] == 0 {
                    ready.push(Reverse(d));
                }
            }
        }
        order
    }

    /// Breaks dependency cycles: ops that no topological order reaches lose their dependencies
    /// on themselves and on later ops (every cycle has one), which leaves the graph acyclic. Returns how many
    /// dependencies were dropped (0 for an acyclic program, which is left as it is).
    pub fn break_cycles(&mut self) -> usize {
        let n = self.len();
        let order = self.topological_order();
        if order.len() == n {
            return 0;
        }
        let mut ordered = vec![false; n];
        for i in order {
            ordered[i as usize] = true;
        }
        let (mut deps, mut start, mut dropped) = (Vec::with_capacity(self.deps.len()), vec![0], 0);
        for i in 0..n as u32 {
            for &d in self.deps(i) {
                if !ordered[i as usize] && d >= i {
                    dropped += 1;
                } else {
                    deps.push(d);
                }
            }
            start.push(deps.len() as u32);
        }
        self.deps = deps;
        self.dep_start = start;
        dropped
    }
}

/// What a rank's slots stand for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Binding {
    pub program: u32,
    /// Group slot → index into [`Workload::groups`].
    pub groups: Vec<u32>,
    /// Peer slot → rank.
    pub peers: Vec<u32>,
}

/// A communicator: ranks in communicator order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Group {
    pub name: String,
    pub ranks: Vec<u32>,
}

/// What a workload does in one iteration, for throughput and MFU.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Accounting {
    /// Tokens the iteration trains on (0 when unknown, as for a trace).
    pub tokens: u64,
    /// Model FLOPs of the iteration over all ranks (6 · params · tokens + attention; not
    /// counting recomputation), for MFU. 0 when unknown.
    pub model_flops: f64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Workload {
    pub name: String,
    pub labels: Vec<String>,
    pub programs: Vec<Program>,
    pub ranks: Vec<Binding>,
    pub groups: Vec<Group>,
    pub accounting: Accounting,
}

/// A workload that does not hold together.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    #[error("program {program}: op {op} (id {id}) depends on op index {dep}, beyond the program's {len} ops")]
    DepOutOfRange {
        program: u32,
        op: u32,
        id: u64,
        dep: u32,
        len: usize,
    },
    #[error("rank {rank}'s program uses {need} {what} slots, but the rank binds only {bound}")]
    SlotUnbound {
        rank: u32,
        what: &'static str,
        need: u16,
        bound: usize,
    },
    #[error("rank {rank} communicates on group `{group}`, which does not contain it")]
    NotAMember { rank: u32, group: String },
    #[error("rank {rank} binds group {group}, but there are {groups}")]
    NoGroup {
        rank: u32,
        group: u32,
        groups: usize,
    },
    #[error("group `{group}` names rank {rank}, but the workload has {ranks} ranks")]
    GroupRank {
        group: String,
        rank: u32,
        ranks: usize,
    },
    #[error("rank {rank} runs program {program}, but there are {programs}")]
    NoProgram {
        rank: u32,
        program: u32,
        programs: usize,
    },
    #[error("rank {rank}: peer slot {slot} names rank {peer}, but the workload has {ranks} ranks")]
    PeerRank {
        rank: u32,
        slot: usize,
        peer: u32,
        ranks: usize,
    },
}

impl Workload {
    pub fn rank_count(&self) -> usize {
        self.ranks.len()
    }

    pub fn program_of(&self, rank: u32) -> &Program {
        &self.programs[self.ranks[rank as usize].program as usize]
    }

    pub fn label(&self, op: &Op) -> &str {
        self.labels
            .get(op.label as usize)
            .map_or("", String::as_str)
    }

    /// Interns `label`, returning its index.
    pub fn intern(&mut self, label: &str, index: &mut rustc_hash::FxHashMap<String, u32>) -> u32 {
        if let Some(&i) = index.get(label) {
            return i;
        }
        let i = self.labels.len() as u32;
        self.labels.push(label.to_string());
        index.insert(label.to_string(), i);
        i
    }

    /// Total ops over all ranks.
    pub fn op_count(&self) -> usize {
        self.ranks
            .iter()
            .map(|b| self.programs[b.program as usize].len())
            .sum()
    }

    /// Checks every index: dependencies, slots, group membership.
    pub fn validate(&self) -> Result<(), GraphError> {
        let n = self.ranks.len();
        for g in &self.groups {
            if let Some(&r) = g.ranks.iter().find(|&&r| r as usize >= n) {
                return Err(GraphError::GroupRank {
                    group: g.name.clone(),
                    rank: r,
                    ranks: n,
                });
            }
        }
        for (p, prog) in self.programs.iter().enumerate() {
            for i in 0..prog.len() as u32 {
                if let Some(&dep) = prog.deps(i).iter().find(|&&d| d as usize >= prog.len()) {
                    return Err(GraphError::DepOutOfRange {
                        program: p as u32,
                        op: i,
                        id: prog.ops[i as usize].id,
                        dep,
                        len: prog.len(),
                    });
                }
            }
        }
        for (rank, b) in self.ranks.iter().enumerate() {
            let rank = rank as u32;
            let p = self
                .programs
                .get(b.program as usize)
                .ok_or(GraphError::NoProgram {
                    rank,
                    program: b.program,
                    programs: self.programs.len(),
                })?;
            if let Some((slot, &peer)) = b.peers.iter().enumerate().find(|(_, &r)| r as usize >= n)
            {
                return Err(GraphError::PeerRank {
                    rank,
                    slot,
                    peer,
                    ranks: n,
                });
            }
            for (what, need, bound) in [
                ("group", p.group_slots, b.groups.len()),
                ("peer", p.peer_slots, b.peers.len()),
            ] {
                if usize::from(need) > bound {
                    return Err(GraphError::SlotUnbound {
                        rank,
                        what,
                        need,
                        bound,
                    });
                }
            }
            for &g in &b.groups {
                let group = self.groups.get(g as usize).ok_or(GraphError::NoGroup {
                    rank,
                    group: g,
                    groups: self.groups.len(),
                })?;
                if !group.ranks.contains(&rank) {
                    return Err(GraphError::NotAMember {
                        rank,
                        group: group.name.clone(),
                    });
                }
            }
        }
        Ok(())
    }
}
