//! NVLS: reduction and multicast in the host's NVSwitch (NCCL's NVLS algorithm,
//! `src/device/all_reduce.h`). A rank pushes its data into the switch and the switch returns
//! results; no GPU forwards for another.
//!
//! Per rank, for a buffer of `S` bytes split into n slices: all-reduce reads every slice through
//! the switch for its reduction (S up), returns the rank's reduced slice (S/n down), which the
//! rank multicasts (S/n up) to everyone (S down): S + S/n each way. All-gather: the rank's slice
//! up, the other slices down. Reduce-scatter: S up, the rank's reduced slice down. Chunks
//! pipeline: a chunk comes down once every rank has pushed it up. Only inside one NVSwitch
//! domain: across hosts use `nvls-tree` (NVLS inside each host, a tree across, as NCCL does).

use super::Request;
use crate::op::Collective;
use crate::schedule::{chunk_count, split, Group, Path, Schedule, Transfer, NONE};
use crate::PlanError;

pub(super) fn plan(req: &Request<'_>, s: &mut Schedule) -> Result<(), PlanError> {
    if req.ranks.hosts().len() > 1 {
        return Err(PlanError::NvlsSpansHosts {
            hosts: req.ranks.hosts().len(),
        });
    }
    let n = req.n();
    for (c, bytes) in split(req.bytes, req.channels).into_iter().enumerate() {
        let nominal = chunk_count(bytes, req.chunk);
        // NCCL charges an NVLS collective one step, its NVLink latency (25 µs, `tuning.cc`).
        let group = s.add_group(
            Group {
                steps: 1,
                inter_steps: 0,
                fill: 1,
                chunks: nominal,
            },
            Vec::new(),
        );
        let chunks = if req.step() {
            split(bytes, nominal)
        } else {
            vec![bytes]
        };
        let (mut last_up, mut last_down) = (vec![NONE; n as usize], vec![NONE; n as usize]);
        for (j, &chunk) in chunks.iter().enumerate() {
            let slices = split(chunk, n);
            let volume = |i: usize| -> (u64, u64) {
                match req.op {
                    Collective::AllReduce => (chunk + slices[i], slices[i] + chunk),
                    Collective::AllGather => (slices[i], chunk - slices[i]),
                    Collective::ReduceScatter => (chunk, slices[i]),
                    _ => unreachable!("checked by Algorithm::supports"),
                }
            };
            let t = |r: u32, bytes: u64, path: Path| Transfer {
                src: r,
                dst: r,
                bytes,
                channel: c as u32,
                path,
                group,
                step_start: j == 0,
            };
            let ups: Vec<u32> = (0..n)
                .map(|r| {
                    let id = s.push(
                        t(r, volume(r as usize).0, Path::NvlsUp),
                        last_up[r as usize],
                        [NONE],
                    );
                    last_up[r as usize] = id;
                    id
                })
                .collect();
            for r in 0..n {
                let id = s.push(
                    t(r, volume(r as usize).1, Path::NvlsDown),
                    last_down[r as usize],
                    ups.iter().copied(),
                );
                last_down[r as usize] = id;
            }
        }
    }
    Ok(())
}
