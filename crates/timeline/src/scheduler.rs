//! Placement policies behind one trait. A job of fewer GPUs than a host takes GPUs of one host;
//! a larger job takes whole hosts (its tensor-parallel groups stay inside a host's NVLink
//! domain), and its ranks go on them in host order, so the rank layering of its workload
//! (`order` in `[job.llm]`) decides which parallelism crosses racks and zones.
//!
//! - `topology-aware` (MAST-like): the smallest enclosing domain first — the rack that fits
//!   the job most tightly (best fit), else the zone that does, taking its fullest racks first,
//!   else the fewest zones (the fewest hosts cut off from each other by the oversubscribed
//!   aggregation tier); a small job goes to the busiest host that still holds it.
//! - `first-fit`: free hosts (GPUs) in fabric order.
//! - `random`: free hosts (a host with room) drawn at random, seeded.
//!
//! Spares: each zone keeps its last `spares` free whole hosts (in fabric order) for jobs that
//! restart after a failure; new jobs do not get them.

use crate::hierarchy::{Allocation, Hierarchy, Occupancy};
use crate::rng::Rng;

pub trait Scheduler {
    fn name(&self) -> &'static str;
    /// GPUs for a job of `gpus` among `eligible` whole hosts and the partly used hosts of
    /// `occ`, or `None` when it does not fit now.
    fn place(
        &mut self,
        h: &Hierarchy,
        occ: &Occupancy,
        eligible: &[bool],
        gpus: u32,
    ) -> Option<Allocation>;
}

/// The built-in policies, by the name a plan gives.
pub fn by_name(name: &str, seed: u64) -> Option<Box<dyn Scheduler>> {
    match name {
        "topology-aware" => Some(Box::new(TopologyAware)),
        "first-fit" => Some(Box::new(FirstFit)),
        "random" => Some(Box::new(Random(Rng::new(seed, 3)))),
        _ => None,
    }
}

pub const NAMES: [&str; 3] = ["topology-aware", "first-fit", "random"];

/// Whole free hosts a job may take: every zone's last `spares` whole free hosts are kept back
/// unless `use_spares`.
pub fn eligible(h: &Hierarchy, occ: &Occupancy, spares: u32, use_spares: bool) -> Vec<bool> {
    let mut ok: Vec<bool> = (0..h.hosts() as u32).map(|x| occ.whole(x)).collect();
    if use_spares || spares == 0 {
        return ok;
    }
    for racks in &h.racks_of_zone {
        let mut kept = 0;
        for &r in racks.iter().rev() {
            for &x in h.hosts_of_rack[r as usize].iter().rev() {
                if kept < spares && ok[x as usize] {
                    ok[x as usize] = false;
                    kept += 1;
                }
            }
        }
    }
    ok
}

/// The lowest `n` free GPUs of host `x`.
fn lowest(occ: &Occupancy, x: u32, n: u32) -> u64 {
    let mut mask = occ.free_mask(x);
    let mut out = 0;
    for _ in 0..n {
        let bit = mask & mask.wrapping_neg();
        out |= bit;
        mask &= !bit;
    }
    out
}

fn whole_hosts(occ: &Occupancy, hosts: &[u32]) -> Allocation {
    hosts.iter().map(|&x| (x, occ.free_mask(x))).collect()
}

/// Hosts that can take a small job of `g` GPUs: partly used ones with room, and eligible whole
/// ones.
fn with_room<'a>(
    h: &Hierarchy,
    occ: &'a Occupancy,
    eligible: &'a [bool],
    g: u32,
) -> impl Iterator<Item = u32> + 'a {
    (0..h.hosts() as u32).filter(move |&x| {
        let partly = occ.taken[x as usize] != 0 && !occ.out[x as usize];
        (partly || eligible[x as usize]) && occ.free_gpus(x) >= g
    })
}

pub struct TopologyAware;

impl Scheduler for TopologyAware {
    fn name(&self) -> &'static str {
        "topology-aware"
    }

    fn place(
        &mut self,
        h: &Hierarchy,
        occ: &Occupancy,
        eligible: &[bool],
        gpus: u32,
    ) -> Option<Allocation> {
        let per = h.gpus_per_host;
        if gpus < per {
            // The busiest host that holds it; among whole hosts, the one in the fullest rack.
            let free_in_rack: Vec<usize> = h
                .hosts_of_rack
                .iter()
                .map(|hs| hs.iter().filter(|&&x| eligible[x as usize]).count())
                .collect();
            let x = with_room(h, occ, eligible, gpus).min_by_key(|&x| {
                (
                    occ.free_gpus(x),
                    free_in_rack[h.rack[x as usize] as usize],
                    x,
                )
            })?;
            return Some(vec![(x, lowest(occ, x, gpus))]);
        }
        let n = gpus.div_ceil(per) as usize;
        let free_of = |r: u32| -> Vec<u32> {
            h.hosts_of_rack[r as usize]
                .iter()
                .copied()
                .filter(|&x| eligible[x as usize])
                .collect()
        };
        // The rack that fits it most tightly.
        let rack = (0..h.hosts_of_rack.len() as u32)
            .map(|r| (free_of(r), r))
            .filter(|(f, _)| f.len() >= n)
            .min_by_key(|(f, r)| (f.len(), *r));
        if let Some((hosts, _)) = rack {
            return Some(whole_hosts(occ, &hosts[..n]));
        }
        // The zone that fits it most tightly, its fullest racks first; else the fewest zones.
        let zone_racks = |z: usize| -> Vec<Vec<u32>> {
            let mut racks: Vec<Vec<u32>> = h.racks_of_zone[z].iter().map(|&r| free_of(r)).collect();
            racks.sort_by_key(|f| std::cmp::Reverse(f.len()));
            racks
        };
        let free_in_zone: Vec<usize> = (0..h.racks_of_zone.len())
            .map(|z| h.racks_of_zone[z].iter().map(|&r| free_of(r).len()).sum())
            .collect();
        let mut zones: Vec<usize> = (0..free_in_zone.len()).collect();
        let fits = zones
            .iter()
            .copied()
            .filter(|&z| free_in_zone[z] >= n)
            .min_by_key(|&z| (free_in_zone[z], z));
        if let Some(z) = fits {
            zones = vec![z];
        } else {
            zones.sort_by_key(|&z| (std::cmp::Reverse(free_in_zone[z]), z));
        }
        let mut chosen = Vec::with_capacity(n);
        'zones: for z in zones {
            for rack in zone_racks(z) {
                for x in rack {
                    chosen.push(x);
                    if chosen.len() == n {
                        break 'zones;
                    }
                }
            }
        }
        (chosen.len() == n).then(|| whole_hosts(occ, &chosen))
    }
}

pub struct FirstFit;

impl Scheduler for FirstFit {
    fn name(&self) -> &'static str {
        "first-fit"
    }

    fn place(
        &mut self,
        h: &Hierarchy,
        occ: &Occupancy,
        eligible: &[bool],
        gpus: u32,
    ) -> Option<Allocation> {
        let per = h.gpus_per_host;
        if gpus < per {
            let x = with_room(h, occ, eligible, gpus).next()?;
            return Some(vec![(x, lowest(occ, x, gpus))]);
        }
        let n = gpus.div_ceil(per) as usize;
        let hosts: Vec<u32> = (0..h.hosts() as u32)
            .filter(|&x| eligible[x as usize])
            .take(n)
            .collect();
        (hosts.len() == n).then(|| whole_hosts(occ, &hosts))
    }
}

pub struct Random(Rng);

impl Scheduler for Random {
    fn name(&self) -> &'static str {
        "random"
    }

    fn place(
        &mut self,
        h: &Hierarchy,
        occ: &Occupancy,
        eligible: &[bool],
        gpus: u32,
    ) -> Option<Allocation> {
        let per = h.gpus_per_host;
        if gpus < per {
            let room: Vec<u32> = with_room(h, occ, eligible, gpus).collect();
            if room.is_empty() {
                return None;
            }
            let x = room[self.0.below(room.len() as u64) as usize];
            return Some(vec![(x, lowest(occ, x, gpus))]);
        }
        let n = gpus.div_ceil(per) as usize;
        let mut free: Vec<u32> = (0..h.hosts() as u32)
            .filter(|&x| eligible[x as usize])
            .collect();
        if free.len() < n {
            return None;
        }
        // A partial Fisher–Yates shuffle: the first n are a uniform draw.
        for i in 0..n {
            let j = i + self.0.below((free.len() - i) as u64) as usize;
            free.swap(i, j);
        }
        Some(whole_hosts(occ, &free[..n]))
    }
}

/// A restarted job's GPUs, as close to its last ones as can be: every host it had that is free
/// and in service again, and for each other one a free whole host in the same rack, else the
/// same zone, else anywhere (in fabric order), in its place in rank order. `None` for a job
/// within one host, or when not enough hosts are free.
pub fn replace(
    h: &Hierarchy,
    occ: &Occupancy,
    eligible: &[bool],
    prev: &Allocation,
) -> Option<Allocation> {
    if prev.len() < 2 {
        return None;
    }
    let mut taken: Vec<u32> = Vec::with_capacity(prev.len());
    let mut out = Vec::with_capacity(prev.len());
    // Hosts it keeps first, so that a replacement never takes one of them.
    let kept: Vec<bool> = prev.iter().map(|&(x, _)| occ.whole(x)).collect();
    taken.extend(
        prev.iter()
            .zip(&kept)
            .filter(|(_, &k)| k)
            .map(|(&(x, _), _)| x),
    );
    for (&(x, _), &keep) in prev.iter().zip(&kept) {
        if keep {
            out.push((x, occ.free_mask(x)));
            continue;
        }
        let rack = h.rack[x as usize];
        let zone = h.zone[rack as usize];
        let free = |y: &u32| eligible[*y as usize] && !taken.contains(y);
        let y = h.hosts_of_rack[rack as usize]
            .iter()
            .copied()
            .find(free)
            .or_else(|| {
                h.racks_of_zone[zone as usize]
                    .iter()
                    .flat_map(|&r| h.hosts_of_rack[r as usize].iter().copied())
                    .find(free)
            })
            .or_else(|| (0..h.hosts() as u32).find(free))?;
        taken.push(y);
        out.push((y, occ.free_mask(y)));
    }
    Some(out)
}
