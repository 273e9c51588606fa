//! What the path finder remembers between routes: per destination rack, every switch's
//! distance and the next hops of the wide switches, and the pool those next hops are kept in.

use std::cell::RefCell;

use rustc_hash::FxHashMap;

use fabricsim_topology::LinkId;

use super::graph::{End, Graph};
use super::toward::Hops;
use crate::key::mix;
use crate::link_state::LinkState;

/// Every switch's distance toward one set of attachment switches, and the next hops of the
/// wide switches as found so far (a switch's next hops depend only on these distances and the
/// link state, so the flows to all GPUs of a rack share them).
pub(super) struct Distances {
    /// Per switch index: switch-to-switch links to an attachment switch, or `FAR`.
    pub dist: Vec<u16>,
    /// The attachment switches (distance 0), by switch index, in order.
    pub sources: Box<[u32]>,
    /// Per *wide* switch (more than `SCAN_DEGREE` switch neighbours), by its wide index: where
    /// its next hops start in the path finder's [`HopPool`], `NOT_YET` until first asked for,
    /// or `AT_DST` for an attachment switch. Empty until a first wide switch is asked for.
    pub hops: RefCell<Vec<u32>>,
}

pub(super) const FAR: u16 = u16::MAX;
pub(super) const NOT_YET: u32 = u32::MAX;
pub(super) const AT_DST: u32 = u32::MAX - 1;

impl Distances {
    /// A backward breadth-first search from `sources` over the switch links that are up.
    pub fn search(g: &Graph, state: &LinkState, sources: &[u32]) -> Distances {
        Distances {
            dist: levels(g, state, sources),
            sources: sources.into(),
            hops: RefCell::default(),
        }
    }

    /// The distances toward `sources` from `parents`' levels (see [`Parents`]): 0 at the
    /// sources, one more than toward the parents everywhere else.
    pub fn from_parents(parents: &[u16], sources: &[u32]) -> Distances {
        let mut dist: Vec<u16> = parents
            .iter()
            .map(|&d| if d == FAR { FAR } else { d + 1 })
            .collect();
        for &s in sources {
            dist[s as usize] = 0;
        }
        Distances {
            dist,
            sources: sources.into(),
            hops: RefCell::default(),
        }
    }
}

/// Per switch, the switch-to-switch links (that are up) to the nearest of `sources`, or `FAR`:
/// a backward breadth-first search.
pub(super) fn levels(g: &Graph, state: &LinkState, sources: &[u32]) -> Vec<u16> {
    let mut dist = vec![FAR; g.switch_count()];
    let mut frontier: Vec<u32> = sources.to_vec();
    for &s in sources {
        dist[s as usize] = 0;
    }
    let mut level = 0u16;
    let mut next = Vec::new();
    let all_up = state.all_up();
    while !frontier.is_empty() {
        level += 1;
        for &t in &frontier {
            for n in g.neighbours(t) {
                if dist[n.sw as usize] == FAR && (all_up || state.is_up(n.inbound)) {
                    dist[n.sw as usize] = level;
                    next.push(n.sw);
                }
            }
        }
        std::mem::swap(&mut frontier, &mut next);
        next.clear();
    }
    dist
}

/// The switches with a link that is up into one of `sources` and not among them, sorted: the
/// first level of a search from `sources`. Every path to a source enters it from one of them,
/// so the distance toward the sources from any other switch is one more than toward these;
/// and sets of attachment switches with the same parents (the racks of a zone under its
/// cluster switches) share one search from the parents, in place of one each.
pub(super) fn parents(g: &Graph, state: &LinkState, sources: &[u32]) -> Vec<u32> {
    let all_up = state.all_up();
    let mut out: Vec<u32> = sources
        .iter()
        .flat_map(|&t| g.neighbours(t))
        .filter(|n| all_up || state.is_up(n.inbound))
        .map(|n| n.sw)
        .filter(|s| sources.binary_search(s).is_err())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Next-hop lists of wide switches, each stored once however many destinations share it: a
/// cluster switch sends to every other zone over the same uplinks, an aggregation switch to
/// every rack of a zone over the same downlinks. So the lists stay few and in cache, and a
/// destination's entry is a 4-byte index. A list is stored after its length, its links in
/// `links` and where each leads at the same positions in `ends`; dropped with the distances
/// when the link state changes.
#[derive(Default)]
pub(super) struct HopPool {
    links: Vec<LinkId>,
    ends: Vec<End>,
    /// Where a list is stored, by a hash of its links (a switch's next hops are its own out
    /// links, so a list's links name its switch: lists are found by content alone).
    index: FxHashMap<u64, u32>,
    /// A buffer for the list being found, kept so that finding one allocates nothing.
    pub scratch: Hops,
}

impl HopPool {
    /// Where the list `links` (leading to `ends`) starts, stored if new.
    pub fn intern(&mut self, links: &[LinkId], ends: &[End]) -> u32 {
        let hash = links
            .iter()
            .fold(links.len() as u64, |h, l| mix(h ^ u64::from(l.0)));
        let at = self.links.len() as u32;
        match self.index.get(&hash) {
            Some(&known) if self.list(known).0 == links => return known,
            // Two lists with one hash (as good as never): the second is stored unindexed.
            Some(_) => {}
            None => {
                self.index.insert(hash, at);
            }
        }
        self.links.push(LinkId(links.len() as u32));
        self.links.extend_from_slice(links);
        self.ends.push(End::NONE);
        self.ends.extend_from_slice(ends);
        at
    }

    /// The list stored at `at`: its links and their ends.
    pub fn list(&self, at: u32) -> (&[LinkId], &[End]) {
        let at = at as usize;
        let range = at + 1..at + 1 + self.links[at].0 as usize;
        (&self.links[range.clone()], &self.ends[range])
    }

    pub fn clear(&mut self) {
        self.links.clear();
        self.ends.clear();
        self.index.clear();
    }
}

#[cfg(test)]
mod tests {
    use fabricsim_topology::{presets, LinkId};

    use super::*;
    use crate::link_state::LinkCondition;

    /// Distances through the parents equal a search from the sources themselves, for every
    /// single switch and every pair of consecutive switches as sources, with every link up and
    /// with one switch-to-switch cable in five down.
    #[test]
    fn distances_through_the_parents_are_the_searchs() {
        for (preset, settings) in [
            ("meta-cluster", vec![("zones", "2"), ("racks", "4")]),
            ("hpn", vec![("segments", "2"), ("hosts_per_segment", "4")]),
            ("fat-tree", vec![("k", "4")]),
            ("dcn-plus", vec![]),
        ] {
            let settings: Vec<(String, String)> = settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let topo = presets::build(preset, &settings).unwrap();
            let g = Graph::new(&topo);
            let mut down = LinkState::new(&topo);
            let inter_switch: Vec<LinkId> = topo
                .link_ids()
                .filter(|&l| {
                    let link = topo.link(l);
                    topo.kind(link.src).is_switch() && topo.kind(link.dst).is_switch()
                })
                .collect();
            for &l in inter_switch.iter().step_by(10) {
                down.set_cable(l, LinkCondition::Down);
            }
            let n = g.switch_count() as u32;
            for state in [LinkState::new(&topo), down] {
                for a in 0..n {
                    for sources in [vec![a], vec![a, (a + 1) % n]] {
                        let mut sources = sources;
                        sources.sort_unstable();
                        sources.dedup();
                        let p = parents(&g, &state, &sources);
                        if p.is_empty() {
                            continue;
                        }
                        let through = Distances::from_parents(&levels(&g, &state, &p), &sources);
                        assert_eq!(
                            through.dist,
                            levels(&g, &state, &sources),
                            "{preset}: {sources:?}"
                        );
                    }
                }
            }
        }
    }
}
