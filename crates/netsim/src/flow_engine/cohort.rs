//! Cohorts: the flows on one path.
//!
//! Flows that cross the same links with the same weights, under the same cap and latency, get
//! the same max-min rate at every instant: they share every constraint. So the engine solves one
//! variable per *cohort*, whose weight on each link is its number of flows times theirs, and
//! keeps per flow only the *target*: the cohort's service (the bytes each of its flows has sent
//! since the cohort formed; processor sharing's virtual time) at which that flow will have sent
//! all its bytes. Its flows drain in target order, one cohort event at a time. Dense sharing —
//! an all-to-all, thousands of flows over the same few paths — then costs per distinct path in
//! flight, not per flow, and a flow joining or leaving a cohort is solved as the cohort leaving
//! its links and coming back one flow heavier or lighter. A cohort whose last flow left stays
//! in the table of paths and is revived by the next flow on its path: flows that take a path one
//! after another (a ring's steps, each iteration's collectives) share one record.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fabricsim_topology::{LinkId, Nanos};

use super::twins::PathForm;
use super::{FlowEngine, FlowHot, Span, PENDING};
use crate::engine::{FlowSpec, Placed};

/// [`Cohort::given`] of a cohort whose path as given is not kept.
pub(super) const NOT_KEPT: u32 = u32::MAX;

/// The flows on one path: an engine variable.
pub(super) struct Cohort {
    pub links: Span,
    pub cap: f64,
    pub latency: Nanos,
    /// Its flows still sending: its weight on each link is this times theirs.
    pub members: u32,
    /// Where among its links the last check found its bottleneck: checked first next time.
    pub bottleneck: u32,
    /// Bytes each member has sent since the cohort formed, as of `updated`.
    pub service: f64,
    /// Bytes all its flows sent: what each of its links carried from it (times the weight).
    pub carried: f64,
    pub updated: Nanos,
    /// When its next flow drains at its rate (`NEVER`: not solved, or rate 0), and the time
    /// of its live entry in the engine's drain heap (`NEVER`: none), never later than that.
    pub drain_at: u64,
    pub queued_at: u64,
    pub active: bool,
    /// Whether its links leave out the shadows of twin links it crosses (`twins.rs`).
    pub folded: bool,
    /// Whether the table of paths still holds it in its key's slot (false once a later cohort
    /// whose key fell in that slot took it): only then may a flow join it where one was placed
    /// before (`still_placed`).
    pub in_table: bool,
    /// Where most of a folded cohort's path is shadows, its path as it was given, with them:
    /// an index into the engine's `given` (else `NOT_KEPT`). A path met again is then found
    /// by comparing it with this, where a fold would look up each of its links; others are
    /// compared with `links`, or folded again.
    pub given: u32,
    /// Its members by target; a member that left by a reroute is skipped when it surfaces.
    due: Targets,
}

/// A min-heap of (target, member), the target as `f64` bits (targets are finite and not
/// negative, so their bits order as they do), with the two smallest entries kept apart: most
/// cohorts hold one flow or two (NCCL's two channels to a peer), and then nothing is allocated.
struct Targets {
    /// The two smallest entries' targets and members, in order; a member `NO_COHORT` marks an
    /// empty place. (Apart, not as pairs: 8 bytes less padding in every cohort.)
    low_targets: [u64; 2],
    low_members: [u32; 2],
    /// Boxed: 8 bytes in every cohort, where most never hold a third flow.
    #[allow(clippy::box_collection)]
    rest: Option<Box<BinaryHeap<Reverse<Entry>>>>,
}

/// (target bits, member).
type Entry = (u64, u32);

const EMPTY: Entry = (0, NO_COHORT);

impl Default for Targets {
    fn default() -> Self {
        Targets {
            low_targets: [0; 2],
            low_members: [NO_COHORT; 2],
            rest: None,
        }
    }
}

impl Targets {
    fn low(&self, i: usize) -> Entry {
        (self.low_targets[i], self.low_members[i])
    }

    fn set_low(&mut self, [a, b]: [Entry; 2]) {
        self.low_targets = [a.0, b.0];
        self.low_members = [a.1, b.1];
    }

    fn push(&mut self, e: Entry) {
        let (a, b) = (self.low(0), self.low(1));
        if a.1 == NO_COHORT {
            self.set_low([e, EMPTY]);
        } else if b.1 == NO_COHORT {
            self.set_low(if e < a { [e, a] } else { [a, e] });
        } else if e < b {
            self.rest.get_or_insert_default().push(Reverse(b));
            self.set_low(if e < a { [e, a] } else { [a, e] });
        } else {
            self.rest.get_or_insert_default().push(Reverse(e));
        }
    }

    fn peek(&self) -> Option<Entry> {
        (self.low_members[0] != NO_COHORT).then(|| self.low(0))
    }

    fn pop(&mut self) -> Option<Entry> {
        let top = self.peek()?;
        let next = match self.rest.as_mut().and_then(|r| r.pop()) {
            Some(Reverse(e)) => e,
            None => EMPTY,
        };
        self.set_low([self.low(1), next]);
        Some(top)
    }
}

impl Cohort {
    /// A retired cohort takes flows again, from now: what it carried stays.
    pub fn revive(&mut self, now: Nanos) {
        debug_assert!(!self.active && self.members == 0);
        self.active = true;
        self.service = 0.0;
        self.updated = now;
        self.drain_at = super::NEVER;
        self.queued_at = super::NEVER;
        self.due = Targets::default();
    }

    pub fn new(links: Span, folded: bool, cap: f64, latency: Nanos, now: Nanos) -> Cohort {
        Cohort {
            links,
            given: NOT_KEPT,
            folded,
            cap,
            latency,
            members: 0,
            bottleneck: 0,
            service: 0.0,
            carried: 0.0,
            updated: now,
            drain_at: super::NEVER,
            queued_at: super::NEVER,
            active: true,
            in_table: true,
            due: Targets::default(),
        }
    }
}

/// A flow as the engine's user sees it.
#[derive(Clone, Copy)]
pub(super) struct Member {
    /// Its cohort, or `NO_COHORT` for a flow with nothing to send.
    pub cohort: u32,
    /// The cohort's service at which it has sent all its bytes.
    pub target: f64,
    pub active: bool,
}

pub(super) const NO_COHORT: u32 = u32::MAX;

/// Slots of the table of paths (`FlowEngine::paths`), a power of two: a cohort is found by its
/// key's slot, and a later cohort whose key falls in the same slot takes it. A collision only
/// forgoes the grouping, never merges different paths, and the table costs the same (2 MiB)
/// whether a run has a hundred paths or millions. 2^16 slots were too few for a 2,048-GPU MoE
/// job's all-to-all paths: paths pushed out between two runs of their collective made new
/// cohorts (380 MB against 209 MB at 2^18; docs/performance.md).
pub(super) const PATH_SLOTS: usize = 1 << 18;

/// Links of a path that its key hashes, at most: a longer path (a pipelined ring's channels,
/// thousands of links) hashes its length and this many of its links evenly spaced, the last
/// one among them. Two long paths alike at those links share a slot; the link-by-link check
/// still tells them apart.
const KEYED_LINKS: usize = 64;

/// The key of a path in the table of paths: a hash of what makes two flows one
/// cohort. A flow joins the cohort in its key's slot only if the two are the same path, link by
/// link.
fn path_key(links: &[(LinkId, f64)], cap: f64, latency: Nanos) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    std::hash::Hasher::write_u64(&mut h, cap.to_bits());
    std::hash::Hasher::write_u64(&mut h, latency.0);
    let mut key = |&(l, w): &(LinkId, f64)| {
        std::hash::Hasher::write_u32(&mut h, l.0);
        std::hash::Hasher::write_u64(&mut h, w.to_bits());
    };
    if links.len() <= KEYED_LINKS {
        links.iter().for_each(key);
    } else {
        let n = links.len();
        (1..=KEYED_LINKS).for_each(|i| key(&links[i * n / KEYED_LINKS - 1]));
        std::hash::Hasher::write_usize(&mut h, n);
    }
    std::hash::Hasher::finish(&h)
}

/// A slot of the table of paths as kept: its cohort complemented, so that an empty slot
/// (`NO_COHORT`) is all zeros and the table is allocated zeroed, its pages mapped only where
/// a path lands.
pub(super) fn in_slot((b, check): (u32, u32)) -> (u32, u32) {
    (!b, check)
}

/// `key`'s slot in the table of paths (the hash's top bits, its best mixed).
fn path_slot(key: u64) -> usize {
    (key >> (64 - PATH_SLOTS.trailing_zeros())) as usize
}

impl FlowEngine {
    /// Whether cohort `b` (in flight or retired) was given exactly `links` under `cap` and
    /// `latency`.
    pub(super) fn same_path(
        &mut self,
        b: u32,
        links: &[(LinkId, f64)],
        cap: f64,
        lat: Nanos,
    ) -> bool {
        let cohort = &self.cohorts[b as usize];
        if cohort.cap.to_bits() != cap.to_bits() || cohort.latency != lat {
            return false;
        }
        let span = match cohort.given {
            NOT_KEPT if cohort.folded => {
                let (ids, weights) = self.incidence.slices(cohort.links);
                return self.twins.folds_to(links, ids, weights);
            }
            NOT_KEPT => cohort.links,
            given => self.given[given as usize],
        };
        span.len as usize == links.len()
            && self
                .incidence
                .get(span)
                .zip(links)
                .all(|((l, w), &(m, v))| l == m.0 && w.to_bits() == v.to_bits())
    }

    /// Puts member `m`, with `bytes` to send, on `links`: into the cohort of that path if one is
    /// in flight, else into a new one, its twin links folded (`twins.rs`). The table of paths
    /// is keyed by the links as given, so that a path met again is found without folding it.
    pub(super) fn place(&mut self, m: u32, spec: &FlowSpec<'_>, cap: f64, bytes: f64) {
        let (links, latency) = (spec.links, spec.latency);
        let key = path_key(links, cap, latency);
        let slot = path_slot(key);
        let (b, check) = in_slot(self.paths[slot]);
        if b != NO_COHORT && check == key as u32 && self.given_spec(b, spec, cap) {
            self.join_path(b, m, bytes);
            self.last_placed = Placed { cohort: b, key };
            return;
        }
        let folded = loop {
            match self.twins.fold(links) {
                PathForm::Plain => break None,
                PathForm::Folded => break Some(self.twins.take_folded()),
                // Its classes of that kind stop folding; it may fold by the others.
                PathForm::Stray(kind) => self.unfold_all(Some(kind)),
            }
        };
        let path = folded.as_deref().unwrap_or(links);
        let b = self.cohorts.len() as u32;
        let span = self.incidence.push(path);
        let mut cohort = Cohort::new(span, folded.is_some(), cap, latency, self.now);
        if folded.is_some() && self.twins.worth_keeping(links.len()) {
            cohort.given = self.given.len() as u32;
            self.given.push(self.incidence.push(links));
        }
        self.cohorts.push(cohort);
        self.group(b, span);
        if let Some(name) = spec.path {
            self.named.insert(b, name);
        }
        if let Some(folded) = folded {
            self.twins.give_back(folded);
        }
        self.hot.push(FlowHot {
            rate: 0.0,
            mark: 0,
            slot: PENDING,
        });
        if let Some(old) = self.cohorts.get_mut(in_slot(self.paths[slot]).0 as usize) {
            old.in_table = false;
        }
        self.paths[slot] = (!b, key as u32);
        self.enlist(b, m, bytes);
        self.attach(b);
        self.last_placed = Placed { cohort: b, key };
    }

    /// Whether `place`, given the links a flow was `placed` on and `cap`, would put the flow
    /// into that flow's cohort now: the table of paths still has the cohort in the path's slot,
    /// and the cap is the cohort's (the latency is in the key).
    pub(super) fn still_placed(&self, placed: Placed, cap: f64) -> bool {
        let cohort = &self.cohorts[placed.cohort as usize];
        debug_assert_eq!(
            cohort.in_table,
            in_slot(self.paths[path_slot(placed.key)]) == (placed.cohort, placed.key as u32)
        );
        cohort.in_table && cohort.cap.to_bits() == cap.to_bits()
    }

    /// Member `m` joins cohort `b`, found in the table of paths: in flight, or retired and
    /// revived.
    pub(super) fn join_path(&mut self, b: u32, m: u32, bytes: f64) {
        if self.cohorts[b as usize].active {
            self.join_cohort(b, m, bytes);
        } else {
            self.cohorts[b as usize].revive(self.now);
            self.hot[b as usize].rate = 0.0;
            self.enlist(b, m, bytes);
            self.attach(b);
        }
    }

    /// Member `m` joins cohort `b` in flight: a cohort at a rate leaves its links and comes
    /// back one flow heavier (a departure at its rate and an arrival); one not solved yet just
    /// weighs one flow more.
    fn join_cohort(&mut self, b: u32, m: u32, bytes: f64) {
        self.settle(b);
        let rate = self.hot[b as usize].rate;
        if rate > 0.0 {
            self.detach(b, self.cohorts[b as usize].members);
            self.drain_floor = self.drain_floor.min(rate);
            self.enlist(b, m, bytes);
            self.reattach(b);
        } else {
            for (l, w) in self.incidence.get(self.cohorts[b as usize].links) {
                self.link[l as usize].weight += w;
            }
            self.enlist(b, m, bytes);
        }
    }

    /// Whether cohort `b` was given the links of `spec` under `cap` and `spec`'s latency:
    /// known by the path's name if `b` was given it under that name, else compared (and the
    /// name noted where they are the same).
    pub(super) fn given_spec(&mut self, b: u32, spec: &FlowSpec<'_>, cap: f64) -> bool {
        let Some(name) = spec.path else {
            return self.same_path(b, spec.links, cap, spec.latency);
        };
        if self.named.get(&b) == Some(&name) {
            let cohort = &self.cohorts[b as usize];
            return cohort.cap.to_bits() == cap.to_bits() && cohort.latency == spec.latency;
        }
        let same = self.same_path(b, spec.links, cap, spec.latency);
        if same {
            self.named.insert(b, name);
        }
        same
    }

    /// Adds member `m`, with `bytes` to send, to cohort `b` (its service settled up to now).
    pub(super) fn enlist(&mut self, b: u32, m: u32, bytes: f64) {
        let cohort = &mut self.cohorts[b as usize];
        let target = cohort.service + bytes;
        cohort.members += 1;
        cohort.due.push((target.to_bits(), m));
        self.members[m] = Member {
            cohort: b,
            target,
            active: true,
        };
    }

    /// The smallest target among `b`'s members still in it (skipping those that left).
    pub(super) fn next_target(&mut self, b: u32) -> f64 {
        let members = &self.members;
        let cohort = &mut self.cohorts[b as usize];
        while let Some((bits, m)) = cohort.due.peek() {
            // A dropped member is long finished.
            let Some(&member) = members.get(m) else {
                cohort.due.pop();
                continue;
            };
            if member.active && member.cohort == b && member.target.to_bits() == bits {
                return f64::from_bits(bits);
            }
            cohort.due.pop();
        }
        f64::INFINITY
    }

    /// Takes out of `b` every member whose target its service has reached, in target order
    /// (ties by flow id), into `out`.
    pub(super) fn pop_done(&mut self, b: u32, out: &mut Vec<u32>) {
        while self.next_target(b) <= self.cohorts[b as usize].service {
            let cohort = &mut self.cohorts[b as usize];
            let Some((_, m)) = cohort.due.pop() else {
                break;
            };
            cohort.members -= 1;
            self.members[m].active = false;
            out.push(m);
        }
    }

    /// The bytes member `m` has still to send.
    pub(super) fn member_remaining(&self, m: u32) -> f64 {
        let member = self.members[m];
        (member.target - self.cohorts[member.cohort as usize].service).max(0.0)
    }

    /// Takes member `m` out of its cohort's count (its heap entry is skipped when it surfaces).
    pub(super) fn leave(&mut self, m: u32) {
        let b = self.members[m].cohort;
        self.cohorts[b as usize].members -= 1;
        self.members[m].active = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_pop_in_the_order_a_heap_does() {
        // Pushes and pops interleaved, with ties, against a plain min-heap.
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 33
        };
        for _ in 0..200 {
            let (mut t, mut heap) = (Targets::default(), BinaryHeap::new());
            for m in 0..(next() % 12) as u32 {
                if next() % 3 == 0 {
                    assert_eq!(t.pop(), heap.pop().map(|Reverse(e)| e));
                }
                let e = (next() % 5, m);
                t.push(e);
                heap.push(Reverse(e));
            }
            while let Some(Reverse(e)) = heap.pop() {
                assert_eq!(t.pop(), Some(e));
            }
            assert_eq!(t.pop(), None);
        }
    }
}
