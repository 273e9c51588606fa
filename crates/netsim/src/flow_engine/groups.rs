//! Port groups: the NIC ports that a collective's channels all cross, solved as one link while
//! nothing else crosses them.
//!
//! A data-parallel ring's channels each cross the NIC of every host of the ring, in and out:
//! 128 hosts, 256 ports (each with its PCIe link folded in, `twins.rs`), and every channel of
//! every collective of that communicator crosses all of them. While no other flow crosses a
//! port, its constraint is every other such port's: the same cohorts, with weight 1 each, the
//! same capacity, and the same load (each load change reaches them all alike). The re-solves
//! of a large training job take in such rings by the dozen, and those ports were three fifths
//! of the link entries they solved (docs/performance.md).
//!
//! So a cohort whose path crosses [`MIN_PORTS`] to [`MAX_PORTS`] ports joins the *group* of
//! exactly those ports (formed by the first such cohort, if none of the ports belongs to another
//! and all have one capacity), and the re-solve reads its path as its links outside the
//! group, plus the group's *solved ports*: one clean port, the representative, and every port
//! that another flow crosses too (a pipeline send, another ring), each solved as a link of its
//! own while it does. The other clean ports take the representative's load when a solve
//! commits it. Attaching and detaching cohorts counts, per port, the cohorts on it that are not
//! of its group: a port turns dirty at one and clean again at none.
//!
//! Reports read every link as before: cohorts keep their whole paths for the bytes they carry
//! and for their links' lists. A capacity change or a reroute (a structural change), or twin
//! classes unfolding (which rewrite the cohorts' paths), dissolve every group; paths placed
//! after that group again.

use rustc_hash::FxHashMap;

use fabricsim_topology::{NodeKind, Topology};

use super::{FlowEngine, Incidence, Span};

/// Not in a group, or no link.
pub(super) const NONE: u32 = u32::MAX;

/// A path joins a group when it crosses at least this many NIC ports: a ring's channel over 16
/// hosts or more. A pipeline send crosses two.
const MIN_PORTS: usize = 32;

/// And at most this many: a ring over 1,024 hosts. Longer rings are solved rarely (a
/// benchmark's few channels alone), and a group's upkeep grows with its ports: the sort that
/// forms it, and every commit's spread of its load (docs/performance.md, "Port groups").
const MAX_PORTS: usize = 2048;

struct Group {
    /// Its ports, by id.
    ports: Vec<u32>,
    /// What the re-solve reads of it: the representative first, if any port is clean, then
    /// every dirty port.
    solved: Vec<u32>,
    /// Whether `solved` starts with a representative.
    has_rep: bool,
    /// The commit that last spread the representative's load (`spread_loads`).
    stamp: u32,
}

impl Group {
    fn rep(&self) -> Option<u32> {
        self.has_rep.then(|| self.solved[0])
    }
}

/// The port groups of an engine (module docs).
pub(super) struct Groups {
    /// Per link, a bit: whether it touches a NIC (a port, or a PCIe link into one).
    port: Vec<u64>,
    /// How many links the fabric has (the length of the per-link tables).
    link_count: usize,
    /// Per link: the group that owns it, or `NONE`; and how many cohorts not of that group
    /// cross it. Allocated when the first group forms: runs with none never touch them.
    owner: Vec<u32>,
    foreign: Vec<u32>,
    list: Vec<Group>,
    /// A group by the hash of its sorted ports (compared before it is joined).
    by_ports: FxHashMap<u64, u32>,
    /// Per cohort up to the last that joined a group: its place in `members`, or `NONE`
    /// (cohorts after it are in none: a run without groups keeps nothing per cohort).
    of: Vec<u32>,
    /// Per cohort in a group: the group, and its links outside the group's ports.
    members: Vec<(u32, Span)>,
    /// Scratch: a path's ports, sorted.
    ports: Vec<u32>,
    /// Scratch: a path's links outside its ports.
    rest: Vec<(fabricsim_topology::LinkId, f64)>,
    /// Commits counted by `spread_loads`, for the groups' stamps.
    spreads: u32,
    /// Off for tests that solve every port apart.
    enabled: bool,
}

impl Groups {
    pub fn new(topo: &Topology) -> Groups {
        let nic = |n| topo.kind(n) == NodeKind::Nic;
        let n = topo.link_count();
        let mut port = vec![0u64; n.div_ceil(64)];
        for (i, l) in topo.links().iter().enumerate() {
            if nic(l.src) || nic(l.dst) {
                port[i / 64] |= 1 << (i % 64);
            }
        }
        Groups {
            port,
            link_count: n,
            owner: Vec::new(),
            foreign: Vec::new(),
            list: Vec::new(),
            by_ports: FxHashMap::default(),
            of: Vec::new(),
            members: Vec::new(),
            ports: Vec::new(),
            rest: Vec::new(),
            spreads: 0,
            enabled: true,
        }
    }

    /// Cohort `f`'s links as the re-solve reads them, each with its path's weight there.
    pub fn links<'a>(
        &'a self,
        incidence: &'a Incidence,
        f: u32,
        span: Span,
    ) -> impl Iterator<Item = (u32, f64)> + 'a {
        let (span, solved): (Span, &[u32]) = match self.member(f) {
            None => (span, &[]),
            Some((g, own)) => (own, &self.list[g as usize].solved),
        };
        incidence.get(span).chain(solved.iter().map(|&l| (l, 1.0)))
    }

    /// `f`'s group and its links outside the group's ports, if it is in one.
    fn member(&self, f: u32) -> Option<(u32, Span)> {
        match self.of.get(f as usize) {
            Some(&m) if m != NONE => Some(self.members[m as usize]),
            _ => None,
        }
    }

    /// How many links [`Self::links`] gives.
    pub fn solved_len(&self, f: u32, span: Span) -> usize {
        match self.member(f) {
            None => span.len as usize,
            Some((g, own)) => own.len as usize + self.list[g as usize].solved.len(),
        }
    }

    /// The `j`-th link [`Self::links`] gives.
    pub fn solved_nth(&self, incidence: &Incidence, f: u32, span: Span, j: usize) -> u32 {
        let Some((g, own)) = self.member(f) else {
            return incidence.ids[span.ids + j];
        };
        match j.checked_sub(own.len as usize) {
            None => incidence.ids[own.ids + j],
            Some(i) => self.list[g as usize].solved[i],
        }
    }

    /// Whether `l` is a clean port of `f`'s group other than its representative: a port the
    /// re-solve does not read for `f`.
    pub fn folded_away(&self, f: u32, l: u32) -> bool {
        self.member(f).is_some_and(|(g, _)| {
            self.owner[l as usize] == g
                && self.foreign[l as usize] == 0
                && self.list[g as usize].rep() != Some(l)
        })
    }

    /// Whether attaching or detaching `f` can change a port's count: some group exists, and
    /// `f` is in none (a group's cohort crosses only its own group's ports).
    pub fn counts(&self, f: u32) -> bool {
        !self.list.is_empty() && self.member(f).is_none()
    }

    /// How many groups are in force.
    pub fn count(&self) -> usize {
        self.list.len()
    }
}

impl FlowEngine {
    /// Places cohort `f` (just pushed, not attached yet; its twin-folded path at `span`) into
    /// the group of its ports, formed if new, or into none.
    pub(super) fn group(&mut self, f: u32, span: Span) {
        let g = self.group_of(span);
        if g == NONE {
            return;
        }
        let gs = &mut self.groups;
        gs.rest.clear();
        gs.rest.extend(
            self.incidence
                .get(span)
                .filter(|&(l, _)| gs.owner[l as usize] != g)
                .map(|(l, w)| (fabricsim_topology::LinkId(l), w)),
        );
        let own = self.incidence.push(&self.groups.rest);
        let gs = &mut self.groups;
        if gs.of.len() <= f as usize {
            gs.of.resize(f as usize + 1, NONE);
        }
        gs.of[f as usize] = gs.members.len() as u32;
        gs.members.push((g, own));
    }

    fn group_of(&mut self, span: Span) -> u32 {
        let gs = &mut self.groups;
        if !gs.enabled || span.weighted() {
            return NONE;
        }
        gs.ports.clear();
        let (ids, _) = self.incidence.slices(span);
        let port = &gs.port;
        gs.ports
            .extend(ids.iter().copied().filter(|&l| is_port(port, l)));
        if !(MIN_PORTS..=MAX_PORTS).contains(&gs.ports.len()) {
            return NONE;
        }
        gs.ports.sort_unstable();
        let n = gs.ports.len();
        gs.ports.dedup();
        if gs.ports.len() != n {
            return NONE;
        }
        let key = gs.ports.iter().fold(n as u64, |h, &l| {
            (h ^ u64::from(l)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        });
        if let Some(&g) = gs.by_ports.get(&key) {
            return if gs.list[g as usize].ports == gs.ports {
                g
            } else {
                NONE
            };
        }
        // A new group: its ports belong to no other, with one capacity.
        if gs.owner.is_empty() {
            gs.owner = vec![NONE; gs.link_count];
            gs.foreign = vec![0; gs.link_count];
        }
        let capacity = self.link[gs.ports[0] as usize].capacity.to_bits();
        if gs.ports.iter().any(|&l| {
            gs.owner[l as usize] != NONE || self.link[l as usize].capacity.to_bits() != capacity
        }) {
            return NONE;
        }
        let g = gs.list.len() as u32;
        let mut group = Group {
            ports: gs.ports.clone(),
            solved: Vec::new(),
            has_rep: false,
            stamp: 0,
        };
        for &l in &group.ports {
            gs.owner[l as usize] = g;
            // Every cohort on it now is of no group of these ports.
            let on = self.link[l as usize].flows.len() as u32;
            gs.foreign[l as usize] = on;
            if on > 0 {
                group.solved.push(l);
            }
        }
        if let Some(&rep) = group.ports.iter().find(|&&l| gs.foreign[l as usize] == 0) {
            group.solved.insert(0, rep);
            group.has_rep = true;
        }
        gs.list.push(group);
        gs.by_ports.insert(key, g);
        g
    }

    /// Counts a cohort of no group onto (`on`) or off link `l`: a group's port turns dirty with
    /// the first such cohort and clean with the last.
    pub(super) fn count_on_port(&mut self, l: u32, on: bool) {
        let gs = &mut self.groups;
        // The bit first: it is in cache, where the owner of a link off any NIC is a miss.
        if !is_port(&gs.port, l) {
            return;
        }
        let g = gs.owner[l as usize];
        if g == NONE {
            return;
        }
        let count = &mut gs.foreign[l as usize];
        let group = &mut gs.list[g as usize];
        if on {
            *count += 1;
            if *count > 1 {
                return;
            }
            // Dirty: solved as a link of its own from now on.
            if group.rep() == Some(l) {
                group.solved.remove(0);
                group.has_rep = false;
                let foreign = &gs.foreign;
                if let Some(&rep) = group.ports.iter().find(|&&p| foreign[p as usize] == 0) {
                    group.solved.insert(0, rep);
                    group.has_rep = true;
                }
            }
            group.solved.push(l);
        } else {
            *count -= 1;
            if *count > 0 {
                return;
            }
            // Clean: the representative's constraint is its own again.
            let at = group
                .solved
                .iter()
                .position(|&p| p == l)
                .expect("a dirty port is solved");
            group.solved.remove(at);
            if !group.has_rep {
                group.solved.insert(0, l);
                group.has_rep = true;
            }
        }
    }

    /// After a commit: each group with a cohort in the set just solved gives its clean ports the
    /// representative's new load.
    pub(super) fn spread_loads(&mut self) {
        let gs = &mut self.groups;
        gs.spreads = gs.spreads.wrapping_add(1);
        if gs.spreads == 0 {
            gs.list.iter_mut().for_each(|g| g.stamp = 0);
            gs.spreads = 1;
        }
        let (now, spread) = (self.now.0, gs.spreads);
        for &f in &self.comp_flows {
            let Some((g, _)) = self.groups.member(f) else {
                continue;
            };
            let group = &mut self.groups.list[g as usize];
            if group.stamp == spread {
                continue;
            }
            group.stamp = spread;
            let Some(rep) = group.rep() else { continue };
            let load = self.link[rep as usize].load();
            for &p in &group.ports {
                if p != rep && self.groups.foreign[p as usize] == 0 {
                    let link = &mut self.link[p as usize];
                    link.set_load(now, load);
                    link.note_peak();
                }
            }
        }
    }

    /// Every group dissolves: a structural change, or twin classes unfolding.
    pub(super) fn dissolve_groups(&mut self) {
        let gs = &mut self.groups;
        if gs.list.is_empty() {
            return;
        }
        for group in gs.list.drain(..) {
            for &l in &group.ports {
                gs.owner[l as usize] = NONE;
                gs.foreign[l as usize] = 0;
            }
        }
        gs.by_ports.clear();
        gs.of.clear();
        gs.members.clear();
    }

    /// Solves every NIC port on its own, as without groups: the same rates, for tests.
    pub fn keep_ports_apart(&mut self) {
        self.dissolve_groups();
        self.groups.enabled = false;
    }
}

/// Whether link `l` touches a NIC, in [`Groups::port`]'s bits.
fn is_port(port: &[u64], l: u32) -> bool {
    port[l as usize / 64] >> (l % 64) & 1 == 1
}
