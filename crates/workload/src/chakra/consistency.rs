//! Whether a trace's ranks agree with each other: every send has its receive, of the same size,
//! and every member of a communicator issues the same collectives on it, in the same order and
//! of the same size. Ops are compared in file order, which is issue order for the traces
//! producers write (a topological order). A group's lowest rank is the reference its other
//! members are compared with. What disagrees is reported as a [`Warning`] on the
//! file of the rank that disagrees; `--strict` (or `strict = true` in a scenario) makes them
//! errors.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::Warning;
use crate::graph::{OpKind, Workload};

/// At most this many disagreements are reported one by one; the rest are counted.
const SHOWN: usize = 8;

/// Per communicator, per member rank: the collectives it issues on it (name, bytes), in order.
type Issued = BTreeMap<u32, BTreeMap<u32, Vec<(&'static str, u64)>>>;

/// The disagreements between the ranks of `w`, whose rank `r` was read from `files[r]`.
pub fn check(w: &Workload, files: &[PathBuf]) -> Vec<Warning> {
    let mut found: Vec<(usize, String)> = Vec::new();
    // Point to point: (sender, receiver, tag) → the sizes sent, and received, in order.
    let mut sent: BTreeMap<(u32, u32, u64), Vec<u64>> = BTreeMap::new();
    let mut received: BTreeMap<(u32, u32, u64), Vec<u64>> = BTreeMap::new();
    // Collectives: group → per member, its (op, bytes) in order.
    let mut issued: Issued = BTreeMap::new();
    for (rank, binding) in w.ranks.iter().enumerate() {
        let rank = rank as u32;
        let Some(program) = w.programs.get(binding.program as usize) else {
            continue;
        };
        for op in &program.ops {
            match op.kind {
                OpKind::Send { peer, bytes, tag } => {
                    let to = binding.peers[usize::from(peer)];
                    sent.entry((rank, to, tag)).or_default().push(bytes);
                }
                OpKind::Recv { peer, bytes, tag } => {
                    let from = binding.peers[usize::from(peer)];
                    received.entry((from, rank, tag)).or_default().push(bytes);
                }
                OpKind::Collective { op, bytes, group } => {
                    let g = binding.groups[usize::from(group)];
                    issued
                        .entry(g)
                        .or_default()
                        .entry(rank)
                        .or_default()
                        .push((op.name(), bytes));
                }
                _ => {}
            }
        }
    }
    let empty = Vec::new();
    let pairs: std::collections::BTreeSet<_> = sent.keys().chain(received.keys()).collect();
    for &(from, to, tag) in pairs {
        let s = sent.get(&(from, to, tag)).unwrap_or(&empty);
        let r = received.get(&(from, to, tag)).unwrap_or(&empty);
        if s.len() != r.len() {
            found.push((
                to as usize,
                format!(
                    "rank {from} sends {} message(s) with tag {tag} to rank {to}, which receives {}",
                    s.len(),
                    r.len()
                ),
            ));
        }
        if let Some(i) = (0..s.len().min(r.len())).find(|&i| s[i] != r[i]) {
            found.push((
                to as usize,
                format!(
                    "message {i} with tag {tag} from rank {from} to rank {to}: {} bytes sent, {} received",
                    s[i], r[i]
                ),
            ));
        }
    }
    for (g, members) in &issued {
        let group = &w.groups[*g as usize];
        let Some((&first, reference)) = members.iter().next() else {
            continue;
        };
        for &rank in &group.ranks {
            let Some(mine) = members.get(&rank) else {
                found.push((
                    rank as usize,
                    format!(
                        "rank {rank} issues no collective on group `{}`, where rank {first} issues {}",
                        group.name,
                        reference.len()
                    ),
                ));
                continue;
            };
            if rank == first {
                continue;
            }
            if mine.len() != reference.len() {
                found.push((
                    rank as usize,
                    format!(
                        "rank {rank} issues {} collective(s) on group `{}`, rank {first} issues {}",
                        mine.len(),
                        group.name,
                        reference.len()
                    ),
                ));
            }
            if let Some(i) = (0..mine.len().min(reference.len())).find(|&i| mine[i] != reference[i])
            {
                let show = |(op, bytes): (&str, u64)| format!("{op} of {bytes} bytes");
                found.push((
                    rank as usize,
                    format!(
                        "collective {i} on group `{}`: rank {rank} issues {}, rank {first} {}",
                        group.name,
                        show(mine[i]),
                        show(reference[i])
                    ),
                ));
            }
        }
    }
    let more = found.len().saturating_sub(SHOWN);
    let mut warnings: Vec<Warning> = found
        .into_iter()
        .take(SHOWN)
        .map(|(rank, message)| Warning {
            path: files.get(rank).cloned().unwrap_or_default(),
            message,
        })
        .collect();
    if more > 0 {
        warnings.push(Warning {
            path: files.first().cloned().unwrap_or_default(),
            message: format!("and {more} more disagreement(s) between ranks"),
        });
    }
    warnings
}
