//! An engine, a router and the link state together: flows are submitted by flow key and routed
//! under the policy; a link failure re-routes the unfinished flows that crossed it, under the
//! policy and the link state of that instant, and leaves a flow with no path left *stalled* on
//! the dead link (rate 0), with a diagnosis, until a repair gives it a path again. Flows that
//! did not cross the failed link keep their paths.
//!
//! Besides single flows, the network carries *bundles*: one engine variable spread over several
//! strands (the edges of a pipelined ring channel, the QPs of a connection), each strand a
//! series of legs (routed flow keys, or fixed links such as a GPU's NVLink port into its
//! NVSwitch) carrying a fixed share of the bundle's rate. A bundle completes when its last byte
//! leaves its sources: its latency is returned to the caller, who adds it (a collective adds
//! per-step latencies of its own).

use fabricsim_routing::select::{Choice, PathSelection, Selector, Ticket};
use fabricsim_routing::{FlowKey, LinkCondition, LinkState, RouteError, Router, RoutingPolicy};
use fabricsim_topology::{Bandwidth, LinkId, Nanos, Topology};

use smallvec::smallvec;

use crate::attribution::Attribution;
use crate::classes::{ClassBroken, LinkClasses};
use crate::engine::{Completion, Engine, FlowId, FlowSpec, LinkStats, Placed};
pub use crate::fold::Fold;
use crate::link_sum::LinkSum;
use crate::route_memo::{RouteMemo, Routed as Merged};
use crate::window::Window;

mod images;
mod strand;
use images::Images;
use strand::Recipe;
pub use strand::{Leg, Legs, Strand};

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NetworkError {
    #[error(transparent)]
    Route(#[from] RouteError),
    #[error(transparent)]
    ClassBroken(#[from] ClassBroken),
}

pub struct Network<'t, E: Engine> {
    topo: &'t Topology,
    state: LinkState,
    router: Router<'t>,
    engine: E,
    /// By flow id, from the oldest unfinished flow.
    recipes: Window<Recipe>,
    stalled: Vec<(FlowId, RouteError)>,
    memo: Option<RouteMemo>,
    /// The links of the flow or bundle being submitted, reused (submitting allocates nothing
    /// per flow).
    scratch: Vec<(LinkId, f64)>,
    /// Merges a bundle's strands.
    link_sum: LinkSum,
    /// Per link, the payload fraction of its capacity its transport delivers (empty: all 1).
    efficiency: Vec<f64>,
    /// Where flows are orbit representatives (see [`Fold`]).
    fold: Option<Fold>,
    /// Links every bundle crosses all or none of (see [`LinkClasses`]).
    classes: Option<LinkClasses>,
    /// The scratch of a bundle routed in one server (`images.rs`).
    images: Images,
    /// The hosts' path selection for messages issued through [`Network::select`].
    selector: Selector,
    /// Bytes per link per tag, when asked for ([`Network::attribute`]).
    attribution: Option<Attribution>,
    /// Counts changes of the routing policy or the fold: a [`Placement`] holds for one.
    routing_epoch: u64,
    /// No link changes from here on ([`Network::fix_link_state`]): no flow is kept to be
    /// routed again.
    link_state_fixed: bool,
}

/// Where a message on a connection was placed, for the next message on it
/// ([`Network::submit_message_on`]): it holds while the link state and the routing are as
/// they were, since a connection's route is a function of them.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    placed: Placed,
    version: u64,
    epoch: u64,
}

/// Where a bundle was placed, and its latency, for the next submission of the same bundle
/// ([`Network::submit_bundle_on`]).
#[derive(Clone, Copy, Debug)]
pub struct PlacedBundle {
    at: Placement,
    latency: Nanos,
}

impl<'t, E: Engine> Network<'t, E> {
    pub fn new(topo: &'t Topology, router: Router<'t>, engine: E) -> Self {
        Network {
            topo,
            state: LinkState::new(topo),
            router,
            engine,
            recipes: Window::default(),
            stalled: Vec::new(),
            memo: None,
            scratch: Vec::new(),
            link_sum: LinkSum::default(),
            efficiency: Vec::new(),
            fold: None,
            classes: None,
            images: Images::default(),
            selector: Selector::default(),
            attribution: None,
            routing_epoch: 0,
            link_state_fixed: false,
        }
    }

    /// The router, the engine and every flow's record dropped (what a finished run keeps to
    /// route more, with the path finder's caches).
    pub fn into_router(self) -> Router<'t> {
        self.router
    }

    /// Charges every flow submitted from now on to a tag ([`Network::set_tag`]), per link
    /// ([`crate::attribution`]).
    pub fn attribute(&mut self) {
        let links = self.topo.link_count();
        self.attribution
            .get_or_insert_with(|| Attribution::new(links));
    }

    /// Flows submitted from now on are charged to `tag` (with [`Network::attribute`] on).
    pub fn set_tag(&mut self, tag: u32) {
        if let Some(a) = &mut self.attribution {
            a.set_tag(tag);
        }
    }

    /// Per tag, the links its flows crossed and their bytes (under a fold, each link with its
    /// orbit's first link's, as [`Network::link_stats`]); `None` when not attributing.
    pub fn attributed(&self) -> Option<Vec<Vec<(LinkId, f64)>>> {
        let first = self.fold.as_ref().map_or(&[][..], |f| &f.first[..]);
        self.attribution.as_ref().map(|a| a.per_tag(first))
    }

    /// How hosts put messages on paths from now on ([`fabricsim_routing::select`]).
    pub fn set_path_selection(&mut self, mode: PathSelection) {
        self.selector = Selector::new(mode);
    }

    pub fn path_selection(&self) -> PathSelection {
        self.selector.mode()
    }

    /// The legs of a message of `bytes` on connection `key` at `now`, as the hosts' path
    /// selection puts it; hand the ticket back through [`Network::message_done`] when the
    /// message is done.
    pub fn select(&mut self, key: FlowKey, bytes: u64, now: Nanos) -> (Legs, Option<Ticket>) {
        let (state, router) = (&self.state, &mut self.router);
        let (choice, ticket) =
            self.selector
                .choose(key, bytes, now, state.version(), |_, _, limit| {
                    fabricsim_routing::select::candidate_paths(router, state, key, limit)
                });
        let legs = match choice {
            Choice::Key(k) => smallvec![Leg::Routed(k)],
            Choice::Path(links) => links.into_iter().map(Leg::Link).collect(),
        };
        (legs, ticket)
    }

    /// The message that took `ticket` is done at `now`.
    pub fn message_done(&mut self, ticket: Ticket, now: Nanos) {
        self.selector.done(ticket, now);
    }

    /// From now on, every flow submitted stands for its orbit (see [`Fold`]).
    pub fn set_fold(&mut self, fold: Fold) {
        debug_assert_eq!(fold.first.len(), self.topo.link_count());
        self.fold = Some(fold);
        self.routing_epoch += 1;
    }

    /// From now on, every bundle submitted must cross each class of `classes` in full or not
    /// at all, at one weight, and the engine sees only each class's first link (see
    /// [`LinkClasses`]); a bundle that does not is refused with [`NetworkError::ClassBroken`].
    /// For bundles only, at a fixed link state: set before the first flow and after the last
    /// [`Network::set_cable`], with no fold, and submit nothing but bundles.
    pub fn set_link_classes(&mut self, classes: LinkClasses) {
        debug_assert!(self.fold.is_none(), "classes and a fold do not mix");
        debug_assert_eq!(
            self.flows_held(),
            0,
            "classes are set before the first flow"
        );
        self.classes = Some(classes);
        self.routing_epoch += 1;
    }

    /// Declares, before the first flow, that no link changes from now on
    /// ([`Network::set_cable`] is not called again), so that flows keep no recipe to be
    /// routed again with (a bench's run: 40 bytes a flow, 84 MB in a 1,024-GPU all-to-all's
    /// two million).
    pub fn fix_link_state(&mut self) {
        debug_assert_eq!(self.flows_held(), 0, "fixed before the first flow");
        self.link_state_fixed = true;
    }

    /// Keeps what flow `id`, just submitted, was submitted as, to route it again after a
    /// link change: nothing at a fixed link state.
    fn keep(&mut self, id: FlowId, recipe: Recipe) {
        if !self.link_state_fixed {
            let kept = self.recipes.push(recipe);
            debug_assert_eq!(kept, id.0, "the network submits every flow of its engine");
        }
    }

    /// Per link, the link whose figures it has under a fold or classes: the first link of
    /// its orbit or its class.
    fn figures_from<'a>(
        fold: &'a Option<Fold>,
        classes: &'a Option<LinkClasses>,
    ) -> Option<&'a [LinkId]> {
        match (fold, classes) {
            (Some(fold), _) => Some(&fold.first),
            (None, Some(classes)) => Some(classes.firsts()),
            (None, None) => None,
        }
    }

    /// Sets, per link, the fraction of its capacity that carries payload (its transport's
    /// framing and protocol overheads): from now on the engine sees each link at its capacity
    /// under the link state times its efficiency, so link bytes and rates count payload.
    pub fn set_link_efficiency(&mut self, efficiency: Vec<f64>) {
        debug_assert_eq!(efficiency.len(), self.topo.link_count());
        debug_assert!(efficiency.iter().all(|&e| e > 0.0 && e <= 1.0));
        self.efficiency = efficiency;
        let (topo, state, efficiency) = (self.topo, &self.state, &self.efficiency);
        self.engine.set_link_capacities(
            (0..topo.link_count() as u32)
                .map(|l| effective_capacity(topo, state, efficiency, LinkId(l))),
        );
    }

    /// `l`'s capacity under the link state, times its efficiency.
    fn effective_capacity(&self, l: LinkId) -> Bandwidth {
        effective_capacity(self.topo, &self.state, &self.efficiency, l)
    }

    /// Remembers each flow key's route until the link state changes, for callers that route
    /// the same keys again and again (a training job's collectives and pipeline transfers).
    /// The memory grows with the number of distinct keys, so one-off flows should not use it;
    /// the spreads of policies that ignore the key (spray) are remembered per pair of GPUs, up
    /// to a bound.
    pub fn memoize_routes(&mut self) {
        let version = self.state.version();
        self.memo.get_or_insert_with(|| RouteMemo::new(version));
    }

    /// Appends the links of `key`'s route to `links`, each carrying `weight` times its share;
    /// returns the route's latency.
    fn append_route(
        &mut self,
        key: &FlowKey,
        weight: f64,
        links: &mut Vec<(LinkId, f64)>,
    ) -> Result<Nanos, RouteError> {
        let keyed = self.router.policy().uses_key();
        if let Some(memo) = &mut self.memo {
            memo.sync(self.state.version());
            let known = if keyed {
                memo.routes.get(key)
            } else {
                memo.spreads.get(&(key.src, key.dst))
            };
            if let Some((route, latency)) = known {
                links.extend(route.iter().map(|&(l, w)| (l, w * weight)));
                return Ok(*latency);
            }
        }
        let start = links.len();
        let latency = self.router.route_into(&self.state, key, links)?;
        if let Some(fold) = &self.fold {
            fold.apply(links, start);
        }
        if let Some(memo) = &mut self.memo {
            let route = &links[start..];
            if keyed {
                memo.routes.insert(*key, (route.to_vec(), latency));
            } else {
                memo.keep_spread(key.src, key.dst, route, latency);
            }
        }
        if weight != 1.0 {
            for (_, w) in &mut links[start..] {
                *w *= weight;
            }
        }
        Ok(latency)
    }

    pub fn engine(&mut self) -> &mut E {
        &mut self.engine
    }

    pub fn topology(&self) -> &'t Topology {
        self.topo
    }

    pub fn link_state(&self) -> &LinkState {
        &self.state
    }

    /// The routing policy's name.
    pub fn routing_name(&self) -> &str {
        self.router.policy().name()
    }

    /// Whether routes depend on the switch graph and the link state alone
    /// ([`RoutingPolicy::symmetric`]).
    pub fn routing_is_symmetric(&self) -> bool {
        self.router.policy().symmetric()
    }

    /// Replaces the routing policy for flows submitted from now on; flows in flight keep their
    /// paths (until a link they cross goes down).
    pub fn set_policy(&mut self, policy: Box<dyn RoutingPolicy + 't>) {
        self.router.set_policy(policy);
        if let Some(memo) = &mut self.memo {
            memo.clear();
        }
        self.routing_epoch += 1;
    }

    /// Routes `key` and submits `bytes` on it at the engine's current time.
    pub fn submit(
        &mut self,
        key: FlowKey,
        bytes: u64,
        cap: Option<Bandwidth>,
    ) -> Result<FlowId, NetworkError> {
        Ok(self.submit_one(Recipe::Key(key), bytes, cap)?)
    }

    /// [`Network::submit_message`] of a message on a connection that sends again and again (a
    /// pipeline's point-to-point pair): where the engine placed the last one, `at`, it places
    /// this one without routing it, as routing it would, while the link state and the routing
    /// have not changed. `at` is updated. Under hashed path selection and without
    /// attribution (else as `submit_message`).
    pub fn submit_message_on(
        &mut self,
        key: FlowKey,
        bytes: u64,
        now: Nanos,
        at: &mut Option<Placement>,
    ) -> Result<(FlowId, Option<Ticket>), NetworkError> {
        if self.path_selection() != PathSelection::Hashed || self.attribution.is_some() {
            return self.submit_message(key, bytes, now);
        }
        if let Some(id) = self.submit_again(*at, bytes, None) {
            self.keep(id, Recipe::Key(key));
            return Ok((id, None));
        }
        let id = self.submit(key, bytes, None)?;
        *at = self.placement_of(id);
        Ok((id, None))
    }

    /// Submits `bytes` under `cap` where `at` says a flow on the same links went, if that still
    /// holds: the link state and the routing as they were then, and the engine placing it
    /// there now.
    fn submit_again(
        &mut self,
        at: Option<Placement>,
        bytes: u64,
        cap: Option<Bandwidth>,
    ) -> Option<FlowId> {
        let p =
            at.filter(|p| (p.version, p.epoch) == (self.state.version(), self.routing_epoch))?;
        self.engine.submit_on(p.placed, bytes, cap)
    }

    /// Where the engine placed `flow`, just submitted, under the link state and routing now.
    fn placement_of(&self, flow: FlowId) -> Option<Placement> {
        self.engine.placed(flow).map(|placed| Placement {
            placed,
            version: self.state.version(),
            epoch: self.routing_epoch,
        })
    }

    /// Submits a message of `bytes` on connection `key` at `now` where the hosts' path
    /// selection puts it (as [`Network::submit`] does under hashed selection), the path's
    /// latency added by the engine; hand the ticket back through [`Network::message_done`]
    /// when the message is done.
    pub fn submit_message(
        &mut self,
        key: FlowKey,
        bytes: u64,
        now: Nanos,
    ) -> Result<(FlowId, Option<Ticket>), NetworkError> {
        if self.path_selection() == PathSelection::Hashed {
            return Ok((self.submit(key, bytes, None)?, None));
        }
        let (legs, ticket) = self.select(key, bytes, now);
        let strand = Strand { legs, weight: 1.0 };
        match self.submit_one(Recipe::Bundle(Box::new([strand])), bytes, None) {
            Ok(id) => Ok((id, ticket)),
            Err(e) => {
                if let Some(t) = ticket {
                    self.message_done(t, now);
                }
                Err(e.into())
            }
        }
    }

    /// Routes a one-path `recipe` (a key, or a bundle of one strand) and submits `bytes` on
    /// it, the path's latency added by the engine.
    fn submit_one(
        &mut self,
        recipe: Recipe,
        bytes: u64,
        cap: Option<Bandwidth>,
    ) -> Result<FlowId, RouteError> {
        debug_assert!(self.classes.is_none(), "link classes take bundles only");
        let mut links = std::mem::take(&mut self.scratch);
        links.clear();
        let routed = match &recipe {
            Recipe::Key(key) => self.append_route(key, 1.0, &mut links),
            Recipe::Bundle(strands) => self.route_strand(&strands[0], &mut links),
            Recipe::Routed(..) | Recipe::Fixed | Recipe::Done => {
                unreachable!("a one-path flow has a key or a strand")
            }
        };
        if let (Ok(_), Some(a)) = (&routed, &mut self.attribution) {
            a.charge(&links, bytes);
        }
        let submitted = routed.map(|latency| {
            self.engine.submit(FlowSpec {
                links: &links,
                bytes,
                cap,
                latency,
                path: None,
            })
        });
        self.scratch = links;
        let id = submitted?;
        self.keep(id, recipe);
        Ok(id)
    }

    /// [`Network::submit_bundle`] of a bundle submitted again and again (a collective's
    /// channel, each time its communicator runs the same plan): where the engine placed it
    /// last, `at`, it places it again without looking it up or comparing its links, as
    /// submitting it would, while the link state and the routing have not changed. `at` is
    /// updated. `at` must have been filled by this call for the very same strands (the caller
    /// keeps one per bundle it repeats); without attribution (else as `submit_bundle`).
    pub fn submit_bundle_on(
        &mut self,
        strands: Vec<Strand>,
        bytes: u64,
        cap: Option<Bandwidth>,
        at: &mut Option<PlacedBundle>,
    ) -> Result<(FlowId, Nanos), NetworkError> {
        if self.attribution.is_some() {
            return self.submit_bundle(strands, bytes, cap);
        }
        if let Some(p) = *at {
            if let Some(id) = self.submit_again(Some(p.at), bytes, cap) {
                let recipe = self.recipe_of(strands);
                self.keep(id, recipe);
                return Ok((id, p.latency));
            }
        }
        let (id, latency) = self.submit_bundle(strands, bytes, cap)?;
        *at = self.placement_of(id).map(|at| PlacedBundle { at, latency });
        Ok((id, latency))
    }

    /// Submits a bundle of `bytes` (see the module docs); returns its id and its latency (the
    /// slowest strand's), which the engine does not add.
    pub fn submit_bundle(
        &mut self,
        strands: Vec<Strand>,
        bytes: u64,
        cap: Option<Bandwidth>,
    ) -> Result<(FlowId, Nanos), NetworkError> {
        // A remembered bundle goes to the engine from the memo, not copied out of it.
        let known = self.memo.as_mut().and_then(|memo| {
            memo.sync(self.state.version());
            memo.bundle(&strands)
        });
        let merged;
        let (links, latency, path) = match known {
            Some(((links, latency), name)) => (&links[..], *latency, Some(name)),
            None => {
                merged = self.merge_bundle(&strands)?;
                (&merged.0 .0[..], merged.0 .1, merged.1)
            }
        };
        if let Some(a) = &mut self.attribution {
            a.charge(links, bytes);
        }
        let id = self.engine.submit(FlowSpec {
            links,
            bytes,
            cap,
            latency: Nanos(0),
            path,
        });
        let recipe = self.recipe_of(strands);
        self.keep(id, recipe);
        Ok((id, latency))
    }

    /// What a bundle of `strands` is kept as, to be routed again after a link change.
    fn recipe_of(&self, strands: Vec<Strand>) -> Recipe {
        if self.classes.is_some() || self.link_state_fixed {
            Recipe::Fixed
        } else {
            Recipe::of_bundle(strands)
        }
    }

    /// The latency of `strand`'s path under the policy and the link state now (its routes
    /// are not kept: no flow takes them).
    pub fn strand_latency(&mut self, strand: &Strand) -> Result<Nanos, NetworkError> {
        let mut latency = 0;
        for leg in &strand.legs {
            latency += match leg {
                Leg::Routed(key) => self.router.latency(&self.state, key)?.0,
                Leg::Link(l) => self.topo.link(*l).latency.0,
            };
        }
        Ok(Nanos(latency))
    }

    /// Appends `strand`'s links (weighted) to `links`; returns its latency.
    fn route_strand(
        &mut self,
        strand: &Strand,
        links: &mut Vec<(LinkId, f64)>,
    ) -> Result<Nanos, RouteError> {
        let mut latency = 0;
        for leg in &strand.legs {
            match leg {
                Leg::Routed(key) => {
                    latency += self.append_route(key, strand.weight, links)?.0;
                }
                Leg::Link(l) => {
                    latency += self.topo.link(*l).latency.0;
                    let (l, factor) = self.fold.as_ref().map_or((*l, 1.0), |f| f.link(*l));
                    links.push((l, strand.weight * factor));
                }
            }
        }
        Ok(Nanos(latency))
    }

    /// The merged incidence of a bundle's strands (links in id order) and its latency.
    fn resolve_bundle(
        &mut self,
        strands: &[Strand],
    ) -> Result<(Vec<(LinkId, f64)>, Nanos), RouteError> {
        if let Some(memo) = &mut self.memo {
            memo.sync(self.state.version());
            if let Some(((links, latency), _)) = memo.bundle(strands) {
                return Ok((links.clone(), *latency));
            }
        }
        match self.merge_bundle(strands) {
            Ok((merged, _)) => Ok(merged),
            Err(NetworkError::Route(e)) => Err(e),
            Err(NetworkError::ClassBroken(_)) => {
                unreachable!("no link classes once a cable changes")
            }
        }
    }

    /// Every strand of a bundle routed into `routed`, merged and folded into `links`; the
    /// bundle's latency.
    fn merge_routes(
        &mut self,
        strands: &[Strand],
        routed: &mut Vec<(LinkId, f64)>,
        links: &mut Vec<(LinkId, f64)>,
    ) -> Result<Nanos, NetworkError> {
        let mut latency = Nanos(0);
        for strand in strands {
            latency = latency.max(self.route_strand(strand, routed)?);
        }
        // Under classes, routes that cross each link once fold as they are read.
        let folded = match &mut self.classes {
            Some(classes) => classes.fold_routes(routed, links)?,
            None => false,
        };
        if !folded {
            let count = self.topo.link_count();
            for &(l, w) in routed.iter() {
                self.link_sum.add(count, l, w);
            }
            self.link_sum.drain_into(links);
            if let Some(classes) = &mut self.classes {
                classes.fold(links)?;
            }
        }
        Ok(latency)
    }

    /// The merged incidence of a bundle's strands routed now (links in id order; under link
    /// classes, checked against them and each class's first link only) and its latency, kept
    /// in the memo if there is one (with the name the memo gave it).
    fn merge_bundle(&mut self, strands: &[Strand]) -> Result<(Merged, Option<u64>), NetworkError> {
        // The strands' links, unmerged, in the buffer kept between submissions.
        let mut routed = std::mem::take(&mut self.scratch);
        routed.clear();
        let mut links = Vec::new();
        // A bundle laid alike on every server is routed in one where it can be.
        let latency = match self.fold_by_images(strands, &mut routed, &mut links) {
            Some(latency) => latency,
            None => {
                routed.clear();
                self.merge_routes(strands, &mut routed, &mut links)?
            }
        };
        self.scratch = routed;
        let name = self
            .memo
            .as_mut()
            .and_then(|memo| memo.keep_bundle(strands, &links, latency));
        Ok(((links, latency), name))
    }

    /// Flows whose routing recipes are held: from the oldest not yet completed to the newest.
    pub fn flows_held(&self) -> usize {
        self.recipes.len()
    }

    /// The route flow `f` is on now: its links, each with the fraction of its rate it carries.
    pub fn route_of(&self, f: FlowId) -> Vec<(LinkId, f64)> {
        self.engine.links(f)
    }

    /// Changes both directions of the cable `link` belongs to, at the engine's current time,
    /// and re-routes every unfinished flow that crosses a link that is down.
    pub fn set_cable(&mut self, link: LinkId, condition: LinkCondition) {
        debug_assert!(
            self.classes.is_none() && !self.link_state_fixed,
            "no link changes at a fixed link state (link classes, `fix_link_state`)"
        );
        self.state.set_cable(link, condition);
        for l in [link, link.reverse()] {
            let cap = self.effective_capacity(l);
            self.engine.set_link_capacity(l, cap);
        }
        self.stalled.clear();
        for f in self.recipes.ids() {
            let flow = FlowId(f);
            if matches!(self.recipes[f], Recipe::Done)
                || self
                    .engine
                    .links(flow)
                    .iter()
                    .all(|&(l, _)| self.state.is_up(l))
            {
                continue;
            }
            let rerouted = match &self.recipes[f] {
                Recipe::Key(key) => {
                    let key = *key;
                    self.router.route(&self.state, &key).map(|route| {
                        let mut links = route.incidence();
                        if let Some(fold) = &self.fold {
                            fold.apply(&mut links, 0);
                        }
                        (links, route.latency())
                    })
                }
                Recipe::Routed(..) | Recipe::Bundle(_) => {
                    let strands = self.recipes[f].strands().unwrap_or_default();
                    self.resolve_bundle(&strands)
                        .map(|(links, _)| (links, Nanos(0)))
                }
                Recipe::Fixed | Recipe::Done => continue,
            };
            match rerouted {
                Ok((links, latency)) => self.engine.reroute(flow, links, latency),
                Err(e) => self.stalled.push((flow, e)),
            }
        }
    }

    /// Flows left with no path by the last link change, and why.
    pub fn stalled(&self) -> &[(FlowId, RouteError)] {
        &self.stalled
    }

    /// Advances to `to`, recording completions.
    pub fn advance(&mut self, to: Nanos, finished: &mut Vec<Completion>) {
        let start = finished.len();
        self.engine.advance(to, finished);
        if !self.link_state_fixed {
            for c in &finished[start..] {
                self.recipes[c.flow.0] = Recipe::Done;
            }
            self.recipes.trim(|r| matches!(r, Recipe::Done));
        }
    }

    /// Runs until no flow can make progress; returns the completions in time order.
    pub fn run_to_end(&mut self, finished: &mut Vec<Completion>) {
        while let Some(t) = self.engine.next_event() {
            self.advance(t, finished);
        }
    }
}

impl Network<'_, crate::FlowEngine> {
    /// The engine's link figures, per link of the topology (under a fold or classes, each link
    /// with its orbit's or its class's first link's).
    pub fn link_stats(&mut self) -> &LinkStats {
        match Self::figures_from(&self.fold, &self.classes) {
            Some(from) => self.engine.link_stats_as(from),
            None => self.engine.link_stats(),
        }
    }

    /// Each link's bytes carried and the time they run to, taken from the engine (under a fold
    /// or classes, each link with its first link's): [`Self::link_stats`]'s bytes, cheaper.
    pub fn take_link_bytes(&mut self) -> (Vec<f64>, Nanos) {
        let from = Self::figures_from(&self.fold, &self.classes);
        self.engine.take_link_bytes(from)
    }

    /// Each link's utilization now, into `out` (under a fold or classes, each link with its
    /// orbit's or its class's first link's).
    pub fn utilization_now(&mut self, out: &mut Vec<f64>) {
        self.engine.utilization_now(out);
        if let Some(from) = Self::figures_from(&self.fold, &self.classes) {
            for (l, first) in from.iter().enumerate() {
                out[l] = out[first.index()];
            }
        }
    }
}

/// `l`'s capacity under `state`, times its `efficiency` (1 where none is given).
fn effective_capacity(
    topo: &Topology,
    state: &LinkState,
    efficiency: &[f64],
    l: LinkId,
) -> Bandwidth {
    let cap = state.capacity(topo, l);
    match efficiency.get(l.index()) {
        Some(&e) if e != 1.0 => Bandwidth((cap.0 as f64 * e).round() as u64),
        _ => cap,
    }
}
