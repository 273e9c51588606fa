//! Point-to-point matching for the orchestrator: sends and receives meet by (source,
//! destination, tag), first come first served, without a hash map in the event loop.

use std::collections::HashMap;

use smallvec::SmallVec;

use fabricsim_workload::Workload;

/// A first-in first-out list with one entry kept inline: a slot's lists hold one entry or
/// none nearly always, and a heap buffer each cost an allocation and a cache miss per send
/// and receive. Short, so taking the first shifts the rest.
pub(crate) struct Fifo<T>(SmallVec<[T; 1]>);

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Fifo(SmallVec::new())
    }
}

impl<T: PartialEq> Fifo<T> {
    pub(crate) fn push_back(&mut self, x: T) {
        self.0.push(x);
    }

    pub(crate) fn pop_front(&mut self) -> Option<T> {
        (!self.0.is_empty()).then(|| self.0.remove(0))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Removes the first entry equal to `x`, if any.
    pub(crate) fn remove_item(&mut self, x: &T) {
        if let Some(pos) = self.0.iter().position(|y| y == x) {
            self.0.remove(pos);
        }
    }
}

/// Sends and receives of one (source, destination, tag), matched first come first served.
#[derive(Default)]
pub(crate) struct P2pSlot {
    pub(crate) tag: u64,
    /// Receives posted before their data was sent: (op, time).
    pub(crate) recvs: Fifo<(u32, u64)>,
    /// Transfers under way that no receive has claimed yet.
    pub(crate) inflight: Fifo<u32>,
    /// Data that arrived before its receive was posted (buffered), count.
    pub(crate) arrived: u32,
}

impl P2pSlot {
    fn is_empty(&self) -> bool {
        self.recvs.is_empty() && self.inflight.is_empty() && self.arrived == 0
    }
}

/// A mailbox's entries with their tags kept apart: a mailbox holds tens of entries (a
/// pipeline's microbatches in flight), and every send and receive finds its entry by tag.
#[derive(Default)]
pub(crate) struct Mailbox {
    tags: Vec<u64>,
    pub(crate) entries: Vec<P2pSlot>,
}

/// Point-to-point matching without a hash map: a *mailbox* per (receiver, sender) pair that
/// the programs name holds the unmatched sends and receives between them, one entry per tag,
/// removed once everything in it is matched (so it stays as small as what is in flight).
pub(crate) struct P2p {
    /// Per rank: where its peer slots start in `inbox` and `outbox`.
    base: Vec<usize>,
    /// Per (rank, peer slot): the mailbox where the rank receives from that peer.
    inbox: Vec<usize>,
    /// Per (rank, peer slot): the peer's mailbox for what this rank sends it, if the peer ever
    /// receives from this rank.
    outbox: Vec<Option<usize>>,
    pub(crate) mailboxes: Vec<Mailbox>,
    /// Per mailbox: (sender, receiver).
    pub(crate) ends: Vec<(u32, u32)>,
}

impl P2p {
    pub(crate) fn new(w: &Workload) -> P2p {
        let mut base = Vec::with_capacity(w.ranks.len());
        let mut n = 0;
        for b in &w.ranks {
            base.push(n);
            n += b.peers.len();
        }
        // Built once, before the run: (sender, receiver) -> mailbox, numbered in rank order.
        let mut id: HashMap<(u32, u32), usize> = HashMap::new();
        let mut ends = Vec::new();
        let mut inbox = Vec::with_capacity(n);
        for (r, b) in w.ranks.iter().enumerate() {
            for &peer in &b.peers {
                let m = *id.entry((peer, r as u32)).or_insert_with(|| {
                    ends.push((peer, r as u32));
                    ends.len() - 1
                });
                inbox.push(m);
            }
        }
        let mut outbox = Vec::with_capacity(n);
        for (r, b) in w.ranks.iter().enumerate() {
            for &peer in &b.peers {
                outbox.push(id.get(&(r as u32, peer)).copied());
            }
        }
        P2p {
            base,
            inbox,
            outbox,
            mailboxes: (0..ends.len()).map(|_| Mailbox::default()).collect(),
            ends,
        }
    }

    /// The mailbox where rank `r` receives from its peer slot `slot`.
    pub(crate) fn mailbox(&self, r: u32, slot: u16) -> usize {
        self.inbox[self.base[r as usize] + usize::from(slot)]
    }

    /// The mailbox of the peer at rank `r`'s slot `slot` that receives from `r`.
    pub(crate) fn peer_mailbox(&self, r: u32, slot: u16) -> Option<usize> {
        self.outbox[self.base[r as usize] + usize::from(slot)]
    }

    /// Where the entry for `tag` lies in mailbox `m`, added if new. Searched from the newest:
    /// a pipeline's mailbox holds the receives posted for the microbatches ahead, and a send
    /// or receive nearly always meets the entry added last. That one is checked in the entries
    /// themselves, which the caller reads next, so that the common case leaves the tags unread.
    pub(crate) fn find(&mut self, m: usize, tag: u64) -> usize {
        let mailbox = &mut self.mailboxes[m];
        if mailbox.entries.last().is_some_and(|e| e.tag == tag) {
            return mailbox.entries.len() - 1;
        }
        mailbox
            .tags
            .iter()
            .rposition(|&t| t == tag)
            .unwrap_or_else(|| {
                mailbox.tags.push(tag);
                mailbox.entries.push(P2pSlot {
                    tag,
                    ..P2pSlot::default()
                });
                mailbox.tags.len() - 1
            })
    }

    /// Entry `i` of mailbox `m` (see [`Self::find`]).
    pub(crate) fn entry(&mut self, m: usize, i: usize) -> &mut P2pSlot {
        &mut self.mailboxes[m].entries[i]
    }

    /// Drops entry `i` of mailbox `m` if nothing is left in it; the last entry takes its place.
    pub(crate) fn tidy(&mut self, m: usize, i: usize) {
        let mailbox = &mut self.mailboxes[m];
        if mailbox.entries[i].is_empty() {
            mailbox.tags.swap_remove(i);
            mailbox.entries.swap_remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_gives_back_in_order_and_drops_the_entry_named() {
        let mut q = Fifo::default();
        assert!(q.is_empty() && q.pop_front().is_none());
        for x in [3u32, 1, 4, 1, 5] {
            q.push_back(x);
        }
        q.remove_item(&1);
        q.remove_item(&9);
        let mut out = Vec::new();
        while let Some(x) = q.pop_front() {
            out.push(x);
        }
        assert_eq!(out, [3, 4, 1, 5]);
        assert!(q.is_empty());
    }
}
