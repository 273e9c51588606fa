//! Per-flow records keyed by flow id, kept from the oldest one still wanted: ids are handed out
//! in submission order and flows mostly finish in about that order, so dropping the finished
//! prefix makes memory follow the flows in flight, not every flow ever submitted (a step
//! schedule submits millions one after another, a few thousand at a time).

use std::collections::VecDeque;
use std::ops::{Index, IndexMut, Range};

#[derive(Clone, Debug)]
pub struct Window<T> {
    /// The id of `items[0]`: every id before it was dropped.
    first: u32,
    items: VecDeque<T>,
}

impl<T> Default for Window<T> {
    fn default() -> Self {
        Window {
            first: 0,
            items: VecDeque::new(),
        }
    }
}

impl<T> Window<T> {
    /// An empty window whose first record will have id `first`.
    pub fn starting_at(first: u32) -> Window<T> {
        Window {
            first,
            items: VecDeque::new(),
        }
    }

    /// Appends `item`; returns its id.
    pub fn push(&mut self, item: T) -> u32 {
        let id = self.end();
        self.items.push_back(item);
        id
    }

    /// How many ids were handed out.
    pub fn end(&self) -> u32 {
        self.first + self.items.len() as u32
    }

    /// How many records are held.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The ids still held.
    pub fn ids(&self) -> Range<u32> {
        self.first..self.end()
    }

    /// `id`'s record, or `None` when it was dropped (or never handed out).
    pub fn get(&self, id: u32) -> Option<&T> {
        id.checked_sub(self.first)
            .and_then(|i| self.items.get(i as usize))
    }

    /// `id`'s record to change, or `None` when it was dropped (or never handed out).
    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        id.checked_sub(self.first)
            .and_then(|i| self.items.get_mut(i as usize))
    }

    /// Drops records from the oldest while `gone` says they are no longer wanted.
    pub fn trim(&mut self, gone: impl Fn(&T) -> bool) {
        while self.items.front().is_some_and(&gone) {
            self.items.pop_front();
            self.first += 1;
        }
    }
}

/// A held record by id: reading or writing a dropped one is a bug of the caller.
impl<T> Index<u32> for Window<T> {
    type Output = T;
    fn index(&self, id: u32) -> &T {
        &self.items[(id - self.first) as usize]
    }
}

impl<T> IndexMut<u32> for Window<T> {
    fn index_mut(&mut self, id: u32) -> &mut T {
        &mut self.items[(id - self.first) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::Window;

    #[test]
    fn the_finished_prefix_goes_and_ids_keep_counting() {
        let mut w = Window::default();
        for v in [1, 0, 0, 1] {
            w.push(v);
        }
        w.trim(|&v| v == 1);
        assert_eq!(w.ids(), 1..4);
        assert_eq!(w.get(0), None);
        assert_eq!(w.get(3), Some(&1));
        w[1] = 1;
        w[2] = 1;
        w.trim(|&v| v == 1);
        assert_eq!(w.ids(), 4..4);
        assert_eq!(w.push(7), 4);
        assert_eq!((w.end(), w.get(4), w.get(5)), (5, Some(&7), None));
    }

    #[test]
    fn a_window_can_start_at_any_id() {
        let mut w = Window::starting_at(40);
        assert_eq!((w.end(), w.get(39)), (40, None));
        assert_eq!(w.push('a'), 40);
        assert_eq!((w.ids(), w[40]), (40..41, 'a'));
    }
}
