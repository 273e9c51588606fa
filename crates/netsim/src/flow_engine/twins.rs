//! Twin links: two links that carry the same flows at every instant, solved as one.
//!
//! A NIC with one GPU and one port forwards every flow it receives: what comes up from its GPU
//! goes on to its switch, and what comes down from the switch goes on to its GPU (hosts never
//! forward for others, and no path turns back). So the GPU's PCIe link into the NIC and the
//! NIC's port up carry the same flows with the same weights, and so do the port down and the
//! PCIe link out. Of each such pair the engine keeps one link in the cohorts it solves, the
//! *representative*, with the smaller of the two capacities (the one constraint that can bind),
//! and leaves out the other, the *shadow*: its load, busy time and peak are the
//! representative's, and its bytes are counted from the cohorts that fold it. Every path between
//! GPUs crosses such a pair twice, so a third of a cross-rack path's links (a hashed ring's
//! channel crosses hundreds) cost nothing in a solve, an arrival or a departure.
//!
//! A path folds when it crosses both links of every pair it touches, with the same weight, and
//! shadows are at least an eighth of its links. One whose pairs are whole but few (a sprayed
//! ring's thousands of links, 2 % of them in pairs) stays whole: its shadows are listed as
//! links of their own, whose load is part of what their representatives carry, and reports
//! still read the representatives. A path that crosses half a pair (only a hand-made link list
//! can: the tests' random ones) would make a shadow's flows differ from its representative's,
//! so the engine then unfolds every cohort in flight and solves every link on its own from
//! then on (`FlowEngine::unfold_all`).

use fabricsim_topology::{LinkId, NodeKind, Topology};

use super::FlowEngine;

/// No pair.
const NONE: u32 = u32::MAX;

/// One pair: the representative, solved, and the shadow, left out.
#[derive(Clone, Copy)]
pub(super) struct Pair {
    pub rep: u32,
    pub shadow: u32,
    /// Whether the shadow comes first on a path (the PCIe link up into the NIC, before the
    /// port up), so that a folded path is given back in its order.
    pub shadow_first: bool,
    /// Each link's own capacity (bytes/s); the representative's cell holds the smaller.
    pub rep_capacity: f64,
    pub shadow_capacity: f64,
}

impl Pair {
    /// The capacity the representative is solved at: the tighter of the two.
    pub fn solved_capacity(&self) -> f64 {
        self.rep_capacity.min(self.shadow_capacity)
    }
}

/// The twin pairs of a topology and the scratch to fold paths.
pub(super) struct Twins {
    /// Whether paths are folded: until a path crosses half a pair (see the module docs), or
    /// never where the engine was told not to.
    pub active: bool,
    pairs: Vec<Pair>,
    /// Per link: its pair, with `SHADOW` set if it is the pair's shadow; or `NONE`.
    pair_of: Vec<u32>,
    /// Per link, a bit: whether it belongs to a pair, and whether it is a shadow. A fold reads
    /// these for every link of a path (a sprayed ring crosses thousands, few of them in
    /// pairs): 25 KB each on a 24K-GPU fabric, where `pair_of` takes 800 KB.
    in_pair: Vec<u64>,
    shadows: Vec<u64>,
    /// Per pair: the fold that last met it on the path being folded, and the weights its
    /// representative and its shadow had there (`UNSEEN` where not met).
    seen: Vec<Seen>,
    fold: u32,
    /// The pairs the path being folded crosses.
    met: Vec<u32>,
    /// The folded path.
    folded: Vec<(LinkId, f64)>,
}

const SHADOW: u32 = 1 << 31;

#[derive(Clone, Copy, Default)]
struct Seen {
    fold: u32,
    rep: u64,
    shadow: u64,
}

/// A path folds when at least one of this many of its links is a shadow.
const FOLD_SHARE: usize = 8;

/// No weight met yet (not the bits of any weight a path has: a NaN's).
const UNSEEN: u64 = u64::MAX;

/// What [`Twins::fold`] made of a path.
pub(super) enum PathForm {
    /// It crosses no pair, or too few to fold (their pairs whole): solved as given.
    Plain,
    /// Its shadows left out: the path is [`Twins::take_folded`].
    Folded,
    /// It crosses half a pair, a pair's link twice, or a pair's links with different weights.
    Stray,
}

impl Twins {
    /// The pairs of `topo`: at every NIC with exactly two links out (one to its GPU, one to
    /// its switch), each way through it.
    pub fn new(topo: &Topology) -> Twins {
        let mut pairs = Vec::new();
        let mut pair_of = vec![NONE; topo.link_count()];
        let mut in_pair = vec![0u64; topo.link_count().div_ceil(64)];
        let mut shadows = in_pair.clone();
        for v in topo.nodes() {
            let out = topo.out_links(v);
            if topo.kind(v) != NodeKind::Nic || out.len() != 2 {
                continue;
            }
            let (x, y) = (out[0], out[1]);
            // In by one link, out by the other: (into v from x's far end, out towards y's).
            for (into, on) in [(x.reverse(), y), (y.reverse(), x)] {
                let (c_in, c_on) = (capacity(topo, into), capacity(topo, on));
                // The smaller capacity is the one that can bind; on a tie, the lower id.
                let into_is_rep = c_in < c_on || (c_in == c_on && into.0 < on.0);
                let (rep, shadow) = if into_is_rep { (into, on) } else { (on, into) };
                let p = pairs.len() as u32;
                pair_of[rep.index()] = p;
                pair_of[shadow.index()] = p | SHADOW;
                set(&mut in_pair, rep.0);
                set(&mut in_pair, shadow.0);
                set(&mut shadows, shadow.0);
                pairs.push(Pair {
                    rep: rep.0,
                    shadow: shadow.0,
                    shadow_first: !into_is_rep,
                    rep_capacity: capacity(topo, rep),
                    shadow_capacity: capacity(topo, shadow),
                });
            }
        }
        Twins {
            active: !pairs.is_empty(),
            in_pair,
            shadows,
            seen: vec![Seen::default(); pairs.len()],
            pairs,
            pair_of,
            fold: 0,
            met: Vec::new(),
            folded: Vec::new(),
        }
    }

    pub fn pairs(&self) -> &[Pair] {
        &self.pairs
    }

    /// The pair link `l` belongs to, if any.
    pub fn pair_of(&self, l: u32) -> Option<&Pair> {
        let p = *self.pair_of.get(l as usize).filter(|&&p| p != NONE)?;
        Some(&self.pairs[(p & !SHADOW) as usize])
    }

    pub fn pair_mut(&mut self, l: u32) -> Option<&mut Pair> {
        let p = *self.pair_of.get(l as usize).filter(|&&p| p != NONE)?;
        Some(&mut self.pairs[(p & !SHADOW) as usize])
    }

    /// The shadow solved as `l`, if `l` is a representative.
    pub fn shadow_of(&self, l: u32) -> Option<&Pair> {
        self.pair_of(l).filter(|p| p.rep == l)
    }

    /// Folds `links` (see [`PathForm`]); a folded path is left for [`Self::take_folded`]. A pass
    /// over the path, then one over the pairs it crosses, and one more to fold it.
    pub fn fold(&mut self, links: &[(LinkId, f64)]) -> PathForm {
        if !self.active {
            return PathForm::Plain;
        }
        self.begin();
        for &(l, w) in links {
            if test(&self.in_pair, l.0) && !self.meet(l.0, w) {
                return PathForm::Stray;
            }
        }
        if self.met.is_empty() {
            return PathForm::Plain;
        }
        if !self.whole() {
            return PathForm::Stray;
        }
        // Each shadow left out saves its link's update at every arrival, departure and solve
        // of the cohort; each time the path is met again, it costs a look at every link (see
        // `folds_to`). A path with few pairs among many links (a sprayed ring's: 2 % of its
        // thousands) stays whole: its pairs are whole, so its shadows carry what their
        // representatives carry, and are solved as links of their own.
        if self.met.len() * FOLD_SHARE < links.len() {
            return PathForm::Plain;
        }
        self.folded.clear();
        let shadows = &self.shadows;
        self.folded
            .extend(links.iter().filter(|&&(l, _)| !test(shadows, l.0)));
        PathForm::Folded
    }

    /// Whether `links` fold to the stored path `ids` (with `weights`, or 1 on every link where
    /// `None`): in one pass, with no copy, so that a path met again (a sprayed ring's thousands
    /// of links, each iteration) costs no fold.
    pub fn folds_to(
        &mut self,
        links: &[(LinkId, f64)],
        ids: &[u32],
        weights: Option<&[f64]>,
    ) -> bool {
        self.begin();
        let mut i = 0;
        for &(l, w) in links {
            if test(&self.in_pair, l.0) {
                if !self.meet(l.0, w) {
                    return false;
                }
                if test(&self.shadows, l.0) {
                    continue;
                }
            }
            if ids.get(i) != Some(&l.0) || weights.map_or(1.0, |ws| ws[i]).to_bits() != w.to_bits()
            {
                return false;
            }
            i += 1;
        }
        i == ids.len() && self.whole()
    }

    /// Starts a pass over a path: no pair met yet.
    fn begin(&mut self) {
        self.fold = self.fold.wrapping_add(1);
        if self.fold == 0 {
            self.seen.iter_mut().for_each(|s| s.fold = 0);
            self.fold = 1;
        }
        self.met.clear();
    }

    /// Link `l` of a pair is on the path at weight `w`; false if it was already.
    fn meet(&mut self, l: u32, w: f64) -> bool {
        let p = self.pair_of[l as usize];
        let seen = &mut self.seen[(p & !SHADOW) as usize];
        if seen.fold != self.fold {
            *seen = Seen {
                fold: self.fold,
                rep: UNSEEN,
                shadow: UNSEEN,
            };
            self.met.push(p & !SHADOW);
        }
        let side = if p & SHADOW == 0 {
            &mut seen.rep
        } else {
            &mut seen.shadow
        };
        let first = *side == UNSEEN;
        *side = w.to_bits();
        first
    }

    /// Whether every pair met had both its links on the path, at the same weight.
    fn whole(&self) -> bool {
        self.met.iter().all(|&p| {
            let seen = self.seen[p as usize];
            seen.rep == seen.shadow
        })
    }

    /// The path the last [`Self::fold`] folded, to be given back after use.
    pub fn take_folded(&mut self) -> Vec<(LinkId, f64)> {
        std::mem::take(&mut self.folded)
    }

    pub fn give_back(&mut self, folded: Vec<(LinkId, f64)>) {
        self.folded = folded;
    }

    /// A folded path given back whole: each shadow beside its representative, where the
    /// path crosses it.
    pub fn unfold(&self, links: impl Iterator<Item = (u32, f64)>, out: &mut Vec<(LinkId, f64)>) {
        for (l, w) in links {
            match self.shadow_of(l) {
                Some(p) if p.shadow_first => out.extend([(LinkId(p.shadow), w), (LinkId(l), w)]),
                Some(p) => out.extend([(LinkId(l), w), (LinkId(p.shadow), w)]),
                None => out.push((LinkId(l), w)),
            }
        }
    }
}

impl FlowEngine {
    /// The link whose cell holds `l`'s load, busy time and peak (`l`'s own, or a shadow's
    /// representative's while twins are solved as one), and `l`'s own capacity.
    pub(super) fn figured_as(&self, l: u32) -> (u32, f64) {
        match self.twins.pair_of(l).filter(|_| self.twins.active) {
            Some(p) if p.rep == l => (l, p.rep_capacity),
            Some(p) => (p.rep, p.shadow_capacity),
            None => (l, self.link[l as usize].capacity),
        }
    }

    /// Link `l`'s peak utilization so far.
    pub(super) fn peak_utilization(&self, l: u32) -> f64 {
        let (cell, capacity) = self.figured_as(l);
        let now = if capacity > 0.0 {
            self.link[cell as usize].peak / capacity
        } else {
            0.0
        };
        self.peak_before[l as usize].max(now)
    }

    /// Before link `l`'s capacity changes: its peak so far becomes a utilization, on the
    /// capacity it had, and its peak load starts again (with its twin's, whose cell it is).
    pub(super) fn close_peak(&mut self, l: u32) {
        let (cell, _) = self.figured_as(l);
        let twin = self.twins.pair_of(l).filter(|_| self.twins.active);
        let (own, shadow) = twin.map_or((l, None), |p| (p.rep, Some(p.shadow)));
        for m in std::iter::once(own).chain(shadow) {
            self.peak_before[m as usize] = self.peak_utilization(m);
        }
        self.link[cell as usize].peak = 0.0;
    }

    /// Every cohort in flight takes its shadows back, and twin links are solved apart from now
    /// on: a path crossed half a pair (`twins.rs`). Each shadow's cell takes its
    /// representative's load, weight, busy time and peak, which were its own until now (the
    /// cohorts listed on it, those of paths too sparse to fold, stay); the rates stay max-min,
    /// since the constraints are the same.
    pub(super) fn unfold_all(&mut self) {
        if !self.twins.active {
            return;
        }
        self.twins.active = false;
        for p in self.twins.pairs() {
            let flows = self.link[p.shadow as usize].flows;
            self.link[p.shadow as usize] = self.link[p.rep as usize].twin(p.shadow_capacity, flows);
            self.link[p.rep as usize].capacity = p.rep_capacity;
        }
        let mut links = Vec::new();
        for f in 0..self.cohorts.len() as u32 {
            let cohort = &self.cohorts[f as usize];
            if !(cohort.folded && cohort.active) {
                continue;
            }
            let old = cohort.links;
            links.clear();
            self.twins.unfold(self.incidence.get(old), &mut links);
            let span = self.incidence.push(&links);
            // The representatives keep their places in their links' lists; the shadows join.
            let mut from = old.ids;
            for (i, &(l, _)) in links.iter().enumerate() {
                let at = span.ids + i;
                if from < old.ids + old.len as usize && self.incidence.ids[from] == l.0 {
                    self.incidence.pos[at] = self.incidence.pos[from];
                    from += 1;
                } else {
                    self.incidence.pos[at] = self.link[l.index()].flows.push(f, &mut self.spill);
                }
            }
            self.long_paths.remove(&f);
            self.index_long_path(f, &links);
            let cohort = &mut self.cohorts[f as usize];
            (cohort.links, cohort.folded, cohort.bottleneck) = (span, false, 0);
        }
    }
}

fn set(bits: &mut [u64], l: u32) {
    bits[l as usize / 64] |= 1 << (l % 64);
}

fn test(bits: &[u64], l: u32) -> bool {
    bits[l as usize / 64] >> (l % 64) & 1 != 0
}

fn capacity(topo: &Topology, l: LinkId) -> f64 {
    topo.link(l).capacity.0 as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabricsim_topology::presets;

    /// Two pairs at every NIC of a single-port fabric (each way through it), none in a
    /// dual-ToR one (a NIC with two ports forwards to either); the representative is never the
    /// faster link.
    #[test]
    fn a_single_port_nic_makes_two_pairs_and_a_dual_port_one_none() {
        let topo = presets::build_with("meta-ai-zone", &[("racks", "2")]).unwrap();
        let nics = topo
            .nodes()
            .filter(|&v| topo.kind(v) == NodeKind::Nic)
            .count();
        let twins = Twins::new(&topo);
        assert!(nics > 0 && twins.active);
        assert_eq!(twins.pairs().len(), 2 * nics);
        for p in twins.pairs() {
            assert!(p.rep_capacity <= p.shadow_capacity);
            let (rep, shadow) = (topo.link(LinkId(p.rep)), topo.link(LinkId(p.shadow)));
            let nic = if p.shadow_first { shadow.dst } else { rep.dst };
            assert_eq!(topo.kind(nic), NodeKind::Nic);
            assert!(rep.src == nic || rep.dst == nic);
        }
        let hpn = presets::build_with("hpn", &[("segments", "2")]).unwrap();
        let twins = Twins::new(&hpn);
        assert!(twins.pairs().is_empty() && !twins.active);
    }
}
