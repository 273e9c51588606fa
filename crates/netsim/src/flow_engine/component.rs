//! The incremental re-solve: which flows a change can affect, their new max-min rates, and
//! the check that the flows left out still hold theirs.
//!
//! A solve starts from the flows a change touches directly: the arrivals, and the flows at or
//! above the floor on the links a departure saturated. It grows the set through *saturated*
//! links only (a flow's rate is set where it is bottlenecked): on a saturated link that it
//! only passes through, to the flows at the link's top rate, bottlenecked there; a slower
//! flow's bottleneck is elsewhere. A halving-doubling step under ECMP, every pair's channels
//! crossing the spine at once, is where that matters: the flows solved fell to a third, and
//! half of them change rate, where one in six did (docs/performance.md). It solves the set
//! on what the other flows leave of each link, and then checks the result instead of trusting
//! it:
//! an allocation is max-min fair exactly when no link is over capacity and every flow is at
//! its cap or crosses a saturated link on which no flow is faster (its bottleneck). The solve
//! keeps every link of the set within capacity, and flows away from the set's links keep
//! their bottlenecks, so only the set's flows and the other flows on its links are checked.
//! A flow that fails joins the set with the flows that broke its bottleneck, and the set is
//! solved again. So the set stays as small as the change's real reach, where closing over
//! every shared link reached across the fabric: flows at equal rates (the QPs of connections
//! split evenly, each at its NIC's share) chained into components of thousands.

use super::in_place::InPlace;
use super::link::{saturates, Link};
use super::{FlowEngine, CERTIFIED, PENDING, TOLERANCE};
use crate::maxmin::{Dense, Problem};

/// A link of the set being solved: its load and capacity, read from its cell once, when the
/// search takes it in (neither changes before the commit). The solve, the capacities left
/// and the check read them here, in the set's order, where each went back to the scattered
/// cells.
#[derive(Clone, Copy)]
pub(super) struct Held {
    load: f64,
    capacity: f64,
}

impl Held {
    fn of(link: &Link) -> Held {
        Held {
            load: link.load(),
            capacity: link.capacity,
        }
    }

    /// As [`Link::saturated`] at [`TOLERANCE`].
    fn saturated(self) -> bool {
        saturates(self.load, self.capacity, TOLERANCE)
    }
}

/// Takes link `l` into the set being solved (`links`) unless this search (`epoch`) already
/// has, numbered by its place there: the number the solve and the check read.
fn take_link(marks: &mut [(u32, u32)], links: &mut Vec<u32>, l: u32, epoch: u32) {
    let mark = &mut marks[l as usize];
    if mark.0 != epoch {
        *mark = (epoch, links.len() as u32);
        links.push(l);
    }
}

/// Links with at most this many flows have their fastest flow found by a scan, not remembered.
const SCAN_FLOWS: usize = 8;

impl FlowEngine {
    /// Whether `f`, at the floor level (rate at most `ceiling`), provably keeps its rate: it
    /// crosses a saturated link that no change touched and on which no flow is faster than the
    /// floor. Progressive filling below the floor runs as before, so that link fills at the
    /// floor level again and freezes `f` there.
    fn keeps_floor(&mut self, f: u32, ceiling: f64, arrivals: &[u32], dirty: &[u32]) -> bool {
        if self.touched.is_empty() {
            // Every link a change touched: the departures' saturated links, and every link of
            // the arrivals and reroutes (the sentinel marks the list built).
            self.touched.extend_from_slice(dirty);
            for &a in arrivals {
                self.touched.extend(
                    self.incidence
                        .get(self.cohorts[a as usize].links)
                        .map(|(l, _)| l),
                );
            }
            self.touched.push(u32::MAX);
            self.touched.sort_unstable();
        }
        self.solve_links(f).any(|(l, _)| {
            let link = &self.link[l as usize];
            link.saturated(TOLERANCE)
                && self.touched.binary_search(&l).is_err()
                && link
                    .flows
                    .cohorts(&self.spill)
                    .all(|g| self.hot[g as usize].rate <= ceiling)
        })
    }

    /// Re-solves what the pending changes can affect; see the module docs and the engine's.
    pub(super) fn solve_dirty(&mut self) {
        if !self.structural && !self.dirty_flows.is_empty() {
            let mut pending = std::mem::take(&mut self.dirty_flows);
            pending.retain(|&f| self.cohorts[f as usize].active && !self.try_fast_path(f));
            self.dirty_flows = pending;
        }
        if self.dirty_flows.is_empty() && self.dirty_links.is_empty() {
            self.drain_floor = f64::INFINITY;
            if self.flow_count() == 0 {
                // Capacities set before any flow queue no link, all idle: solving them would
                // have done nothing but this (`set_capacities_before_any_flow`).
                self.structural = false;
            }
            return;
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.hot.iter_mut().for_each(|h| h.mark = 0);
            self.link_mark.fill((0, 0));
            self.epoch = 1;
        }
        let epoch = self.epoch;
        self.comp_flows.clear();
        self.comp_links.clear();
        self.comp_held.clear();
        self.touched.clear();
        let mut dirty_flows = std::mem::take(&mut self.dirty_flows);
        let mut dirty_links = std::mem::take(&mut self.dirty_links);
        for &f in &dirty_flows {
            if self.cohorts[f as usize].active && self.hot[f as usize].mark != epoch {
                self.join(f);
            }
        }
        self.idle_links.clear();
        for &l in &dirty_links {
            if self.link[l as usize].flows.is_empty() {
                // Nothing to solve on it (a capacity set before any flow, a link its last
                // flow left): the problem stays the size of the flows'.
                self.idle_links.push(l);
            } else {
                take_link(&mut self.link_mark, &mut self.comp_links, l, epoch);
            }
        }
        // Flows slower than the floor keep their rates (module docs of the engine). A
        // structural change (a reroute, a capacity change) has no floor, and takes everything
        // it reaches through any shared link.
        let (floor, ceiling) = if self.structural {
            (0.0, f64::NEG_INFINITY)
        } else {
            let r0 = dirty_flows
                .iter()
                .map(|&f| self.arrival_floor(f))
                .fold(self.drain_floor, f64::min);
            (r0 * (1.0 - TOLERANCE), r0 * (1.0 + TOLERANCE))
        };
        let seeds = self.comp_links.len();
        let (mut fi, mut li) = (0, 0);
        loop {
            // Close over links: the flows at or above the floor on a seed link or a saturated
            // one, and the links of every flow taken.
            while fi < self.comp_flows.len() || li < self.comp_links.len() {
                while li < self.comp_links.len() {
                    let l = self.comp_links[li] as usize;
                    let held = Held::of(&self.link[l]);
                    self.comp_held.push(held);
                    let follow = li < seeds || self.structural || held.saturated();
                    li += 1;
                    if !follow {
                        continue;
                    }
                    // A saturated link the search only passes through binds its fastest
                    // flows; the slower ones are bottlenecked elsewhere and keep their rates
                    // unless the check finds otherwise (module docs).
                    let through = li > seeds && !self.structural;
                    let floor = if through {
                        floor.max(self.fastest_before(l) * (1.0 - TOLERANCE))
                    } else {
                        floor
                    };
                    for i in 0..self.link[l].flows.len() {
                        let f = self.link[l].flows.as_slice(&self.spill)[i].cohort;
                        let hot = self.hot[f as usize];
                        if hot.mark == epoch || hot.rate < floor {
                            continue;
                        }
                        if hot.rate <= ceiling
                            && self.keeps_floor(f, ceiling, &dirty_flows, &dirty_links)
                        {
                            self.hot[f as usize].mark = epoch;
                            self.hot[f as usize].slot = CERTIFIED;
                            continue;
                        }
                        self.join(f);
                    }
                }
                while fi < self.comp_flows.len() {
                    let f = self.comp_flows[fi] as usize;
                    fi += 1;
                    let links = self
                        .groups
                        .links(&self.incidence, f as u32, self.cohorts[f].links);
                    for (l, _) in links {
                        take_link(&mut self.link_mark, &mut self.comp_links, l, epoch);
                    }
                }
            }
            if self.comp_flows.is_empty() {
                // Only departures, and no flow left at or above their rate near them: nothing
                // changes (their load already left the links when they drained).
                break;
            }
            self.comp_flows.sort_unstable();
            self.solves += 1;
            self.solved_flows += self.comp_flows.len() as u64;
            self.solve_component();
            // Flows `widen` takes in are closed over on the next round.
            if self.structural || !self.widen(seeds) {
                self.commit();
                break;
            }
        }
        self.drain_floor = f64::INFINITY;
        self.structural = false;
        dirty_flows.clear();
        dirty_links.clear();
        self.dirty_flows = dirty_flows;
        self.dirty_links = dirty_links;
    }

    /// Takes `f` into the set being solved.
    fn join(&mut self, f: u32) {
        self.hot[f as usize].mark = self.epoch;
        self.hot[f as usize].slot = PENDING;
        self.comp_flows.push(f);
    }

    /// The fastest flow's rate on link `l` before the solve.
    fn fastest_before(&self, l: usize) -> f64 {
        self.link[l]
            .flows
            .cohorts(&self.spill)
            .map(|g| self.hot[g as usize].rate)
            .fold(0.0, f64::max)
    }

    /// `f`'s rate as the solution being checked has it.
    fn rate_now(&self, f: u32) -> f64 {
        let hot = self.hot[f as usize];
        if hot.mark == self.epoch && hot.slot < CERTIFIED {
            self.rates[hot.slot as usize]
        } else {
            hot.rate
        }
    }

    /// Whether link `l` is saturated as the solution being checked has it: a link of the set
    /// at its new load, read where the solve left it (not from its cell).
    fn saturated_now(&self, l: u32) -> bool {
        let (mark, k) = self.link_mark[l as usize];
        if mark == self.epoch {
            let k = k as usize;
            saturates(self.dense.fixed[k], self.comp_held[k].capacity, TOLERANCE)
        } else {
            self.link[l as usize].saturated(TOLERANCE)
        }
    }

    /// Whether `f`, at `rate`, is at its cap or crosses a saturated link on which no flow is
    /// faster. The search starts where the last one found the bottleneck: a hashed ring's
    /// cohort crosses a thousand links and keeps its bottleneck from check to check.
    fn bottlenecked(&mut self, f: u32, rate: f64) -> bool {
        let cohort = &self.cohorts[f as usize];
        let (span, cap) = (cohort.links, cohort.cap);
        if rate >= cap * (1.0 - TOLERANCE) {
            return true;
        }
        let n = self.groups.solved_len(f, span);
        let hint = (cohort.bottleneck as usize).min(n);
        for j in (hint..n).chain(0..hint) {
            let l = self.groups.solved_nth(&self.incidence, f, span, j);
            if self.saturated_now(l) && self.fastest_on(l) <= rate * (1.0 + TOLERANCE) {
                self.cohorts[f as usize].bottleneck = j as u32;
                return true;
            }
        }
        false
    }

    /// The flows faster than `rate` on the saturated links of `f`, to `out`: those that broke
    /// its bottleneck, where it has none.
    fn faster_than(&self, f: u32, rate: f64, out: &mut Vec<u32>) {
        for (l, _) in self.solve_links(f) {
            if !self.saturated_now(l) {
                continue;
            }
            for g in self.link[l as usize].flows.cohorts(&self.spill) {
                if self.rate_now(g) > rate * (1.0 + TOLERANCE) {
                    out.push(g);
                }
            }
        }
    }

    /// The fastest flow on link `l` as the solution being checked has it. Remembered for the
    /// check where the link carries many flows: a check reads the links of every flow on the
    /// set's saturated links, and a spread flow crosses hundreds, each shared by hundreds.
    fn fastest_on(&mut self, l: u32) -> f64 {
        let on = &self.link[l as usize].flows;
        if on.len() <= SCAN_FLOWS {
            return on
                .cohorts(&self.spill)
                .map(|g| self.rate_now(g))
                .fold(0.0, f64::max);
        }
        if self.fastest.len() != self.link.len() {
            self.fastest = vec![(0, 0.0); self.link.len()];
        }
        let (stamp, fastest) = self.fastest[l as usize];
        if stamp == self.check {
            return fastest;
        }
        let fastest = on
            .cohorts(&self.spill)
            .map(|g| self.rate_now(g))
            .fold(0.0, f64::max);
        self.fastest[l as usize] = (self.check, fastest);
        fastest
    }

    /// Checks the solution of `comp_flows` (module docs); takes in the flows that fail and the
    /// faster flows that broke their bottlenecks. Returns whether any joined.
    fn widen(&mut self, seeds: usize) -> bool {
        let epoch = self.epoch;
        self.check = self.check.wrapping_add(1);
        if self.check == 0 {
            self.fastest.iter_mut().for_each(|e| e.0 = 0);
            self.check = 1;
        }
        let mut failed = std::mem::take(&mut self.widened);
        let mut outside = std::mem::take(&mut self.outside);
        failed.clear();
        for i in 0..self.comp_flows.len() {
            let (f, rate) = (self.comp_flows[i], self.rates[i]);
            if !self.bottlenecked(f, rate) {
                self.faster_than(f, rate, &mut failed);
            }
        }
        // The other flows on the set's links that were saturated (a seed link was, before its
        // departures left): the only places where a flow outside the set can have lost its
        // bottleneck. Each is checked once, however many of those links it crosses.
        outside.clear();
        for (k, &l) in self.comp_links.iter().enumerate() {
            if k >= seeds && !self.comp_held[k].saturated() {
                continue;
            }
            outside.extend(
                self.link[l as usize]
                    .flows
                    .cohorts(&self.spill)
                    .filter(|&g| {
                        let hot = self.hot[g as usize];
                        hot.mark != epoch || hot.slot == CERTIFIED
                    }),
            );
        }
        outside.sort_unstable();
        outside.dedup();
        for &g in &outside {
            if !self.bottlenecked(g, self.hot[g as usize].rate) {
                failed.push(g);
            }
        }
        let before = self.comp_flows.len();
        for &g in &failed {
            let hot = self.hot[g as usize];
            if hot.mark != epoch || hot.slot == CERTIFIED {
                self.join(g);
            }
        }
        self.widened = failed;
        self.outside = outside;
        self.comp_flows.len() > before
    }

    /// Solves the flows of `comp_flows` over the links of `comp_links`, on what the flows
    /// left out leave of each link, into `rates` (one per flow, in order) and the links' new
    /// loads into `dense.fixed` (by the links' local numbers, their position in
    /// `comp_links`); nothing is committed. Short contiguous arrays for the solver.
    fn solve_component(&mut self) {
        let entries: usize = self
            .comp_flows
            .iter()
            .map(|&f| self.cohorts[f as usize].links.len as usize)
            .sum();
        // The links in local numbers, each with its load now.
        let d = &mut self.dense;
        d.fixed.clear();
        d.fixed.extend(self.comp_held.iter().map(|h| h.load));
        if entries > self.in_place_entries {
            return self.solve_in_place();
        }
        // The flows' links in local numbers, and the load the flows left out keep. A path's
        // weights are kept per entry only once some path in the component has any but 1.
        d.start.clear();
        d.start.push(0);
        d.links.clear();
        d.weights.clear();
        d.scale.clear();
        d.caps.clear();
        let mut per_entry = false;
        for (i, &f) in self.comp_flows.iter().enumerate() {
            let (flow, rate) = (&self.cohorts[f as usize], self.hot[f as usize].rate);
            self.hot[f as usize].slot = i as u32;
            let members = f64::from(flow.members);
            if flow.links.weighted() && !per_entry {
                per_entry = true;
                d.weights.resize(d.links.len(), 1.0);
            }
            let links = self.groups.links(&self.incidence, f, flow.links);
            for (l, w) in links {
                let k = self.link_mark[l as usize].1;
                if rate.is_finite() {
                    d.fixed[k as usize] -= w * members * rate;
                }
                d.links.push(k);
                if per_entry {
                    d.weights.push(w);
                }
            }
            d.start.push(d.links.len() as u32);
            d.scale.push(members);
            d.caps.push(flow.cap);
        }
        self.capacity_left();
        let d = &mut self.dense;
        let p = Dense {
            capacity: &d.capacity,
            ids: &self.comp_links,
            start: &d.start,
            links: &d.links,
            weights: &d.weights,
            scale: &d.scale,
            caps: &d.caps,
        };
        self.solver.solve_dense(p, &mut self.rates);
        // New loads: what stayed, plus the new rates.
        for (i, &rate) in self.rates.iter().enumerate() {
            for (k, w) in p.flow(i) {
                d.fixed[k as usize] += w * rate;
            }
        }
    }

    /// [`Self::solve_component`] of a component too large to copy (`in_place.rs`), its links
    /// numbered: the same steps, reading the cohorts' links and the links' flow lists where
    /// they lie.
    fn solve_in_place(&mut self) {
        let d = &mut self.dense;
        for (i, &f) in self.comp_flows.iter().enumerate() {
            let rate = self.hot[f as usize].rate;
            self.hot[f as usize].slot = i as u32;
            if rate.is_finite() {
                let flow = &self.cohorts[f as usize];
                let members = f64::from(flow.members);
                for (l, w) in self.groups.links(&self.incidence, f, flow.links) {
                    d.fixed[self.link_mark[l as usize].1 as usize] -= w * members * rate;
                }
            }
        }
        self.capacity_left();
        let p = InPlace {
            cohorts: &self.cohorts,
            hot: &self.hot,
            incidence: &self.incidence,
            groups: &self.groups,
            link: &self.link,
            slot: &self.link_mark,
            spill: &self.spill,
            flows: &self.comp_flows,
            links: &self.comp_links,
            capacity: &self.dense.capacity,
        };
        self.solver.solve_problem(&p, &mut self.rates);
        let fixed = &mut self.dense.fixed;
        for (i, &rate) in self.rates.iter().enumerate() {
            p.each_link(i, |k, w| fixed[k as usize] += w * rate);
        }
    }

    /// The load the flows left out keep, never below 0, and the capacity they leave.
    fn capacity_left(&mut self) {
        let d = &mut self.dense;
        d.capacity.clear();
        for (k, held) in self.comp_held.iter().enumerate() {
            d.fixed[k] = d.fixed[k].max(0.0);
            d.capacity.push((held.capacity - d.fixed[k]).max(0.0));
        }
    }

    /// Makes the checked solution the engine's: the flows' rates (settling what they sent at
    /// the old ones) and drain times, and the links' loads and accounting.
    fn commit(&mut self) {
        for i in 0..self.comp_flows.len() {
            let f = self.comp_flows[i];
            self.settle(f);
            self.set_rate(f, self.rates[i]);
        }
        let now = self.now.0;
        for (k, &l) in self.comp_links.iter().enumerate() {
            let link = &mut self.link[l as usize];
            link.set_load(now, self.dense.fixed[k]);
            debug_assert!(
                link.capacity == 0.0 || link.load() <= link.capacity * (1.0 + 1e-6),
                "link {l} over capacity: {} of {}",
                link.load(),
                link.capacity
            );
            link.note_peak();
        }
        for &l in &self.idle_links {
            self.link[l as usize].set_load(now, 0.0);
        }
        if self.groups.count() > 0 {
            self.spread_loads();
        }
    }
}
