//! Cohorts on and off their links: each link's list of the cohorts crossing it, each with its
//! entry for the link, and each cohort's entry per link that says where in that list it is.

use super::link::OnLink;
use super::{FlowEngine, TOLERANCE};

impl FlowEngine {
    /// Takes `f`, with `members` flows, off its links: its load goes, and the links it
    /// saturated are marked for a re-solve (see the engine's module docs).
    pub(super) fn detach(&mut self, f: u32, members: u32) {
        let rate = self.hot[f as usize].rate;
        let now = self.now.0;
        let k = f64::from(members);
        let span = self.cohorts[f as usize].links;
        let counts = self.groups.counts(f);
        for i in 0..span.len as usize {
            let (l, w) = self.incidence.at(span, i);
            let w = w * k;
            let link = &mut self.link[l as usize];
            let saturated = link.saturated(TOLERANCE);
            let pos = self.incidence.pos[span.ids + i];
            debug_assert_eq!(
                link.flows.as_slice(&self.spill)[pos as usize],
                OnLink::new(f, span.ids + i)
            );
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
            if saturated && !self.groups.folded_away(f, l) {
                self.dirty_links.push(l);
            }
            if counts {
                self.count_on_port(l, false);
            }
            // The list's last cohort moved to `pos`: its entry for this link says so.
            if let Some(m) = moved {
                self.incidence.pos[m.entry as usize] = pos;
            }
        }
    }

    pub(super) fn attach(&mut self, f: u32) {
        self.touch_links(f);
        let span = self.cohorts[f as usize].links;
        let k = f64::from(self.cohorts[f as usize].members);
        let counts = self.groups.counts(f);
        for i in 0..span.len as usize {
            let (l, w) = self.incidence.at(span, i);
            let w = w * k;
            let link = &mut self.link[l as usize];
            let entry = OnLink::new(f, span.ids + i);
            self.incidence.pos[span.ids + i] = link.flows.push(entry, &mut self.spill);
            link.weight += w;
            if counts {
                self.count_on_port(l, true);
            }
        }
        self.dirty_flows.push(f);
    }
}
