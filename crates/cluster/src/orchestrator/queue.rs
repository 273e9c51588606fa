//! The orchestrator's own events by time, each instant's in one bucket.
//!
//! A run's events crowd onto few instants: the symmetric Llama 3 405B run has 6.5 million of
//! them at 53 thousand instants, since the ranks that stand for a server's orbits, and the
//! stages of a pipeline, finish their kernels in step. A heap of every event paid a sift of
//! its whole depth per event; here an instant costs one entry in a heap of instants, and its
//! events a hash look-up each (none for a run of pushes to one instant) and one sort of their
//! bucket. Events pop in the order the heap gave them, the [`Event`]'s whole key: by time,
//! then kind, job or 0, rank or instance.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::state::Event;

/// An instant's events: most instants have one or two, kept in the bucket's own slot, so that
/// popping them reads one cache line where a buffer of their own cost a second miss.
type Bucket = SmallVec<[u64; 3]>;

#[derive(Default)]
pub(super) struct EventQueue {
    /// The instant being drained and the low words of its events left, least last.
    now: u64,
    current: Vec<u64>,
    /// Later instants' events, unordered in their buckets (by slot in `buckets`), and the
    /// instants in a heap. The last instant pushed to keeps its slot at hand: the ranks that
    /// finish in step push to one instant after another, with no hash look-up.
    later: FxHashMap<u64, u32>,
    buckets: Vec<Bucket>,
    free: Vec<u32>,
    /// Buffers of instants drained, for the buckets that outgrow their slot: no allocation per
    /// instant once the run has as many as it holds instants of four events or more at once.
    spare: Vec<Vec<u64>>,
    last: Option<(u64, u32)>,
    instants: BinaryHeap<Reverse<u64>>,
}

impl EventQueue {
    pub fn push(&mut self, e: Event) {
        let (t, low) = e.parts();
        if !self.current.is_empty() && t == self.now {
            // An event of the instant being drained, in its place among those left.
            let at = self.current.partition_point(|&x| x > low);
            self.current.insert(at, low);
            return;
        }
        debug_assert!(
            self.current.is_empty() || t > self.now,
            "no event in the past"
        );
        let slot = match self.last {
            Some((at, slot)) if at == t => slot,
            _ => {
                let (buckets, free, instants) =
                    (&mut self.buckets, &mut self.free, &mut self.instants);
                let slot = *self.later.entry(t).or_insert_with(|| {
                    instants.push(Reverse(t));
                    free.pop().unwrap_or_else(|| {
                        buckets.push(Bucket::new());
                        buckets.len() as u32 - 1
                    })
                });
                self.last = Some((t, slot));
                slot
            }
        };
        let bucket = &mut self.buckets[slot as usize];
        if bucket.len() == bucket.inline_size() && !bucket.spilled() {
            if let Some(mut buffer) = self.spare.pop() {
                buffer.extend_from_slice(bucket);
                *bucket = Bucket::from_vec(buffer);
            }
        }
        bucket.push(low);
    }

    /// The time of the next event.
    pub fn next_time(&self) -> Option<u64> {
        if self.current.is_empty() {
            self.instants.peek().map(|&Reverse(t)| t)
        } else {
            Some(self.now)
        }
    }

    /// The least event at time `t`, if any is left.
    pub fn pop_at(&mut self, t: u64) -> Option<Event> {
        if self.current.is_empty() {
            if self.instants.peek() != Some(&Reverse(t)) {
                return None;
            }
            self.instants.pop();
            let slot = self.later.remove(&t).expect("an instant has its bucket");
            if self.last.is_some_and(|(at, _)| at == t) {
                self.last = None;
            }
            let bucket = &mut self.buckets[slot as usize];
            bucket.sort_unstable_by(|a, b| b.cmp(a));
            if bucket.spilled() {
                // Its buffer becomes the instant's, the slot starts inline again, and the
                // instant's old buffer waits for the next bucket that outgrows its slot.
                let events = std::mem::take(bucket).into_vec();
                let drained = std::mem::replace(&mut self.current, events);
                if drained.capacity() > bucket.inline_size() {
                    self.spare.push(drained);
                }
            } else {
                self.current.extend_from_slice(bucket);
                bucket.clear();
            }
            self.free.push(slot);
            self.now = t;
        }
        if self.now != t {
            return None;
        }
        self.current.pop().map(|low| Event::from_parts(t, low))
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    use super::*;

    /// Against a heap of every event: pushes at later instants and at the instant being
    /// drained (as handlers make), popped instant by instant, in the same order.
    #[test]
    fn pops_in_the_order_a_heap_of_every_event_gives() {
        let (mut queue, mut heap) = (EventQueue::default(), BinaryHeap::new());
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        let event = |t: u64, r: u64| Event::new(t, (r % 4) as u8, (r % 97) as u32, (r % 13) as u32);
        for _ in 0..200 {
            let e = event(next() % 50, next());
            queue.push(e);
            heap.push(Reverse(e));
        }
        let (mut popped, mut t) = (Vec::new(), 0);
        while let Some(now) = queue.next_time() {
            assert_eq!(
                Some(now),
                heap.peek().map(|Reverse(e): &Reverse<Event>| e.parts().0)
            );
            assert!(now >= t);
            t = now;
            while let Some(e) = queue.pop_at(t) {
                let Reverse(h) = heap.pop().expect("the heap has it too");
                assert!(e == h, "the same event");
                popped.push(e);
                // Some handlers schedule at this instant, some later.
                if next() % 3 == 0 {
                    let more = event(t + next() % 3, next());
                    queue.push(more);
                    heap.push(Reverse(more));
                }
            }
            assert!(heap.peek().is_none_or(|Reverse(e)| e.parts().0 > t));
        }
        assert!(heap.is_empty());
        assert!(popped.len() > 200);
    }
}
