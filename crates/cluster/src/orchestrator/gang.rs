//! Tensor-parallel gangs: the ranks of a group that run one program side by side, simulated
//! as one while nothing tells them apart.
//!
//! The eight ranks of a tensor-parallel group share a program and end the same kernels at the
//! same instants: of the Llama 3 405B's kernel ends at 16K GPUs, 98.7 % come eight to an
//! instant. Between two of their network operations they run kernels and the group's own
//! collectives inside the host, which treat every member alike. A *merged* gang keeps one
//! state, its leader's (the first rank), for all: its streams, time accounting and queued
//! kernel ends; the members' dependency counters are still released one by one (they lie
//! side by side), so they stay exact. Ready ops of a merged gang go on the ready stack as one
//! entry, [`GANG`] with the gang's number, standing for the same op of every member.
//!
//! **Split.** A gang splits before anything tells its members apart: an op done whose
//! dependents include a send, a receive or a collective of another group, and any event of
//! one member's (a transfer or a data-parallel collective ending, a send arriving for a
//! posted receive). The followers take the leader's state (and the time it accounted since
//! the merge), their queued kernel ends are pushed again, and the run goes on rank by rank.
//!
//! **Merge.** Where one of the gang's own collectives ends, or where its members end the same
//! kernel at the same instant, they merge again if they stand alike: the same ops done (a sum
//! of a hash of each, per rank), the same operations in flight, streams alike, and nothing of
//! theirs on the ready stack. At a kernel's end the followers' ends, queued right after the
//! leader's, are passed over when they pop.
//!
//! **Order.** Every output is the full simulation's, bit for bit: the gang's entry takes the
//! place on the ready stack of its members' entries, which the full simulation pushes member
//! by member in one order and dispatches last in first out. Kernels and the gang's own
//! collectives touch no other rank's state, and a collective starts (and submits any flow)
//! when its last member arrives, after the others' same ops in the full simulation too. So
//! dispatching one op for all members at once changes nothing but the order of members
//! arriving at a collective, which
//! the entry's [`DESCENDING`] bit keeps: members arrive in the reverse of the order their
//! entries were pushed, and a collective's members complete in the order they arrived. A
//! split pushes the members' entries in the order the full simulation had them.

use super::kernels::chain_end;
use super::*;

/// A ready-stack entry's rank field: a merged gang's number, not a rank.
pub(super) const GANG: u32 = 1 << 31;
/// With [`GANG`]: the members' entries this one stands for were pushed highest rank first.
pub(super) const DESCENDING: u32 = 1 << 30;
/// A rank in no gang.
const NONE: u32 = u32::MAX;

pub(super) struct Gang {
    /// Its ranks: `first..first + size`.
    pub(super) first: u32,
    pub(super) size: u32,
    pub(super) merged: bool,
    /// Which of its program's ops end a merged run ([`Gangs::stops`]).
    stops: u32,
    /// One more than the last instant entries of the gang were pushed at (0: never).
    pushed: u64,
    /// The leader's compute and exposed time when the gang last merged.
    compute_at_merge: u64,
    exposed_at_merge: [u64; 6],
}

impl Gang {
    fn members(&self) -> std::ops::Range<u32> {
        self.first..self.first + self.size
    }
}

impl RankState {
    fn stream_ref(&self, memory: bool) -> &Stream {
        if memory {
            &self.memory
        } else {
            &self.compute
        }
    }
}

impl JobState {
    /// Whether gang `g`'s members stand alike at `t`, their streams as `streams` wants them:
    /// the same ops done, as many operations in flight, none completed at `t` (so nothing of
    /// theirs is on the ready stack).
    fn stand_alike(&self, g: u32, t: u64, streams: impl Fn(&RankState) -> bool) -> bool {
        let gang = &self.gangs.list[g as usize];
        let lead = &self.ranks[gang.first as usize];
        let mark = self.gangs.marks[gang.first as usize].0;
        gang.pushed <= t
            && gang.members().all(|m| {
                let rank = &self.ranks[m as usize];
                let (done, at) = self.gangs.marks[m as usize];
                at <= t && done == mark && rank.comm_active == lead.comm_active && streams(rank)
            })
    }
}

impl Stream {
    /// Becomes a copy of `other` (a follower's stream, its leader's), in the room it has.
    fn copy_from(&mut self, other: &Stream) {
        self.queue.clone_from(&other.queue);
        (self.busy, self.op, self.since) = (other.busy, other.op, other.since);
    }
}

/// The ranks `first..first + size`, highest first if `descending`.
fn members_in(first: u32, size: u32, descending: bool) -> impl Iterator<Item = u32> {
    (0..size).map(move |i| {
        if descending {
            first + size - 1 - i
        } else {
            first + i
        }
    })
}

/// A job's gangs.
#[derive(Default)]
pub(super) struct Gangs {
    pub(super) list: Vec<Gang>,
    /// Per rank: its gang, or `NONE`.
    of: Vec<u32>,
    /// Per group: the gang whose ranks it has, or `NONE`.
    by_group: Vec<u32>,
    /// Per program and set of the gang's group slots: per op, whether one of its dependents is
    /// not the gang's own (a send, a receive, a collective of another group).
    stops: Vec<Vec<bool>>,
    /// Per rank: the sum of a hash of each op done, and one more than the last instant it
    /// completed an op at.
    marks: Vec<(u64, u64)>,
}

impl Gangs {
    /// The gangs of a job: its groups of two ranks or more that are a run of ranks sharing one
    /// program and one binding of the group's slot, none of them traced. None where ranks stand
    /// for orbits, or where every rank is to run `alone`.
    pub(super) fn new(
        spec: &JobSpec,
        index: &[ProgramIndex],
        counters: &[(usize, usize)],
        trace_ranks: u32,
        alone: bool,
    ) -> Gangs {
        let w = &spec.workload;
        let mut gangs = Gangs {
            of: vec![NONE; w.ranks.len()],
            by_group: vec![NONE; w.groups.len()],
            ..Gangs::default()
        };
        if alone {
            return gangs;
        }
        let mut kinds: Vec<(u32, u64)> = Vec::new();
        for (g, group) in w.groups.iter().enumerate() {
            let Some(&first) = group.ranks.first() else {
                continue;
            };
            let size = group.ranks.len() as u32;
            let program = w.ranks[first as usize].program;
            let alike = size >= 2
                && first >= trace_ranks
                && w.programs[program as usize].group_slots <= 64
                && (group.ranks.iter())
                    .zip(first..)
                    .all(|(&r, want)| r == want)
                && group.ranks.iter().all(|&r| {
                    let b = &w.ranks[r as usize];
                    b.program == program
                        && counters[r as usize].0
                            == counters[first as usize].0 + (r - first) as usize
                });
            if !alike {
                continue;
            }
            match gangs.of[first as usize] {
                NONE if group.ranks.iter().all(|&r| gangs.of[r as usize] == NONE) => {
                    let n = gangs.list.len() as u32;
                    for &r in &group.ranks {
                        gangs.of[r as usize] = n;
                    }
                    gangs.by_group[g] = n;
                    gangs.list.push(Gang {
                        first,
                        size,
                        merged: false,
                        stops: 0,
                        pushed: 0,
                        compute_at_merge: 0,
                        exposed_at_merge: [0; 6],
                    });
                }
                n if n != NONE && gangs.list[n as usize].members() == (first..first + size) => {
                    gangs.by_group[g] = n;
                }
                _ => {}
            }
        }
        // Each gang's own slots (at most 64): those its members bind alike to one of its groups.
        for (n, gang) in gangs.list.iter_mut().enumerate() {
            let lead = &w.ranks[gang.first as usize];
            let program = &w.programs[lead.program as usize];
            let mut own = 0u64;
            for (s, &g) in lead.groups.iter().enumerate() {
                let alike = (gang.members()).all(|r| w.ranks[r as usize].groups.get(s) == Some(&g));
                if gangs.by_group[g as usize] == n as u32 && alike {
                    own |= 1 << s;
                }
            }
            let key = (lead.program, own);
            gang.stops = match kinds.iter().position(|&k| k == key) {
                Some(i) => i as u32,
                None => {
                    kinds.push(key);
                    gangs
                        .stops
                        .push(stops(program, &index[lead.program as usize], own));
                    kinds.len() as u32 - 1
                }
            };
        }
        gangs.marks = vec![
            (0, 0);
            if gangs.list.is_empty() {
                0
            } else {
                w.ranks.len()
            }
        ];
        gangs
    }

    /// Rank `r`'s gang, if it is merged.
    pub(super) fn merged(&self, r: u32) -> Option<u32> {
        let g = *self.of.get(r as usize)?;
        (g != NONE && self.list[g as usize].merged).then_some(g)
    }

    /// Rank `r`'s gang, merged or not.
    pub(super) fn of(&self, r: u32) -> Option<u32> {
        let g = *self.of.get(r as usize)?;
        (g != NONE).then_some(g)
    }

    /// The gang of group `g`'s ranks, if any.
    pub(super) fn of_group(&self, g: u32) -> Option<u32> {
        let n = self.by_group[g as usize];
        (n != NONE).then_some(n)
    }

    /// Whether op `op` of gang `g`'s program ends its merged run.
    pub(super) fn stops(&self, g: u32, op: u32) -> bool {
        self.stops[self.list[g as usize].stops as usize][op as usize]
    }

    /// Rank `r` completed `op` at `t`.
    pub(super) fn mark(&mut self, r: u32, op: u32, t: u64) {
        if let Some(m) = self.marks.get_mut(r as usize) {
            m.0 = m.0.wrapping_add(mix(u64::from(op) + 1));
            m.1 = t + 1;
        }
    }
}

/// Per op of `p`: whether one of its dependents is not a kernel, a no-op or a collective on
/// one of the slots of `own`.
fn stops(p: &fabricsim_workload::Program, index: &ProgramIndex, own: u64) -> Vec<bool> {
    let local = |d: u32| match p.ops[d as usize].kind {
        OpKind::Compute(_) | OpKind::Memory { .. } | OpKind::Nop => true,
        OpKind::Collective { group, .. } => own >> group & 1 == 1,
        OpKind::Send { .. } | OpKind::Recv { .. } => false,
    };
    (0..p.len() as u32)
        .map(|op| !index.dependents(op).iter().all(|&d| local(d)))
        .collect()
}

impl Orchestrator<'_> {
    /// Splits rank `r`'s gang if it is merged: something is about to tell its members apart.
    pub(super) fn split_rank(&mut self, j: u32, r: u32) {
        if let Some(g) = self.jobs[j as usize].gangs.merged(r) {
            self.split(j, g);
        }
    }

    /// Splits gang `g`: each follower takes the leader's state.
    pub(super) fn split(&mut self, j: u32, g: u32) {
        let job = &mut self.jobs[j as usize];
        let gang = &mut job.gangs.list[g as usize];
        if !gang.merged {
            return;
        }
        gang.merged = false;
        let (first, size) = (gang.first, gang.size);
        let (compute_at, exposed_at) = (gang.compute_at_merge, gang.exposed_at_merge);
        let index = &job.index[job.spec.workload.ranks[first as usize].program as usize];
        let (head, followers) = job.ranks.split_at_mut(first as usize + 1);
        let lead = &head[first as usize];
        let grown = lead.compute_ns - compute_at;
        let mut exposed = lead.exposed_ns;
        for (e, at) in exposed.iter_mut().zip(exposed_at) {
            *e -= at;
        }
        let ends = [(&lead.compute, COMPUTE_DONE), (&lead.memory, MEMORY_DONE)].map(|(s, kind)| {
            s.busy
                .then(|| (s.since + index.run_ns[s.op as usize], kind))
        });
        for (f, rank) in (first + 1..).zip(&mut followers[..size as usize - 1]) {
            rank.compute.copy_from(&lead.compute);
            rank.memory.copy_from(&lead.memory);
            rank.comm_active = lead.comm_active;
            rank.last = lead.last;
            rank.compute_ns += grown;
            for (e, add) in rank.exposed_ns.iter_mut().zip(exposed) {
                *e += add;
            }
            for &(end, kind) in ends.iter().flatten() {
                self.queue.push(Event::new(end, kind, j, f));
            }
        }
    }

    /// Splits every merged gang (before the run's figures are read).
    pub(super) fn split_all(&mut self) {
        for j in 0..self.jobs.len() as u32 {
            for g in 0..self.jobs[j as usize].gangs.list.len() as u32 {
                self.split(j, g);
            }
        }
    }

    /// Merges gang `g` at `t`, where one of its collectives ends, if its members stand alike.
    pub(super) fn try_merge(&mut self, j: u32, g: u32, t: u64) -> bool {
        let idle = |s: &Stream| !s.busy && s.queue.is_empty();
        if !self.jobs[j as usize].stand_alike(g, t, |r| idle(&r.compute) && idle(&r.memory)) {
            return false;
        }
        self.merge(j, g, t);
        true
    }

    /// Merges gang `g`, its members alike, at `t`: their time is accounted to `t`, and the
    /// leader's from there stands for all.
    fn merge(&mut self, j: u32, g: u32, t: u64) {
        let job = &mut self.jobs[j as usize];
        let gang = &job.gangs.list[g as usize];
        for m in gang.members() {
            job.ranks[m as usize].account(t);
        }
        let lead = &job.ranks[gang.first as usize];
        let (compute, exposed) = (lead.compute_ns, lead.exposed_ns);
        let gang = &mut job.gangs.list[g as usize];
        gang.merged = true;
        gang.compute_at_merge = compute;
        gang.exposed_at_merge = exposed;
    }

    /// Merges gang `g` at `t`, where its leader's kernel (or chain) on the `memory` stream or
    /// the compute stream ends, if every member ends the same kernel now and they stand alike
    /// otherwise, and the kernel does not end the merged run at once. The followers' ends,
    /// queued at this instant right after the leader's, are then passed over.
    pub(super) fn try_merge_at_kernel(&mut self, j: u32, g: u32, t: u64, memory: bool) -> bool {
        let job = &self.jobs[j as usize];
        let gang = &job.gangs.list[g as usize];
        let lead = &job.ranks[gang.first as usize];
        let (op, since) = (lead.stream_ref(memory).op, lead.stream_ref(memory).since);
        // Every member runs the leader's kernel, since the same instant, and nothing else.
        let running = |r: &RankState| {
            let (s, other) = (r.stream_ref(memory), r.stream_ref(!memory));
            s.busy
                && (s.op, s.since) == (op, since)
                && s.queue.is_empty()
                && !other.busy
                && other.queue.is_empty()
        };
        let index = &job.index[job.spec.workload.ranks[gang.first as usize].program as usize];
        if job.gangs.stops(g, chain_end(index, op).0) || !job.stand_alike(g, t, running) {
            return false;
        }
        self.merge(j, g, t);
        true
    }

    /// Op `op` of every member of merged gang `g` is done at `t`; their entries would be
    /// pushed member by member, in `DESCENDING` order or not.
    pub(super) fn complete_gang(&mut self, j: u32, g: u32, op: u32, t: u64, descending: u32) {
        let job = &mut self.jobs[j as usize];
        let gang = &mut job.gangs.list[g as usize];
        let (first, size) = (gang.first, gang.size);
        gang.pushed = t + 1;
        job.done += u64::from(size);
        job.stats.iteration_ns = job.stats.iteration_ns.max(t);
        for m in first..first + size {
            job.gangs.mark(m, op, t);
        }
        let (offset, stride) = job.counters[first as usize];
        let index = &job.index[job.spec.workload.ranks[first as usize].program as usize];
        for &d in index.dependents(op) {
            let c = index.counted[d as usize];
            let ready = c == UNCOUNTED || {
                let at = offset + c as usize * stride;
                let mut ready = false;
                for m in 0..size as usize {
                    ready = job.remaining.release(at + m);
                }
                ready
            };
            if ready {
                self.ready.push((j, GANG | descending | g, d));
            }
        }
    }

    /// Merged gang `g`'s leader ended its kernel (or chain) at `t`: the same for every member.
    /// Whether it was handled; if not, the gang is split and the leader goes on alone.
    pub(super) fn gang_kernel_done(&mut self, j: u32, g: u32, t: u64, memory: bool) -> bool {
        let job = &mut self.jobs[j as usize];
        let (first, size) = {
            let gang = &job.gangs.list[g as usize];
            (gang.first, gang.size)
        };
        let index = &job.index[job.spec.workload.ranks[first as usize].program as usize];
        let (last, chain) = chain_end(index, job.ranks[first as usize].stream(memory).op);
        if job.gangs.stops(g, last) {
            self.split(j, g);
            return false;
        }
        let rank = &mut job.ranks[first as usize];
        rank.account(t);
        rank.stream(memory).busy = false;
        // The chain's kernels before its last, and the followers' events, each counted as the
        // full simulation counts them.
        let mut op = rank.stream(memory).op;
        for _ in 0..chain {
            for m in first..first + size {
                job.gangs.mark(m, op, t);
            }
            op = index.next[op as usize];
        }
        job.done += u64::from(chain * size);
        self.events += u64::from((chain + 1) * size - 1);
        // The kernel ends popped in rank order: their entries were pushed lowest rank first.
        self.complete_gang(j, g, op, t, 0);
        self.start_kernel(j, first, t, memory);
        true
    }

    /// Dispatches a gang's entry: `op` of every member, for which `rank` (with [`GANG`])
    /// stands.
    pub(super) fn dispatch_gang(
        &mut self,
        j: u32,
        rank: u32,
        op: u32,
        t: u64,
    ) -> Result<(), RunError> {
        let g = rank & !(GANG | DESCENDING);
        let job = &mut self.jobs[j as usize];
        let gang = &job.gangs.list[g as usize];
        let (first, size, descending) = (gang.first, gang.size, rank & DESCENDING != 0);
        let binding = &job.spec.workload.ranks[first as usize];
        let prog = &job.spec.workload.programs[binding.program as usize];
        let kind = prog.ops[op as usize].kind;
        let alone = match kind {
            OpKind::Nop => job.gangs.stops(g, op),
            OpKind::Send { .. } | OpKind::Recv { .. } => true,
            _ => false,
        };
        if !gang.merged || alone {
            // Its members go on alone: their entries, in the order the full simulation pushed
            // them, so that they are dispatched in its order.
            self.split(j, g);
            (self.ready).extend(members_in(first, size, descending).map(|m| (j, m, op)));
            return Ok(());
        }
        match kind {
            OpKind::Compute(_) => self.issue_kernel(j, first, op, t, false),
            OpKind::Memory { .. } => self.issue_kernel(j, first, op, t, true),
            OpKind::Nop => self.complete_gang(j, g, op, t, rank & DESCENDING),
            OpKind::Collective {
                op: coll,
                bytes,
                group,
            } => {
                let g_group = binding.groups[group as usize];
                let seq = job.index[binding.program as usize].coll_seq[op as usize];
                let scope = job.scopes[g_group as usize];
                job.ranks[first as usize].comm_began(t, scope);
                let inst = self.pending_instance(j, g_group, seq, coll, bytes);
                // Dispatched last in first out: members arrive in the reverse of the order
                // their entries were pushed.
                let arrivals = members_in(first, size, !descending);
                let members = &mut self.instances[inst as usize].members;
                members.extend(arrivals.map(|m| (m, op, t)));
                self.try_start(j, g_group, t)?;
            }
            OpKind::Send { .. } | OpKind::Recv { .. } => unreachable!("split above"),
        }
        Ok(())
    }

    /// Collective instance `i` of gang `g`'s own group ends at `t`, its members merged (or
    /// merging now). Whether it was handled; if not, the gang is split.
    pub(super) fn gang_collective_done(
        &mut self,
        i: u32,
        g: u32,
        t: u64,
    ) -> Result<bool, RunError> {
        let inst = &self.instances[i as usize];
        let j = inst.job;
        let (_, op, arrived) = inst.members[0];
        // Members that arrived apart may have arrived in any order: merged, they stand for
        // members pushed in rank order, one way or the other.
        let ascending = inst.members.windows(2).all(|w| w[0].0 < w[1].0);
        let descending = inst.members.windows(2).all(|w| w[0].0 > w[1].0);
        let job = &self.jobs[j as usize];
        if job.gangs.stops(g, op) {
            self.split(j, g);
            return Ok(false);
        }
        let merged = job.gangs.list[g as usize].merged;
        if !merged && (!(ascending || descending) || !self.try_merge(j, g, t)) {
            return Ok(false);
        }
        let (members, scope, algorithm) = self.end_instance(i, t);
        let job = &mut self.jobs[j as usize];
        let first = job.gangs.list[g as usize].first;
        job.comm_ended(first, op, scope, arrived, t, algorithm);
        self.complete_gang(j, g, op, t, if ascending { 0 } else { DESCENDING });
        self.free_instance(i, members, t)?;
        Ok(true)
    }
}
