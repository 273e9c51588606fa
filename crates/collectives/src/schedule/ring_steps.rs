//! A ring's steps in closed form: the transfers of a step-fidelity ring pass, computed from the
//! ring's positions when asked for, so that a schedule holds O(n) per ring rather than a record
//! per transfer (a 1,024-rank, 4-channel ring all-reduce has 8.4 million transfers).
//!
//! Transfer `(k, i)` is step `k`'s send of position `i` to position `i + 1`, numbered
//! `start + k·n + i`: the order [`super::Schedule::push`] would have given them one by one.
//! It carries piece `(i − k) mod n`, waits for `(k − 1, i − 1)` to arrive (the data it forwards)
//! and for `(k − 1, i)` to leave (the connection's previous send); step 0 waits for the
//! position's *entry* transfer, if the ring has one. From step [`NCCL_STEPS`] on, it also waits
//! for its receiver's slot of step `k − NCCL_STEPS` to be free (NCCL's buffer slots per
//! connection): for `(k − NCCL_STEPS + 1, i + 1)`, which forwards that step's piece, to have
//! started.

use super::formula::Formula;
use super::{Path, Schedule, Transfer, NONE};
use crate::qp_window::NCCL_STEPS;

#[derive(Clone, Debug)]
pub(super) struct RingSteps {
    /// The first transfer's id.
    pub start: u32,
    pub steps: u32,
    pub group: u32,
    /// Per position: its rank, the path of the edge leaving it, its piece's bytes, and the
    /// transfer its first step waits for (empty: none waits).
    pub order: Vec<u32>,
    pub paths: Vec<Path>,
    pub pieces: Vec<u64>,
    pub entry: Vec<u32>,
}

/// Where a transfer lies in its ring: step and position.
#[derive(Clone, Copy, Debug)]
pub(super) struct At {
    pub k: u32,
    pub i: u32,
}

impl RingSteps {
    pub fn n(&self) -> u32 {
        self.order.len() as u32
    }

    /// How many transfers the ring holds: `steps · n`.
    pub fn len(&self) -> u64 {
        u64::from(self.steps) * u64::from(self.n())
    }

    pub fn at(&self, id: u32) -> At {
        let local = id - self.start;
        At {
            k: local / self.n(),
            i: local % self.n(),
        }
    }

    fn id(&self, k: u32, i: u32) -> u32 {
        self.start + k * self.n() + i
    }

    pub fn transfer(&self, at: At, channel: u32) -> Transfer {
        let n = self.n();
        let i = at.i as usize;
        Transfer {
            src: self.order[i],
            dst: self.order[((at.i + 1) % n) as usize],
            bytes: self.pieces[((at.i + n - at.k % n) % n) as usize],
            channel,
            path: self.paths[i],
            group: self.group,
            step_start: true,
        }
    }

    /// The entry transfer position `i`'s first step waits for, or [`NONE`].
    pub fn entry(&self, i: u32) -> u32 {
        self.entry.get(i as usize).copied().unwrap_or(NONE)
    }

    /// Dependencies not yet met before `at` may start: the data it forwards, its connection's
    /// previous send and, from step `NCCL_STEPS` on, its receiver's slot; or its entry.
    pub fn waits(&self, at: At) -> u32 {
        if at.k > 0 {
            2 + u32::from(at.k >= NCCL_STEPS)
        } else {
            u32::from(self.entry(at.i) != NONE)
        }
    }

    /// The next send on `at`'s connection, or [`NONE`] after the last step.
    pub fn next(&self, at: At) -> u32 {
        if at.k + 1 < self.steps {
            self.id(at.k + 1, at.i)
        } else {
            NONE
        }
    }

    /// The transfer that forwards what `at` delivers, or [`NONE`] after the last step.
    pub fn forward(&self, at: At) -> u32 {
        if at.k + 1 < self.steps {
            self.id(at.k + 1, (at.i + 1) % self.n())
        } else {
            NONE
        }
    }

    /// The send whose receive slot `at` frees as it starts, forwarding the piece of
    /// `(k − 1, i − 1)`: that connection's step `k − 1 + NCCL_STEPS`, or [`NONE`].
    pub fn freed_by_start(&self, at: At) -> u32 {
        let later = u64::from(at.k) + u64::from(NCCL_STEPS) - 1;
        if at.k > 0 && later < u64::from(self.steps) {
            self.id(later as u32, (at.i + self.n() - 1) % self.n())
        } else {
            NONE
        }
    }

    /// The ring's first-step transfers that wait for nothing, in order.
    pub fn starts(&self) -> impl Iterator<Item = u32> + '_ {
        let first = if self.steps == 0 { 0 } else { self.n() };
        (0..first)
            .filter(|&i| self.entry(i) == NONE)
            .map(|i| self.id(0, i))
    }

    /// Per position, its first step with the bytes of all its steps: what each edge of the
    /// ring moves over the pass.
    pub fn edges(&self, channel: u32) -> impl Iterator<Item = Transfer> + '_ {
        (0..self.n())
            .zip(edge_totals(&self.pieces, self.steps))
            .map(move |(i, bytes)| Transfer {
                bytes,
                ..self.transfer(At { k: 0, i }, channel)
            })
    }

    /// Per rank (of `ranks` ranks), the last transfer it receives.
    pub fn last_received(&self, ranks: usize) -> Vec<u32> {
        let mut last = vec![NONE; ranks];
        if self.steps > 0 {
            let n = self.n();
            for i in 0..n {
                last[self.order[((i + 1) % n) as usize] as usize] = self.id(self.steps - 1, i);
            }
        }
        last
    }
}

/// Per position of a ring of `pieces.len()` positions, the bytes it sends in `steps` steps when
/// at step `k` position `i` sends piece `(i − k) mod n`: pieces `i, i − 1, …, i − steps + 1`,
/// whole turns of the ring and then the `steps mod n` pieces ending at `i`, a window slid
/// round the ring (O(n), not O(n · steps), and nothing allocated).
pub fn edge_totals(pieces: &[u64], steps: u32) -> impl Iterator<Item = u64> + '_ {
    let n = pieces.len();
    let m = if n == 0 { 0 } else { steps as usize % n };
    let turns = if n == 0 {
        0
    } else {
        u64::from(steps) / n as u64
    };
    let base = turns * pieces.iter().sum::<u64>();
    // The window of position 0: pieces 0, n − 1, …, n − m + 1; sliding to position i adds
    // piece i and drops piece i − m (mod n), `dropped` the last one dropped.
    let mut rest: u64 = (0..m).map(|j| pieces[(n - j) % n]).sum();
    let mut dropped = if n == 0 { 0 } else { (n - m) % n };
    (0..n).map(move |i| {
        if i > 0 && m > 0 {
            dropped = if dropped + 1 == n { 0 } else { dropped + 1 };
            rest = rest + pieces[i] - pieces[dropped];
        }
        base + rest
    })
}

impl Schedule {
    /// Adds a step-fidelity ring pass in closed form on `channel` (this module): `steps`
    /// steps over the positions `order` (ranks), the edge leaving each on `paths[i]`, position
    /// `i` sending piece `(i − k) mod n` at step `k`; the first step of position `i` waits for
    /// `entry[i]` where given. Returns, per rank of `ranks`, the last transfer it receives.
    #[allow(clippy::too_many_arguments)]
    pub fn push_ring_steps(
        &mut self,
        group: u32,
        channel: u32,
        steps: u32,
        order: Vec<u32>,
        paths: Vec<Path>,
        pieces: Vec<u64>,
        entry: Vec<u32>,
        ranks: usize,
    ) -> Vec<u32> {
        debug_assert!(order.len() == paths.len() && order.len() == pieces.len());
        debug_assert!(entry.is_empty() || entry.len() == order.len());
        debug_assert!(entry.iter().all(|&e| e == NONE || e < self.len));
        let ring = RingSteps {
            start: self.len,
            steps,
            group,
            order,
            paths,
            pieces,
            entry,
        };
        let last = ring.last_received(ranks);
        if self.push_formula(Formula::Ring(ring), channel) {
            last
        } else {
            vec![NONE; ranks]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::edge_totals;

    #[test]
    fn edge_totals_are_the_pieces_each_position_sends() {
        for n in 1..7usize {
            let pieces: Vec<u64> = (0..n as u64).map(|p| 1 + p * p * 7).collect();
            for steps in 0..3 * n as u32 + 2 {
                let by_step: Vec<u64> = (0..n)
                    .map(|i| {
                        (0..steps as usize)
                            .map(|k| pieces[(i + n * k - k) % n])
                            .sum()
                    })
                    .collect();
                let got: Vec<u64> = edge_totals(&pieces, steps).collect();
                assert_eq!(got, by_step, "{n} positions, {steps} steps");
            }
        }
    }
}
