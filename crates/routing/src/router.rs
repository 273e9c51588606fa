//! Routing a flow key to a path (or, for spraying, to a weighted set of links) under a policy,
//! over the links that are up.
//!
//! Paths are the equal-cost shortest paths of the forwarding rule, found by
//! [`PathFinder`] (`paths/`) without enumerating them.
//!
//! The choice among candidates is made **hop by hop**, as switches make it:
//! - `ecmp`: each node hashes the 5-tuple with its own seed (or all with one seed, which
//!   reproduces hash polarization);
//! - `eecmp`: the same with the destination QP in the hash;
//! - `pin`: destination-mod-k: candidate `ordinal(dst) mod k` at every hop, a deterministic
//!   per-destination path, as Meta's path pinning; `k` counts the switch's planned next hops
//!   (as if no inter-switch link were down), and a flow whose pinned link is down falls back
//!   to ECMP among the links left, as the BGP underlay does;
//! - `spray`: no choice — the flow is spread evenly over all equal-cost paths, each link
//!   weighted by the share of paths that cross it.

use fabricsim_topology::{LinkId, Nanos, NodeId, NodeKind, Topology};

use crate::fields::Fields;
use crate::hash::HashConfig;
use crate::key::FlowKey;
use crate::link_state::LinkState;
use crate::paths::{HostPath, PathFinder};

/// How a switch picks among equal-cost next hops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Ecmp,
    EEcmp,
    Pin,
    Spray,
}

impl Policy {
    pub const NAMES: [&'static str; 4] = ["ecmp", "eecmp", "pin", "spray"];

    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "ecmp" => Some(Policy::Ecmp),
            "eecmp" => Some(Policy::EEcmp),
            "pin" => Some(Policy::Pin),
            "spray" => Some(Policy::Spray),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Policy::Ecmp => "ecmp",
            Policy::EEcmp => "eecmp",
            Policy::Pin => "pin",
            Policy::Spray => "spray",
        }
    }
}

/// Where a flow's bytes go.
#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    /// One path, as directed links from source to destination.
    Path { links: Vec<LinkId>, latency: Nanos },
    /// Bytes spread over several paths: each link with the fraction of the flow it carries.
    Spread {
        links: Vec<(LinkId, f64)>,
        latency: Nanos,
    },
}

impl Route {
    /// Each link with the fraction of the flow's rate it carries.
    pub fn incidence(&self) -> Vec<(LinkId, f64)> {
        let mut links = Vec::new();
        self.append_to(&mut links);
        links
    }

    /// Appends [`Self::incidence`] to `out`; returns the latency (what
    /// [`RoutingPolicy::route_into`] returns).
    pub fn append_to(&self, out: &mut Vec<(LinkId, f64)>) -> Nanos {
        match self {
            Route::Path { links, .. } => out.extend(links.iter().map(|&l| (l, 1.0))),
            Route::Spread { links, .. } => out.extend_from_slice(links),
        }
        self.latency()
    }

    /// Propagation latency (for a spread, of its slowest path).
    pub fn latency(&self) -> Nanos {
        match self {
            Route::Path { latency, .. } | Route::Spread { latency, .. } => *latency,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("`{0}` is not a GPU")]
    NotAGpu(String),
    #[error("no path from `{src}` to `{dst}` over the links that are up")]
    NoPath { src: String, dst: String },
}

/// Decides where a flow goes between hosts. The built-in policies ([`HashedPolicy`]) choose hop
/// by hop among equal-cost next hops with [`PathFinder::walk`] or spread with
/// [`PathFinder::spread`]; an explicit path table (centralized TE) returns whole paths.
pub trait RoutingPolicy {
    fn name(&self) -> &str;
    /// Whether the route depends on the flow key (false for spraying: every QP of a connection
    /// takes the same spread).
    fn uses_key(&self) -> bool {
        true
    }
    /// Whether the route between two GPUs depends only on the graph of switches and the link
    /// state between them, so that a fabric automorphism fixing every switch maps routes onto
    /// routes (true for spraying over all shortest paths; false for anything that hashes
    /// addresses or looks GPUs up in a table).
    fn symmetric(&self) -> bool {
        false
    }
    /// Routes `key` between two GPUs of different NVLink domains.
    fn route(
        &self,
        paths: &mut PathFinder<'_>,
        state: &LinkState,
        key: &FlowKey,
    ) -> Result<Route, RouteError>;

    /// [`Self::route`] into a reused buffer: appends the route's links to `out`, each with
    /// the fraction of the flow it carries, and returns its latency. Policies that can route
    /// without allocating override it (the flow engine's submission path calls it per flow).
    fn route_into(
        &self,
        paths: &mut PathFinder<'_>,
        state: &LinkState,
        key: &FlowKey,
        out: &mut Vec<(LinkId, f64)>,
    ) -> Result<Nanos, RouteError> {
        Ok(self.route(paths, state, key)?.append_to(out))
    }

    /// The latency [`Self::route`] would give `key`, where its links are not needed. Policies
    /// that can find it without the route override it.
    fn latency(
        &self,
        paths: &mut PathFinder<'_>,
        state: &LinkState,
        key: &FlowKey,
    ) -> Result<Nanos, RouteError> {
        Ok(self.route(paths, state, key)?.latency())
    }
}

/// ECMP, E-ECMP, pinning and spraying, with their hash seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashedPolicy {
    pub policy: Policy,
    pub hash: HashConfig,
}

impl RoutingPolicy for HashedPolicy {
    fn name(&self) -> &str {
        self.policy.name()
    }

    fn uses_key(&self) -> bool {
        self.policy != Policy::Spray
    }

    fn symmetric(&self) -> bool {
        self.policy == Policy::Spray
    }

    fn route(
        &self,
        paths: &mut PathFinder<'_>,
        state: &LinkState,
        key: &FlowKey,
    ) -> Result<Route, RouteError> {
        if self.policy == Policy::Spray {
            return paths.spread(state, key.src, key.dst);
        }
        let mut choose = self.chooser(paths, key);
        paths.walk_planned(
            state,
            key.src,
            key.dst,
            self.policy == Policy::Pin,
            &mut choose,
        )
    }

    fn route_into(
        &self,
        paths: &mut PathFinder<'_>,
        state: &LinkState,
        key: &FlowKey,
        out: &mut Vec<(LinkId, f64)>,
    ) -> Result<Nanos, RouteError> {
        if self.policy == Policy::Spray {
            return Ok(paths.spread(state, key.src, key.dst)?.append_to(out));
        }
        let mut choose = self.chooser(paths, key);
        paths.walk_planned_into(
            state,
            key.src,
            key.dst,
            self.policy == Policy::Pin,
            &mut choose,
            out,
        )
    }

    fn latency(
        &self,
        paths: &mut PathFinder<'_>,
        state: &LinkState,
        key: &FlowKey,
    ) -> Result<Nanos, RouteError> {
        if self.policy == Policy::Spray {
            return paths.spread_latency(state, key.src, key.dst);
        }
        Ok(self.route(paths, state, key)?.latency())
    }
}

impl HashedPolicy {
    /// How each node of `key`'s walk picks among its next hops (see [`crate::paths::PlannedChooser`]).
    fn chooser<'a>(
        &'a self,
        paths: &PathFinder<'a>,
        key: &'a FlowKey,
    ) -> impl FnMut(NodeId, &[LinkId], &[LinkId]) -> u64 + 'a {
        // Destination-mod-k: where the pinned policies start (read only by them).
        let ordinal = match self.policy {
            Policy::Pin | Policy::Spray => u64::from(paths.gpu_ordinal(key.dst)),
            Policy::Ecmp | Policy::EEcmp => 0,
        };
        let topo = paths.topology();
        let hash = move |node: NodeId, policy: Fields| {
            let tier = match topo.kind(node) {
                NodeKind::Switch(role) => role.tier,
                _ => 1,
            };
            let fields = self.hash.fields(tier, policy);
            self.hash
                .function(tier)
                .hash(key, fields, self.hash.node_seed(node))
        };
        // A NIC's mapping onto its ports, where it is not the switches' hash.
        let nic_port = move |node: NodeId| match topo.kind(node) {
            NodeKind::Nic => self.hash.nic_ports.port(key),
            _ => None,
        };
        move |node: NodeId, hops: &[LinkId], planned: &[LinkId]| match self.policy {
            Policy::Ecmp => nic_port(node).unwrap_or_else(|| hash(node, Fields::FIVE_TUPLE)),
            Policy::EEcmp => nic_port(node).unwrap_or_else(|| hash(node, Fields::FIVE_TUPLE_QP)),
            // Pinned over the planned next hops; when the pinned link is down, the switch
            // falls back to ECMP among the links left (the BGP underlay).
            Policy::Pin | Policy::Spray => {
                if planned.is_empty() {
                    return ordinal;
                }
                let pinned = planned[(ordinal % planned.len() as u64) as usize];
                match hops.iter().position(|&h| h == pinned) {
                    Some(i) => i as u64,
                    None => hash(node, Fields::FIVE_TUPLE),
                }
            }
        }
    }
}

/// Routes flows over one topology under a policy.
pub struct Router<'t> {
    paths: PathFinder<'t>,
    policy: Box<dyn RoutingPolicy + 't>,
}

impl<'t> Router<'t> {
    /// A router with one of the built-in policies.
    pub fn new(topo: &'t Topology, policy: Policy, hash: HashConfig) -> Self {
        Router::with_policy(topo, Box::new(HashedPolicy { policy, hash }))
    }

    /// A router with any policy (such as a TE path table).
    pub fn with_policy(topo: &'t Topology, policy: Box<dyn RoutingPolicy + 't>) -> Self {
        Router {
            paths: PathFinder::new(topo),
            policy,
        }
    }

    /// The equal-cost path machinery the router walks.
    pub fn paths(&self) -> &PathFinder<'t> {
        &self.paths
    }

    /// [`Self::paths`], to route with directly (its caches kept).
    pub fn paths_mut(&mut self) -> &mut PathFinder<'t> {
        &mut self.paths
    }

    pub fn topology(&self) -> &'t Topology {
        self.paths.topology()
    }

    pub fn policy(&self) -> &dyn RoutingPolicy {
        self.policy.as_ref()
    }

    /// Replaces the policy (a controller programming a new TE table).
    pub fn set_policy(&mut self, policy: Box<dyn RoutingPolicy + 't>) {
        self.policy = policy;
    }

    /// Routes `key`: over NVLink inside a host, else under the policy.
    pub fn route(&mut self, state: &LinkState, key: &FlowKey) -> Result<Route, RouteError> {
        if let Some(route) = self.nvlink_route(state, key)? {
            return Ok(route);
        }
        self.policy.route(&mut self.paths, state, key)
    }

    /// [`Self::route`] appended to `out` (see [`RoutingPolicy::route_into`]); returns the
    /// route's latency.
    pub fn route_into(
        &mut self,
        state: &LinkState,
        key: &FlowKey,
        out: &mut Vec<(LinkId, f64)>,
    ) -> Result<Nanos, RouteError> {
        if let Some(path) = self.host_path(state, key)? {
            out.extend(path.links().iter().map(|&l| (l, 1.0)));
            return Ok(path.latency());
        }
        self.policy.route_into(&mut self.paths, state, key, out)
    }

    /// The latency of [`Self::route`]'s route for `key`, found without its links where the
    /// policy can.
    pub fn latency(&mut self, state: &LinkState, key: &FlowKey) -> Result<Nanos, RouteError> {
        if let Some(path) = self.host_path(state, key)? {
            return Ok(path.latency());
        }
        self.policy.latency(&mut self.paths, state, key)
    }

    /// [`Self::host_path`] as a route.
    fn nvlink_route(&self, state: &LinkState, key: &FlowKey) -> Result<Option<Route>, RouteError> {
        Ok(self.host_path(state, key)?.map(|path| Route::Path {
            latency: path.latency(),
            links: path.links().to_vec(),
        }))
    }

    /// An error unless both ends of `key` are GPUs; the NVLink path if they share a host.
    fn host_path(&self, state: &LinkState, key: &FlowKey) -> Result<Option<HostPath>, RouteError> {
        self.paths.check_gpu(key.src)?;
        self.paths.check_gpu(key.dst)?;
        Ok(self.paths.nvlink_path(state, key.src, key.dst))
    }

    /// See [`PathFinder::equal_cost_paths`].
    pub fn equal_cost_paths(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
        limit: usize,
    ) -> Result<(Vec<Vec<LinkId>>, u64), RouteError> {
        self.paths.equal_cost_paths(state, src, dst, limit)
    }
}
