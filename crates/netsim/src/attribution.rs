//! Which tenant's bytes crossed each link: each flow is charged, when it is submitted, with its
//! bytes times its weight on every link of its route, to the tag (a job) the caller set before
//! submitting it. That is what the engine's link bytes count too, so over a run whose flows all
//! finished the tags' bytes on a link add up to the link's bytes. A flow re-routed by a link
//! change stays charged to its first route: the engine counts what it sent on each, this does
//! not (documented as a limit).
//!
//! Off unless asked for ([`crate::Network::attribute`]): it costs a pass over each flow's links
//! and a dense vector of links per tag.

use fabricsim_topology::LinkId;

#[derive(Clone, Debug)]
pub struct Attribution {
    links: usize,
    tag: usize,
    /// Per tag, per link, bytes (grown as tags appear).
    bytes: Vec<Vec<f64>>,
}

impl Attribution {
    pub fn new(links: usize) -> Attribution {
        Attribution {
            links,
            tag: 0,
            bytes: Vec::new(),
        }
    }

    /// Flows submitted from now on are charged to `tag`.
    pub fn set_tag(&mut self, tag: u32) {
        self.tag = tag as usize;
    }

    /// Charges `bytes` on `route` (weighted links) to the current tag.
    pub fn charge(&mut self, route: &[(LinkId, f64)], bytes: u64) {
        if self.bytes.len() <= self.tag {
            self.bytes.resize_with(self.tag + 1, Vec::new);
        }
        let row = &mut self.bytes[self.tag];
        if row.is_empty() {
            row.resize(self.links, 0.0);
        }
        for &(l, w) in route {
            row[l.index()] += bytes as f64 * w;
        }
    }

    /// Per tag (from 0 to the highest set), the links its flows crossed with their bytes, in
    /// link order; `first` maps each link to the link whose figures it takes (a fold's orbit
    /// representative), or is empty.
    pub fn per_tag(&self, first: &[LinkId]) -> Vec<Vec<(LinkId, f64)>> {
        self.bytes
            .iter()
            .map(|row| {
                if row.is_empty() {
                    return Vec::new();
                }
                (0..self.links)
                    .map(|l| {
                        let from = first.get(l).map_or(l, |f| f.index());
                        (LinkId(l as u32), row[from])
                    })
                    .filter(|&(_, b)| b > 0.0)
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tag_is_charged_its_flows_weighted_bytes() {
        let mut a = Attribution::new(3);
        a.set_tag(1);
        a.charge(&[(LinkId(0), 1.0), (LinkId(2), 0.5)], 100);
        a.set_tag(0);
        a.charge(&[(LinkId(2), 1.0)], 10);
        let t = a.per_tag(&[]);
        assert_eq!(t[0], [(LinkId(2), 10.0)]);
        assert_eq!(t[1], [(LinkId(0), 100.0), (LinkId(2), 50.0)]);
        // Under a fold, link 1 takes link 0's figures.
        let folded = a.per_tag(&[LinkId(0), LinkId(0), LinkId(2)]);
        assert_eq!(folded[1][..2], [(LinkId(0), 100.0), (LinkId(1), 100.0)]);
    }
}
