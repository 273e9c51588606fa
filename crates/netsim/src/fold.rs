//! The fold of a symmetric run: flows that stand for their orbits, links seen as their orbits'
//! first links (see [`Fold`]).

use fabricsim_topology::LinkId;

/// Flows that stand for their orbits under a fabric automorphism: each flow submitted is one of
/// `orbit` alike flows (its images), and the engine sees every link orbit as its first link,
/// carrying `orbit / size` times the flow's share — the load the whole orbit of flows puts on
/// each link of the link orbit (they all carry the same, by symmetry). Max-min rates of the
/// representatives are then those of the full problem. Link figures are given back per link,
/// each link of an orbit with its first link's.
#[derive(Clone, Debug)]
pub struct Fold {
    pub(crate) first: Vec<LinkId>,
    factor: Vec<f64>,
}

impl Fold {
    /// From each link's orbit (its first link and the orbit's size) and the flows' orbit size.
    pub fn new(first: Vec<LinkId>, size: &[u32], orbit: u32) -> Fold {
        let factor = size
            .iter()
            .map(|&s| f64::from(orbit) / f64::from(s))
            .collect();
        Fold { first, factor }
    }

    /// Maps `links[start..]` onto first links with their factors, merging links of one orbit.
    pub(crate) fn apply(&self, links: &mut Vec<(LinkId, f64)>, start: usize) {
        for (l, w) in &mut links[start..] {
            *w *= self.factor[l.index()];
            *l = self.first[l.index()];
        }
        links[start..].sort_unstable_by_key(|&(l, _)| l);
        let mut kept = start;
        for i in start..links.len() {
            if kept > start && links[kept - 1].0 == links[i].0 {
                links[kept - 1].1 += links[i].1;
            } else {
                links[kept] = links[i];
                kept += 1;
            }
        }
        links.truncate(kept);
    }

    /// `l` and its factor.
    pub(crate) fn link(&self, l: LinkId) -> (LinkId, f64) {
        (self.first[l.index()], self.factor[l.index()])
    }
}
