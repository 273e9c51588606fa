//! An all-to-all's pairs in closed form: every rank sends every other rank its piece, split
//! over up to two channels, each part a group of its own that waits for nothing. On 1,024
//! ranks that is two million transfers; the schedule holds the pieces and, under PXN, the
//! ranks' places (O(n)).
//!
//! Transfer `(i, d, c)` is rank `i`'s part `c` of its piece for rank `(i + d) mod n`, `d` in
//! `1..n`, numbered `start + (i·(n − 1) + d − 1)·lanes + c`: the order in which pushing the
//! pairs one by one numbered them. It is group `group_start` plus the same offset, on channel
//! `(d + c) mod channels`, as `algo/direct.rs` lays a pair held one by one.

use super::formula::Formula;
use super::{split_piece, Group, Path, Schedule, Transfer, NONE};
use crate::layout::Ranks;

#[derive(Clone, Debug)]
pub(super) struct Pairs {
    pub start: u32,
    pub group_start: u32,
    /// Channels per pair (1 or 2) and channels in all.
    pub lanes: u32,
    pub channels: u32,
    /// Per destination rank, the bytes every other rank sends it.
    pub pieces: Vec<u64>,
    /// Under PXN, the ranks: a transfer to another host leaves from the source host's GPU on
    /// the destination's rail.
    pub pxn: Option<Ranks>,
}

impl Pairs {
    fn n(&self) -> u32 {
        self.pieces.len() as u32
    }

    /// How many transfers: `n · (n − 1) · lanes`.
    pub fn len(&self) -> u64 {
        let n = u64::from(self.n());
        n * n.saturating_sub(1) * u64::from(self.lanes)
    }

    pub fn transfer(&self, id: u32) -> Transfer {
        let local = id - self.start;
        let (pair, c) = (local / self.lanes, local % self.lanes);
        let n = self.n();
        let (i, d) = (pair / (n - 1), pair % (n - 1) + 1);
        let j = (i + d) % n;
        Transfer {
            src: i,
            dst: j,
            bytes: split_piece(self.pieces[j as usize], self.lanes, c),
            channel: (d + c) % self.channels,
            path: self
                .pxn
                .as_ref()
                .map_or(Path::Direct, |r| pxn_path(r, i, j)),
            group: self.group_start + local,
            step_start: true,
        }
    }
}

/// The path of a message from `src` to `dst` under PXN: through the proxy on `src`'s host
/// that sits on `dst`'s rail, over NVLink, when `dst` is on another host and the proxy is not
/// `src` itself.
pub fn pxn_path(ranks: &Ranks, src: u32, dst: u32) -> Path {
    if ranks.same_host(src, dst) {
        return Path::Direct;
    }
    match ranks.rail_proxy(src, dst) {
        Some(p) if p != src => Path::Via(p),
        _ => Path::Direct,
    }
}

impl Schedule {
    /// Adds an all-to-all's pairs in closed form (this module): every rank sends `pieces[j]` to
    /// every other rank `j`, split over `lanes` of the `channels`, each part a group of its own
    /// (`group`, waiting for none), through PXN proxies where `pxn` gives the ranks.
    pub fn push_pairs(
        &mut self,
        group: Group,
        pieces: Vec<u64>,
        lanes: u32,
        channels: u32,
        pxn: Option<Ranks>,
    ) {
        let pairs = Pairs {
            start: self.len,
            group_start: self.groups.len() as u32,
            lanes,
            channels,
            pieces,
            pxn,
        };
        let count = pairs.len();
        if count == 0 {
            return;
        }
        if u64::from(self.len) + count >= u64::from(NONE - 1)
            || self.groups.len() as u64 + count >= u64::from(NONE)
        {
            self.too_large = true;
            return;
        }
        for _ in 0..count {
            self.add_group(group.clone(), []);
        }
        let channel = pairs.transfer(pairs.start).channel;
        self.push_formula(Formula::Pairs(pairs), channel);
    }
}
