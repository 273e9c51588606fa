//! Twin links: links that carry the same flows with the same weights at every instant, solved
//! as one.
//!
//! Two kinds of such links are found in a fabric:
//!
//! - **Pairs at a NIC.** A NIC with one GPU and one port forwards every flow it receives: what
//!   comes up from its GPU goes on to its switch, and what comes down from the switch goes on
//!   to its GPU (hosts never forward for others, and no path turns back). So the GPU's PCIe
//!   link into the NIC and the NIC's port up carry the same flows with the same weights, and so
//!   do the port down and the PCIe link out. Every path between GPUs crosses two such pairs.
//! - **Trunks of a switch.** A sprayed flow (and every flow of a symmetric run is one) spreads
//!   evenly over the equal-cost next hops: a flow that leaves a rack switch upwards crosses
//!   every one of its uplinks with the same weight, and one that comes down into a switch
//!   crosses every link down into it. So a switch's links up to the tier above form a trunk,
//!   and so do the links down into it from there (16 CTSW uplinks of a Meta RTSW, the 27
//!   parallel cables of a CTSW to its ATSW). A sprayed path across AI Zones crosses 900 links,
//!   which fold to 36.
//!
//! Of each class of twins the engine keeps one link in the cohorts it solves, the
//! *representative*, with the smallest capacity of the class (the one constraint that can
//! bind), and leaves out the others, the *shadows*: their load, busy time and peak are the
//! representative's, and their bytes are counted from the cohorts that fold them. The rates and
//! link figures are those of solving every link apart, to the last bit: the shadows' constraints
//! are the representative's, over the same flows.
//!
//! A path folds when it crosses every link of each class it touches, each with the same weight,
//! and its shadows are at least an eighth of its links. One whose classes are whole but few (a
//! path with few pairs among many links) stays whole: its shadows are listed as links of their
//! own, whose load is part of what their representatives carry, and reports still read the
//! representatives. A path that crosses part of a class (a hashed path takes one uplink of
//! sixteen; a failed uplink leaves a spray fifteen) would make a shadow's flows differ from its
//! representative's, so the engine then gives every cohort back the shadows of that kind of
//! class and solves them apart from then on (`FlowEngine::unfold_all`): trunks stop at the
//! first hashed path, and the pairs stay folded as they were.

use fabricsim_topology::{Bandwidth, LinkId, NodeKind, Topology};

use super::link::OnLink;
use super::FlowEngine;

/// No class.
const NONE: u32 = u32::MAX;

/// [`Twins::class_of`] holds a link's class in its low bits, its place among the class's
/// links above them, and a bit set on a shadow: one look-up per link of a path being folded.
const SHADOW: u32 = 1 << 31;
const PLACE_SHIFT: u32 = 25;
const CLASS_BITS: u32 = (1 << PLACE_SHIFT) - 1;

/// A class has at most this many links (the links of it a path crosses are a bit mask); a
/// switch with more links up stays without a trunk.
const MAX_MEMBERS: usize = 64;

/// Which twins a class holds (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Pair,
    Trunk,
}

/// One class of twins: the representative, solved, and the shadows, left out.
#[derive(Clone, Copy)]
pub(super) struct Class {
    pub rep: u32,
    pub kind: Kind,
    /// Its links in [`Twins::members`] (the representative among them): a pair's in the order
    /// a path crosses them, so that a folded path is given back in its order; a trunk's by id.
    start: u32,
    len: u32,
}

impl Class {
    /// Where its links lie in [`Twins::members`] (and their capacities in `capacity`).
    fn span(&self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

/// The twin classes of a topology and the scratch to fold paths.
pub(super) struct Twins {
    /// Per kind, whether paths are folded by its classes: until a path crosses part of one
    /// (see the module docs), or never where the engine was told not to.
    pairs_active: bool,
    trunks_active: bool,
    classes: Vec<Class>,
    members: Vec<u32>,
    /// Per member (as `members`), its own capacity (bytes/s).
    capacity: Vec<f64>,
    /// Per link: its class, its place in it and whether it is a shadow (see `SHADOW`); or
    /// `NONE`.
    class_of: Vec<u32>,
    /// Per link, a bit: whether it belongs to a class whose kind folds, and whether it is a
    /// shadow there. A fold reads these for every link of a path: 25 KB each on a 24K-GPU
    /// fabric, where `class_of` takes 800 KB.
    in_class: Vec<u64>,
    shadows: Vec<u64>,
    /// Per class: the fold that last met it on the path being folded, the weight its links had
    /// there, and which of its links were met.
    seen: Vec<Seen>,
    fold: u32,
    /// The classes the path being folded crosses, and how many shadows it crosses.
    met: Vec<u32>,
    met_shadows: usize,
    /// The folded path.
    folded: Vec<(LinkId, f64)>,
}

#[derive(Clone, Copy, Default)]
struct Seen {
    fold: u32,
    /// The class's number of links (set once: `whole` reads it where `meet` just wrote).
    len: u32,
    weight: u64,
    mask: u64,
}

/// A path folds when at least one of this many of its links is a shadow.
const FOLD_SHARE: usize = 8;

/// What [`Twins::fold`] made of a path.
pub(super) enum PathForm {
    /// It crosses no class, or too few shadows to fold (its classes whole): solved as given.
    Plain,
    /// Its shadows left out: the path is [`Twins::take_folded`].
    Folded,
    /// It crosses part of a class of this kind, a link of one twice, or links of one with
    /// different weights.
    Stray(Kind),
}

impl Twins {
    /// The classes of `topo`: a pair at every NIC with exactly two links out (one to its GPU,
    /// one to its switch), each way through it; a trunk of every switch's links up to switches
    /// of a higher tier, and one of the links down into it from there, where there are two to
    /// [`MAX_MEMBERS`].
    pub fn new(topo: &Topology) -> Twins {
        let n = topo.link_count();
        let mut twins = Twins {
            pairs_active: false,
            trunks_active: false,
            // A link is in one class at most: room for every link, touched only as filled,
            // so that no table is copied as it grows.
            classes: Vec::with_capacity(n / 2),
            members: Vec::with_capacity(n),
            capacity: Vec::with_capacity(n),
            class_of: vec![NONE; n],
            in_class: vec![0u64; n.div_ceil(64)],
            shadows: vec![0u64; n.div_ceil(64)],
            seen: Vec::new(),
            fold: 0,
            met: Vec::new(),
            met_shadows: 0,
            folded: Vec::new(),
        };
        let (mut up, mut down) = (Vec::new(), Vec::new());
        for v in topo.nodes() {
            let out = topo.out_links(v);
            match topo.kind(v) {
                NodeKind::Nic if out.len() == 2 => {
                    let (x, y) = (out[0], out[1]);
                    // In by one link, out by the other: (into v from x's far end, out towards y's).
                    for (into, on) in [(x.reverse(), y), (y.reverse(), x)] {
                        twins.add(topo, Kind::Pair, &[into, on]);
                    }
                }
                NodeKind::Switch(role) => {
                    up.clear();
                    up.extend(out.iter().copied().filter(|&l| {
                        matches!(topo.kind(topo.link(l).dst),
                            NodeKind::Switch(above) if above.tier > role.tier)
                    }));
                    if (2..=MAX_MEMBERS).contains(&up.len()) {
                        up.sort_unstable();
                        twins.add(topo, Kind::Trunk, &up);
                        down.clear();
                        down.extend(up.iter().map(|l| l.reverse()));
                        down.sort_unstable();
                        twins.add(topo, Kind::Trunk, &down);
                    }
                }
                _ => {}
            }
        }
        twins.seen = twins
            .classes
            .iter()
            .map(|c| Seen {
                len: c.len,
                ..Seen::default()
            })
            .collect();
        twins.pairs_active = twins.classes.iter().any(|c| c.kind == Kind::Pair);
        twins.trunks_active = twins.classes.iter().any(|c| c.kind == Kind::Trunk);
        twins
    }

    /// Adds a class of `links`; its representative is the one of least capacity (on a tie,
    /// the lowest id). Past 2^25 classes (a fabric of 16 million NICs), links stay apart.
    fn add(&mut self, topo: &Topology, kind: Kind, links: &[LinkId]) {
        let c = self.classes.len() as u32;
        if c > CLASS_BITS {
            return;
        }
        let start = self.members.len();
        self.members.extend(links.iter().map(|l| l.0));
        self.capacity
            .extend(links.iter().map(|&l| topo.link(l).capacity.0 as f64));
        let own = &self.capacity[start..];
        let rep = (0..links.len())
            .min_by(|&a, &b| own[a].total_cmp(&own[b]).then(links[a].cmp(&links[b])))
            .map(|i| links[i])
            .expect("a class has links");
        self.classes.push(Class {
            rep: rep.0,
            kind,
            start: start as u32,
            len: links.len() as u32,
        });
        for (i, &l) in links.iter().enumerate() {
            let place = (i as u32) << PLACE_SHIFT;
            self.class_of[l.index()] = if l == rep {
                c | place
            } else {
                c | place | SHADOW
            };
            set(&mut self.in_class, l.0);
            if l != rep {
                set(&mut self.shadows, l.0);
            }
        }
    }

    /// Whether any kind of class folds paths.
    pub fn active(&self) -> bool {
        self.pairs_active || self.trunks_active
    }

    pub fn kind_active(&self, kind: Kind) -> bool {
        match kind {
            Kind::Pair => self.pairs_active,
            Kind::Trunk => self.trunks_active,
        }
    }

    /// The classes whose kind folds paths.
    pub fn active_classes(&self) -> impl Iterator<Item = &Class> {
        self.classes.iter().filter(|c| self.kind_active(c.kind))
    }

    /// The links of class `c`, the representative among them.
    pub fn members(&self, c: &Class) -> &[u32] {
        &self.members[c.span()]
    }

    /// Link `l`'s own capacity, `l` being in class `c`.
    #[inline]
    pub fn own_capacity(&self, c: &Class, l: u32) -> f64 {
        self.capacity[self.member_index(c, l)]
    }

    /// Where link `l` of class `c` lies in `members` and `capacity`.
    #[inline]
    fn member_index(&self, c: &Class, l: u32) -> usize {
        (c.start + place(self.class_of[l as usize])) as usize
    }

    /// The capacity class `c`'s representative is solved at: the least of its links'.
    pub fn solved_capacity(&self, c: &Class) -> f64 {
        self.capacity[c.span()]
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
    }

    /// The class link `l` belongs to, if its kind folds paths.
    #[inline]
    pub fn class_of(&self, l: u32) -> Option<&Class> {
        if !test(&self.in_class, l) {
            return None;
        }
        Some(&self.classes[(self.class_of[l as usize] & CLASS_BITS) as usize])
    }

    /// The class `l` represents, if `l` is a representative whose kind folds paths.
    pub fn represented_by(&self, l: u32) -> Option<&Class> {
        self.class_of(l).filter(|c| c.rep == l)
    }

    /// Link `l`'s own capacity becomes `capacity`: the representative and the capacity it is
    /// now solved at, if `l` is in a class whose kind folds paths.
    pub fn set_capacity(&mut self, l: u32, capacity: f64) -> Option<(u32, f64)> {
        let c = self.record_capacity(l, capacity)?;
        Some((c.rep, self.solved_capacity(&c)))
    }

    /// Records `l`'s capacity as its class's member; the class, or `None` for a link in no
    /// class.
    pub fn record_capacity(&mut self, l: u32, capacity: f64) -> Option<Class> {
        let c = *self.class_of(l)?;
        let i = self.member_index(&c, l);
        self.capacity[i] = capacity;
        Some(c)
    }

    /// Paths stop folding by the classes of `kind`: their links lose their bits.
    pub fn stop(&mut self, kind: Kind) {
        match kind {
            Kind::Pair => self.pairs_active = false,
            Kind::Trunk => self.trunks_active = false,
        }
        for c in &self.classes {
            if c.kind == kind {
                for &l in &self.members[c.span()] {
                    clear(&mut self.in_class, l);
                    clear(&mut self.shadows, l);
                }
            }
        }
    }

    /// Folds `links` (see [`PathForm`]); a folded path is left for [`Self::take_folded`]. A pass
    /// over the path, then one over the classes it crosses, and one more to fold it.
    pub fn fold(&mut self, links: &[(LinkId, f64)]) -> PathForm {
        if !self.active() {
            return PathForm::Plain;
        }
        self.begin();
        for &(l, w) in links {
            if test(&self.in_class, l.0) {
                if let Err(kind) = self.meet(l.0, w) {
                    return PathForm::Stray(kind);
                }
            }
        }
        if self.met.is_empty() {
            return PathForm::Plain;
        }
        if let Err(kind) = self.whole() {
            return PathForm::Stray(kind);
        }
        // Each shadow left out saves its link's update at every arrival, departure and solve
        // of the cohort; each time the path is met again, it costs a comparison with the path
        // as given or a look at every link (see `Cohort::given`). A path with few shadows
        // among many links stays whole: its classes are whole, so its shadows carry what their
        // representatives carry, and are solved as links of their own.
        if self.met_shadows * FOLD_SHARE < links.len() {
            return PathForm::Plain;
        }
        self.folded.clear();
        let shadows = &self.shadows;
        self.folded
            .extend(links.iter().filter(|&&(l, _)| !test(shadows, l.0)));
        PathForm::Folded
    }

    /// Whether `links` fold to the stored path `ids` (with `weights`, or 1 on every link where
    /// `None`): in one pass, with no copy, for a folded cohort that keeps no copy of its path
    /// as given (see [`Self::worth_keeping`]).
    pub fn folds_to(
        &mut self,
        links: &[(LinkId, f64)],
        ids: &[u32],
        weights: Option<&[f64]>,
    ) -> bool {
        if !self.active() {
            return false;
        }
        self.begin();
        let mut i = 0;
        for &(l, w) in links {
            if test(&self.in_class, l.0) {
                if self.meet(l.0, w).is_err() {
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
        i == ids.len() && self.whole().is_ok()
    }

    /// Whether a path of `given` links that the last [`Self::fold`] folded is worth keeping as
    /// given, to be found again by a comparison rather than a fold: where shadows are most of
    /// it (a sprayed path's trunks), folding it again costs a look-up per link; a hashed
    /// path's few pairs cost less than the copy would take (50 MB in the 16K-GPU Llama 3 run).
    pub fn worth_keeping(&self, given: usize) -> bool {
        2 * self.met_shadows > given
    }

    /// Starts a pass over a path: no class met yet.
    fn begin(&mut self) {
        self.fold = self.fold.wrapping_add(1);
        if self.fold == 0 {
            self.seen.iter_mut().for_each(|s| s.fold = 0);
            self.fold = 1;
        }
        self.met.clear();
        self.met_shadows = 0;
    }

    /// Link `l` of a class is on the path at weight `w`: the class's kind if it was already,
    /// or its class's other links were at another weight.
    // Once per link of a path met again (a hashed ring's hundreds): inlined into the loops.
    #[inline(always)]
    fn meet(&mut self, l: u32, w: f64) -> Result<(), Kind> {
        let x = self.class_of[l as usize];
        let (c, shadow) = (x & CLASS_BITS, x & SHADOW != 0);
        let seen = &mut self.seen[c as usize];
        let bit = 1u64 << place(x);
        if seen.fold != self.fold {
            *seen = Seen {
                fold: self.fold,
                weight: w.to_bits(),
                mask: 0,
                ..*seen
            };
            self.met.push(c);
        }
        if seen.weight != w.to_bits() || seen.mask & bit != 0 {
            return Err(self.classes[c as usize].kind);
        }
        seen.mask |= bit;
        self.met_shadows += usize::from(shadow);
        Ok(())
    }

    /// Whether every class met had all its links on the path (at one weight, as `meet` saw);
    /// else the kind of one that did not.
    fn whole(&self) -> Result<(), Kind> {
        for &c in &self.met {
            let seen = self.seen[c as usize];
            if seen.mask.count_ones() != seen.len {
                return Err(self.classes[c as usize].kind);
            }
        }
        Ok(())
    }

    /// The path the last [`Self::fold`] folded, to be given back after use.
    pub fn take_folded(&mut self) -> Vec<(LinkId, f64)> {
        std::mem::take(&mut self.folded)
    }

    pub fn give_back(&mut self, folded: Vec<(LinkId, f64)>) {
        self.folded = folded;
    }

    /// A folded path given back whole: each class's links where the path crosses its
    /// representative, in link order if the folded path is (a merged bundle, a spray).
    pub fn unfold(&self, links: impl Iterator<Item = (u32, f64)>, out: &mut Vec<(LinkId, f64)>) {
        self.unfold_kind(links, None, out);
    }

    /// [`Self::unfold`], of the classes of `kind` only (every kind, for `None`): the others
    /// stay folded.
    fn unfold_kind(
        &self,
        links: impl Iterator<Item = (u32, f64)>,
        kind: Option<Kind>,
        out: &mut Vec<(LinkId, f64)>,
    ) {
        let start = out.len();
        let mut sorted = true;
        let mut last = None;
        for (l, w) in links {
            sorted &= last.is_none_or(|m| m < l);
            last = Some(l);
            let class = self.represented_by(l);
            match class.filter(|c| kind.is_none_or(|k| k == c.kind)) {
                Some(c) => out.extend(self.members(c).iter().map(|&m| (LinkId(m), w))),
                None => out.push((LinkId(l), w)),
            }
        }
        if sorted {
            out[start..].sort_unstable_by_key(|&(l, _)| l);
        }
    }
}

impl FlowEngine {
    /// Every link's capacity, before any flow: the cells `set_link_capacity` link by link
    /// leaves, with each class's representative solved at its least capacity once, where link
    /// by link it was found again for every member (a trunk has up to 64). No link is queued:
    /// with no flow yet, every link is idle at no load, and a solve of it would change nothing
    /// but clear `structural`, which the next solve with nothing queued clears as well.
    pub(super) fn set_capacities_before_any_flow(
        &mut self,
        capacities: impl Iterator<Item = Bandwidth>,
    ) {
        for (l, capacity) in capacities.enumerate() {
            let (l, capacity) = (l as u32, capacity.0 as f64);
            self.link[l as usize].capacity = capacity;
            self.twins.record_capacity(l, capacity);
        }
        for c in self.twins.active_classes() {
            self.link[c.rep as usize].capacity = self.twins.solved_capacity(c);
        }
        self.structural = true;
        self.dissolve_groups();
    }

    /// The links of the classes of `kind` (of every kind, for `None`) are solved apart from
    /// now on: a path crossed part of such a class (`twins.rs`). Every folded cohort takes
    /// those classes' shadows back, and keeps the other kinds' folded: a hashed path that stops
    /// the trunks leaves the pairs as they were. Each shadow taken back has its cell take its
    /// representative's load, weight, busy time and peak, which were its own until now (the
    /// cohorts listed on it, those of paths too sparse to fold, stay); the rates stay max-min,
    /// since the constraints are the same.
    pub(super) fn unfold_all(&mut self, kind: Option<Kind>) {
        if !self.twins.active() {
            return;
        }
        // The cohorts' paths change: their links outside their groups' ports with them.
        self.dissolve_groups();
        let stopping = |k: Kind| kind.is_none_or(|stop| stop == k);
        let still_folds = [Kind::Pair, Kind::Trunk]
            .into_iter()
            .any(|k| !stopping(k) && self.twins.kind_active(k));
        let mut links = Vec::new();
        for f in 0..self.cohorts.len() as u32 {
            let cohort = &self.cohorts[f as usize];
            if !cohort.folded {
                continue;
            }
            let (old, active) = (cohort.links, cohort.active);
            links.clear();
            self.twins
                .unfold_kind(self.incidence.get(old), kind, &mut links);
            let span = self.incidence.push(&links);
            if active {
                // The representatives keep their places in their links' lists; the shadows
                // join.
                let mut from = old.ids;
                for (i, &(l, _)) in links.iter().enumerate() {
                    let at = span.ids + i;
                    if from < old.ids + old.len as usize && self.incidence.ids[from] == l.0 {
                        let pos = self.incidence.pos[from];
                        self.incidence.pos[at] = pos;
                        let list = &mut self.link[l.index()].flows;
                        list.set_entry(pos, at as u32, &mut self.spill);
                        from += 1;
                    } else {
                        let entry = OnLink::new(f, at);
                        self.incidence.pos[at] =
                            self.link[l.index()].flows.push(entry, &mut self.spill);
                    }
                }
            }
            let cohort = &mut self.cohorts[f as usize];
            (cohort.links, cohort.folded, cohort.bottleneck) = (span, still_folds, 0);
        }
        for c in self.twins.active_classes().filter(|c| stopping(c.kind)) {
            let rep = self.link[c.rep as usize];
            for &m in self.twins.members(c) {
                let own = self.twins.own_capacity(c, m);
                if m == c.rep {
                    self.link[m as usize].capacity = own;
                } else {
                    let flows = self.link[m as usize].flows;
                    self.link[m as usize] = rep.twin(own, flows);
                }
            }
        }
        for k in [Kind::Pair, Kind::Trunk] {
            if stopping(k) {
                self.twins.stop(k);
            }
        }
    }
}

fn set(bits: &mut [u64], l: u32) {
    bits[l as usize / 64] |= 1 << (l % 64);
}

/// A link's place in its class, from its [`Twins::class_of`] entry.
fn place(x: u32) -> u32 {
    (x & !SHADOW) >> PLACE_SHIFT
}

fn clear(bits: &mut [u64], l: u32) {
    bits[l as usize / 64] &= !(1 << (l % 64));
}

#[inline]
fn test(bits: &[u64], l: u32) -> bool {
    bits[l as usize / 64] >> (l % 64) & 1 != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabricsim_topology::presets;

    /// Capacities set at once before any flow leave every cell and every member's own capacity
    /// as setting them link by link does, and nothing to solve that link by link has; uneven
    /// trunks are solved at their least member's.
    #[test]
    fn capacities_set_at_once_are_the_link_by_link_ones() {
        use crate::engine::Engine;
        let topo = presets::build_with("meta-ai-zone", &[("racks", "2")]).unwrap();
        let capacities: Vec<Bandwidth> = topo
            .links()
            .iter()
            .enumerate()
            .map(|(l, link)| {
                let eighths = 5 + ((l as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 62);
                Bandwidth(link.capacity.0 / 8 * eighths)
            })
            .collect();
        let (mut at_once, mut one_by_one) = (FlowEngine::new(&topo), FlowEngine::new(&topo));
        at_once.set_link_capacities(capacities.iter().copied());
        for (l, &c) in capacities.iter().enumerate() {
            one_by_one.set_link_capacity(LinkId(l as u32), c);
        }
        let cells =
            |e: &FlowEngine| -> Vec<u64> { e.link.iter().map(|l| l.capacity.to_bits()).collect() };
        let own =
            |e: &FlowEngine| -> Vec<u64> { e.twins.capacity.iter().map(|c| c.to_bits()).collect() };
        assert_eq!(cells(&at_once), cells(&one_by_one));
        assert_eq!(own(&at_once), own(&one_by_one));
        // Link by link queues every link, each idle at no load; at once queues none, and both
        // leave the next solve structural.
        assert!(at_once.dirty_links.is_empty());
        assert!(one_by_one.dirty_links.iter().all(|&l| {
            let link = &one_by_one.link[l as usize];
            link.flows.is_empty() && link.load() == 0.0
        }));
        assert!(at_once.structural && one_by_one.structural);
        let below_own = at_once
            .twins
            .active_classes()
            .filter(|c| {
                at_once.link[c.rep as usize].capacity < at_once.twins.own_capacity(c, c.rep)
            })
            .count();
        assert!(
            below_own > 0,
            "some representative is solved below its own capacity"
        );
    }

    /// Two pairs at every NIC of a single-port fabric (each way through it), none in a
    /// dual-ToR one (a NIC with two ports forwards to either); the representative is never the
    /// faster link. A trunk of each rack switch's uplinks and one of the links down into it;
    /// none at the top tier.
    #[test]
    fn pairs_at_single_port_nics_and_trunks_at_switches_with_links_up() {
        let topo = presets::build_with("meta-ai-zone", &[("racks", "2")]).unwrap();
        let count = |kind| {
            topo.nodes()
                .filter(|&v| match (kind, topo.kind(v)) {
                    (Kind::Pair, NodeKind::Nic) => true,
                    (Kind::Trunk, NodeKind::Switch(role)) => role.tier == 1,
                    _ => false,
                })
                .count()
        };
        let twins = Twins::new(&topo);
        assert!(twins.pairs_active && twins.trunks_active);
        let of = |kind| twins.classes.iter().filter(move |c| c.kind == kind);
        assert_eq!(of(Kind::Pair).count(), 2 * count(Kind::Pair));
        assert_eq!(of(Kind::Trunk).count(), 2 * count(Kind::Trunk));
        for c in twins.classes.iter() {
            let links = twins.members(c);
            for &l in links {
                assert!(twins.own_capacity(c, c.rep) <= twins.own_capacity(c, l));
            }
            match c.kind {
                Kind::Pair => {
                    let (a, b) = (topo.link(LinkId(links[0])), topo.link(LinkId(links[1])));
                    assert_eq!(a.dst, b.src, "a pair is in path order");
                    assert_eq!(topo.kind(a.dst), NodeKind::Nic);
                }
                Kind::Trunk => {
                    assert_eq!(links.len(), 16);
                    assert!(links.windows(2).all(|w| w[0] < w[1]));
                    let ends = |l: &u32| {
                        let x = topo.link(LinkId(*l));
                        (topo.kind(x.src), topo.kind(x.dst))
                    };
                    let first = topo.link(LinkId(links[0]));
                    let up = links.iter().all(|&l| topo.link(LinkId(l)).src == first.src);
                    let down = links.iter().all(|&l| topo.link(LinkId(l)).dst == first.dst);
                    assert!(
                        up || down,
                        "one switch's links up, or the links down into one"
                    );
                    assert!(matches!(
                        ends(&links[0]),
                        (NodeKind::Switch(_), NodeKind::Switch(_))
                    ));
                }
            }
        }
        let hpn = presets::build_with("hpn", &[("segments", "2")]).unwrap();
        let twins = Twins::new(&hpn);
        assert!(!twins.pairs_active);
    }

    /// A sprayed path across racks folds its NICs' pairs and its rack switches' trunks to one
    /// link each; a hashed one crosses one uplink of sixteen, so the trunks stop folding, and
    /// the same path then folds by its pairs alone.
    #[test]
    fn a_sprayed_path_folds_its_trunks_and_a_hashed_one_stops_them() {
        use fabricsim_routing::{FlowKey, HashConfig, LinkState, Policy, Router};
        let topo = presets::build_with("meta-ai-zone", &[("racks", "2")]).unwrap();
        let state = LinkState::new(&topo);
        let gpu = |name: &str| topo.node_by_name(name).unwrap();
        let key = FlowKey::connection(gpu("host0/gpu0"), gpu("host2/gpu0"), 0, 0);
        let path = |policy| {
            let mut router = Router::new(&topo, policy, HashConfig::default());
            router.route(&state, &key).unwrap().incidence()
        };
        let mut twins = Twins::new(&topo);
        // GPU, NIC and rack switch each way, sixteen CTSWs between: 2 + 16 + 16 + 2 links.
        let sprayed = path(Policy::Spray);
        assert_eq!(sprayed.len(), 36);
        assert!(matches!(twins.fold(&sprayed), PathForm::Folded));
        let folded = twins.take_folded();
        assert_eq!(folded.len(), 4, "a representative of each pair and trunk");
        let mut back = Vec::new();
        twins.unfold(folded.iter().map(|&(l, w)| (l.0, w)), &mut back);
        assert_eq!(back, sprayed, "unfolded, the path as given");
        twins.give_back(folded);

        let hashed = path(Policy::Ecmp);
        assert!(matches!(twins.fold(&hashed), PathForm::Stray(Kind::Trunk)));
        twins.stop(Kind::Trunk);
        assert!(matches!(twins.fold(&hashed), PathForm::Folded));
        assert_eq!(
            twins.take_folded().len(),
            hashed.len() - 2,
            "its two pairs' shadows out"
        );
        assert!(
            matches!(twins.fold(&sprayed), PathForm::Plain),
            "too few shadows now"
        );

        // Across AI Zones: 16 CTSWs up, each with 27 cables to its ATSW, and the same down.
        let topo = presets::build_with("meta-cluster", &[("zones", "2")]).unwrap();
        let state = LinkState::new(&topo);
        let gpu = |name: &str| topo.node_by_name(name).unwrap();
        let key = FlowKey::connection(gpu("host0/gpu0"), gpu("host384/gpu0"), 0, 0);
        let mut router = Router::new(&topo, Policy::Spray, HashConfig::default());
        let sprayed = router.route(&state, &key).unwrap().incidence();
        assert_eq!(sprayed.len(), 2 + 16 + 16 * 27 + 16 * 27 + 16 + 2);
        let mut twins = Twins::new(&topo);
        assert!(matches!(twins.fold(&sprayed), PathForm::Folded));
        assert_eq!(twins.take_folded().len(), 36);
    }
}
