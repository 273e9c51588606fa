//! Jobs of a wide chain, simulated apart and coupled through their mean loads.
//!
//! Jobs that leave the same zone share its links to the tier above (Meta's CTSW–ATSW links).
//! Wide jobs chain zones together (one spans zones 1 and 2, the next 2 and 3, …), so on a
//! whole cluster the jobs sharing links, directly or through others, can be most of the
//! cluster, and simulating them together costs as much as simulating the cluster at every
//! start, end or failure among them. Past a size ([`crate::plan::Plan::exact_group_gpus`]) such
//! a chain is cut: each of its jobs is simulated by itself, and every other job of the chain
//! that leaves a zone it leaves stands for a steady load on that zone's *edge*, one way and the
//! other: the bytes per second it sent across when simulated alone, averaged over its
//! iteration, spread evenly over the edge's links as ECMP spreads flows on average, and taken
//! off their capacity.
//!
//! Racks' uplinks carry no such load. Where racks are non-blocking (every preset's but HPN's),
//! a mean load on them cannot take a job's share, since each job's hosts bring their own; and
//! on a rail-optimized fabric (HPN) the rack a scheduler sees, a host's first NIC's switch,
//! carries one rail of eight. What this leaves out: which links the others' flows hash to and
//! when their bursts come (a group's simulation draws their collisions and, starting every job
//! at once, lines their bursts up), and the effect of a job's slowdown on its neighbours' load.

use fabricsim_topology::{LinkId, NodeId, NodeKind, Topology};
use rustc_hash::FxHashMap;

use crate::hierarchy::{Allocation, Hierarchy};

/// A zone's background load is rounded to this many steps of its edge's capacity, so that a
/// job whose neighbours change little keeps its simulation.
const LEVELS: f64 = 8.0;
/// The most of an edge's capacity a background may take: a job's flows keep an eighth.
const MAX_LEVEL: u8 = 7;

/// A job's load on its zones' edges: per zone of the job, in order of first appearance on its
/// hosts, the bytes per second it sent out of the zone and into it.
pub type EdgeLoad = Vec<(f64, f64)>;

/// Loads on zones' edges: (zone, level out, level in) ([`Edges::level`]).
pub type Loads = Vec<(u32, u8, u8)>;

/// The zones of a job's hosts, in order of first appearance.
pub fn zones_of(h: &Hierarchy, alloc: &Allocation) -> Vec<u32> {
    let mut zones = Vec::new();
    for &(x, _) in alloc {
        let z = h.zone_of_host(x);
        if !zones.contains(&z) {
            zones.push(z);
        }
    }
    zones
}

/// A zone's edge: its links out (from a switch of the zone to one outside it) and in, and
/// their capacity each way in bytes/s.
#[derive(Clone, Default)]
struct Edge {
    out: Vec<LinkId>,
    into: Vec<LinkId>,
    capacity: (f64, f64),
}

/// Every zone's edge.
pub struct Edges {
    zones: Vec<Edge>,
    /// Per link at a zone's edge: the zone, and whether the link leads out of it.
    at: FxHashMap<LinkId, (u32, bool)>,
}

impl Edges {
    pub fn of(topo: &Topology, h: &Hierarchy) -> Edges {
        let is_switch = |n: NodeId| matches!(topo.kind(n), NodeKind::Switch(_));
        // A switch's zone: a rack switch's rack's, and a switch above rack switches of one zone
        // only (a CTSW) that zone's; a switch above several zones (an ATSW) is in none.
        let mut zone_of: Vec<Option<u32>> = vec![None; topo.node_count()];
        for (r, s) in h.rack_switch.iter().enumerate() {
            if let Some(s) = s {
                zone_of[s.index()] = Some(h.zone[r]);
            }
        }
        let mut above: Vec<Option<Option<u32>>> = vec![None; topo.node_count()];
        for (n, z) in zone_of.iter().enumerate() {
            let Some(z) = *z else { continue };
            for &l in topo.out_links(NodeId(n as u32)) {
                let up = topo.link(l).dst;
                if !is_switch(up) || zone_of[up.index()].is_some() {
                    continue;
                }
                above[up.index()] = match above[up.index()] {
                    None => Some(Some(z)),
                    Some(Some(y)) if y == z => Some(Some(z)),
                    _ => Some(None),
                };
            }
        }
        for (n, a) in above.into_iter().enumerate() {
            if let Some(Some(z)) = a {
                zone_of[n] = Some(z);
            }
        }
        let mut e = Edges {
            zones: vec![Edge::default(); h.racks_of_zone.len()],
            at: FxHashMap::default(),
        };
        for l in 0..topo.link_count() {
            let l = LinkId(l as u32);
            let link = topo.link(l);
            let (from, to) = (zone_of[link.src.index()], zone_of[link.dst.index()]);
            if !(is_switch(link.src) && is_switch(link.dst)) || from == to {
                continue;
            }
            // A link between two zones counts at its source's edge.
            let (z, out) = match (from, to) {
                (Some(z), _) => (z, true),
                (None, Some(z)) => (z, false),
                (None, None) => continue,
            };
            let edge = &mut e.zones[z as usize];
            let rate = link.capacity.0 as f64;
            if out {
                edge.out.push(l);
                edge.capacity.0 += rate;
            } else {
                edge.into.push(l);
                edge.capacity.1 += rate;
            }
            e.at.insert(l, (z, out));
        }
        e
    }

    /// The bytes per second a job on `alloc` sent out of and into each of its zones, from the
    /// bytes it put on each link (`job_links`) in an iteration of `seconds`.
    pub fn load(
        &self,
        h: &Hierarchy,
        alloc: &Allocation,
        job_links: &[(LinkId, f64)],
        seconds: f64,
    ) -> EdgeLoad {
        let zones = zones_of(h, alloc);
        let mut out: EdgeLoad = vec![(0.0, 0.0); zones.len()];
        if seconds <= 0.0 {
            return out;
        }
        for (l, bytes) in job_links {
            let Some(&(z, way)) = self.at.get(l) else {
                continue;
            };
            if let Some(k) = zones.iter().position(|&x| x == z) {
                if way {
                    out[k].0 += bytes / seconds;
                } else {
                    out[k].1 += bytes / seconds;
                }
            }
        }
        out
    }

    /// The level (in [`LEVELS`] steps of the edge's capacity that way, capped) that `rate`
    /// bytes/s out of (`out`) or into zone `z` takes.
    pub fn level(&self, z: u32, out: bool, rate: f64) -> u8 {
        let Some(edge) = self.zones.get(z as usize) else {
            return 0;
        };
        let cap = if out {
            edge.capacity.0
        } else {
            edge.capacity.1
        };
        if cap <= 0.0 || rate <= 0.0 {
            return 0;
        }
        (rate / cap * LEVELS).round().min(f64::from(MAX_LEVEL)) as u8
    }

    /// Per link, the fraction of its capacity taken, for `loads` on zones by fabric number.
    pub fn background(&self, loads: &[(u32, u8, u8)]) -> Vec<(LinkId, f64)> {
        let mut taken = Vec::new();
        for &(z, out, into) in loads {
            let Some(edge) = self.zones.get(z as usize) else {
                continue;
            };
            for (links, level) in [(&edge.out, out), (&edge.into, into)] {
                if level > 0 {
                    taken.extend(links.iter().map(|&l| (l, f64::from(level) / LEVELS)));
                }
            }
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabricsim_topology::presets;

    #[test]
    fn a_zones_edge_is_its_links_to_the_tier_above() {
        let topo = presets::build("meta-cluster", &[("zones".into(), "2".into())]).unwrap();
        let h = Hierarchy::of(&topo);
        let e = Edges::of(&topo, &h);
        let name = |l: LinkId| {
            let link = topo.link(l);
            (topo.node_name(link.src), topo.node_name(link.dst))
        };
        assert_eq!(e.zones.len(), 2);
        for z in &e.zones {
            // Each cluster switch's links to the aggregation switches, and back.
            assert!(!z.out.is_empty() && z.out.len() == z.into.len());
            assert!(z.capacity.0 > 0.0 && z.capacity.0 == z.capacity.1);
            for &l in &z.out {
                let (src, dst) = name(l);
                assert!(
                    src.contains("ctsw") && dst.contains("atsw"),
                    "{src} -> {dst}"
                );
            }
            for &l in &z.into {
                let (src, dst) = name(l);
                assert!(
                    src.contains("atsw") && dst.contains("ctsw"),
                    "{src} -> {dst}"
                );
            }
        }
        // A load is in steps of the edge's capacity, up to seven eighths.
        let cap = e.zones[1].capacity.0;
        assert_eq!(e.level(1, true, 0.0), 0);
        assert_eq!(e.level(1, true, cap / 2.0), 4);
        assert_eq!(e.level(1, false, 2.0 * cap), MAX_LEVEL);
        let bg = e.background(&[(1, 4, 0), (0, 0, 0)]);
        assert_eq!(bg.len(), e.zones[1].out.len());
        assert!(bg.iter().all(|&(l, f)| f == 0.5 && e.at[&l] == (1, true)));
        // A job's load is by its own zones, out and in; links inside a zone do not count.
        let rack = h.racks_of_zone[1][0] as usize;
        let alloc: Allocation = vec![(h.hosts_of_rack[rack][0], 0xff)];
        let (up, down) = (e.zones[1].out[3], e.zones[1].into[0]);
        let inside = topo.out_links(h.rack_switch[rack].unwrap())[0];
        let links = [
            (up, 2e9),
            (down, 1e9),
            (e.zones[0].out[0], 5e9),
            (inside, 4e9),
        ];
        assert_eq!(e.load(&h, &alloc, &links, 2.0), vec![(1e9, 5e8)]);
    }
}
