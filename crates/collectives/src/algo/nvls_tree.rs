//! NVLS-tree, NCCL's all-reduce across NVSwitch hosts (`NCCL_ALGO=NVLSTree`): inside each host
//! the ranks reduce their channel's data through the NVSwitch into the channel's *head* (the
//! rank at local index `c mod k`, so the inter-host edges of a channel stay on one rail); the
//! heads all-reduce over a binary tree across hosts, the second half of the channels over its
//! mirror (as [`super::tree`]); each head multicasts the result back through the NVSwitch.
//!
//! Per rank and channel, for the channel's `S_c` bytes: `S_c` into the switch and `S_c` out of
//! it, and the head another `S_c` each way (its reduced copy and its multicast), so a GPU's
//! NVLink carries `S (1 + 1/k)` each way, as single-host NVLS does; each head's NIC carries the
//! tree's edges. Chunks pipeline through the four stages.

use super::tree::btree_parents;
use super::Request;
use crate::schedule::{chunk_count, split, Group, Path, Pattern, Schedule, NONE};
use crate::PlanError;

/// The host tree of one channel: each host's parent (`usize::MAX` for the root), the hosts from
/// the root outward, and its height.
fn host_tree(h: usize, channel: u32, channels: u32) -> (Vec<usize>, Vec<usize>, u32) {
    let parent = btree_parents(h, channels > 1 && 2 * channel >= channels);
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); h];
    let mut root = 0;
    for (x, &p) in parent.iter().enumerate() {
        if p == usize::MAX {
            root = x;
        } else {
            children[p].push(x);
        }
    }
    let mut outward = vec![root];
    let mut depth = vec![0u32; h];
    let mut i = 0;
    while i < outward.len() {
        let p = outward[i];
        for &x in &children[p] {
            depth[x] = depth[p] + 1;
            outward.push(x);
        }
        i += 1;
    }
    let height = depth.iter().copied().max().unwrap_or(0);
    (parent, outward, height)
}

pub(super) fn plan(req: &Request<'_>, s: &mut Schedule) -> Result<(), PlanError> {
    let hosts = req.ranks.hosts();
    let h = hosts.len();
    if h < 2 {
        return Err(PlanError::NvlsTreeOneHost);
    }
    for (c, bytes) in split(req.bytes, req.channels).into_iter().enumerate() {
        let c = c as u32;
        let (parent, outward, height) = host_tree(h, c, req.channels);
        let nominal = chunk_count(bytes, req.chunk);
        // NCCL charges NVLS-tree one NVLink step and 2·log2(hosts) network steps (`tuning.cc`).
        let group = s.add_group(
            Group {
                steps: 1 + 2 * height,
                inter_steps: 2 * height,
                fill: 2 * height,
                chunks: nominal,
            },
            Vec::new(),
        );
        let heads: Vec<u32> = hosts
            .iter()
            .map(|local| local[c as usize % local.len()])
            .collect();
        // The edges every chunk crosses, each with the edges of its chunk it waits for.
        let mut pattern = Pattern::default();
        // Inside each host: every rank into the switch, the reduction out to the head.
        let mut reduced = vec![NONE; h];
        for (x, local) in hosts.iter().enumerate() {
            let ups: Vec<u32> = local
                .iter()
                .map(|&r| pattern.add(r, r, Path::NvlsUp, Vec::new()))
                .collect();
            let hd = heads[x];
            reduced[x] = pattern.add(hd, hd, Path::NvlsDown, ups);
        }
        // Up the tree, leaves first: a head sends once its own reduction and its children's
        // sums have arrived.
        let mut from_children: Vec<Vec<u32>> = vec![Vec::new(); h];
        for &x in outward.iter().rev() {
            let p = parent[x];
            if p == usize::MAX {
                continue;
            }
            let mut deps = std::mem::take(&mut from_children[x]);
            deps.push(reduced[x]);
            let q = pattern.add(heads[x], heads[p], Path::Direct, deps);
            from_children[p].push(q);
        }
        // Down the tree from the root, then each head multicasts to its host.
        let root = outward[0];
        let mut have: Vec<Vec<u32>> = vec![Vec::new(); h];
        have[root] = std::mem::take(&mut from_children[root]);
        have[root].push(reduced[root]);
        for &x in &outward {
            let p = parent[x];
            if p != usize::MAX {
                let q = pattern.add(heads[p], heads[x], Path::Direct, have[p].clone());
                have[x] = vec![q];
            }
            let hd = heads[x];
            let cast = pattern.add(hd, hd, Path::NvlsUp, have[x].clone());
            for &r in &hosts[x] {
                pattern.add(r, r, Path::NvlsDown, vec![cast]);
            }
        }
        // Step fidelity: the bytes in chunks; pipelined: one transfer per edge.
        let chunks = if req.step() { nominal } else { 1 };
        s.push_pipeline(group, c, chunks, bytes, pattern);
    }
    Ok(())
}
