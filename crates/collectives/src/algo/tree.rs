//! Trees, as NCCL builds them: inside a host the ranks form a chain; across hosts the chains'
//! heads form a balanced binary tree. The first half of the channels use one tree, the second
//! half its mirror image (the host sequence shifted by one), so most hosts are a leaf in one of
//! the two: the *double binary tree*. Each channel's head sits at local index `c mod k`, so
//! inter-host edges stay on one rail, and with 2k channels a NIC carries channel c of one tree
//! and channel c + k of the other (NCCL duplicates its channels and gives the copies the mirror
//! tree).
//!
//! All-reduce pipelines chunks up the tree (reduce) and back down (broadcast): 2·height steps on
//! the critical path; broadcast and reduce use one direction, rooted at rank 0.

use super::Request;
use crate::op::Collective;
use crate::schedule::{chunk_count, split, Group, Path, Schedule, Transfer, NONE};

/// The rank-level tree of one channel: each rank's parent ([`NONE`] for the root), and the ranks
/// from the root outward (parents before children).
struct Tree {
    parent: Vec<u32>,
    outward: Vec<u32>,
    height: u32,
    /// The most inter-host edges on a path from the root (the host tree's height).
    inter_height: u32,
}

fn balanced(lo: usize, hi: usize, parent_pos: &mut [usize], up: usize) {
    if lo >= hi {
        return;
    }
    let mid = lo + (hi - lo - 1) / 2;
    parent_pos[mid] = up;
    balanced(lo, mid, parent_pos, mid);
    balanced(mid + 1, hi, parent_pos, mid);
}

impl Tree {
    fn new(req: &Request<'_>, channel: u32, rooted: bool) -> Tree {
        let ranks = req.ranks;
        let hosts = ranks.hosts();
        let h = hosts.len();
        // Host sequence: shifted by one for odd channels; rotated so that rank 0's host is the
        // tree's root for rooted operations.
        let mut seq: Vec<usize> = (0..h).collect();
        if 2 * channel >= req.channels && req.channels > 1 {
            seq.rotate_left(1.min(h));
        }
        let root_pos = (h - 1) / 2;
        if rooted {
            let at = seq
                .iter()
                .position(|&x| x == ranks.host(0) as usize)
                .unwrap_or(0);
            seq.rotate_left((at + h - root_pos) % h);
        }
        let mut parent_pos = vec![usize::MAX; h];
        balanced(0, h, &mut parent_pos, usize::MAX);
        let head = |host: usize| -> usize {
            if rooted && host == ranks.host(0) as usize {
                ranks.local(0) as usize
            } else {
                channel as usize % hosts[host].len()
            }
        };
        let mut parent = vec![NONE; ranks.len()];
        for (pos, &host) in seq.iter().enumerate() {
            let local = &hosts[host];
            let start = head(host);
            let k = local.len();
            for t in 1..k {
                parent[local[(start + t) % k] as usize] = local[(start + t - 1) % k];
            }
            if parent_pos[pos] != usize::MAX {
                let up = seq[parent_pos[pos]];
                parent[local[start] as usize] = hosts[up][head(up)];
            }
        }
        // Breadth-first from the root.
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); ranks.len()];
        let mut root = 0;
        for (r, &p) in parent.iter().enumerate() {
            if p == NONE {
                root = r as u32;
            } else {
                children[p as usize].push(r as u32);
            }
        }
        let mut outward = vec![root];
        let mut depth = vec![0u32; ranks.len()];
        let mut inter = vec![0u32; ranks.len()];
        let mut i = 0;
        while i < outward.len() {
            let r = outward[i] as usize;
            for &c in &children[r] {
                depth[c as usize] = depth[r] + 1;
                inter[c as usize] = inter[r] + u32::from(!ranks.same_host(c, r as u32));
                outward.push(c);
            }
            i += 1;
        }
        let height = depth.iter().copied().max().unwrap_or(0);
        let inter_height = inter.iter().copied().max().unwrap_or(0);
        Tree {
            parent,
            outward,
            height,
            inter_height,
        }
    }
}

pub(super) fn plan(req: &Request<'_>, s: &mut Schedule) {
    let per_channel = split(req.bytes, req.channels);
    let (up, down) = match req.op {
        Collective::AllReduce => (true, true),
        Collective::Reduce => (true, false),
        Collective::Broadcast => (false, true),
        _ => unreachable!("checked by Algorithm::supports"),
    };
    let rooted = req.op != Collective::AllReduce;
    for c in 0..req.channels {
        let tree = Tree::new(req, c, rooted);
        let bytes = per_channel[c as usize];
        let passes = u32::from(up) + u32::from(down);
        let steps = tree.height * passes;
        let nominal = chunk_count(bytes, req.chunk);
        let group = s.add_group(Group {
            steps,
            inter_steps: tree.inter_height * passes,
            fill: steps.saturating_sub(1),
            chunks: nominal,
            after: Vec::new(),
        });
        let n = req.n() as usize;
        let edge = |src: u32, dst: u32, bytes: u64, step_start: bool, prev: u32| Transfer {
            src,
            dst,
            bytes,
            channel: c,
            path: Path::Direct,
            group,
            step_start,
            prev,
        };
        let chunks = if req.step() {
            split(bytes, nominal)
        } else {
            vec![bytes]
        };
        // Per rank: its last up transfer (to its parent) and down transfer (from its parent).
        let (mut last_up, mut last_down) = (vec![NONE; n], vec![NONE; n]);
        let mut received_up: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (j, &chunk) in chunks.iter().enumerate() {
            received_up.iter_mut().for_each(Vec::clear);
            if up {
                for &r in tree.outward.iter().rev() {
                    let p = tree.parent[r as usize];
                    if p == NONE {
                        continue;
                    }
                    let deps = std::mem::take(&mut received_up[r as usize]);
                    let id = s.push(edge(r, p, chunk, j == 0, last_up[r as usize]), deps);
                    last_up[r as usize] = id;
                    received_up[p as usize].push(id);
                }
            }
            if down {
                let root = tree.outward[0] as usize;
                let mut got = vec![NONE; n];
                for &r in &tree.outward[1..] {
                    let p = tree.parent[r as usize] as usize;
                    let deps: Vec<u32> = if p == root {
                        received_up[root].clone()
                    } else {
                        vec![got[p]]
                    };
                    let id = s.push(
                        edge(p as u32, r, chunk, j == 0, last_down[r as usize]),
                        deps,
                    );
                    last_down[r as usize] = id;
                    got[r as usize] = id;
                }
            }
        }
    }
}
