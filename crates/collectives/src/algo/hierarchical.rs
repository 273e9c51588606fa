//! Hierarchical all-reduce: reduce-scatter among the k ranks of each host (NVLink ring), then an
//! all-reduce of each 1/k shard among the ranks on the same rail across hosts (a network ring per
//! local index, so every NIC carries one rail), then an all-gather inside each host. Needs the
//! same number of ranks on every host.

use super::ring::Ring;
use super::Request;
use crate::schedule::{split, Schedule};
use crate::PlanError;

pub(super) fn plan(req: &Request<'_>, s: &mut Schedule) -> Result<(), PlanError> {
    let ranks = req.ranks;
    let k = ranks.uniform_per_host().ok_or(PlanError::UnevenHosts)? as u32;
    let hosts = ranks.hosts();
    let h = hosts.len() as u32;
    for (c, bytes) in split(req.bytes, req.channels).into_iter().enumerate() {
        let c = c as u32;
        let pieces = split(bytes, k);
        // Phase 1: reduce-scatter inside each host. Position i of a host ring ends up owning
        // piece (i + 1) mod k (see `Ring::pass`).
        let mut last = vec![crate::schedule::NONE; ranks.len()];
        let mut groups = Vec::new();
        if k > 1 {
            for local in hosts {
                let ring = Ring::new(ranks, local, c);
                let got = ring.pass(req, s, &pieces, k - 1, None, Vec::new());
                merge(&mut last, &got);
                groups.push(s.groups.len() as u32 - 1);
            }
        }
        // Phase 2: all-reduce of each shard across hosts, one ring per local index.
        let mut phase2 = Vec::new();
        if h > 1 {
            for l in 0..k {
                let members: Vec<u32> = hosts.iter().map(|local| local[l as usize]).collect();
                let position = (l + k - c % k) % k;
                let shard = pieces[((position + 1) % k) as usize];
                let ring = Ring::new(ranks, &members, c);
                let got = ring.pass(
                    req,
                    s,
                    &split(shard, h),
                    2 * (h - 1),
                    Some(&last),
                    groups.clone(),
                );
                phase2.push((got, s.groups.len() as u32 - 1));
            }
        }
        let mut after = groups;
        for (got, g) in phase2 {
            merge(&mut last, &got);
            after.push(g);
        }
        // Phase 3: all-gather inside each host.
        if k > 1 {
            for local in hosts {
                let ring = Ring::new(ranks, local, c);
                ring.pass(req, s, &pieces, k - 1, Some(&last), after.clone());
            }
        }
    }
    Ok(())
}

/// Keeps, per rank, the transfer received in `got` where there is one.
fn merge(last: &mut [u32], got: &[u32]) {
    for (l, &g) in last.iter_mut().zip(got) {
        if g != crate::schedule::NONE {
            *l = g;
        }
    }
}
