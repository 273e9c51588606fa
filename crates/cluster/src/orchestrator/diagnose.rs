//! Why a job cannot progress: the GPUs a failure cut off, the collectives whose members never
//! all arrive, the receives with no send, the ops that wait on them.

use super::*;

impl Orchestrator<'_> {
    /// Why job `j` cannot progress: the first few things that wait forever.
    pub(super) fn diagnose(&self, j: u32) -> String {
        let job = &self.jobs[j as usize];
        let w = &job.spec.workload;
        let mut out = Vec::new();
        // Flows a link event left with no path: the job is cut off, whatever waits on them.
        let mut cut: Vec<String> = self
            .net
            .stalled()
            .iter()
            .map(|(_, e)| e.to_string())
            .collect();
        cut.sort();
        cut.dedup();
        if !cut.is_empty() {
            let mut down: Vec<&str> = self.link_events[..self.applied]
                .iter()
                .filter(|e| e.event.state == "down")
                .map(|e| e.event.target.as_str())
                .collect();
            down.sort_unstable();
            down.dedup();
            let more = if cut.len() > 3 {
                format!(" (and {} more)", cut.len() - 3)
            } else {
                String::new()
            };
            cut.truncate(3);
            out.push(format!(
                "cut off by {}: {}{more}",
                if down.is_empty() {
                    "the links that are down".to_string()
                } else {
                    down.join(", ")
                },
                cut.join("; ")
            ));
        }
        for (g, gs) in job.groups.iter().enumerate() {
            for (seq, i) in gs.pending.iter() {
                let inst = &self.instances[i as usize];
                let group = &w.groups[g];
                let arrived: Vec<u32> = inst.members.iter().map(|m| m.0).collect();
                let missing: Vec<String> = group
                    .ranks
                    .iter()
                    .filter(|&&r| job.active[r as usize] && !arrived.contains(&r))
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
                        if job.members[g] as usize - arrived.len() > 8 {
                            ", ..."
                        } else {
                            ""
                        }
                    ));
                }
            }
        }
        for (src, dst, tag) in job.p2p.waiting().into_iter().take(4) {
            out.push(format!(
                "rank {dst}'s receive ({src} -> {dst}, tag {tag}) has no send"
            ));
        }
        if out.is_empty() {
            // Nothing waits on a peer or a path: the ops left wait on each other (a cycle),
            // the ops no topological order of the program reaches.
            let mut unreached: Vec<Option<Option<u32>>> = vec![None; w.programs.len()];
            for (r, b) in w.ranks.iter().enumerate() {
                if !job.active[r] {
                    continue; // stands in its representative's orbit
                }
                let p = &w.programs[b.program as usize];
                let first = *unreached[b.program as usize].get_or_insert_with(|| {
                    let mut reached = vec![false; p.len()];
                    for i in p.topological_order() {
                        reached[i as usize] = true;
                    }
                    reached.iter().position(|&x| !x).map(|i| i as u32)
                });
                if let Some(i) = first {
                    let op = &p.ops[i as usize];
                    out.push(format!(
                        "rank {r}: op {} (`{}`) waits on ops that never finish (a dependency cycle?)",
                        op.id,
                        w.label(op)
                    ));
                    break;
                }
            }
        }
        out.truncate(6);
        out.join("; ")
    }
}
