//! Jobs of a wide chain, simulated apart and coupled through their mean loads.
//!
//! Jobs that leave the same rack share its ToR's uplinks, and jobs that leave the same zone
//! share its links to the tier above (Meta's CTSW–ATSW links). Wide jobs chain racks and zones
//! together (one spans zones 1 and 2, the next 2 and 3, …), so on a whole cluster the jobs
//! sharing links, directly or through others, can be most of the cluster, and simulating them
//! together costs as much as simulating the cluster at every start, end or failure among them.
//! Past a size ([`crate::plan::Plan::exact_group_gpus`]) such a chain is cut: each of its jobs
//! is simulated by itself, and every other job of the chain that leaves a rack or a zone it
//! leaves stands for a steady load on that *domain*'s links (the rack's uplinks, the zone's
//! edge), one way and the other: the bytes per second it sent across them when simulated
//! alone, averaged over its iteration, spread evenly over the links as ECMP spreads flows on
//! average, and taken off their capacity. Where racks are non-blocking, a mean load on a
//! rack's uplinks cannot take a job's share (each job's hosts bring their own), so only zones
//! count. What this leaves out: when the others' bursts come and which links their flows hash
//! to (a group's simulation starts every job at once, lining their bursts up, and draws their
//! collisions), and the effect of a job's slowdown on its neighbours' load.

use fabricsim_topology::{LinkId, NodeId, NodeKind, Topology};
use rustc_hash::FxHashMap;

use crate::hierarchy::{Allocation, Hierarchy};

/// A domain's background load is rounded to this many steps of its capacity, so that a job
/// whose neighbours change little keeps its simulation.
const LEVELS: f64 = 8.0;
/// The most of a domain's capacity a background may take: a job's flows keep an eighth.
const MAX_LEVEL: u8 = 7;

/// Where a link is shared: the uplinks of a rack, or the edge of a zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Domain {
    Rack(u32),
    Zone(u32),
}

/// A job's load on its domains: (its domain, as `Rack(k)` or `Zone(k)` for its k-th rack or
/// zone in order of first appearance on its hosts; bytes per second out of it and into it).
pub type EdgeLoad = Vec<(Domain, f64, f64)>;

/// Loads on domains: (domain, level out, level in) ([`Domains::level`]).
pub type Loads = Vec<(Domain, u8, u8)>;

/// The racks and zones of a job's hosts, each in order of first appearance.
pub fn domains_of(h: &Hierarchy, alloc: &Allocation) -> (Vec<u32>, Vec<u32>) {
    let (mut racks, mut zones) = (Vec::new(), Vec::new());
    for &(x, _) in alloc {
        let r = h.rack[x as usize];
        if !racks.contains(&r) {
            racks.push(r);
        }
        let z = h.zone[r as usize];
        if !zones.contains(&z) {
            zones.push(z);
        }
    }
    (racks, zones)
}

/// A domain's links out (up from a rack's switch; from a switch of a zone to one outside it)
/// and in, and their capacity each way in bytes/s.
#[derive(Clone, Default)]
struct Edge {
    out: Vec<LinkId>,
    into: Vec<LinkId>,
    capacity: (f64, f64),
}

/// The links of each rack's uplinks and of each zone's edge.
pub struct Domains {
    racks: Vec<Edge>,
    zones: Vec<Edge>,
    /// Whether mean loads on racks' uplinks count ([`Hierarchy::racks_non_blocking`]).
    racks_count: bool,
    /// Per link at a domain's edge: the domain (racks and zones by their fabric numbers), and
    /// whether it leads out.
    at: FxHashMap<LinkId, (Domain, bool)>,
}

impl Domains {
    pub fn of(topo: &Topology, h: &Hierarchy) -> Domains {
        let is_switch = |n: NodeId| matches!(topo.kind(n), NodeKind::Switch(_));
        // A switch's zone: a rack switch's rack's, and a switch above rack switches of one zone
        // only (a CTSW) that zone's; a switch above several zones (an ATSW) is in none.
        let mut zone_of: Vec<Option<u32>> = vec![None; topo.node_count()];
        let mut rack_of: Vec<Option<u32>> = vec![None; topo.node_count()];
        for (r, s) in h.rack_switch.iter().enumerate() {
            if let Some(s) = s {
                zone_of[s.index()] = Some(h.zone[r]);
                rack_of[s.index()] = Some(r as u32);
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
        let mut d = Domains {
            racks: vec![Edge::default(); h.rack_switch.len()],
            zones: vec![Edge::default(); h.racks_of_zone.len()],
            racks_count: !h.racks_non_blocking,
            at: FxHashMap::default(),
        };
        for l in 0..topo.link_count() {
            let l = LinkId(l as u32);
            let link = topo.link(l);
            if !(is_switch(link.src) && is_switch(link.dst)) {
                continue;
            }
            let (src, dst) = (link.src.index(), link.dst.index());
            let (domain, out) = match (rack_of[src], rack_of[dst]) {
                (Some(r), _) => (Domain::Rack(r), true),
                (None, Some(r)) => (Domain::Rack(r), false),
                // A link between two zones counts at its source's edge.
                _ if zone_of[src] == zone_of[dst] => continue,
                _ => match (zone_of[src], zone_of[dst]) {
                    (Some(z), _) => (Domain::Zone(z), true),
                    (None, Some(z)) => (Domain::Zone(z), false),
                    (None, None) => continue,
                },
            };
            let edge = match domain {
                Domain::Rack(r) => &mut d.racks[r as usize],
                Domain::Zone(z) => &mut d.zones[z as usize],
            };
            let rate = link.capacity.0 as f64;
            if out {
                edge.out.push(l);
                edge.capacity.0 += rate;
            } else {
                edge.into.push(l);
                edge.capacity.1 += rate;
            }
            d.at.insert(l, (domain, out));
        }
        d
    }

    fn edge(&self, domain: Domain) -> Option<&Edge> {
        match domain {
            Domain::Rack(r) => self.racks.get(r as usize),
            Domain::Zone(z) => self.zones.get(z as usize),
        }
    }

    /// The bytes per second a job on `alloc` sent out of and into its domains (its racks only
    /// where they count), from the bytes it put on each link (`job_links`) in an iteration of
    /// `seconds`.
    pub fn load(
        &self,
        h: &Hierarchy,
        alloc: &Allocation,
        job_links: &[(LinkId, f64)],
        seconds: f64,
    ) -> EdgeLoad {
        let (mut racks, zones) = domains_of(h, alloc);
        // Racks count only where they are blocking, and then a job's shape keeps its racks,
        // so that the k-th rack of another placement of the shape is a rack of the same kind.
        if !self.racks_count {
            racks.clear();
        }
        let mut out: EdgeLoad = racks
            .iter()
            .enumerate()
            .map(|(k, _)| (Domain::Rack(k as u32), 0.0, 0.0))
            .chain(
                zones
                    .iter()
                    .enumerate()
                    .map(|(k, _)| (Domain::Zone(k as u32), 0.0, 0.0)),
            )
            .collect();
        if seconds <= 0.0 {
            return out;
        }
        for (l, bytes) in job_links {
            let slot = match self.at.get(l) {
                Some(&(Domain::Rack(r), way)) => {
                    racks.iter().position(|&x| x == r).map(|k| (k, way))
                }
                Some(&(Domain::Zone(z), way)) => zones
                    .iter()
                    .position(|&x| x == z)
                    .map(|k| (racks.len() + k, way)),
                None => None,
            };
            match slot {
                Some((k, true)) => out[k].1 += bytes / seconds,
                Some((k, false)) => out[k].2 += bytes / seconds,
                None => {}
            }
        }
        out
    }

    /// The level (in [`LEVELS`] steps of the domain's capacity that way, capped) that `rate`
    /// bytes/s out of (`out`) or into `domain` takes; 0 for racks where they do not count.
    pub fn level(&self, domain: Domain, out: bool, rate: f64) -> u8 {
        if matches!(domain, Domain::Rack(_)) && !self.racks_count {
            return 0;
        }
        let Some(edge) = self.edge(domain) else {
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

    /// Per link, the fraction of its capacity taken, for `loads` on domains by fabric number.
    pub fn background(&self, loads: &[(Domain, u8, u8)]) -> Vec<(LinkId, f64)> {
        let mut taken = Vec::new();
        for &(domain, out, into) in loads {
            let Some(edge) = self.edge(domain) else {
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
    fn a_racks_uplinks_and_a_zones_edge_are_their_links_to_the_tier_above() {
        let topo = presets::build("meta-cluster", &[("zones".into(), "2".into())]).unwrap();
        let h = Hierarchy::of(&topo);
        let d = Domains::of(&topo, &h);
        let name = |l: LinkId| {
            let link = topo.link(l);
            (topo.node_name(link.src), topo.node_name(link.dst))
        };
        assert_eq!(d.zones.len(), 2);
        for z in &d.zones {
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
        for r in &d.racks {
            for &l in &r.out {
                let (src, dst) = name(l);
                assert!(
                    src.contains("rtsw") && dst.contains("ctsw"),
                    "{src} -> {dst}"
                );
            }
            assert_eq!(r.out.len(), r.into.len());
        }
        // A zone's load is in steps of its capacity, up to seven eighths; the racks of an AI
        // Zone are non-blocking, so a mean load on their uplinks does not count.
        let zone1 = Domain::Zone(1);
        let cap = d.zones[1].capacity.0;
        assert_eq!(d.level(zone1, true, 0.0), 0);
        assert_eq!(d.level(zone1, true, cap / 2.0), 4);
        assert_eq!(d.level(zone1, false, 2.0 * cap), MAX_LEVEL);
        assert_eq!(d.level(Domain::Rack(0), true, 1e12), 0);
        let bg = d.background(&[(zone1, 4, 0), (Domain::Zone(0), 0, 0)]);
        assert_eq!(bg.len(), d.zones[1].out.len());
        assert!(bg
            .iter()
            .all(|&(l, f)| f == 0.5 && d.at[&l] == (zone1, true)));
        // A job's load is named by its own zones, out and in (racks do not count here).
        let rack = h.racks_of_zone[1][0] as usize;
        let alloc: Allocation = vec![(h.hosts_of_rack[rack][0], 0xff)];
        let (up, down) = (d.zones[1].out[3], d.zones[1].into[0]);
        let links = [
            (up, 2e9),
            (down, 1e9),
            (d.zones[0].out[0], 5e9),
            (d.racks[rack].out[1], 4e9),
        ];
        assert_eq!(
            d.load(&h, &alloc, &links, 2.0),
            vec![(Domain::Zone(0), 1e9, 5e8)]
        );
    }
}
