//! Sums of weighted link lists, in link order, in time linear in the entries.
//!
//! A bundle's strands (the edges of a ring channel over thousands of ranks, a spray over
//! hundreds of paths) add up to one list of links, each once, in link order. Sorting the
//! concatenated routes costs n·log n in their entries; here each entry adds into a dense cell
//! of its link, and the links come out in order either from a sort of the distinct links alone
//! or, when they are many, from a scan of a bitmap over every link of the fabric.

use fabricsim_topology::LinkId;

/// Dense per-link sums, reset after every use (their memory stays: 9 bytes per link).
#[derive(Default)]
pub(crate) struct LinkSum {
    weight: Vec<f64>,
    seen: Vec<u64>,
    touched: Vec<u32>,
}

impl LinkSum {
    /// Adds `w` to link `l` of a fabric of `links` links.
    pub(crate) fn add(&mut self, links: usize, l: LinkId, w: f64) {
        if self.weight.len() < links {
            self.weight.resize(links, 0.0);
            self.seen.resize(links.div_ceil(64), 0);
        }
        let i = l.index();
        let bit = 1u64 << (i % 64);
        let word = &mut self.seen[i / 64];
        if *word & bit == 0 {
            *word |= bit;
            self.touched.push(i as u32);
        }
        self.weight[i] += w;
    }

    /// Appends every link added since the last call, once each with its sum, in link order,
    /// and clears the sums. Each link's sum adds its entries in the order they were added.
    pub(crate) fn drain_into(&mut self, out: &mut Vec<(LinkId, f64)>) {
        out.reserve(self.touched.len());
        // A bitmap scan reads every word; a sort does log n work per distinct link.
        if self.touched.len() * 8 >= self.seen.len() {
            for (w, word) in self.seen.iter_mut().enumerate() {
                let mut bits = std::mem::take(word);
                while bits != 0 {
                    let i = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    out.push((LinkId(i as u32), std::mem::take(&mut self.weight[i])));
                }
            }
        } else {
            self.touched.sort_unstable();
            for &i in &self.touched {
                let i = i as usize;
                self.seen[i / 64] = 0;
                out.push((LinkId(i as u32), std::mem::take(&mut self.weight[i])));
            }
        }
        self.touched.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ways out (a sort of the few, a scan for the many) give the sorted merge.
    #[test]
    fn sums_come_out_once_per_link_in_link_order() {
        let mut sum = LinkSum::default();
        for (links, entries) in [(10_000usize, 20usize), (200, 500)] {
            let mut expected = std::collections::BTreeMap::new();
            let mut x = 12345u64;
            for _ in 0..entries {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let l = (x >> 33) as usize % links;
                let w = f64::from((x >> 20) as u32 % 7 + 1) / 8.0;
                sum.add(links, LinkId(l as u32), w);
                *expected.entry(l as u32).or_insert(0.0) += w;
            }
            let mut out = Vec::new();
            sum.drain_into(&mut out);
            let expected: Vec<_> = expected.into_iter().map(|(l, w)| (LinkId(l), w)).collect();
            assert_eq!(out, expected);
            // Cleared: the next sum starts from nothing.
            sum.add(links, LinkId(3), 1.0);
            out.clear();
            sum.drain_into(&mut out);
            assert_eq!(out, vec![(LinkId(3), 1.0)]);
        }
    }
}
