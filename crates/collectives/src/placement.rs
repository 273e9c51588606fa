//! Where a benchmark's ranks run.
//!
//! - `contiguous` (default): the first n GPUs in fabric order — whole hosts, whole racks.
//! - `random`: n GPUs drawn at random from the whole fabric, in random rank order.
//! - `fragmented`: ranks scattered over partly used racks, as a busy cluster leaves them: only
//!   half the hosts of each rack (at least one, chosen at random) take ranks, whole hosts in
//!   rack order. A rack is the hosts whose first NIC hangs off the same switch.
//! - `per-host`: one rank per host, on each host's first GPU, hosts in fabric order (nccl-tests
//!   with one GPU per node: every byte between ranks crosses a NIC, all on one rail).
//!
//! Random choices are deterministic in the seed (SplitMix64, no RNG dependency).

use fabricsim_routing::key::mix;
use fabricsim_topology::{NodeId, NodeKind, Topology};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    Contiguous,
    Random { seed: u64 },
    Fragmented { seed: u64 },
    PerHost,
}

impl Placement {
    pub const NAMES: [&'static str; 4] = ["contiguous", "random", "fragmented", "per-host"];

    pub fn parse(s: &str, seed: u64) -> Option<Placement> {
        match s {
            "contiguous" => Some(Placement::Contiguous),
            "random" => Some(Placement::Random { seed }),
            "fragmented" => Some(Placement::Fragmented { seed }),
            "per-host" => Some(Placement::PerHost),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Placement::Contiguous => "contiguous",
            Placement::Random { .. } => "random",
            Placement::Fragmented { .. } => "fragmented",
            Placement::PerHost => "per-host",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error("a benchmark needs at least one GPU")]
    NoGpus,
    #[error("{asked} GPUs asked for, but the fabric has {have}")]
    TooMany { asked: usize, have: usize },
    #[error("{asked} GPUs asked for, but half-used racks offer only {have} (use fewer GPUs or another placement)")]
    TooFragmented { asked: usize, have: usize },
    #[error("{asked} GPUs asked for one per host, but the fabric has {have} hosts")]
    TooFewHosts { asked: usize, have: usize },
}

fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut state = seed;
    for i in (1..v.len()).rev() {
        state = mix(state);
        let j = (state % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

/// The GPUs of `n` ranks, rank order.
pub fn place(
    topo: &Topology,
    n: usize,
    placement: Placement,
) -> Result<Vec<NodeId>, PlacementError> {
    let gpus = topo.gpus();
    if n == 0 {
        return Err(PlacementError::NoGpus);
    }
    if n > gpus.len() {
        return Err(PlacementError::TooMany {
            asked: n,
            have: gpus.len(),
        });
    }
    match placement {
        Placement::Contiguous => Ok(gpus[..n].to_vec()),
        Placement::PerHost => {
            let firsts: Vec<NodeId> = topo
                .hosts()
                .iter()
                .filter_map(|h| h.gpus.first().copied())
                .take(n)
                .collect();
            if firsts.len() < n {
                return Err(PlacementError::TooFewHosts {
                    asked: n,
                    have: firsts.len(),
                });
            }
            Ok(firsts)
        }
        Placement::Random { seed } => {
            let mut all = gpus.to_vec();
            shuffle(&mut all, seed);
            all.truncate(n);
            Ok(all)
        }
        Placement::Fragmented { seed } => {
            let mut racks: Vec<(NodeId, Vec<usize>)> = Vec::new();
            for (h, host) in topo.hosts().iter().enumerate() {
                let Some(leaf) = leaf_of(topo, host.gpus.first().copied()) else {
                    continue;
                };
                match racks.iter_mut().find(|(l, _)| *l == leaf) {
                    Some((_, hosts)) => hosts.push(h),
                    None => racks.push((leaf, vec![h])),
                }
            }
            let mut out = Vec::with_capacity(n);
            for (i, (_, mut hosts)) in racks.into_iter().enumerate() {
                shuffle(&mut hosts, mix(seed ^ i as u64));
                let keep = hosts.len().div_ceil(2);
                let mut kept = hosts[..keep].to_vec();
                kept.sort_unstable();
                for h in kept {
                    for &g in &topo.hosts()[h].gpus {
                        if out.len() < n {
                            out.push(g);
                        }
                    }
                }
            }
            if out.len() < n {
                return Err(PlacementError::TooFragmented {
                    asked: n,
                    have: out.len(),
                });
            }
            Ok(out)
        }
    }
}

/// The switch a GPU's first NIC is cabled to.
fn leaf_of(topo: &Topology, gpu: Option<NodeId>) -> Option<NodeId> {
    let nic = topo.nics_of_gpu(gpu?).next()?;
    topo.out_links(nic)
        .iter()
        .map(|&l| topo.link(l).dst)
        .find(|&d| matches!(topo.kind(d), NodeKind::Switch(_)))
}
