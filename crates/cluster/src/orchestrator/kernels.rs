//! Kernels on a rank's compute and memory streams: one at a time on each, in the order they
//! become ready; and chains of kernels that run as one event.
//!
//! **Fused chains.** Where every kernel of a stream depends on the stream's kernel before it,
//! as the LLM generator writes programs, the stream never holds two ready kernels: it is free
//! whenever one becomes ready. A kernel whose only dependent is the stream's next kernel, which
//! waits on nothing else, then hands the stream to it at the instant it ends, and nothing
//! else can tell that instant happened: no other op was waiting on it, and the rank's time
//! accounting sees the compute stream busy on both sides of it. So a chain of such kernels
//! runs as one event at the end of its last, where its kernels complete in order. The times are
//! integers, so the chain ends when its last kernel would have; every output is the same, the
//! count of events included (a fused kernel still counts as one). The Llama 3 405B run's
//! kernels fall into chains of one to three (the attention's projections, the MLP's GEMMs),
//! which halves its kernel events. Ranks whose slices are traced run every kernel alone, one
//! slice each.

use fabricsim_workload::Program;

use super::*;

/// No kernel follows in a fused chain.
pub(super) const UNCHAINED: u32 = u32::MAX;

/// Per op of `p` (whose reverse edges are `dependents`, CSR at `offsets`): the kernel that
/// runs next in its fused chain, or [`UNCHAINED`].
pub(super) fn chains(p: &Program, offsets: &[u32], dependents: &[u32]) -> Vec<u32> {
    let mut next = vec![UNCHAINED; p.len()];
    for memory in [false, true] {
        let stream: Vec<u32> = (0..p.len() as u32)
            .filter(|&i| match p.ops[i as usize].kind {
                OpKind::Compute(_) => !memory,
                OpKind::Memory { .. } => memory,
                _ => false,
            })
            .collect();
        // Each kernel waits on the one before it: the stream runs them in this order, one
        // ready at a time.
        if !stream.windows(2).all(|w| p.deps(w[1]).contains(&w[0])) {
            continue;
        }
        for w in stream.windows(2) {
            let out =
                &dependents[offsets[w[0] as usize] as usize..offsets[w[0] as usize + 1] as usize];
            if p.deps(w[1]) == [w[0]] && out == [w[1]] {
                next[w[0] as usize] = w[1];
            }
        }
    }
    next
}

/// The last kernel of the fused chain that `op` starts, and how many come before it.
pub(super) fn chain_end(index: &ProgramIndex, mut op: u32) -> (u32, u32) {
    let mut before = 0;
    while index.next[op as usize] != UNCHAINED {
        op = index.next[op as usize];
        before += 1;
    }
    (op, before)
}

impl Orchestrator<'_> {
    /// Rank `r`'s kernel `op` is ready: it runs now if its stream is free, else queues. A
    /// free stream has nothing queued, so most kernels never touch the queue.
    pub(super) fn issue_kernel(&mut self, j: u32, r: u32, op: u32, t: u64, memory: bool) {
        let stream = self.jobs[j as usize].ranks[r as usize].stream(memory);
        if stream.busy {
            stream.queue.push_back(op);
        } else {
            debug_assert!(stream.queue.is_empty(), "a free stream has nothing queued");
            self.run_kernel(j, r, op, t, memory);
        }
    }

    /// Runs the next kernel queued on rank `r`'s stream, if any (the stream is free).
    pub(super) fn start_kernel(&mut self, j: u32, r: u32, t: u64, memory: bool) {
        let stream = self.jobs[j as usize].ranks[r as usize].stream(memory);
        if let Some(op) = stream.queue.pop_front() {
            self.run_kernel(j, r, op, t, memory);
        }
    }

    /// Starts kernel `op` on rank `r`'s free stream at `t`, with the rest of its chain unless
    /// the rank is traced.
    fn run_kernel(&mut self, j: u32, r: u32, op: u32, t: u64, memory: bool) {
        let job = &mut self.jobs[j as usize];
        let rank = &mut job.ranks[r as usize];
        rank.account(t);
        let stream = rank.stream(memory);
        stream.busy = true;
        stream.op = op;
        stream.since = t;
        let index = &job.index[job.spec.workload.ranks[r as usize].program as usize];
        let dt = if r < job.stats.trace_ranks {
            index.kernel_ns(op)
        } else {
            index.run_ns[op as usize]
        };
        let kind = if memory { MEMORY_DONE } else { COMPUTE_DONE };
        self.queue.push(Event::new(t + dt, kind, j, r));
    }

    /// Rank `r`'s stream finished its kernel (or its chain) at `t`.
    pub(super) fn kernel_done(&mut self, j: u32, r: u32, t: u64, memory: bool) {
        let gangs = &self.jobs[j as usize].gangs;
        if let Some(g) = gangs.of(r) {
            let gang = &gangs.list[g as usize];
            if gang.merged && r != gang.first {
                // A follower's end queued before its gang merged at this instant: the leader's
                // stood for it, and was counted for it.
                self.events -= 1;
                return;
            }
            let merged =
                gang.merged || (r == gang.first && self.try_merge_at_kernel(j, g, t, memory));
            if merged && self.gang_kernel_done(j, g, t, memory) {
                return;
            }
        }
        let job = &mut self.jobs[j as usize];
        let rank = &mut job.ranks[r as usize];
        rank.account(t);
        let stream = rank.stream(memory);
        stream.busy = false;
        let (mut op, since) = (stream.op, stream.since);
        if r < job.stats.trace_ranks {
            let the_op = job.spec.workload.program_of(r).ops[op as usize];
            let detail = match the_op.kind {
                OpKind::Compute(c) => Detail {
                    flops: c.flops,
                    ..Detail::default()
                },
                OpKind::Memory { bytes, .. } => Detail {
                    bytes,
                    ..Detail::default()
                },
                _ => Detail::default(),
            };
            job.stats.slice(Slice {
                rank: r,
                lane: if memory { Lane::Memory } else { Lane::Compute },
                label: the_op.label,
                start: since,
                end: t,
                detail,
            });
        } else {
            // The chain's kernels before its last: each one's only dependent is the next,
            // which waits on nothing else (so has no counter).
            let index = &job.index[job.spec.workload.ranks[r as usize].program as usize];
            let before;
            (op, before) = chain_end(index, op);
            job.done += u64::from(before);
            self.events += u64::from(before);
        }
        self.complete(j, r, op, t);
        self.start_kernel(j, r, t, memory);
    }
}

#[cfg(test)]
mod tests {
    use fabricsim_workload::{Compute, Op, OpClass};

    use super::*;

    fn kernel() -> OpKind {
        OpKind::Compute(Compute {
            class: OpClass::Gemm,
            flops: 1e9,
            bytes: 1e6,
            shape: None,
            duration: None,
        })
    }

    fn program(ops: &[(OpKind, &[u32])]) -> Program {
        let mut p = Program::new();
        for (i, (kind, deps)) in ops.iter().enumerate() {
            let op = Op {
                id: i as u64,
                label: 0,
                kind: *kind,
            };
            p.push(op, deps);
        }
        p
    }

    fn chains_of(p: &Program) -> Vec<u32> {
        let (offsets, dependents) = p.dependents();
        chains(p, &offsets, &dependents)
    }

    #[test]
    fn a_serial_stream_chains_where_a_kernel_hands_over_alone() {
        // 0 → 1 → 2 chain; 2 is also waited on by op 3 (not a kernel), so 2 ends its chain;
        // 4 waits on 2 and on 3, so it starts a chain of its own with 5.
        let p = program(&[
            (kernel(), &[]),
            (kernel(), &[0]),
            (kernel(), &[1]),
            (OpKind::Nop, &[2]),
            (kernel(), &[2, 3]),
            (kernel(), &[4]),
        ]);
        let u = UNCHAINED;
        assert_eq!(chains_of(&p), vec![1, 2, u, u, 5, u]);
    }

    #[test]
    fn kernels_that_can_be_ready_together_never_chain() {
        // Two independent pairs: the stream may hold kernels of both at once, so none fuse.
        let p = program(&[
            (kernel(), &[]),
            (kernel(), &[0]),
            (kernel(), &[]),
            (kernel(), &[2]),
        ]);
        assert!(chains_of(&p).iter().all(|&n| n == UNCHAINED));
    }
}
