//! Direct point-to-point algorithms: all-to-all(v) as grouped sends and receives to every peer,
//! send/recv to the next rank, gather and scatter through the root, and a dissemination barrier
//! (⌈log2 n⌉ rounds of empty messages to rank + 2^k). Every pair is independent: one group per
//! transfer (an all-to-all's in closed form, `schedule/pairs.rs`). A pair's bytes are split
//! over two channels (NCCL opens 2 logical channels per remote peer, NCCL
//! `NCCL_NCHANNELS_PER_NET_PEER`), or one when a single channel is asked for.
//!
//! With `pxn`, a transfer to another host first crosses NVLink to the local GPU on the
//! destination's rail and leaves from there, so inter-host traffic stays on one rail.

use super::{Algorithm, Request};
use crate::op::Collective;
use crate::schedule::{pxn_path, split, Group, Path, Schedule, Transfer, NONE};

pub(super) fn plan(req: &Request<'_>, s: &mut Schedule) {
    let n = req.n();
    let pieces = split(req.bytes, n);
    match req.op {
        // Every rank's piece for a rank alike: in closed form (two million transfers on 1,024
        // GPUs held in O(n)).
        Collective::AllToAll => s.push_pairs(
            MESSAGE,
            pieces,
            req.channels.min(2),
            req.channels,
            (req.algorithm == Algorithm::Pxn).then(|| req.ranks.clone()),
        ),
        Collective::AllToAllV => {
            let sizes = req.sizes.expect("checked by plan");
            for i in 0..n {
                for d in 1..n {
                    let j = (i + d) % n;
                    pair(req, s, i, j, sizes[(i * n + j) as usize], d);
                }
            }
        }
        Collective::SendRecv => {
            for i in 0..n {
                pair(req, s, i, (i + 1) % n, req.bytes, 0);
            }
        }
        Collective::Gather => {
            for i in 1..n {
                pair(req, s, i, 0, pieces[i as usize], i);
            }
        }
        Collective::Scatter => {
            for j in 1..n {
                pair(req, s, 0, j, pieces[j as usize], j);
            }
        }
        Collective::Barrier => barrier(req, s),
        _ => unreachable!("checked by Algorithm::supports"),
    }
}

fn path(req: &Request<'_>, src: u32, dst: u32) -> Path {
    if req.algorithm == Algorithm::Pxn {
        pxn_path(req.ranks, src, dst)
    } else {
        Path::Direct
    }
}

/// A message's group: one step, its bytes at once.
const MESSAGE: Group = Group {
    steps: 1,
    inter_steps: 1,
    fill: 0,
    chunks: 1,
};

/// One pair's bytes, split over up to two channels starting at `lane`, each its own group.
fn pair(req: &Request<'_>, s: &mut Schedule, src: u32, dst: u32, bytes: u64, lane: u32) {
    let lanes = req.channels.min(2);
    for (c, part) in split(bytes, lanes).into_iter().enumerate() {
        let group = s.add_group(MESSAGE, Vec::new());
        s.push(
            Transfer {
                src,
                dst,
                bytes: part,
                channel: (lane + c as u32) % req.channels,
                path: path(req, src, dst),
                group,
                step_start: true,
            },
            NONE,
            [NONE],
        );
    }
}

fn barrier(req: &Request<'_>, s: &mut Schedule) {
    let n = req.n();
    let rounds = u32::BITS - (n - 1).leading_zeros();
    // Per rank, the message it received in the previous round (transfer and its group): each
    // message is its own group, after the one its sender last received.
    let mut received = vec![(NONE, NONE); n as usize];
    for k in 0..rounds {
        let mut next = vec![(NONE, NONE); n as usize];
        for i in 0..n {
            let j = (i + (1 << k)) % n;
            let (prev, prev_group) = received[i as usize];
            let group = s.add_group(
                MESSAGE,
                if prev_group == NONE {
                    Vec::new()
                } else {
                    vec![prev_group]
                },
            );
            let t = Transfer {
                src: i,
                dst: j,
                bytes: 0,
                channel: 0,
                path: Path::Direct,
                group,
                step_start: true,
            };
            next[j as usize] = (s.push(t, NONE, [prev]), group);
        }
        received = next;
    }
}
