//! What the path finder remembers between routes: per destination rack, every switch's
//! distance and the next hops of the wide switches, and the pool those next hops are kept in.

use std::cell::RefCell;

use fabricsim_topology::LinkId;

use super::graph::End;

/// Every switch's distance toward one set of attachment switches, and the next hops of the
/// wide switches as found so far (a switch's next hops depend only on these distances and the
/// link state, so the flows to all GPUs of a rack share them).
pub(super) struct Distances {
    /// Per switch index: switch-to-switch links to an attachment switch, or `FAR`.
    pub dist: Vec<u16>,
    /// Per *wide* switch (more than `SCAN_DEGREE` switch neighbours), by its wide index: where
    /// its next hops start in the path finder's [`HopPool`], `NOT_YET` until first asked for,
    /// or `AT_DST` for an attachment switch. Empty until a first wide switch is asked for.
    pub hops: RefCell<Vec<u32>>,
}

pub(super) const FAR: u16 = u16::MAX;
pub(super) const NOT_YET: u32 = u32::MAX;
pub(super) const AT_DST: u32 = u32::MAX - 1;

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
    /// Per wide switch, where its lists start (a switch has a handful: one per distance
    /// pattern of its neighbours, such as "up to every aggregation switch" and one per rack
    /// below it).
    by_switch: Vec<Vec<u32>>,
}

impl HopPool {
    /// Where wide switch `wi`'s list `links` (leading to `ends`) starts, stored if new.
    pub fn intern(&mut self, wi: u32, links: &[LinkId], ends: &[End]) -> u32 {
        let wi = wi as usize;
        if self.by_switch.len() <= wi {
            self.by_switch.resize_with(wi + 1, Vec::new);
        }
        if let Some(&at) = self.by_switch[wi]
            .iter()
            .find(|&&at| self.list(at).0 == links)
        {
            return at;
        }
        let at = self.links.len() as u32;
        self.links.push(LinkId(links.len() as u32));
        self.links.extend_from_slice(links);
        self.ends.push(End::NONE);
        self.ends.extend_from_slice(ends);
        self.by_switch[wi].push(at);
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
        self.by_switch.clear();
    }
}
