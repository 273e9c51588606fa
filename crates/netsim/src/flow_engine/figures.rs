//! A link's figures: the bytes it carried, summed from the cohorts that crossed it when asked
//! for, and its peak utilization, kept across capacity changes; each read through the cell that
//! holds the link's load (its own, or its twin class's representative's, `twins.rs`).

use fabricsim_topology::{LinkId, Nanos};

use super::FlowEngine;
use crate::engine::{Engine, LinkStats};

impl FlowEngine {
    /// The link whose cell holds `l`'s load, busy time and peak (`l`'s own, or a shadow's
    /// representative's while its class folds paths), and `l`'s own capacity.
    #[inline]
    pub(super) fn figured_as(&self, l: u32) -> (u32, f64) {
        match self.twins.class_of(l) {
            Some(c) => (c.rep, self.twins.own_capacity(c, l)),
            None => (l, self.link[l as usize].capacity),
        }
    }

    /// Link `l`'s peak utilization so far.
    pub(super) fn peak_utilization(&self, l: u32) -> f64 {
        let (cell, capacity) = self.figured_as(l);
        self.peak_on(l, cell, capacity)
    }

    /// [`Self::peak_utilization`] of `l`, figured as `cell` at `capacity`.
    pub(super) fn peak_on(&self, l: u32, cell: u32, capacity: f64) -> f64 {
        let now = if capacity > 0.0 {
            self.link[cell as usize].peak / capacity
        } else {
            0.0
        };
        self.peak_before
            .get(l as usize)
            .map_or(now, |&before| before.max(now))
    }

    /// Before link `l`'s capacity changes: its peak so far becomes a utilization, on the
    /// capacity it had, and its peak load starts again (with its twins', whose cell it is).
    pub(super) fn close_peak(&mut self, l: u32) {
        let (cell, _) = self.figured_as(l);
        if self.link[cell as usize].peak == 0.0 {
            // Nothing carried since the last change: every peak so far stands (a fabric's
            // capacities set link by link before the first flow cost nothing per twin).
            return;
        }
        if self.peak_before.is_empty() {
            self.peak_before = vec![0.0; self.link.len()];
        }
        // Its twins share its cell (by position: the twins are read while peaks are written).
        match self.twins.class_of(l).copied() {
            Some(c) => {
                for k in 0..self.twins.members(&c).len() {
                    let m = self.twins.members(&c)[k];
                    self.peak_before[m as usize] = self.peak_utilization(m);
                }
            }
            None => self.peak_before[l as usize] = self.peak_utilization(l),
        }
        self.link[cell as usize].peak = 0.0;
    }

    /// [`Engine::link_stats`], each link `l` given the figures of link `from[l]` (the first
    /// link of its orbit or class, which alone carries flows).
    pub fn link_stats_as(&mut self, from: &[LinkId]) -> &LinkStats {
        self.link_stats();
        let stats = &mut self.stats;
        for (l, first) in from.iter().enumerate() {
            let f = first.index();
            stats.bytes[l] = stats.bytes[f];
            stats.busy[l] = stats.busy[f];
            stats.peak_utilization[l] = stats.peak_utilization[f];
        }
        &self.stats
    }

    /// Each link's bytes carried and the time they run to, taken from the engine (its next
    /// figures start afresh): [`Engine::link_stats`]'s bytes without the figures read from
    /// every link's cell. Link `l` is given the bytes of `from[l]` where `from` is given.
    pub fn take_link_bytes(&mut self, from: Option<&[LinkId]>) -> (Vec<f64>, Nanos) {
        self.sum_link_bytes();
        let mut bytes = std::mem::take(&mut self.stats.bytes);
        for (l, first) in from.unwrap_or_default().iter().enumerate() {
            // Every link's own sum is zero but a first link's: write only what carried bytes.
            let b = bytes[first.index()];
            if b != 0.0 {
                bytes[l] = b;
            }
        }
        (bytes, self.now)
    }

    /// Sums each link's bytes from the cohorts that crossed it (what each cohort's flows sent,
    /// rerouted flows' bytes staying with the cohort they left): exactly the bytes flows sent,
    /// whatever the rounding of drain times to ns, and nothing to count per event.
    pub(super) fn sum_link_bytes(&mut self) {
        self.solve_dirty();
        let n = self.link.len();
        if self.stats.bytes.len() == n {
            self.stats.bytes.iter_mut().for_each(|b| *b = 0.0);
        } else {
            // Allocated zeroed: the pages of links that carried nothing are never touched.
            self.stats.bytes = vec![0.0; n];
        }
        for f in 0..self.cohorts.len() as u32 {
            if self.cohorts[f as usize].active {
                self.settle(f);
            }
            let flow = &self.cohorts[f as usize];
            if flow.carried > 0.0 {
                for (l, w) in self.incidence.get(flow.links) {
                    self.stats.bytes[l as usize] += flow.carried * w;
                    if let Some(c) = self.twins.represented_by(l).filter(|_| flow.folded) {
                        for &m in self.twins.members(c) {
                            if m != l {
                                self.stats.bytes[m as usize] += flow.carried * w;
                            }
                        }
                    }
                }
            }
        }
        self.stats.elapsed = self.now;
    }
}
