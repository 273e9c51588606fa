//! Trees, as NCCL builds them: inside a host the ranks form a chain; across hosts the chains'
//! heads form NCCL's binary tree ([`btree_parents`]). The first half of the channels use one
//! tree, the second half the other of NCCL's pair (mirrored or shifted), so every host is a
//! leaf in at least one of the two: the *double binary tree*. Each channel's head sits at local index `c mod k`, so
//! inter-host edges stay on one rail, and with 2k channels a NIC carries channel c of one tree
//! and channel c + k of the other (NCCL duplicates its channels and gives the copies the mirror
//! tree).
//!
//! All-reduce pipelines chunks up the tree (reduce) and back down (broadcast): 2·height steps on
//! the critical path; broadcast and reduce use one direction, rooted at rank 0.

use super::Request;
use crate::op::Collective;
use crate::schedule::{chunk_count, split, Group, Path, Pattern, Schedule, NONE};

/// The rank-level tree of one channel: each rank's parent ([`NONE`] for the root), and the ranks
/// from the root outward (parents before children).
struct Tree {
    parent: Vec<u32>,
    outward: Vec<u32>,
    height: u32,
    /// The most inter-host edges on a path from the root (the host tree's height).
    inter_height: u32,
}

/// The parent of each position of NCCL's binary tree over `n` positions (`src/graph/trees.cc`,
/// `ncclGetBtree`), `usize::MAX` for the root, position 0: a position's parent clears its lowest
/// set bit and sets the next one (`xx01·0 → xx10·0`), or only clears it when that is out of
/// range; leaves are the odd positions. With `second`, the other tree of NCCL's double binary
/// tree (`ncclGetDtree`): the first mirrored (position `n − 1 − p`) when `n` is even, shifted by
/// one when it is odd, so that every position is a leaf in at least one of the two.
pub(super) fn btree_parents(n: usize, second: bool) -> Vec<usize> {
    let first = |p: usize| -> usize {
        if p == 0 {
            return usize::MAX;
        }
        let bit = p & p.wrapping_neg();
        let up = (p ^ bit) | (bit << 1);
        if up >= n {
            p ^ bit
        } else {
            up
        }
    };
    (0..n)
        .map(|p| {
            if !second {
                first(p)
            } else if n % 2 == 1 {
                match first((p + n - 1) % n) {
                    usize::MAX => usize::MAX,
                    u => (u + 1) % n,
                }
            } else {
                match first(n - 1 - p) {
                    usize::MAX => usize::MAX,
                    u => n - 1 - u,
                }
            }
        })
        .collect()
}

impl Tree {
    fn new(req: &Request<'_>, channel: u32, rooted: bool) -> Tree {
        let ranks = req.ranks;
        let hosts = ranks.hosts();
        let h = hosts.len();
        // Hosts in order, rotated for rooted operations so that rank 0's host is the root
        // (position 0 of the first tree, which rooted operations use on every channel). The
        // second half of the channels run on the second tree of the pair.
        let mut seq: Vec<usize> = (0..h).collect();
        if rooted {
            seq.rotate_left(ranks.host(0) as usize % h.max(1));
        }
        let second = !rooted && req.channels > 1 && 2 * channel >= req.channels;
        let parent_pos = btree_parents(h, second);
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
        let group = s.add_group(
            Group {
                steps,
                inter_steps: tree.inter_height * passes,
                fill: steps.saturating_sub(1),
                chunks: nominal,
            },
            Vec::new(),
        );
        let n = req.n() as usize;
        // The edges every chunk crosses, each with the edges of its chunk it waits for: up
        // the tree from the leaves (a rank's send to its parent waits for its children's), then
        // down from the root (a send waits for the one into its sender; the root's, for every
        // send up into it).
        let mut pattern = Pattern::default();
        let mut received_up: Vec<Vec<u32>> = vec![Vec::new(); n];
        if up {
            for &r in tree.outward.iter().rev() {
                let p = tree.parent[r as usize];
                if p == NONE {
                    continue;
                }
                let deps = std::mem::take(&mut received_up[r as usize]);
                let q = pattern.add(r, p, Path::Direct, deps);
                received_up[p as usize].push(q);
            }
        }
        if down {
            let root = tree.outward[0] as usize;
            let mut got = vec![NONE; n];
            for &r in &tree.outward[1..] {
                let p = tree.parent[r as usize] as usize;
                let deps = if p == root {
                    received_up[root].clone()
                } else {
                    vec![got[p]]
                };
                got[r as usize] = pattern.add(p as u32, r, Path::Direct, deps);
            }
        }
        // Step fidelity: the bytes in chunks; pipelined: one transfer per edge.
        let chunks = if req.step() { nominal } else { 1 };
        s.push_pipeline(group, c, chunks, bytes, pattern);
    }
}

#[cfg(test)]
mod tests {
    use super::btree_parents;

    /// A parent per position but the root, no cycle, at most two children each, and every
    /// position but the two roots a leaf in at least one tree of the pair (what makes the
    /// double binary tree).
    #[test]
    fn double_binary_tree_as_nccl_builds_it() {
        for n in 1..200 {
            let trees = [btree_parents(n, false), btree_parents(n, true)];
            for parents in &trees {
                assert_eq!(parents.iter().filter(|&&p| p == usize::MAX).count(), 1);
                let mut children = vec![0; n];
                for &p in parents.iter().filter(|&&p| p != usize::MAX) {
                    children[p] += 1;
                }
                assert!(children.iter().all(|&c| c <= 2), "n {n}");
                for start in 0..n {
                    let (mut x, mut hops) = (start, 0);
                    while parents[x] != usize::MAX {
                        x = parents[x];
                        hops += 1;
                        assert!(hops <= n, "cycle at n {n}");
                    }
                }
            }
            let interior = |t: &Vec<usize>, x: usize| t.contains(&x);
            let root = |t: &Vec<usize>, x: usize| t[x] == usize::MAX;
            for x in (0..n).filter(|&x| !root(&trees[0], x) && !root(&trees[1], x)) {
                assert!(
                    !(interior(&trees[0], x) && interior(&trees[1], x)),
                    "position {x} of {n} is interior in both trees"
                );
            }
        }
        // NCCL's illustration for 14 ranks: 8 is the root's child, 4 and 12 under it.
        let t = btree_parents(14, false);
        assert_eq!((t[8], t[4], t[12], t[13], t[1]), (0, 8, 8, 12, 2));
    }
}
