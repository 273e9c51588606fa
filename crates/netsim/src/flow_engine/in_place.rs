//! A component too large to copy, solved where it lies.
//!
//! The solve of a component usually reads a compact copy ([`crate::maxmin::Dense`]): its
//! flows' links in local numbers, contiguous, and an index from each link to its flows that
//! the solver builds. For a component of millions of link entries (an all-to-all's: every
//! cohort of the collective shares the fabric's links) the two take 8 bytes an entry on top of
//! the engine's own records, which hold the same: each cohort's links in the incidence arena,
//! and each link's cohorts in its flow list. Such a component is read from those records
//! instead; each link's flows come out in the copy's order (increasing local number), so the
//! rates are the copy's to the last bit.

use super::groups::Groups;
use super::{Cohort, FlowHot, Incidence, Link, Spill};
use crate::maxmin::Problem;

/// Components with more link entries than this are solved in place (a copy of 1 MiB and an
/// index as large). Smaller ones, most re-solves, read the contiguous copy, which is faster.
/// At this size the copy no longer pays: a 16,384-rank ring's 16 channels (720 K entries)
/// solve in fewer instructions in place, and 6 MB smaller (docs/performance.md).
pub(super) const IN_PLACE_ENTRIES: usize = 1 << 18;

pub(super) struct InPlace<'a> {
    pub cohorts: &'a [Cohort],
    pub hot: &'a [FlowHot],
    pub incidence: &'a Incidence,
    pub groups: &'a Groups,
    pub link: &'a [Link],
    /// Per link: (the mark of the search that took it, its local number in the component).
    pub slot: &'a [(u32, u32)],
    pub spill: &'a Spill,
    /// The component's cohorts and links, by local number.
    pub flows: &'a [u32],
    pub links: &'a [u32],
    /// Per local link: the capacity left for the component.
    pub capacity: &'a [f64],
}

impl Problem for InPlace<'_> {
    fn links(&self) -> usize {
        self.links.len()
    }

    fn flows(&self) -> usize {
        self.flows.len()
    }

    fn capacity(&self, k: usize) -> f64 {
        self.capacity[k]
    }

    fn id(&self, k: usize) -> u32 {
        self.links[k]
    }

    fn cap(&self, f: usize) -> f64 {
        self.cohorts[self.flows[f] as usize].cap
    }

    fn each_link(&self, f: usize, mut visit: impl FnMut(u32, f64)) {
        let b = self.flows[f];
        let cohort = &self.cohorts[b as usize];
        let members = f64::from(cohort.members);
        for (l, w) in self.groups.links(self.incidence, b, cohort.links) {
            visit(self.slot[l as usize].1, w * members);
        }
    }

    const LISTS_FLOWS: bool = true;

    /// The cohorts on the link that are in the component (others on it keep their rates), by
    /// their local number: `slot` is a cohort's position in the component's list while this
    /// solve runs, checked against the list since a cohort left out may hold a stale one.
    fn flows_on(&self, k: usize, out: &mut Vec<u32>) {
        out.clear();
        for g in self.link[self.links[k] as usize].flows.cohorts(self.spill) {
            let slot = self.hot[g as usize].slot;
            if self.flows.get(slot as usize) == Some(&g) {
                out.push(slot);
            }
        }
        out.sort_unstable();
    }
}
