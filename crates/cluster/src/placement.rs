//! Where a job's ranks run. Jobs are placed one after another; a GPU holds one rank of one job.
//!
//! - `packed` (topology-aware): whole free hosts, so TP groups (innermost ranks) stay inside a
//!   host's NVLink domain; the job goes into the single rack that fits it most tightly (best
//!   fit: the rack with the fewest free hosts that still holds it) or, when no rack can, onto
//!   free hosts in fabric order — racks in order, racks of a zone together — so PP and DP
//!   groups stay inside racks and zones as far as they fit. A rack is the hosts whose first NIC
//!   hangs off the same switch.
//! - `random`: free GPUs drawn at random (seeded) in random rank order.
//! - `hosts`: an explicit list of host names (each adds its GPUs, in order) or GPU names.

use fabricsim_routing::key::mix;
use fabricsim_topology::{NodeId, NodeKind, Topology};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    Packed,
    Random { seed: u64 },
    Hosts(Vec<String>),
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error("{asked} GPUs asked for, but only {free} are free")]
    TooMany { asked: usize, free: usize },
    #[error("`{name}` is neither a host nor a GPU of the fabric")]
    Unknown { name: String },
    #[error("`{name}` is already used by an earlier job (or listed twice)")]
    Taken { name: String },
    #[error("the listed hosts give {have} GPUs, the job needs {asked}")]
    Count { asked: usize, have: usize },
}

/// The switch a host's first NIC hangs off (its rack), if any.
pub fn rack_of(topo: &Topology, host: usize) -> Option<NodeId> {
    let nic = *topo.hosts()[host].nics.first()?;
    topo.out_links(nic)
        .iter()
        .map(|&l| topo.link(l).dst)
        .find(|&n| matches!(topo.kind(n), NodeKind::Switch(_)))
}

/// Places `n` ranks; marks their GPUs in `used` (indexed by node id).
pub fn place(
    topo: &Topology,
    used: &mut [bool],
    n: usize,
    how: &Placement,
) -> Result<Vec<NodeId>, PlacementError> {
    let gpus = match how {
        Placement::Packed => packed(topo, used, n)?,
        Placement::Random { seed } => {
            let mut free: Vec<NodeId> = topo
                .gpus()
                .iter()
                .copied()
                .filter(|g| !used[g.index()])
                .collect();
            if free.len() < n {
                return Err(PlacementError::TooMany {
                    asked: n,
                    free: free.len(),
                });
            }
            let mut state = *seed;
            for i in (1..free.len()).rev() {
                state = mix(state);
                free.swap(i, (state % (i as u64 + 1)) as usize);
            }
            free.truncate(n);
            free
        }
        Placement::Hosts(names) => {
            let mut out = Vec::new();
            for name in names {
                let list: Vec<NodeId> = match topo.hosts().iter().find(|h| &h.name == name) {
                    Some(h) => h.gpus.clone(),
                    None => match topo.node_by_name(name) {
                        Some(g) if topo.kind(g) == NodeKind::Gpu => vec![g],
                        _ => return Err(PlacementError::Unknown { name: name.clone() }),
                    },
                };
                for g in list {
                    if used[g.index()] || out.contains(&g) {
                        return Err(PlacementError::Taken {
                            name: topo.node_name(g).to_string(),
                        });
                    }
                    out.push(g);
                }
            }
            if out.len() < n {
                return Err(PlacementError::Count {
                    asked: n,
                    have: out.len(),
                });
            }
            out.truncate(n);
            out
        }
    };
    for g in &gpus {
        used[g.index()] = true;
    }
    Ok(gpus)
}

fn packed(topo: &Topology, used: &[bool], n: usize) -> Result<Vec<NodeId>, PlacementError> {
    let hosts = topo.hosts();
    let free_host =
        |h: usize| !hosts[h].gpus.is_empty() && hosts[h].gpus.iter().all(|g| !used[g.index()]);
    // Racks in fabric order, with their free hosts.
    let mut racks: Vec<(Option<NodeId>, Vec<usize>)> = Vec::new();
    for h in 0..hosts.len() {
        let rack = rack_of(topo, h);
        if racks.last().map(|r| r.0) != Some(rack) {
            racks.push((rack, Vec::new()));
        }
        if free_host(h) {
            racks.last_mut().expect("pushed above").1.push(h);
        }
    }
    let count = |hs: &[usize]| hs.iter().map(|&h| hosts[h].gpus.len()).sum::<usize>();
    let take = |hs: &mut dyn Iterator<Item = usize>| {
        let (mut out, mut have) = (Vec::new(), 0);
        for h in hs {
            if have >= n {
                break;
            }
            have += hosts[h].gpus.len();
            out.push(h);
        }
        out
    };
    // Best fit in one rack, else free hosts in fabric order.
    let best = racks
        .iter()
        .filter(|r| count(&r.1) >= n)
        .min_by_key(|r| r.1.len());
    let chosen = match best {
        Some(r) => take(&mut r.1.iter().copied()),
        None => take(&mut racks.iter().flat_map(|r| r.1.iter().copied())),
    };
    let gpus_of = |hs: &[usize]| -> Vec<NodeId> {
        hs.iter()
            .flat_map(|&h| hosts[h].gpus.iter().copied())
            .collect()
    };
    let mut gpus = gpus_of(&chosen);
    if gpus.len() < n {
        // Not enough whole hosts: fill with any free GPUs in fabric order.
        for &g in topo.gpus() {
            if gpus.len() >= n {
                break;
            }
            if !used[g.index()] && !gpus.contains(&g) {
                gpus.push(g);
            }
        }
    }
    if gpus.len() < n {
        let free = topo.gpus().iter().filter(|g| !used[g.index()]).count();
        return Err(PlacementError::TooMany { asked: n, free });
    }
    gpus.truncate(n);
    Ok(gpus)
}
