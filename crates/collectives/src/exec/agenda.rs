//! The executor's own events, handled in `(time, kind, id)` order.
//!
//! A collective's first submissions (every group of an all-to-all: two million on 1,024 GPUs)
//! are all due at its start, in id order. They wait in a list beside the heap, read in order
//! and merged with it, rather than pushed through it: a heap of millions pays a cache miss per
//! level of every push and pop.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// An event: its time, its kind (the order of kinds at one instant) and the transfer or group.
pub(super) type Event = (u64, u8, u32);

#[derive(Debug, Default)]
pub(super) struct Agenda {
    heap: BinaryHeap<Reverse<Event>>,
    /// Events `(at, kind, id)` for each id here, in id order.
    first: VecDeque<u32>,
    at: u64,
    kind: u8,
}

impl Agenda {
    /// An agenda whose first events are `(at, kind, id)` for each of `ids`, in increasing order.
    pub fn starting(at: u64, kind: u8, ids: Vec<u32>) -> Agenda {
        debug_assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids in order");
        Agenda {
            heap: BinaryHeap::new(),
            first: ids.into(),
            at,
            kind,
        }
    }

    pub fn push(&mut self, e: Event) {
        self.heap.push(Reverse(e));
    }

    /// The earliest event.
    pub fn peek(&self) -> Option<Event> {
        let first = self.first.front().map(|&id| (self.at, self.kind, id));
        let heap = self.heap.peek().map(|r| r.0);
        match (first, heap) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Takes the earliest event.
    pub fn pop(&mut self) -> Option<Event> {
        let first = self.first.front().map(|&id| (self.at, self.kind, id));
        match (first, self.heap.peek()) {
            (Some(a), Some(Reverse(b))) if *b < a => self.heap.pop().map(|r| r.0),
            (Some(a), _) => {
                self.first.pop_front();
                Some(a)
            }
            (None, _) => self.heap.pop().map(|r| r.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The agenda pops what one heap of every event would, in the same order.
    #[test]
    fn an_agenda_pops_as_one_heap_would() {
        let first = vec![1, 4, 5, 9];
        let mut agenda = Agenda::starting(10, 0, first.clone());
        let mut heap: BinaryHeap<Reverse<Event>> =
            first.iter().map(|&i| Reverse((10, 0, i))).collect();
        let later = [(10, 0, 3), (10, 1, 0), (9, 2, 7), (10, 0, 6), (11, 0, 2)];
        let mut got = Vec::new();
        let mut want = Vec::new();
        for (k, e) in later.into_iter().enumerate() {
            agenda.push(e);
            heap.push(Reverse(e));
            if k % 2 == 1 {
                got.push(agenda.pop());
                want.push(heap.pop().map(|r| r.0));
            }
        }
        while let Some(e) = heap.pop() {
            want.push(Some(e.0));
            got.push(agenda.pop());
        }
        assert_eq!(agenda.pop(), None);
        assert_eq!(got, want);
        assert_eq!(got.len(), 9);
    }
}
