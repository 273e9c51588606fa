//! Routes remembered for one version of the link state: a routing policy is a function of the
//! link state and the key, so the same key (or bundle of keys) routes the same way until a link
//! changes.
//!
//! Hash maps the event loop consults (looked up, never iterated), on purpose: flow keys are
//! sparse (any pair of GPUs, ports and QPs), a lookup costs less than the hop-by-hop walk it
//! saves, and the maps are only looked up and cleared, never iterated, so they cannot reach the
//! order of anything. A dense cache at the source of the repetition (per communicator and per
//! send/receive pair, in the orchestrator) would remove them; that needs a way to submit a flow
//! on links already routed.

use std::hash::{Hash, Hasher};

use fabricsim_routing::FlowKey;
use fabricsim_topology::{LinkId, Nanos, NodeId};
use rustc_hash::{FxHashMap, FxHasher};

use crate::network::{Leg, Strand};

/// A route as the engine takes it: weighted links and the latency.
pub(crate) type Routed = (Vec<(LinkId, f64)>, Nanos);

/// A bundle's strands, their merged route, and the route's name for the engine
/// ([`crate::FlowSpec::path`]).
type KeptBundle = (Box<[Strand]>, Routed, u64);

/// Links the remembered spreads may hold in all (16 bytes each: 64 MiB).
const SPREAD_MEMO_LINKS: usize = 1 << 22;

/// Links the remembered bundles may hold in all (16 bytes each: 64 MiB).
const BUNDLE_MEMO_LINKS: usize = 1 << 22;

pub(crate) struct RouteMemo {
    version: u64,
    pub(crate) routes: FxHashMap<FlowKey, Routed>,
    /// Spreads of a policy that ignores the key, by (source, destination), while they hold
    /// fewer than [`SPREAD_MEMO_LINKS`] links in all: a spread crosses hundreds of links, so
    /// only the pairs a job uses again and again (its pipeline and ring neighbours) fit.
    pub(crate) spreads: FxHashMap<(NodeId, NodeId), Routed>,
    spread_links: usize,
    /// Merged bundles (a ring channel's strands), by the hash of their strands, while they
    /// hold fewer than [`BUNDLE_MEMO_LINKS`] links in all: a training job runs the same
    /// channels of the same communicators at every layer.
    bundles: FxHashMap<u64, Vec<KeptBundle>>,
    bundle_links: usize,
    /// The name the next bundle kept gets: names are never given twice, across clears too.
    next_name: u64,
}

impl RouteMemo {
    pub(crate) fn new(version: u64) -> RouteMemo {
        RouteMemo {
            version,
            routes: FxHashMap::default(),
            spreads: FxHashMap::default(),
            spread_links: 0,
            bundles: FxHashMap::default(),
            bundle_links: 0,
            next_name: 0,
        }
    }

    /// Forgets everything.
    pub(crate) fn clear(&mut self) {
        self.routes.clear();
        self.spreads.clear();
        self.spread_links = 0;
        self.bundles.clear();
        self.bundle_links = 0;
    }

    /// Forgets everything if the link state is no longer at `version`.
    pub(crate) fn sync(&mut self, version: u64) {
        if self.version != version {
            self.clear();
            self.version = version;
        }
    }

    /// Keeps the spread from `src` to `dst` if the bound allows.
    pub(crate) fn keep_spread(
        &mut self,
        src: NodeId,
        dst: NodeId,
        route: &[(LinkId, f64)],
        latency: Nanos,
    ) {
        if self.spread_links + route.len() <= SPREAD_MEMO_LINKS {
            self.spread_links += route.len();
            self.spreads.insert((src, dst), (route.to_vec(), latency));
        }
    }

    /// The merged links of `strands`, their latency and their name, if remembered.
    pub(crate) fn bundle(&self, strands: &[Strand]) -> Option<(&Routed, u64)> {
        self.bundles
            .get(&hash_strands(strands))?
            .iter()
            .find(|(s, ..)| &s[..] == strands)
            .map(|(_, routed, name)| (routed, *name))
    }

    /// Keeps the merged links of `strands` if the bound allows; their name if kept.
    pub(crate) fn keep_bundle(
        &mut self,
        strands: &[Strand],
        links: &[(LinkId, f64)],
        latency: Nanos,
    ) -> Option<u64> {
        if self.bundle_links + links.len() > BUNDLE_MEMO_LINKS {
            return None;
        }
        self.bundle_links += links.len();
        let name = self.next_name;
        self.next_name += 1;
        self.bundles
            .entry(hash_strands(strands))
            .or_default()
            .push((strands.into(), (links.to_vec(), latency), name));
        Some(name)
    }
}

fn hash_strands(strands: &[Strand]) -> u64 {
    let mut h = FxHasher::default();
    for strand in strands {
        strand.weight.to_bits().hash(&mut h);
        for leg in &strand.legs {
            match leg {
                Leg::Routed(key) => key.hash(&mut h),
                Leg::Link(l) => l.0.hash(&mut h),
            }
        }
    }
    h.finish()
}
