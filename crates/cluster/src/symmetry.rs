//! One representative per orbit: when every server's GPUs can be turned onto each other without
//! changing the fabric, the jobs or the routing, the ranks of a server that the turn moves onto
//! each other run alike, and simulating one of them stands for all.
//!
//! An LLM job with tensor parallelism inside the server is the case that matters: the eight
//! ranks of a server run the same program, their tensor-parallel collective is the same group
//! turned onto itself, and their pipeline and data-parallel peers are the same turn of their
//! representative's peers. Under a routing that spreads by the switch graph alone (spraying),
//! the max-min rates of the turned flows are the turned rates, so the representatives' flows,
//! each standing for its orbit ([`fabricsim_netsim::Fold`]), give the full problem's rates.
//!
//! [`detect`] finds the smallest turn under which everything is symmetric, or says what breaks
//! symmetry: hashed routing (ECMP's flows of two GPUs of a server take different paths), link
//! state or failures that differ between a server's GPUs, a fabric whose GPUs are not alike
//! (rail-optimized cabling), or jobs whose ranks do not map onto each other (Chakra traces with
//! a program per rank, placements that split servers). The run then keeps every rank.

use std::collections::HashMap;

use fabricsim_topology::symmetry::HostRotation;
use fabricsim_topology::{NodeId, Topology};

use fabricsim_netsim::{FlowEngine, Network};
use fabricsim_routing::PathSelection;

use crate::job::JobSpec;
use crate::orchestrator::RunOptions;

/// Whether a run simulated one representative per orbit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SymmetryUse {
    /// Each simulated rank stood for `order` ranks (the GPUs of a server turned onto each
    /// other), and each flow for `order` flows.
    Applied { order: u32 },
    /// Every rank was simulated, for this reason.
    Off(String),
}

/// The turn found, and what it means for each job.
pub struct Symmetry {
    pub rotation: HostRotation,
    pub jobs: Vec<JobOrbits>,
}

/// A job's ranks and groups under the turn.
pub struct JobOrbits {
    /// Whether each rank is its orbit's representative (simulated).
    pub active: Vec<bool>,
    /// Per group, how many groups it stands for: the turn's order if the turn moves it onto
    /// other groups, 1 if the turn maps it onto itself (a collective inside one server).
    pub weight: Vec<u32>,
}

/// Whether a run of `jobs` on `net` under `options` can simulate one rank per orbit: the turn,
/// or why not (full detail asked for, slices recorded, path selection per message, a routing
/// that tells GPUs apart, or what [`detect`] finds).
pub fn for_run(
    net: &Network<'_, FlowEngine>,
    jobs: &[JobSpec],
    options: &RunOptions,
) -> Result<Symmetry, String> {
    if let Some(why) = &options.full_detail {
        return Err(why.clone());
    }
    if options.trace_ranks > 0 {
        return Err("the first ranks' slices are recorded (--trace, --report)".to_string());
    }
    if net.path_selection() != PathSelection::Hashed {
        return Err(format!(
            "path selection {} decides per message",
            net.path_selection().name()
        ));
    }
    if !net.routing_is_symmetric() {
        return Err(format!(
            "routing `{}` tells a server's GPUs apart (it hashes addresses or looks GPUs up)",
            net.routing_name()
        ));
    }
    let topo = net.topology();
    let state = net.link_state();
    let capacity: Vec<u64> = topo
        .link_ids()
        .map(|l| {
            if state.is_up(l) {
                state.capacity(topo, l).0
            } else {
                0
            }
        })
        .collect();
    detect(topo, &capacity, jobs)
}

/// The smallest turn of every server's GPUs under which `topo`, its link state (`capacity` per
/// link, 0 when down) and `jobs` are symmetric.
pub fn detect(topo: &Topology, capacity: &[u64], jobs: &[JobSpec]) -> Result<Symmetry, String> {
    let n = topo.hosts().first().map_or(0, |h| h.gpus.len() as u32);
    let mut why = format!("servers of {n} GPU(s) cannot be turned");
    for step in (1..n).filter(|&s| n.is_multiple_of(s)) {
        let rotation = HostRotation::new(topo, step)?;
        if let Some(l) = topo
            .link_ids()
            .find(|&l| capacity[l.index()] != capacity[rotation.link(l).index()])
        {
            let x = topo.link(l);
            return Err(format!(
                "the link state differs between a server's GPUs ({} -> {})",
                topo.node_name(x.src),
                topo.node_name(x.dst)
            ));
        }
        match jobs
            .iter()
            .map(|j| orbits(topo, &rotation, j))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(jobs) => return Ok(Symmetry { rotation, jobs }),
            Err(e) => why = e,
        }
    }
    Err(why)
}

/// The ranks' and groups' orbits of job `j` under `rot`, if the job is symmetric under it.
fn orbits(topo: &Topology, rot: &HostRotation, j: &JobSpec) -> Result<JobOrbits, String> {
    let name = &j.name;
    let w = &j.workload;
    let mut rank_of = vec![u32::MAX; topo.node_count()];
    for (r, g) in j.gpus.iter().enumerate() {
        rank_of[g.index()] = r as u32;
    }
    // π: the rank on the turned GPU.
    let turn: Vec<u32> = j
        .gpus
        .iter()
        .map(|&g| rank_of[rot.node(g).index()])
        .collect();
    if turn.contains(&u32::MAX) {
        return Err(format!("job `{name}` does not hold whole servers"));
    }
    // A rank's place in its orbit: its GPU's place in its server, modulo the step.
    let local = |g: NodeId| -> u32 {
        topo.host_of(g).map_or(0, |h| {
            topo.host(h).gpus.iter().position(|&x| x == g).unwrap_or(0) as u32
        })
    };
    let active: Vec<bool> = j.gpus.iter().map(|&g| local(g) < rot.step).collect();
    let orbit_of = |r: u32| -> (u32, u32) {
        let g = j.gpus[r as usize];
        (topo.host_of(g).map_or(0, |h| h.0), local(g) % rot.step)
    };
    let by_ranks: HashMap<&[u32], u32> = w
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| (g.ranks.as_slice(), i as u32))
        .collect();
    let mut image = Vec::with_capacity(w.groups.len());
    let mut weight = Vec::with_capacity(w.groups.len());
    for (gi, g) in w.groups.iter().enumerate() {
        let turned: Vec<u32> = g.ranks.iter().map(|&r| turn[r as usize]).collect();
        if let Some(&i) = by_ranks.get(turned.as_slice()) {
            // Moved onto another group: its members must lie in distinct orbits (so each of its
            // flows has a whole orbit of images) and be all representatives or none.
            let mut seen: Vec<(u32, u32)> = g.ranks.iter().map(|&r| orbit_of(r)).collect();
            seen.sort_unstable();
            seen.dedup();
            let reps = g.ranks.iter().filter(|&&r| active[r as usize]).count();
            if seen.len() != g.ranks.len() || (reps != 0 && reps != g.ranks.len()) {
                return Err(format!(
                    "job `{name}`: group `{}` mixes ranks of one orbit",
                    g.name
                ));
            }
            image.push(i);
            weight.push(rot.order);
            continue;
        }
        // Onto itself: a collective inside one server, run in closed form, with no flows.
        let mut a = g.ranks.clone();
        let mut b = turned;
        a.sort_unstable();
        b.sort_unstable();
        let hosts: Vec<_> = g.ranks.iter().map(|&r| orbit_of(r).0).collect();
        if a != b || !j.comm.host_closed_form || hosts.iter().any(|&h| h != hosts[0]) {
            return Err(format!(
                "job `{name}`: group `{}` has no turned image",
                g.name
            ));
        }
        image.push(gi as u32);
        weight.push(1);
    }
    for (r, b) in w.ranks.iter().enumerate() {
        let t = &w.ranks[turn[r] as usize];
        let same = t.program == b.program
            && t.peers.len() == b.peers.len()
            && t.peers
                .iter()
                .zip(&b.peers)
                .all(|(&tp, &p)| tp == turn[p as usize] && active[p as usize] == active[r])
            && t.groups.len() == b.groups.len()
            && t.groups
                .iter()
                .zip(&b.groups)
                .all(|(&tg, &g)| tg == image[g as usize]);
        if !same {
            return Err(format!(
                "job `{name}`: rank {r} and rank {} run different programs",
                turn[r]
            ));
        }
    }
    Ok(JobOrbits { active, weight })
}
