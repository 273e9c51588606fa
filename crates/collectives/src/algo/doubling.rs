//! The classic MPI algorithms for a power-of-two number of ranks.
//!
//! - Halving-doubling all-reduce (Rabenseifner): reduce-scatter by recursive halving (log2 n
//!   steps, exchanging half of the current segment with the partner at distance n/2, n/4, …),
//!   then all-gather by recursive doubling in reverse. Each rank sends 2(n−1)/n of the buffer.
//! - Recursive-doubling all-reduce: log2 n steps exchanging the whole buffer with the partner
//!   at distance 1, 2, 4, …; all-gather: the gathered block doubles each step.
//!
//! No step pipelines into the next (each needs the partner's data), so both fidelities run one
//! group per step and channel, after the step before.

use super::{Algorithm, Request};
use crate::op::Collective;
use crate::schedule::{split, Group, Path, Schedule, Transfer, NONE};
use crate::PlanError;

/// One exchange step: rank `i` sends `bytes[i]` to `i ^ distance`.
struct Exchange<'a> {
    distance: u32,
    bytes: &'a [u64],
}

pub(super) fn plan(req: &Request<'_>, s: &mut Schedule) -> Result<(), PlanError> {
    let n = req.n();
    if !n.is_power_of_two() {
        return Err(PlanError::NeedsPowerOfTwo {
            algorithm: req.algorithm.name(),
            n,
        });
    }
    let log = n.trailing_zeros();
    for (c, bytes) in split(req.bytes, req.channels).into_iter().enumerate() {
        let mut steps: Vec<(u32, Vec<u64>)> = Vec::new();
        match (req.algorithm, req.op) {
            (Algorithm::HalvingDoubling, Collective::AllReduce | Collective::ReduceScatter) => {
                // Each rank's segment [lo, hi) of the buffer.
                let mut seg = vec![(0u64, bytes); n as usize];
                for k in 0..log {
                    let d = n >> (k + 1);
                    let mut sent = vec![0; n as usize];
                    for i in 0..n as usize {
                        let (lo, hi) = seg[i];
                        let mid = lo + (hi - lo) / 2;
                        let keep_low = i as u32 & d == 0;
                        sent[i] = if keep_low { hi - mid } else { mid - lo };
                        seg[i] = if keep_low { (lo, mid) } else { (mid, hi) };
                    }
                    steps.push((d, sent));
                }
                if req.op == Collective::AllReduce {
                    for k in (0..log).rev() {
                        let d = n >> (k + 1);
                        let sent: Vec<u64> = seg.iter().map(|&(lo, hi)| hi - lo).collect();
                        let before = seg.clone();
                        for i in 0..n as usize {
                            let p = i ^ d as usize;
                            seg[i] = (before[i].0.min(before[p].0), before[i].1.max(before[p].1));
                        }
                        steps.push((d, sent));
                    }
                }
            }
            (Algorithm::RecursiveDoubling, Collective::AllReduce) => {
                for k in 0..log {
                    steps.push((1 << k, vec![bytes; n as usize]));
                }
            }
            (Algorithm::RecursiveDoubling, Collective::AllGather) => {
                let mut block = split(bytes, n);
                for k in 0..log {
                    let d = 1usize << k;
                    steps.push((d as u32, block.clone()));
                    let before = block.clone();
                    for i in 0..n as usize {
                        block[i] = before[i] + before[i ^ d];
                    }
                }
            }
            _ => unreachable!("checked by Algorithm::supports"),
        }
        let exchanges: Vec<Exchange<'_>> = steps
            .iter()
            .map(|(d, b)| Exchange {
                distance: *d,
                bytes: b,
            })
            .collect();
        run(s, n, c as u32, &exchanges);
    }
    Ok(())
}

fn run(s: &mut Schedule, n: u32, channel: u32, steps: &[Exchange<'_>]) {
    let mut received = vec![NONE; n as usize];
    let mut sent = vec![NONE; n as usize];
    let mut after = Vec::new();
    for step in steps {
        let group = s.add_group(
            Group {
                steps: 1,
                inter_steps: 1,
                fill: 0,
                chunks: 1,
            },
            std::mem::take(&mut after),
        );
        let mut got = vec![NONE; n as usize];
        let mut out = vec![NONE; n as usize];
        for i in 0..n {
            let p = i ^ step.distance;
            let t = Transfer {
                src: i,
                dst: p,
                bytes: step.bytes[i as usize],
                channel,
                path: Path::Direct,
                group,
                step_start: true,
            };
            let id = s.push(t, NONE, [received[i as usize], sent[i as usize]]);
            got[p as usize] = id;
            out[i as usize] = id;
        }
        received = got;
        sent = out;
        after.push(group);
    }
}
