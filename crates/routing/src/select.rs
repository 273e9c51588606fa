//! Host-side path selection: how a host puts each message on a path, above the switches'
//! routing policy.
//!
//! - **Hashed** (the default): each connection's QPs go where the switches hash them.
//! - **Disjoint paths**: the host keeps one connection per disjoint path to each peer and sends
//!   each message on the one with the fewest outstanding bytes. Alibaba's HPN 7.0 does this (the
//!   host finds source ports that the switches hash onto disjoint paths through its two ToRs and
//!   two planes; Qian et al., "Alibaba HPN: A Data Center Network for Large Language Model
//!   Training", SIGCOMM 2024, §5). fabricsim does the same: it routes the connection's source
//!   port and its variants under the switches' policy and keeps up to `paths` of the paths found
//!   that share no link beyond those every path found crosses (the GPUs' PCIe links, and the
//!   cable of a NIC with one port, or with one port up), greedily in the order found. On
//!   single-homed hosts the paths are disjoint in the fabric above the ToRs.
//! - **Flowlets**: a connection keeps its path while it has messages in flight, and is re-hashed
//!   (a new source port) when a message starts after the connection sat idle for at least `gap`,
//!   so bursts separated by compute can take different paths (flowlet switching: Kandula et al.,
//!   "Dynamic Load Balancing Without Packet Reordering", CCR 2007; CONGA, SIGCOMM 2014).
//!
//! A [`Selector`] holds the hosts' state: outstanding bytes per path, messages in flight and idle
//! time per connection. It is consulted when a message is issued and told when it is done.

use std::collections::HashMap;

use fabricsim_topology::{LinkId, Nanos, NodeId};

use crate::key::{mix, FlowKey};
use crate::link_state::LinkState;
use crate::router::{Route, Router};

/// How hosts spread messages over paths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PathSelection {
    #[default]
    Hashed,
    Disjoint {
        paths: u32,
    },
    Flowlet {
        gap: Nanos,
    },
}

impl PathSelection {
    /// Disjoint paths kept per peer when none is given, an assumption: more than a dual-port
    /// NIC's two ports, so that messages spread over the tier above them too.
    pub const DEFAULT_PATHS: u32 = 4;
    /// The idle gap of a flowlet when none is given, an assumption (no operator publishes
    /// one): far above the few µs by which two paths of a Clos differ, so a re-hashed burst
    /// cannot overtake the previous one, and below the compute gaps between a job's
    /// collectives (hundreds of µs and more), so those gaps open new flowlets.
    pub const DEFAULT_GAP: Nanos = Nanos(384_000);

    /// `hashed`, `disjoint[:PATHS]` or `flowlet[:GAP]` (`flowlet:500us`).
    pub fn parse(text: &str) -> Option<PathSelection> {
        let (name, arg) = match text.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (text, None),
        };
        match (name, arg) {
            ("hashed", None) => Some(PathSelection::Hashed),
            ("disjoint", None) => Some(PathSelection::Disjoint {
                paths: Self::DEFAULT_PATHS,
            }),
            ("disjoint", Some(a)) => a
                .parse()
                .ok()
                .filter(|p| (1..=64).contains(p))
                .map(|paths| PathSelection::Disjoint { paths }),
            ("flowlet", None) => Some(PathSelection::Flowlet {
                gap: Self::DEFAULT_GAP,
            }),
            ("flowlet", Some(a)) => a
                .parse::<Nanos>()
                .ok()
                .filter(|g| g.0 > 0 && g.0 <= 1 << 40)
                .map(|gap| PathSelection::Flowlet { gap }),
            _ => None,
        }
    }

    pub const EXPECTED: &'static str =
        "hashed, disjoint[:PATHS] (1 to 64) or flowlet[:GAP] (such as flowlet:500us)";

    pub fn name(self) -> String {
        match self {
            PathSelection::Hashed => "hashed".into(),
            PathSelection::Disjoint { paths } => format!("disjoint:{paths}"),
            PathSelection::Flowlet { gap } => format!("flowlet:{gap}"),
        }
    }
}

/// Where a message goes: a flow key for the routing policy, or one fixed path.
#[derive(Clone, Debug, PartialEq)]
pub enum Choice {
    Key(FlowKey),
    Path(Vec<LinkId>),
}

/// What a message took, to hand back when it is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    entry: u32,
    path: u32,
    bytes: u64,
}

/// Per peer (disjoint paths) or per connection (flowlets): the host's state.
#[derive(Default)]
struct Entry {
    paths: Vec<Vec<LinkId>>,
    outstanding: Vec<u64>,
    in_flight: u32,
    idle_since: u64,
    used: bool,
    flowlet: u16,
}

/// The hosts' path-selection state under one [`PathSelection`].
#[derive(Default)]
pub struct Selector {
    mode: PathSelection,
    /// The link-state version the disjoint paths were found under.
    version: u64,
    /// Entries by (source, destination, source port, QP); looked up, never iterated.
    index: HashMap<(NodeId, NodeId, u16, u32), u32>,
    entries: Vec<Entry>,
}

impl Selector {
    pub fn new(mode: PathSelection) -> Selector {
        Selector {
            mode,
            ..Selector::default()
        }
    }

    pub fn mode(&self) -> PathSelection {
        self.mode
    }

    /// Where a message of `bytes` on connection `key` goes at `now`. `paths` gives candidate
    /// paths between two GPUs (about `limit`) under link-state version `version`, in the order
    /// to prefer them (asked once per peer and version).
    pub fn choose(
        &mut self,
        key: FlowKey,
        bytes: u64,
        now: Nanos,
        version: u64,
        paths: impl FnOnce(NodeId, NodeId, usize) -> Vec<Vec<LinkId>>,
    ) -> (Choice, Option<Ticket>) {
        match self.mode {
            PathSelection::Hashed => (Choice::Key(key), None),
            PathSelection::Disjoint { paths: k } => {
                if version != self.version {
                    self.version = version;
                    self.index.clear();
                    self.entries.clear();
                }
                let e = self.entry((key.src, key.dst, 0, 0));
                let entry = &mut self.entries[e as usize];
                if !entry.used {
                    entry.used = true;
                    entry.paths = disjoint(paths(key.src, key.dst, 64), k as usize);
                    entry.outstanding = vec![0; entry.paths.len()];
                }
                // The path with the fewest outstanding bytes, the first among equals.
                let Some(p) = (0..entry.paths.len()).min_by_key(|&p| entry.outstanding[p]) else {
                    return (Choice::Key(key), None);
                };
                entry.outstanding[p] += bytes;
                let ticket = Ticket {
                    entry: e,
                    path: p as u32,
                    bytes,
                };
                (Choice::Path(entry.paths[p].clone()), Some(ticket))
            }
            PathSelection::Flowlet { gap } => {
                let e = self.entry((key.src, key.dst, key.src_port, key.qp));
                let entry = &mut self.entries[e as usize];
                if entry.used && entry.in_flight == 0 && now.0 >= entry.idle_since + gap.0 {
                    entry.flowlet = entry.flowlet.wrapping_add(1);
                }
                entry.used = true;
                entry.in_flight += 1;
                // A new source port in the same dynamic range: the switches hash it afresh.
                let rehashed = key.port_variant(entry.flowlet);
                let ticket = Ticket {
                    entry: e,
                    path: u32::MAX,
                    bytes,
                };
                (Choice::Key(rehashed), Some(ticket))
            }
        }
    }

    /// The message that took `ticket` is done at `now`.
    pub fn done(&mut self, ticket: Ticket, now: Nanos) {
        let Some(entry) = self.entries.get_mut(ticket.entry as usize) else {
            return; // its entry went with a link-state change
        };
        match self.mode {
            PathSelection::Disjoint { .. } => {
                if let Some(o) = entry.outstanding.get_mut(ticket.path as usize) {
                    *o = o.saturating_sub(ticket.bytes);
                }
            }
            PathSelection::Flowlet { .. } => {
                entry.in_flight = entry.in_flight.saturating_sub(1);
                if entry.in_flight == 0 {
                    entry.idle_since = now.0;
                }
            }
            PathSelection::Hashed => {}
        }
    }

    /// The paths kept toward `dst` from `src` (disjoint mode, once a message has gone).
    pub fn paths(&self, src: NodeId, dst: NodeId) -> &[Vec<LinkId>] {
        self.index
            .get(&(src, dst, 0, 0))
            .map_or(&[], |&e| &self.entries[e as usize].paths)
    }

    fn entry(&mut self, key: (NodeId, NodeId, u16, u32)) -> u32 {
        let next = self.entries.len() as u32;
        let e = *self.index.entry(key).or_insert(next);
        if e == next {
            self.entries.push(Entry::default());
        }
        e
    }
}

/// Paths a host can find toward `key`'s destination, as HPN finds them: the routes the
/// switches give the connection's source port and its variants (a hashing policy spreads them
/// as it spreads connections). Under a policy that gives no single path (spraying, a TE
/// table's spread), the equal-cost paths themselves, from a place set by the pair.
pub fn candidate_paths(
    router: &mut Router<'_>,
    state: &LinkState,
    key: FlowKey,
    limit: usize,
) -> Vec<Vec<LinkId>> {
    let mut out: Vec<Vec<LinkId>> = Vec::new();
    for i in 0..limit as u16 {
        match router.route(state, &key.port_variant(i)) {
            Ok(Route::Path { links, .. }) => {
                if !out.contains(&links) {
                    out.push(links);
                }
            }
            _ => {
                out.clear();
                break;
            }
        }
    }
    if out.is_empty() {
        out = router
            .equal_cost_paths(state, key.src, key.dst, 4 * limit)
            .map_or_else(|_| Vec::new(), |(paths, _)| paths);
        if !out.is_empty() {
            let start = (mix(u64::from(key.src.0) << 32 | u64::from(key.dst.0)) % out.len() as u64)
                as usize;
            out.rotate_left(start);
        }
    }
    out
}

/// Up to `k` of `candidates` that share no link but those every candidate crosses (the GPUs'
/// PCIe links, and the cable of a NIC with one port, or with one port up), greedily in order.
fn disjoint(candidates: Vec<Vec<LinkId>>, k: usize) -> Vec<Vec<LinkId>> {
    let common: Vec<LinkId> = match candidates.split_first() {
        Some((first, rest)) => first
            .iter()
            .copied()
            .filter(|l| rest.iter().all(|p| p.contains(l)))
            .collect(),
        None => Vec::new(),
    };
    let shared = |l: LinkId| common.contains(&l);
    let mut taken: Vec<LinkId> = Vec::new();
    let mut out = Vec::new();
    for path in candidates {
        if out.len() == k {
            break;
        }
        if path.iter().any(|&l| !shared(l) && taken.contains(&l)) {
            continue;
        }
        taken.extend(path.iter().copied().filter(|&l| !shared(l)));
        out.push(path);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_mode_and_refuses_the_rest() {
        assert_eq!(PathSelection::parse("hashed"), Some(PathSelection::Hashed));
        assert_eq!(
            PathSelection::parse("disjoint:2"),
            Some(PathSelection::Disjoint { paths: 2 })
        );
        assert_eq!(
            PathSelection::parse("flowlet:500us"),
            Some(PathSelection::Flowlet {
                gap: Nanos(500_000)
            })
        );
        for bad in [
            "disjoint:0",
            "disjoint:x",
            "flowlet:0s",
            "spray",
            "hashed:1",
        ] {
            assert_eq!(PathSelection::parse(bad), None, "{bad}");
        }
        for m in ["hashed", "disjoint:4", "flowlet:384us"] {
            assert_eq!(PathSelection::parse(m).unwrap().name(), m);
        }
    }
}
