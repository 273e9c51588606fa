//! Cohorts on and off their links: each link's list of the cohorts crossing it, and each
//! cohort's entry per link that says where in that list it is.

use fabricsim_topology::LinkId;

use super::{FlowEngine, LONG_PATH, TOLERANCE};
use crate::flow_engine::cohort::NO_COHORT;

impl FlowEngine {
    /// Takes `f`, with `members` flows, off its links: its load goes, and the links it
    /// saturated are marked for a re-solve (see the engine's module docs).
    pub(super) fn detach(&mut self, f: u32, members: u32) {
        let rate = self.hot[f as usize].rate;
        let now = self.now.0;
        let k = f64::from(members);
        let span = self.cohorts[f as usize].links;
        let mut hint = (NO_COHORT, 0);
        for i in 0..span.len as usize {
            let (l, w) = self.incidence.at(span, i);
            let w = w * k;
            let link = &mut self.link[l as usize];
            let saturated = link.saturated(TOLERANCE);
            let pos = self.incidence.pos[span.ids + i];
            debug_assert_eq!(link.flows.as_slice(&self.spill)[pos as usize], f);
            let last = link.flows.len() as u32 - 1;
            let moved = link.flows.remove_at(pos, &mut self.spill);
            // The last flow off a link leaves it idle: exactly no load, whatever the rounding
            // of the sums of rates left (else a residue keeps it busy until its next flow).
            if link.flows.is_empty() {
                link.weight = 0.0;
                link.set_load(now, 0.0);
            } else {
                link.weight -= w;
                if rate.is_finite() {
                    link.set_load(now, (link.load() - w * rate).max(0.0));
                }
            }
            if saturated {
                self.dirty_links.push(l);
            }
            // The list's last cohort moved to `pos`: its entry for this link says so.
            if let Some(j) = moved.and_then(|g| self.entry_on(g, l, last, &mut hint)) {
                self.incidence.pos[j] = pos;
            }
        }
    }

    /// The entry of cohort `g`'s links that is link `l` at position `at` of its flow list: a
    /// scan of a short path, a probe of a long one's [`LinkIndex`] (a hashed ring's channel
    /// crosses hundreds of links, a pipelined ring's tens of thousands), a search of one in
    /// link order. `hint` is the last entry found, with its cohort: in links in order, one
    /// after it is searched for from there (a detach visits its links in order, and the
    /// cohorts of one collective's channels mostly follow each other).
    fn entry_on(&self, g: u32, l: u32, at: u32, hint: &mut (u32, usize)) -> Option<usize> {
        let s = self.cohorts[g as usize].links;
        let is = |j: usize| self.incidence.ids[j] == l && self.incidence.pos[j] == at;
        let all = s.ids..s.ids + s.len as usize;
        // A short path is scanned without a map lookup.
        if s.len as usize <= LONG_PATH {
            return all.clone().find(|&j| is(j));
        }
        match self.long_paths.get(&g) {
            // In link order (a merged bundle's): each link once, found in place.
            None => {
                let ids = &self.incidence.ids[all.clone()];
                let after = (hint.0 == g && ids[hint.1 - s.ids] < l).then(|| hint.1 - s.ids + 1);
                let j = s.ids
                    + after.map_or_else(
                        || ids.partition_point(|&m| m < l),
                        |from| gallop(ids, from, l),
                    );
                let found = (j < all.end && is(j)).then_some(j);
                if let Some(j) = found {
                    *hint = (g, j);
                }
                found
            }
            Some(index) => index.find(l).map(|i| s.ids + i as usize).find(|&j| is(j)),
        }
    }

    pub(super) fn attach(&mut self, f: u32) {
        self.touch_links(f);
        let span = self.cohorts[f as usize].links;
        let k = f64::from(self.cohorts[f as usize].members);
        for i in 0..span.len as usize {
            let (l, w) = self.incidence.at(span, i);
            let w = w * k;
            let link = &mut self.link[l as usize];
            self.incidence.pos[span.ids + i] = link.flows.push(f, &mut self.spill);
            link.weight += w;
        }
        self.dirty_flows.push(f);
    }
}

/// Where each link of a long path lies among its entries: open addressing by link id, twice
/// as many slots as links, probed in turn. A detach that moves a long cohort in a link's list
/// finds its entry for the link in a probe or two, where a binary search of its sorted links
/// took ten dependent reads, each likely a cache miss.
pub(super) struct LinkIndex {
    /// (link, the entry's offset in the path); `EMPTY` links mark free slots.
    slots: Box<[(u32, u32)]>,
    shift: u32,
}

const EMPTY: u32 = u32::MAX;

impl LinkIndex {
    pub fn new(links: &[(LinkId, f64)]) -> LinkIndex {
        let size = (2 * links.len()).next_power_of_two().max(2);
        let shift = 64 - size.trailing_zeros();
        let mut slots = vec![(EMPTY, 0); size].into_boxed_slice();
        for (i, &(l, _)) in links.iter().enumerate() {
            let mut at = home(l.0, shift);
            while slots[at].0 != EMPTY {
                at = (at + 1) & (size - 1);
            }
            slots[at] = (l.0, i as u32);
        }
        LinkIndex { slots, shift }
    }

    /// The offsets of link `l`'s entries in the path (more than one where it crosses `l`
    /// more than once).
    pub fn find(&self, l: u32) -> impl Iterator<Item = u32> + '_ {
        let mask = self.slots.len() - 1;
        let start = home(l, self.shift);
        (0..self.slots.len())
            .map(move |k| self.slots[(start + k) & mask])
            .take_while(|&(m, _)| m != EMPTY)
            .filter(move |&(m, _)| m == l)
            .map(|(_, i)| i)
    }
}

/// Link `l`'s first slot in a table of `2^(64 - shift)` (Fibonacci hashing).
fn home(l: u32, shift: u32) -> usize {
    (u64::from(l).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

/// The first position at or after `from` in the sorted `ids` whose link is not below `l`,
/// every link before `from` being below it: found in steps doubling from `from`, so in time
/// logarithmic in its distance from there.
fn gallop(ids: &[u32], from: usize, l: u32) -> usize {
    let (mut lo, mut hi, mut step) = (from, from, 1);
    while hi < ids.len() && ids[hi] < l {
        lo = hi + 1;
        hi = lo + step;
        step *= 2;
    }
    let hi = hi.min(ids.len());
    lo + ids[lo..hi].partition_point(|&m| m < l)
}

#[cfg(test)]
mod tests {
    use super::{gallop, LinkIndex};
    use fabricsim_topology::LinkId;

    /// Every entry of a path with repeated links is found, and no other.
    #[test]
    fn a_link_index_finds_every_entry_of_a_link() {
        let links: Vec<(LinkId, f64)> = (0..300u32).map(|i| (LinkId(i * 7 % 101), 1.0)).collect();
        let index = LinkIndex::new(&links);
        for l in 0..110u32 {
            let mut found: Vec<u32> = index.find(l).collect();
            found.sort_unstable();
            let want: Vec<u32> = (0..300u32)
                .filter(|&i| links[i as usize].0 .0 == l)
                .collect();
            assert_eq!(found, want, "link {l}");
        }
    }

    /// From any start with every link before it below the target, the gallop lands where a
    /// binary search of the whole list does.
    #[test]
    fn gallop_finds_what_a_binary_search_finds() {
        let ids: Vec<u32> = (0..200u32).map(|i| i * 9 + (i % 7)).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        for l in 0..1820u32 {
            let want = ids.partition_point(|&m| m < l);
            for from in 0..=want {
                assert_eq!(gallop(&ids, from, l), want, "l {l} from {from}");
            }
        }
    }
}
