//! Rings, multi-channel and rail-aligned: in channel `c` each host's ranks are chained over
//! NVLink starting at its `c mod k`-th rank (the *entry*), and the ring leaves the host through
//! the entry's NIC: the last local rank hands its bytes over NVLink to the entry GPU, which sends
//! them to the next host's entry (NCCL's rings, `src/graph/search.cc`: each channel enters and
//! leaves a host through the same NIC; the NVLink leg stands for the PXN / PCIe hop to that
//! NIC). Different channels start at different GPUs, so all NICs carry traffic.
//!
//! All-reduce is reduce-scatter then all-gather: 2(n−1) steps, each moving one of n pieces of
//! the channel's bytes; all-gather and reduce-scatter are n−1 steps. Broadcast and reduce use the
//! ring as a chain from (to) the root, pipelined in chunks.

use rustc_hash::FxHashMap;

use super::Request;
use crate::layout::Ranks;
use crate::op::Collective;
use crate::schedule::{
    chunk_count, edge_totals, split, Group, Path, Pattern, Schedule, Transfer, NONE,
};

/// A ring of some ranks in one channel: positions, and the path of the edge leaving each.
pub(super) struct Ring {
    pub order: Vec<u32>,
    pub paths: Vec<Path>,
    pub channel: u32,
    /// Hosts the ring spans: as many of its edges cross the network when more than one.
    pub hosts: u32,
}

/// Some ranks grouped by host, hosts in order of first appearance, ranks in their order: what
/// every channel's ring is built from.
pub(super) struct HostGroups {
    /// The ranks, host after host.
    ranks: Vec<u32>,
    /// Where each host's ranks start in `ranks`, and their end.
    starts: Vec<u32>,
}

impl HostGroups {
    pub fn new(ranks: &Ranks, members: &[u32]) -> HostGroups {
        // Each host's slot found by a map: a scan of the hosts so far made a ring over thousands
        // of hosts quadratic to build.
        let mut slot_of: FxHashMap<u32, u32> = FxHashMap::default();
        let mut counts: Vec<u32> = Vec::new();
        let slots: Vec<u32> = members
            .iter()
            .map(|&r| {
                let slot = *slot_of.entry(ranks.host(r)).or_insert_with(|| {
                    counts.push(0);
                    counts.len() as u32 - 1
                });
                counts[slot as usize] += 1;
                slot
            })
            .collect();
        let mut starts = Vec::with_capacity(counts.len() + 1);
        let mut at = 0;
        starts.push(0);
        for c in &mut counts {
            let count = *c;
            *c = at;
            at += count;
            starts.push(at);
        }
        let mut grouped = vec![0; members.len()];
        for (&r, &slot) in members.iter().zip(&slots) {
            grouped[counts[slot as usize] as usize] = r;
            counts[slot as usize] += 1;
        }
        HostGroups {
            ranks: grouped,
            starts,
        }
    }

    fn hosts(&self) -> impl Iterator<Item = &[u32]> {
        self.starts
            .windows(2)
            .map(|w| &self.ranks[w[0] as usize..w[1] as usize])
    }

    /// The rail-aligned ring of these ranks in `channel` (see the module docs).
    pub fn ring(&self, channel: u32) -> Ring {
        let mut order = Vec::with_capacity(self.ranks.len());
        let mut paths = Vec::with_capacity(self.ranks.len());
        let multi_host = self.starts.len() > 2;
        for local in self.hosts() {
            let k = local.len();
            let start = channel as usize % k;
            let entry = local[start];
            for t in 0..k {
                let from = local[(start + t) % k];
                order.push(from);
                paths.push(if t + 1 == k && multi_host && from != entry {
                    Path::Via(entry)
                } else {
                    Path::Direct
                });
            }
        }
        Ring {
            order,
            paths,
            channel,
            hosts: self.starts.len() as u32 - 1,
        }
    }
}

impl Ring {
    /// The rail-aligned ring of `members` in `channel` (see the module docs).
    pub fn new(ranks: &Ranks, members: &[u32], channel: u32) -> Ring {
        HostGroups::new(ranks, members).ring(channel)
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    fn edge(&self, i: usize, bytes: u64, group: u32, step_start: bool) -> Transfer {
        let n = self.len();
        Transfer {
            src: self.order[i],
            dst: self.order[(i + 1) % n],
            bytes,
            channel: self.channel,
            path: self.paths[i],
            group,
            step_start,
        }
    }

    /// `steps` ring steps over `pieces` (one per position): at step `k` position `i` sends
    /// piece `(i - k) mod n` to position `i + 1`. Step mode: each step waits for the previous
    /// step's arrival from the sender's predecessor and for the sender's own previous send to
    /// have left (a connection streams its steps back to back, as NCCL's `NCCL_STEPS` slots
    /// allow); the first step of position `i` waits for `entry[order[i]]` (by rank, [`NONE`] for
    /// nothing). Pipelined: one transfer per edge with all its bytes, in a new group after
    /// `after`. Returns, per rank, the last transfer it receives.
    pub fn pass(
        &self,
        req: &Request<'_>,
        s: &mut Schedule,
        pieces: &[u64],
        steps: u32,
        entry: Option<&[u32]>,
        after: Vec<u32>,
    ) -> Vec<u32> {
        let n = self.len();
        // NCCL's count of network steps (`tuning.cc`, `nInterSteps`): 2(h − 1) of an
        // all-reduce's 2(n − 1) steps, h − 1 of an all-gather's n − 1.
        let inter_steps = if self.hosts > 1 && n > 1 {
            (u64::from(steps) * u64::from(self.hosts - 1) / (n as u64 - 1)) as u32
        } else {
            0
        };
        let group = s.add_group(
            Group {
                steps,
                inter_steps,
                fill: 0,
                chunks: steps,
            },
            after,
        );
        if req.step() {
            // In closed form: a ring's steps are n per step and channel, held as its positions.
            let entry = entry.map_or_else(Vec::new, |e| {
                self.order.iter().map(|&r| e[r as usize]).collect()
            });
            return s.push_ring_steps(
                group,
                self.channel,
                steps,
                self.order.clone(),
                self.paths.clone(),
                pieces.to_vec(),
                entry,
                req.n() as usize,
            );
        }
        let mut last = vec![NONE; req.n() as usize];
        for (i, bytes) in edge_totals(pieces, steps).enumerate() {
            let id = s.push(self.edge(i, bytes, group, true), NONE, [NONE]);
            last[self.order[(i + 1) % n] as usize] = id;
        }
        last
    }

    /// The ring as a chain from position 0 (or, `toward_root`, to it), `bytes` in chunks.
    pub fn chain(&self, req: &Request<'_>, s: &mut Schedule, bytes: u64, toward_root: bool) {
        let n = self.len();
        let hops = (n - 1) as u32;
        let nominal = chunk_count(bytes, req.chunk);
        let group = s.add_group(
            Group {
                steps: hops,
                inter_steps: self.hosts.saturating_sub(1),
                fill: hops - 1,
                chunks: nominal,
            },
            Vec::new(),
        );
        // Edge e of the chain in sending order: position e -> e+1 outward, e+1 -> e inward
        // (inward edges stay inside a host or go straight between entries); each waits for the
        // one before it in its chunk.
        let order: Vec<usize> = if toward_root {
            (0..n - 1).rev().collect()
        } else {
            (0..n - 1).collect()
        };
        let mut pattern = Pattern::default();
        for (q, &e) in order.iter().enumerate() {
            let t = self.edge(e, 0, group, false);
            let (src, dst, path) = if toward_root {
                (t.dst, t.src, Path::Direct)
            } else {
                (t.src, t.dst, t.path)
            };
            let upstream = if q == 0 {
                Vec::new()
            } else {
                vec![q as u32 - 1]
            };
            pattern.add(src, dst, path, upstream);
        }
        // Step fidelity: the bytes in chunks; pipelined: one transfer per edge.
        let chunks = if req.step() { nominal } else { 1 };
        s.push_pipeline(group, self.channel, chunks, bytes, pattern);
    }
}

pub(super) fn plan(req: &Request<'_>, s: &mut Schedule) {
    let n = req.n();
    let all: Vec<u32> = (0..n).collect();
    let hosts = HostGroups::new(req.ranks, &all);
    let per_channel = split(req.bytes, req.channels);
    if !req.step() {
        // One transfer per edge and channel.
        s.reserve(req.channels as usize * n as usize);
    }
    for c in 0..req.channels {
        let ring = hosts.ring(c);
        let bytes = per_channel[c as usize];
        match req.op {
            Collective::AllReduce => {
                ring.pass(req, s, &split(bytes, n), 2 * (n - 1), None, Vec::new());
            }
            Collective::AllGather | Collective::ReduceScatter => {
                ring.pass(req, s, &split(bytes, n), n - 1, None, Vec::new());
            }
            Collective::Broadcast | Collective::Reduce => {
                let rooted = rotate_to_root(ring);
                rooted.chain(req, s, bytes, req.op == Collective::Reduce);
            }
            _ => unreachable!("checked by Algorithm::supports"),
        }
    }
}

/// The ring rotated so that rank 0 (the root) is at position 0.
fn rotate_to_root(mut ring: Ring) -> Ring {
    let at = ring.order.iter().position(|&r| r == 0).unwrap_or(0);
    ring.order.rotate_left(at);
    ring.paths.rotate_left(at);
    ring
}
