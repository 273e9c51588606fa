//! Why a job cannot progress: the collectives whose members never all arrive, the receives with
//! no send, the ops that wait on them.

use super::*;

impl Orchestrator<'_> {
    /// Why job `j` cannot progress: the first few things that wait forever.
    pub(super) fn diagnose(&self, j: u32) -> String {
        let job = &self.jobs[j as usize];
        let w = &job.spec.workload;
        let mut out = Vec::new();
        for (g, gs) in job.groups.iter().enumerate() {
            for (&seq, &i) in &gs.pending {
                let inst = &self.instances[i as usize];
                let group = &w.groups[g];
                let arrived: Vec<u32> = inst.members.iter().map(|m| m.0).collect();
                let missing: Vec<String> = group
                    .ranks
                    .iter()
                    .filter(|r| !arrived.contains(r))
                    .take(8)
                    .map(u32::to_string)
                    .collect();
                if missing.is_empty() && seq != gs.next {
                    out.push(format!(
                        "{} #{seq} on group `{}` has all its ranks but waits for #{} to run first",
                        inst.op.name(),
                        group.name,
                        gs.next
                    ));
                }
                if !missing.is_empty() {
                    out.push(format!(
                        "{} #{seq} on group `{}` waits for ranks {}{}",
                        inst.op.name(),
                        group.name,
                        missing.join(", "),
                        if group.ranks.len() - arrived.len() > 8 {
                            ", ..."
                        } else {
                            ""
                        }
                    ));
                }
            }
        }
        let mut waiting: Vec<P2pKey> = Vec::new();
        for (m, &(src, dst)) in job.p2p.ends.iter().enumerate() {
            for entry in &job.p2p.mailboxes[m] {
                if !entry.recvs.is_empty() {
                    waiting.push((src, dst, entry.tag));
                }
            }
        }
        waiting.sort_unstable();
        for (src, dst, tag) in waiting.into_iter().take(4) {
            out.push(format!(
                "rank {dst}'s receive ({src} -> {dst}, tag {tag}) has no send"
            ));
        }
        if out.is_empty() {
            // Nothing waits on a peer: the ops left wait on each other (a cycle).
            'ranks: for (r, b) in w.ranks.iter().enumerate() {
                let p = &w.programs[b.program as usize];
                for (i, op) in p.ops.iter().enumerate() {
                    if job.remaining[job.counter(r as u32, i as u32)] > 0 {
                        out.push(format!(
                            "rank {r}: op {} (`{}`) waits on ops that never finish (a dependency cycle?)",
                            op.id,
                            w.label(op)
                        ));
                        break 'ranks;
                    }
                }
            }
        }
        out.truncate(6);
        out.join("; ")
    }
}
