//! The traffic matrix of placed jobs, for the TE controller: the bytes one iteration puts
//! between GPUs of different hosts.
//!
//! Each communicator that spans hosts contributes its collectives, planned as the run will
//! plan them (the same algorithm choice, the same schedule), once per operation and size and
//! scaled by how often the communicator issues it; each send between hosts contributes its
//! bytes. The controller knows the jobs' placement and communication pattern, as Meta's does
//! from its scheduler; it does not observe the traffic.

use std::collections::BTreeMap;

use fabricsim_collectives::bench::network_traffic;
use fabricsim_collectives::{plan, Collective, Platform, Ranks, Request};
use fabricsim_topology::{NodeId, Topology};
use fabricsim_workload::OpKind;

use crate::job::JobSpec;
use crate::orchestrator::{choice, RunError};

/// `(source GPU, destination GPU, bytes)` of one iteration of `job`, unmerged.
pub fn job_traffic(topo: &Topology, job: &JobSpec) -> Result<Vec<(NodeId, NodeId, u64)>, RunError> {
    let w = &job.workload;
    let plan_err = |error| RunError::Plan {
        job: job.name.clone(),
        error,
    };
    // Each program's collectives (group slot, operation, size) and sends (peer slot, size),
    // read once: many ranks and groups share a program.
    let mut colls: Vec<Vec<(u16, Collective, u64)>> = vec![Vec::new(); w.programs.len()];
    let mut sends: Vec<Vec<(u16, u64)>> = vec![Vec::new(); w.programs.len()];
    for (p, prog) in w.programs.iter().enumerate() {
        for op in &prog.ops {
            match op.kind {
                OpKind::Collective { op, bytes, group } => colls[p].push((group, op, bytes)),
                OpKind::Send { peer, bytes, .. } => sends[p].push((peer, bytes)),
                _ => {}
            }
        }
    }
    let mut rows = Vec::new();
    for (g, group) in w.groups.iter().enumerate() {
        let Some(&first) = group.ranks.first() else {
            continue;
        };
        let gpus = group.ranks.iter().map(|&r| job.gpus[r as usize]).collect();
        let ranks = Ranks::new(topo, gpus).map_err(plan_err)?;
        if ranks.hosts().len() <= 1 {
            continue;
        }
        // Every member issues the same collectives on the group: count the first member's.
        let binding = &w.ranks[first as usize];
        let mut issued: BTreeMap<(Collective, u64), u64> = BTreeMap::new();
        for &(slot, op, bytes) in &colls[binding.program as usize] {
            if binding.groups[slot as usize] as usize == g {
                *issued.entry((op, bytes)).or_default() += 1;
            }
        }
        for ((op, bytes), count) in issued {
            // No network to route on here: the tuner weighs path latency as zero.
            let platform = Platform::of(topo, &ranks, job.generation());
            let (algorithm, _, closed) = choice(&platform, &ranks, &job.comm, op, bytes);
            if closed.is_some() {
                continue;
            }
            let req = Request {
                op,
                bytes,
                ranks: &ranks,
                algorithm,
                channels: job.comm.channels,
                chunk: job.comm.chunk,
                fidelity: job.comm.fidelity,
                sizes: None,
            };
            let sched = plan(&req).map_err(plan_err)?;
            rows.extend(
                network_traffic(&ranks, &sched)
                    .into_iter()
                    .map(|(s, d, b)| (s, d, b * count)),
            );
        }
    }
    for (r, binding) in w.ranks.iter().enumerate() {
        let src = job.gpus[r];
        for &(peer, bytes) in &sends[binding.program as usize] {
            let dst = job.gpus[binding.peers[peer as usize] as usize];
            if topo.host_of(src) != topo.host_of(dst) {
                rows.push((src, dst, bytes));
            }
        }
    }
    Ok(rows)
}
