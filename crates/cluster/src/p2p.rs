//! Point-to-point matching for the orchestrator: sends and receives meet by (source,
//! destination, tag), first come first served, without a hash map in the event loop.

use std::collections::HashMap;

use fabricsim_workload::Workload;

/// What waits in a mailbox under one tag.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// A receive posted before its data was sent: its op, and `at` the time it was posted.
    Recv,
    /// A transfer under way that no receive has claimed yet: its id.
    Inflight,
    /// Data that arrived before its receive was posted.
    Arrived,
}

/// One thing a mailbox holds: 24 bytes. A pipeline posts every receive of its schedule at the
/// start, so a run holds millions of these at once (the Llama 3 405B, 2.1 million).
#[derive(Clone, Copy, Debug)]
struct Item {
    tag: u64,
    at: u64,
    /// The receive's op, or the transfer's id.
    what: u32,
    kind: Kind,
}

const _: () = assert!(std::mem::size_of::<Item>() == 24);

/// What a receive posted meets.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Met {
    /// Its data, already here.
    Arrived,
    /// The transfer under way that carries it.
    Inflight(u32),
    /// Nothing yet: it waits in the mailbox.
    Posted,
}

/// What one (sender, receiver) pair has not matched, in the order it came. Items of one tag
/// meet first come first served, and a tag rarely holds two at once (`repeated` says whether
/// it may): then the one item of a tag is the one found searching from the newest, which is
/// where a pipeline's sends meet their receives, posted in the schedule's reverse order.
#[derive(Default)]
struct Mailbox {
    items: Vec<Item>,
    repeated: bool,
}

impl Mailbox {
    /// While no tag holds two items: the item of `tag`, found in one pass from the newest, if
    /// `meets` its kind. One it does not meet stays, and the tag will hold two.
    fn only(&mut self, tag: u64, meets: impl Fn(Kind) -> bool) -> Option<usize> {
        let i = self.items.iter().rposition(|i| i.tag == tag)?;
        if meets(self.items[i].kind) {
            return Some(i);
        }
        self.repeated = true;
        None
    }

    /// The oldest item of `tag` and `kind`.
    fn oldest(&self, tag: u64, kind: Kind) -> Option<usize> {
        self.items
            .iter()
            .position(|i| i.tag == tag && i.kind == kind)
    }

    fn take(&mut self, i: usize) -> Item {
        let item = self.items.remove(i);
        if self.items.is_empty() {
            self.repeated = false;
        }
        item
    }

    /// A receive of `op` posted at `at`: what it meets (data arrived before a transfer under
    /// way), taken out of the mailbox.
    fn recv(&mut self, tag: u64, op: u32, at: u64) -> Met {
        let found = if self.repeated {
            (self.oldest(tag, Kind::Arrived)).or_else(|| self.oldest(tag, Kind::Inflight))
        } else {
            self.only(tag, |kind| kind != Kind::Recv)
        };
        let Some(i) = found else {
            self.items.push(Item {
                tag,
                at,
                what: op,
                kind: Kind::Recv,
            });
            return Met::Posted;
        };
        let item = self.take(i);
        match item.kind {
            Kind::Arrived => Met::Arrived,
            _ => Met::Inflight(item.what),
        }
    }

    /// Transfer `id` sent: the receive it meets (op, time posted), taken out of the mailbox,
    /// or the transfer waits in it.
    fn send(&mut self, tag: u64, id: u32) -> Option<(u32, u64)> {
        let found = if self.repeated {
            self.oldest(tag, Kind::Recv)
        } else {
            self.only(tag, |kind| kind == Kind::Recv)
        };
        let Some(i) = found else {
            self.items.push(Item {
                tag,
                at: 0,
                what: id,
                kind: Kind::Inflight,
            });
            return None;
        };
        let item = self.take(i);
        Some((item.what, item.at))
    }

    /// Transfer `id`, waiting in the mailbox, has arrived.
    fn arrived(&mut self, id: u32) {
        if let Some(i) = self
            .items
            .iter_mut()
            .find(|i| i.kind == Kind::Inflight && i.what == id)
        {
            i.kind = Kind::Arrived;
        }
    }
}

/// Point-to-point matching without a hash map: a *mailbox* per (receiver, sender) pair that
/// the programs name holds the unmatched sends and receives between them, each item removed
/// once matched (so it stays as small as what waits).
pub(crate) struct P2p {
    /// Per rank: where its peer slots start in `inbox` and `outbox`.
    base: Vec<usize>,
    /// Per (rank, peer slot): the mailbox where the rank receives from that peer.
    inbox: Vec<usize>,
    /// Per (rank, peer slot): the peer's mailbox for what this rank sends it, if the peer ever
    /// receives from this rank.
    outbox: Vec<Option<usize>>,
    mailboxes: Vec<Mailbox>,
    /// Per mailbox: (sender, receiver).
    ends: Vec<(u32, u32)>,
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

    /// How many mailboxes there are, numbered from 0.
    pub(crate) fn len(&self) -> usize {
        self.mailboxes.len()
    }

    /// The mailbox where rank `r` receives from its peer slot `slot`.
    pub(crate) fn mailbox(&self, r: u32, slot: u16) -> usize {
        self.inbox[self.base[r as usize] + usize::from(slot)]
    }

    /// The mailbox of the peer at rank `r`'s slot `slot` that receives from `r`.
    pub(crate) fn peer_mailbox(&self, r: u32, slot: u16) -> Option<usize> {
        self.outbox[self.base[r as usize] + usize::from(slot)]
    }

    /// A receive of `op` posted at `t` to mailbox `m`: what it meets.
    pub(crate) fn recv(&mut self, m: usize, tag: u64, op: u32, t: u64) -> Met {
        self.mailboxes[m].recv(tag, op, t)
    }

    /// Transfer `id` sent to mailbox `m`: the receive it meets, (op, time posted), if posted.
    pub(crate) fn send(&mut self, m: usize, tag: u64, id: u32) -> Option<(u32, u64)> {
        self.mailboxes[m].send(tag, id)
    }

    /// Transfer `id`, unclaimed in mailbox `m`, has arrived: a receive takes it at once.
    pub(crate) fn arrived(&mut self, m: usize, id: u32) {
        self.mailboxes[m].arrived(id);
    }

    /// The receives posted that no send has met: (sender, receiver, tag), each once.
    pub(crate) fn waiting(&self) -> Vec<(u32, u32, u64)> {
        let mut out: Vec<_> = (self.ends.iter().zip(&self.mailboxes))
            .flat_map(|(&(src, dst), mailbox)| {
                (mailbox.items.iter())
                    .filter(|i| i.kind == Kind::Recv)
                    .map(move |i| (src, dst, i.tag))
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, VecDeque};

    use proptest::prelude::*;

    use super::*;

    /// The matching rules, one tag at a time: receives and transfers each first come first
    /// served, arrived data taken before a transfer under way.
    #[derive(Default)]
    struct Reference {
        recvs: BTreeMap<u64, VecDeque<(u32, u64)>>,
        inflight: BTreeMap<u64, VecDeque<u32>>,
        arrived: BTreeMap<u64, u32>,
    }

    impl Reference {
        fn recv(&mut self, tag: u64, op: u32, t: u64) -> Met {
            let arrived = self.arrived.entry(tag).or_default();
            if *arrived > 0 {
                *arrived -= 1;
                return Met::Arrived;
            }
            match self.inflight.entry(tag).or_default().pop_front() {
                Some(id) => Met::Inflight(id),
                None => {
                    self.recvs.entry(tag).or_default().push_back((op, t));
                    Met::Posted
                }
            }
        }

        fn send(&mut self, tag: u64, id: u32) -> Option<(u32, u64)> {
            let recv = self.recvs.entry(tag).or_default().pop_front();
            if recv.is_none() {
                self.inflight.entry(tag).or_default().push_back(id);
            }
            recv
        }

        fn arrived(&mut self, tag: u64, id: u32) {
            let waiting = self.inflight.entry(tag).or_default();
            waiting.retain(|&x| x != id);
            *self.arrived.entry(tag).or_default() += 1;
        }
    }

    #[derive(Clone, Debug)]
    enum Step {
        Recv(u64),
        Send(u64),
        /// The n-th transfer still unclaimed (modulo their number) arrives.
        Arrive(usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0u64..4).prop_map(Step::Recv),
            (0u64..4).prop_map(Step::Send),
            (0usize..8).prop_map(Step::Arrive),
        ]
    }

    proptest! {
        /// Any order of receives, sends and arrivals, with tags repeated or not, meets as the
        /// rules say: the same receive for each send, the same transfer or data for each
        /// receive, and the same receives left waiting.
        #[test]
        fn a_mailbox_meets_as_the_rules_per_tag_do(steps in prop::collection::vec(step(), 0..60)) {
            let (mut mailbox, mut reference) = (Mailbox::default(), Reference::default());
            let mut unclaimed: Vec<(u64, u32)> = Vec::new();
            for (n, s) in steps.into_iter().enumerate() {
                let n = n as u32;
                match s {
                    Step::Recv(tag) => {
                        let met = mailbox.recv(tag, n, u64::from(n) * 10);
                        prop_assert_eq!(met, reference.recv(tag, n, u64::from(n) * 10));
                        if let Met::Inflight(id) = met {
                            unclaimed.retain(|&(_, x)| x != id);
                        }
                    }
                    Step::Send(tag) => {
                        let met = mailbox.send(tag, n);
                        prop_assert_eq!(met, reference.send(tag, n));
                        if met.is_none() {
                            unclaimed.push((tag, n));
                        }
                    }
                    Step::Arrive(k) if !unclaimed.is_empty() => {
                        let (tag, id) = unclaimed.remove(k % unclaimed.len());
                        mailbox.arrived(id);
                        reference.arrived(tag, id);
                    }
                    Step::Arrive(_) => {}
                }
            }
            let mut left: Vec<(u64, u32, u64)> = (mailbox.items.iter())
                .filter(|i| i.kind == Kind::Recv)
                .map(|i| (i.tag, i.what, i.at))
                .collect();
            left.sort_unstable();
            let expected: Vec<(u64, u32, u64)> = (reference.recvs.iter())
                .flat_map(|(&tag, q)| q.iter().map(move |&(op, t)| (tag, op, t)))
                .collect();
            prop_assert_eq!(left, expected);
        }
    }

    /// A pipeline posts its receives at the start, in its schedule's reverse order, and its
    /// peer sends in the schedule's order: every send meets the newest item, and no tag is
    /// ever held twice.
    #[test]
    fn a_pipelines_sends_meet_the_newest_receive() {
        let mut mailbox = Mailbox::default();
        for tag in (0..64).rev() {
            assert_eq!(mailbox.recv(tag, tag as u32, 0), Met::Posted);
        }
        for tag in 0..64 {
            assert_eq!(mailbox.items.last().map(|i| i.tag), Some(tag));
            assert_eq!(mailbox.send(tag, 100 + tag as u32), Some((tag as u32, 0)));
            assert!(!mailbox.repeated);
        }
        assert!(mailbox.items.is_empty());
    }
}
