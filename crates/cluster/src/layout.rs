//! How a trace's ranks are laid onto the GPUs its job was given.
//!
//! A Chakra trace names ranks, not GPUs. A job launched with tensor parallelism innermost
//! (Megatron-LM's and torchrun's convention) numbers each tensor-parallel group's ranks
//! consecutively, so laying rank `i` on the `i`-th GPU placed (`trace` order) keeps the group
//! inside a host's NVLink domain. A trace numbered otherwise spreads its busiest communicator
//! over the network: symbolic_tensor_graph numbers data parallelism innermost, so a trace of
//! TP 8 from it has each tensor-parallel group on eight hosts. `communicators` lays the ranks
//! by what they send instead, as a launcher that puts the busiest parallelism inside the
//! NVLink domain would (MAST lays a job's parallelism onto the topology the same way):
//!
//! 1. each communicator's *intensity* is the bytes its members issue on it, per member (a
//!    point-to-point pair counts as a communicator of two);
//! 2. from the most intense down, a communicator's ranks are joined into one cluster when all
//!    the clusters they are in fit in one host together (no partial joins);
//! 3. clusters go into the first host with room in the order they were formed, so the busiest
//!    communicator's first (a cluster no host has room for fills the free GPUs in order).
//!
//! Communicators alike in intensity are taken in the order of their lowest rank.
//!
//! Ranks that share no cluster keep the trace's relative order, so the next parallelism (data
//! or pipeline) lands on neighbouring hosts, in one rack as far as the placement allows.

use fabricsim_topology::{NodeId, Topology};
use fabricsim_workload::{OpKind, Workload};
use rustc_hash::FxHashMap;

/// How ranks go onto the GPUs placed for the job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RankLayout {
    /// Rank `i` on the `i`-th GPU placed.
    #[default]
    Trace,
    /// The busiest communicators that fit in a host inside one (module docs).
    Communicators,
}

impl RankLayout {
    pub fn parse(s: &str) -> Option<RankLayout> {
        match s {
            "trace" => Some(RankLayout::Trace),
            "communicators" => Some(RankLayout::Communicators),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RankLayout::Trace => "trace",
            RankLayout::Communicators => "communicators",
        }
    }
}

/// A set of ranks that talk, and the bytes each member sends on it.
struct Communicator {
    ranks: Vec<u32>,
    intensity: f64,
    /// Its name, for the warning (a pair is named by its ranks).
    name: String,
}

/// Every communicator and point-to-point pair of `w`, most intense first (ties by lowest rank,
/// then name), with at least two ranks and some bytes.
fn communicators(w: &Workload) -> Vec<Communicator> {
    // Bytes per (program, slot), summed once per program rather than once per rank.
    let mut group_bytes = vec![0.0; w.groups.len()];
    let mut pairs: FxHashMap<(u32, u32), f64> = FxHashMap::default();
    let per_program: Vec<(Vec<f64>, Vec<f64>)> = w
        .programs
        .iter()
        .map(|p| {
            let mut slots = vec![0.0; usize::from(p.group_slots)];
            let mut peers = vec![0.0; usize::from(p.peer_slots)];
            for op in &p.ops {
                match op.kind {
                    OpKind::Collective { bytes, group, .. } => {
                        slots[usize::from(group)] += bytes as f64
                    }
                    OpKind::Send { peer, bytes, .. } => peers[usize::from(peer)] += bytes as f64,
                    _ => {}
                }
            }
            (slots, peers)
        })
        .collect();
    for (r, b) in w.ranks.iter().enumerate() {
        let (slots, peers) = &per_program[b.program as usize];
        for (&g, &bytes) in b.groups.iter().zip(slots) {
            group_bytes[g as usize] += bytes;
        }
        for (&q, &bytes) in b.peers.iter().zip(peers) {
            let r = r as u32;
            if bytes > 0.0 && q != r {
                *pairs.entry((r.min(q), r.max(q))).or_default() += bytes;
            }
        }
    }
    let mut all: Vec<Communicator> = w
        .groups
        .iter()
        .zip(&group_bytes)
        .filter(|(g, &bytes)| g.ranks.len() > 1 && bytes > 0.0)
        .map(|(g, &bytes)| Communicator {
            ranks: g.ranks.clone(),
            intensity: bytes / g.ranks.len() as f64,
            name: g.name.clone(),
        })
        .collect();
    all.extend(pairs.into_iter().map(|((a, b), bytes)| Communicator {
        ranks: vec![a, b],
        intensity: bytes / 2.0,
        name: format!("{a}<->{b}"),
    }));
    all.sort_by(|a, b| {
        b.intensity
            .total_cmp(&a.intensity)
            .then_with(|| a.ranks.iter().min().cmp(&b.ranks.iter().min()))
            .then_with(|| a.name.cmp(&b.name))
    });
    all
}

/// The sizes of the runs of consecutive GPUs of `gpus` on one host (a GPU without a host is a
/// run of its own).
fn host_runs(topo: &Topology, gpus: &[NodeId]) -> Vec<usize> {
    let mut runs: Vec<usize> = Vec::new();
    let mut last = None;
    for &g in gpus {
        let host = topo.host_of(g);
        if host.is_some() && host == last {
            *runs.last_mut().expect("a run is open") += 1;
        } else {
            runs.push(1);
        }
        last = host;
    }
    runs
}

/// How many hosts the GPUs of `ranks` (rank `r` on `gpus[r]`) lie in.
fn hosts_spanned(topo: &Topology, gpus: &[NodeId], ranks: &[u32]) -> usize {
    let mut hosts: Vec<_> = ranks
        .iter()
        .map(|&r| topo.host_of(gpus[r as usize]))
        .collect();
    hosts.sort_unstable();
    hosts.dedup();
    hosts.len()
}

fn find(parent: &mut [u32], mut r: u32) -> u32 {
    while parent[r as usize] != r {
        let up = parent[parent[r as usize] as usize];
        parent[r as usize] = up;
        r = up;
    }
    r
}

/// The GPUs of `w`'s ranks laid by their communicators onto `gpus` (module docs): the result's
/// `i`-th GPU is rank `i`'s. Deterministic: it depends on the workload and the GPUs alone.
pub fn by_communicators(topo: &Topology, w: &Workload, gpus: &[NodeId]) -> Vec<NodeId> {
    let n = gpus.len();
    debug_assert_eq!(n, w.rank_count());
    let runs = host_runs(topo, gpus);
    let fit = runs.iter().copied().max().unwrap_or(1);
    let mut parent: Vec<u32> = (0..n as u32).collect();
    let mut size = vec![1usize; n];
    // Per cluster (at its root): when it was formed, by the communicator that joined it first.
    let mut formed = vec![usize::MAX; n];
    let mut roots = Vec::new();
    for (i, c) in communicators(w).into_iter().enumerate() {
        roots.clear();
        roots.extend(c.ranks.iter().map(|&r| find(&mut parent, r)));
        roots.sort_unstable();
        roots.dedup();
        if roots.len() < 2 || roots.iter().map(|&r| size[r as usize]).sum::<usize>() > fit {
            continue;
        }
        let top = roots[0];
        formed[top as usize] = roots
            .iter()
            .map(|&r| formed[r as usize])
            .fold(i, usize::min);
        for &r in &roots[1..] {
            parent[r as usize] = top;
            size[top as usize] += size[r as usize];
        }
    }
    // Clusters in the order they were formed (ranks alone last, in order), each its ranks in
    // order.
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); n];
    for r in 0..n as u32 {
        let root = find(&mut parent, r);
        members[root as usize].push(r);
    }
    let mut clusters: Vec<(usize, &Vec<u32>)> = members
        .iter()
        .enumerate()
        .filter(|(_, m)| !m.is_empty())
        .map(|(root, m)| (formed[root], m))
        .collect();
    clusters.sort_unstable_by_key(|&(formed, m)| (formed, m[0]));
    // Hosts' runs as (first slot, room left).
    let mut room: Vec<(usize, usize)> = runs
        .iter()
        .scan(0, |at, &len| {
            let run = (*at, len);
            *at += len;
            Some(run)
        })
        .collect();
    let mut slot_of = vec![usize::MAX; n];
    let (mut alone, mut spill) = (Vec::new(), Vec::new());
    // Hosts before `open` are full: equal clusters, the usual case, each find theirs at once.
    let mut open = 0;
    for (formed, m) in clusters {
        if formed == usize::MAX {
            // A rank alone goes to the first free GPU, as first fit would put it: they come
            // last, in rank order, so they fill what the clusters left, in order.
            alone.push(m[0]);
            continue;
        }
        while room.get(open).is_some_and(|&(_, left)| left == 0) {
            open += 1;
        }
        match room[open..].iter_mut().find(|(_, left)| *left >= m.len()) {
            Some((at, left)) => {
                for &r in m {
                    slot_of[r as usize] = *at;
                    *at += 1;
                }
                *left -= m.len();
            }
            None => spill.extend_from_slice(m),
        }
    }
    let mut free = room.iter().flat_map(|&(at, left)| at..at + left);
    for r in alone.into_iter().chain(spill) {
        slot_of[r as usize] = free.next().expect("as many slots as ranks");
    }
    slot_of.iter().map(|&s| gpus[s]).collect()
}

/// A warning when the most intense communicator that would fit in one host is spread over
/// several by this placement, with the hint to lay the ranks by their communicators.
pub fn split_communicator(topo: &Topology, w: &Workload, gpus: &[NodeId]) -> Option<String> {
    let fit = host_runs(topo, gpus).into_iter().max().unwrap_or(1);
    let c = communicators(w)
        .into_iter()
        .find(|c| c.ranks.len() <= fit)?;
    let hosts = hosts_spanned(topo, gpus, &c.ranks);
    (hosts > 1).then(|| {
        format!(
            "communicator `{}` ({} ranks, the most bytes per rank of those that fit in a host) \
             spans {} hosts in the trace's rank order; laying the ranks by their communicators \
             (`--ranks communicators`, or `ranks = \"communicators\"` in `[job.chakra]`) keeps \
             the busiest inside hosts",
            c.name,
            c.ranks.len(),
            hosts
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabricsim_collectives::Collective;
    use fabricsim_topology::presets;
    use fabricsim_workload::{Binding, Group, Op, Program};

    /// TP 8 × DP 4 with `tp_stride` between a tensor-parallel group's ranks (1: TP innermost,
    /// 4: DP innermost, as symbolic_tensor_graph numbers them): an all-gather of 1 GiB on the
    /// TP group and an all-reduce of 1 MiB on the DP group, then a send to the next DP rank.
    fn tp8_dp4(tp_stride: u32) -> Workload {
        let dp_stride = if tp_stride == 1 { 8 } else { 1 };
        let rank = |tp: u32, dp: u32| tp * tp_stride + dp * dp_stride;
        let mut p = Program::new();
        let coll = |op, bytes, group| OpKind::Collective { op, bytes, group };
        let tp = p.push(
            Op {
                id: 0,
                label: 0,
                kind: coll(Collective::AllGather, 1 << 30, 0),
            },
            &[],
        );
        let dp = p.push(
            Op {
                id: 1,
                label: 0,
                kind: coll(Collective::AllReduce, 1 << 20, 1),
            },
            &[tp],
        );
        p.push(
            Op {
                id: 2,
                label: 0,
                kind: OpKind::Send {
                    peer: 0,
                    bytes: 1 << 10,
                    tag: 0,
                },
            },
            &[dp],
        );
        let mut groups = Vec::new();
        for d in 0..4 {
            let ranks = (0..8).map(|t| rank(t, d)).collect();
            groups.push(Group {
                name: format!("tp{d}"),
                ranks,
            });
        }
        for t in 0..8 {
            let ranks = (0..4).map(|d| rank(t, d)).collect();
            groups.push(Group {
                name: format!("dp{t}"),
                ranks,
            });
        }
        let mut ranks = vec![Binding::default(); 32];
        for t in 0..8 {
            for d in 0..4 {
                ranks[rank(t, d) as usize] = Binding {
                    program: 0,
                    groups: vec![d, 4 + t],
                    peers: vec![rank(t, (d + 1) % 4)],
                };
            }
        }
        Workload {
            name: "tp8-dp4".into(),
            labels: vec!["op".into()],
            programs: vec![p],
            ranks,
            groups,
            ..Workload::default()
        }
    }

    fn placed(topo: &Topology, n: usize) -> Vec<NodeId> {
        let mut used = vec![false; topo.node_count()];
        crate::placement::place(topo, &mut used, n, &crate::placement::Placement::Packed).unwrap()
    }

    fn hosts_of(topo: &Topology, w: &Workload, gpus: &[NodeId], group: usize) -> usize {
        hosts_spanned(topo, gpus, &w.groups[group].ranks)
    }

    #[test]
    fn a_trace_numbered_dp_innermost_gets_its_tensor_parallel_groups_inside_hosts() {
        let topo = presets::build("meta-ai-zone", &[]).unwrap();
        let w = tp8_dp4(4);
        let gpus = placed(&topo, 32);
        // In the trace's order each TP group spans the job's four hosts, and the warning says so.
        assert!((0..4).all(|g| hosts_of(&topo, &w, &gpus, g) == 4));
        let warning = split_communicator(&topo, &w, &gpus).expect("a warning");
        assert!(warning.contains("`tp0` (8 ranks") && warning.contains("spans 4 hosts"));

        let laid = by_communicators(&topo, &w, &gpus);
        assert!((0..4).all(|g| hosts_of(&topo, &w, &laid, g) == 1));
        assert_eq!(split_communicator(&topo, &w, &laid), None);
        // The same GPUs, each once; the TP groups in the order of their lowest rank.
        let (mut a, mut b) = (gpus.clone(), laid.clone());
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        assert_eq!(laid[0], gpus[0]);
        assert_eq!(
            laid[4], gpus[1],
            "rank 4 is the second of rank 0's TP group"
        );
    }

    #[test]
    fn a_trace_laid_well_already_keeps_its_order() {
        let topo = presets::build("meta-ai-zone", &[]).unwrap();
        let w = tp8_dp4(1);
        let gpus = placed(&topo, 32);
        assert_eq!(split_communicator(&topo, &w, &gpus), None);
        assert_eq!(by_communicators(&topo, &w, &gpus), gpus);
    }

    /// A workload of `n` ranks, each its own program, running an all-reduce of `bytes` on each
    /// group it is in.
    fn groups_of(n: u32, groups: &[(Vec<u32>, u64)]) -> Workload {
        let mut w = Workload {
            name: "random".into(),
            labels: vec!["op".into()],
            ..Workload::default()
        };
        for r in 0..n {
            let mut p = Program::new();
            let mut binding = Binding {
                program: r,
                ..Binding::default()
            };
            for (g, (members, bytes)) in groups.iter().enumerate() {
                if members.contains(&r) {
                    p.push(
                        Op {
                            id: g as u64,
                            label: 0,
                            kind: OpKind::Collective {
                                op: Collective::AllReduce,
                                bytes: *bytes,
                                group: binding.groups.len() as u16,
                            },
                        },
                        &[],
                    );
                    binding.groups.push(g as u32);
                }
            }
            w.programs.push(p);
            w.ranks.push(binding);
        }
        w.groups = groups
            .iter()
            .enumerate()
            .map(|(g, (ranks, _))| Group {
                name: format!("g{g}"),
                ranks: ranks.clone(),
            })
            .collect();
        w
    }

    /// Two clusters of five formed after the busiest one, of four, on 14 GPUs (hosts of 8 and
    /// 6): placed first, the busiest shares a host; the last cluster no host has room for
    /// fills the free GPUs.
    #[test]
    fn the_busiest_communicator_is_placed_first() {
        let topo = presets::build("meta-ai-zone", &[]).unwrap();
        let groups = vec![
            ((4..9).collect(), 1 << 20),
            ((9..14).collect(), 1 << 20),
            (vec![0, 1, 2, 3], 1 << 30),
        ];
        let w = groups_of(14, &groups);
        let laid = by_communicators(&topo, &w, &placed(&topo, 14));
        assert_eq!(hosts_of(&topo, &w, &laid, 2), 1);
        assert_eq!(hosts_of(&topo, &w, &laid, 0), 1);
        assert_eq!(hosts_of(&topo, &w, &laid, 1), 2);
    }

    proptest::proptest! {
        /// Any communicators on any number of ranks: the layout uses each GPU placed once, is
        /// the same every time, and puts the busiest communicator that fits in a host inside
        /// one (it is joined first, and placed first).
        #[test]
        fn a_layout_is_a_deterministic_permutation(
            n in 1u32..40,
            raw in proptest::collection::vec(
                (proptest::collection::btree_set(0u32..40, 1..12), 1u64..1 << 30),
                0..8,
            ),
        ) {
            let topo = presets::build("meta-ai-zone", &[]).unwrap();
            let groups: Vec<(Vec<u32>, u64)> = raw
                .into_iter()
                .map(|(set, bytes)| (set.into_iter().filter(|&r| r < n).collect::<Vec<_>>(), bytes))
                .filter(|(ranks, _)| !ranks.is_empty())
                .collect();
            let w = groups_of(n, &groups);
            let gpus = placed(&topo, n as usize);
            let laid = by_communicators(&topo, &w, &gpus);
            proptest::prop_assert_eq!(&laid, &by_communicators(&topo, &w, &gpus));
            let (mut a, mut b) = (gpus.clone(), laid.clone());
            a.sort_unstable();
            b.sort_unstable();
            proptest::prop_assert_eq!(a, b);
            let busiest = communicators(&w).into_iter().find(|c| c.ranks.len() <= 8);
            if let Some(c) = busiest {
                let g = w.groups.iter().position(|g| g.name == c.name);
                if let Some(g) = g {
                    proptest::prop_assert_eq!(hosts_of(&topo, &w, &laid, g), 1);
                }
            }
        }
    }

    #[test]
    fn communicators_wider_than_a_host_are_not_joined() {
        let topo = presets::build("meta-ai-zone", &[]).unwrap();
        let mut w = tp8_dp4(4);
        // One communicator of all 32 ranks, the busiest: it fits in no host and is passed
        // over; the TP groups are still joined.
        w.groups.push(Group {
            name: "world".into(),
            ranks: (0..32).collect(),
        });
        w.programs[0].push(
            Op {
                id: 3,
                label: 0,
                kind: OpKind::Collective {
                    op: Collective::AllToAll,
                    bytes: 1 << 40,
                    group: 2,
                },
            },
            &[],
        );
        for b in &mut w.ranks {
            b.groups.push(12);
        }
        let laid = by_communicators(&topo, &w, &placed(&topo, 32));
        assert!((0..4).all(|g| hosts_of(&topo, &w, &laid, g) == 1));
    }
}
