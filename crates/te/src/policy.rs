//! The `te` routing policy: a path table from a solver, over the ECMP underlay.
//!
//! Meta's controller programs next hops keyed by ⟨source port, destination prefix⟩ as an
//! overlay above BGP (Gangidi et al. 2024). With one NIC per GPU (Meta's servers) that is one
//! entry per (source GPU, destination GPU), which is how [`PathTable`] is keyed. Every QP of
//! a connection follows the entry: TE pins pairs, it does not hash. Where the table has no
//! entry (a pair the traffic matrix did not foresee) or its path crosses a link that is down
//! (the controller has not recomputed yet), the switches fall back to the underlay's ECMP.

use fabricsim_routing::{
    FlowKey, HashConfig, HashedPolicy, LinkState, PathFinder, Policy, Route, RouteError,
    RoutingPolicy,
};
use fabricsim_topology::{LinkId, Nanos, NodeId};

use crate::instance::Instance;
use crate::solve::{Solution, Solver};

/// One path per (source GPU, destination GPU), sorted by pair for binary search (no hash map
/// on the routing path).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathTable {
    pairs: Vec<(NodeId, NodeId)>,
    offsets: Vec<u32>,
    links: Vec<LinkId>,
}

impl PathTable {
    /// The table of a solution.
    pub fn new(inst: &Instance<'_>, sol: &Solution) -> Self {
        let mut rows: Vec<((NodeId, NodeId), &[LinkId])> = inst
            .demands
            .iter()
            .zip(&sol.paths)
            .map(|(d, p)| ((d.src, d.dst), p.as_slice()))
            .collect();
        rows.sort_by_key(|r| r.0);
        let mut table = PathTable {
            offsets: vec![0],
            ..PathTable::default()
        };
        for (pair, path) in rows {
            table.pairs.push(pair);
            table.links.extend_from_slice(path);
            table.offsets.push(table.links.len() as u32);
        }
        table
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The programmed path from `src` to `dst`, if any.
    pub fn path(&self, src: NodeId, dst: NodeId) -> Option<&[LinkId]> {
        let i = self.pairs.binary_search(&(src, dst)).ok()?;
        Some(&self.links[self.offsets[i] as usize..self.offsets[i + 1] as usize])
    }

    /// Every entry, in pair order.
    pub fn entries(&self) -> impl Iterator<Item = ((NodeId, NodeId), &[LinkId])> + '_ {
        self.pairs.iter().enumerate().map(|(i, &p)| {
            (
                p,
                &self.links[self.offsets[i] as usize..self.offsets[i + 1] as usize],
            )
        })
    }
}

/// The path table over the ECMP underlay (see the module docs).
pub struct TePolicy {
    pub table: PathTable,
    pub underlay: HashedPolicy,
}

impl TePolicy {
    pub fn new(table: PathTable, hash: HashConfig) -> Self {
        TePolicy {
            table,
            underlay: HashedPolicy {
                policy: Policy::Ecmp,
                hash,
            },
        }
    }
}

impl RoutingPolicy for TePolicy {
    fn name(&self) -> &str {
        "te"
    }

    fn route(
        &self,
        paths: &mut PathFinder<'_>,
        state: &LinkState,
        key: &FlowKey,
    ) -> Result<Route, RouteError> {
        match self.table_path(state, key) {
            Some(links) => Ok(Route::Path {
                links: links.to_vec(),
                latency: paths.latency_of(links),
            }),
            None => self.underlay.route(paths, state, key),
        }
    }

    fn route_into(
        &self,
        paths: &mut PathFinder<'_>,
        state: &LinkState,
        key: &FlowKey,
        out: &mut Vec<(LinkId, f64)>,
    ) -> Result<Nanos, RouteError> {
        match self.table_path(state, key) {
            Some(links) => {
                out.extend(links.iter().map(|&l| (l, 1.0)));
                Ok(paths.latency_of(links))
            }
            None => self.underlay.route_into(paths, state, key, out),
        }
    }
}

impl TePolicy {
    /// `key`'s path in the table, if it has one and all its links are up (else the underlay
    /// routes it).
    fn table_path(&self, state: &LinkState, key: &FlowKey) -> Option<&[LinkId]> {
        self.table
            .path(key.src, key.dst)
            .filter(|links| !links.is_empty() && links.iter().all(|&l| state.is_up(l)))
    }
}

/// How traffic is routed: a built-in hashed policy, or centralized TE with a solver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    Hashed(Policy),
    Te(Solver),
}

impl Routing {
    /// `ecmp`, `eecmp`, `pin`, `spray`, `te` (CSPF, as Meta runs it) or `te:SOLVER`.
    pub fn parse(s: &str) -> Option<Routing> {
        match s.split_once(':') {
            Some(("te", solver)) => Solver::parse_available(solver).map(Routing::Te),
            Some(_) => None,
            None if s == "te" => Some(Routing::Te(Solver::Cspf)),
            None => Policy::parse(s).map(Routing::Hashed),
        }
    }

    /// What `parse` accepts, for error messages.
    pub fn expected() -> String {
        let highs = if Solver::Highs.available() {
            "te:highs"
        } else {
            "te:highs (in a build with `--features highs`)"
        };
        format!(
            "one of {}, te, te:cspf, te:lp, te:microlp, te:mwu, {highs}",
            Policy::NAMES.join(", ")
        )
    }

    pub fn name(self) -> String {
        match self {
            Routing::Hashed(p) => p.name().to_string(),
            Routing::Te(Solver::Cspf) => "te".to_string(),
            Routing::Te(s) => format!("te:{}", s.name()),
        }
    }
}
