//! Whole messages on a connection's QPs, several in flight (step fidelity under
//! `round-robin` and `dynamic`).
//!
//! A connection posts its transfers in order and keeps up to `min(QPs, NCCL_STEPS)` of them in
//! flight at once, each whole on one QP: NCCL gives a connection `NCCL_STEPS` = 8 buffer slots
//! (`src/include/device.h`), and a QP sends its messages one after another, so more messages in
//! flight than QPs would only queue. Which QP a message takes is the mode's:
//!
//! - **round-robin**: the connection's QPs in turn, busy or not (NCCL's default with several
//!   QPs per connection);
//! - **dynamic**: the QP with the fewest outstanding bytes, the first among equals, so a QP whose
//!   path drains slowly gets fewer messages (the QP load balancing Meta's RoCE fabric runs above
//!   E-ECMP: Gangidi et al., "RDMA over Ethernet for Distributed AI Training at Meta Scale",
//!   SIGCOMM 2024, §5.2).
//!
//! A message waits for the one before it on its connection to have been posted, and for a free
//! slot; under `split` every message takes every QP and the connection sends one at a time
//! (see [`crate::exec`]). A transfer leaving its sender frees its slot.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::exec::QpMode;

/// NCCL's buffer slots per connection (`NCCL_STEPS`).
pub const NCCL_STEPS: u32 = 8;

/// A connection: source and destination rank, and channel.
pub type Conn = (u32, u32, u32);

/// A message in flight: its connection, QP and wire bytes.
#[derive(Clone, Copy)]
struct Sent {
    conn: Conn,
    qp: u32,
    wire: u64,
}

#[derive(Default)]
struct Connection {
    in_flight: u32,
    /// Transfers ready but waiting for a slot, in the order they became ready.
    blocked: VecDeque<u32>,
    /// Messages sent so far (round-robin's turn).
    sent: u32,
    /// Outstanding wire bytes per QP.
    outstanding: Vec<u64>,
}

pub struct QpWindow {
    mode: QpMode,
    conns: FxHashMap<Conn, Connection>,
    sent: FxHashMap<u32, Sent>,
}

impl QpWindow {
    /// The window under `mode`; `None` under `split`.
    pub fn new(mode: QpMode) -> Option<QpWindow> {
        (mode != QpMode::Split).then(|| QpWindow {
            mode,
            conns: FxHashMap::default(),
            sent: FxHashMap::default(),
        })
    }

    /// Transfer `t`, ready on connection `conn`, of `wire` bytes over `qps` QPs: the QP it goes
    /// on now, or `None` if the connection's slots are full (then [`QpWindow::drained`] hands
    /// it back when one frees).
    pub fn start(&mut self, t: u32, conn: Conn, qps: u32, wire: u64) -> Option<u32> {
        let c = self.conns.entry(conn).or_insert_with(|| Connection {
            outstanding: vec![0; qps as usize],
            ..Connection::default()
        });
        if c.in_flight >= qps.min(NCCL_STEPS) {
            c.blocked.push_back(t);
            return None;
        }
        let qp = match self.mode {
            QpMode::Dynamic => (0..qps)
                .min_by_key(|&q| c.outstanding[q as usize])
                .unwrap_or(0),
            _ => c.sent % qps,
        };
        c.in_flight += 1;
        c.sent += 1;
        c.outstanding[qp as usize] += wire;
        self.sent.insert(t, Sent { conn, qp, wire });
        Some(qp)
    }

    /// Transfer `t` has left its sender: its slot is free; returns the transfer that waited
    /// longest for one on its connection, if any.
    pub fn drained(&mut self, t: u32) -> Option<u32> {
        let s = self.sent.remove(&t)?;
        let c = self.conns.get_mut(&s.conn)?;
        c.in_flight -= 1;
        c.outstanding[s.qp as usize] -= s.wire;
        c.blocked.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_takes_the_least_loaded_qp_and_round_robin_takes_its_turn() {
        let conn = (0, 1, 0);
        for (mode, expected) in [
            (QpMode::Dynamic, [0, 1, 2, 1]),
            (QpMode::RoundRobin, [0, 1, 2, 0]),
        ] {
            let mut w = QpWindow::new(mode).unwrap();
            // Three messages of 4, 1 and 2 bytes on three QPs; the second leaves first.
            assert_eq!(w.start(0, conn, 3, 4), Some(expected[0]));
            assert_eq!(w.start(1, conn, 3, 1), Some(expected[1]));
            assert_eq!(w.start(2, conn, 3, 2), Some(expected[2]));
            // Every slot is taken: the fourth waits, and takes the slot the second frees.
            assert_eq!(w.start(3, conn, 3, 8), None);
            assert_eq!(w.drained(1), Some(3));
            assert_eq!(w.start(3, conn, 3, 8), Some(expected[3]));
        }
        assert!(QpWindow::new(QpMode::Split).is_none());
    }

    #[test]
    fn a_connection_keeps_at_most_nccl_steps_in_flight() {
        let mut w = QpWindow::new(QpMode::Dynamic).unwrap();
        for t in 0..NCCL_STEPS {
            assert!(w.start(t, (0, 1, 0), 16, 1).is_some());
        }
        assert_eq!(w.start(NCCL_STEPS, (0, 1, 0), 16, 1), None);
        // Another connection has its own slots.
        assert!(w.start(99, (0, 1, 1), 16, 1).is_some());
    }
}
