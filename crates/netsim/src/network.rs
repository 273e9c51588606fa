//! An engine, a router and the link state together: flows are submitted by flow key and routed
//! under the policy; a link failure re-routes the unfinished flows that crossed it, under the
//! policy and the link state of that instant, and leaves a flow with no path left *stalled* on
//! the dead link (rate 0), with a diagnosis, until a repair gives it a path again. Flows that
//! did not cross the failed link keep their paths.

use fabricsim_routing::{FlowKey, LinkCondition, LinkState, Route, RouteError, Router};
use fabricsim_topology::{Bandwidth, LinkId, Topology};

use crate::engine::{Completion, Engine, FlowId, FlowSpec};

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NetworkError {
    #[error(transparent)]
    Route(#[from] RouteError),
}

pub struct Network<'t, E: Engine> {
    topo: &'t Topology,
    state: LinkState,
    router: Router<'t>,
    engine: E,
    keys: Vec<FlowKey>,
    routes: Vec<Vec<(LinkId, f64)>>,
    done: Vec<bool>,
    stalled: Vec<(FlowId, RouteError)>,
}

impl<'t, E: Engine> Network<'t, E> {
    pub fn new(topo: &'t Topology, router: Router<'t>, engine: E) -> Self {
        Network {
            topo,
            state: LinkState::new(topo),
            router,
            engine,
            keys: Vec::new(),
            routes: Vec::new(),
            done: Vec::new(),
            stalled: Vec::new(),
        }
    }

    pub fn engine(&mut self) -> &mut E {
        &mut self.engine
    }

    pub fn link_state(&self) -> &LinkState {
        &self.state
    }

    /// Routes `key` and submits `bytes` on it at the engine's current time.
    pub fn submit(
        &mut self,
        key: FlowKey,
        bytes: u64,
        cap: Option<Bandwidth>,
    ) -> Result<FlowId, NetworkError> {
        let route = self.router.route(&self.state, &key)?;
        let links = route.incidence();
        let id = self.engine.submit(FlowSpec {
            links: links.clone(),
            bytes,
            cap,
            latency: route.latency(),
        });
        self.keys.push(key);
        self.routes.push(links);
        self.done.push(false);
        Ok(id)
    }

    /// The route flow `f` is on now.
    pub fn route_of(&self, f: FlowId) -> &[(LinkId, f64)] {
        &self.routes[f.0 as usize]
    }

    /// Changes both directions of the cable `link` belongs to, at the engine's current time,
    /// and re-routes every unfinished flow that crosses a link that is down.
    pub fn set_cable(&mut self, link: LinkId, condition: LinkCondition) {
        self.state.set_cable(link, condition);
        for l in [link, link.reverse()] {
            let cap = self.state.capacity(self.topo, l);
            self.engine.set_link_capacity(l, cap);
        }
        self.stalled.clear();
        for f in 0..self.routes.len() {
            if self.done[f] || self.routes[f].iter().all(|&(l, _)| self.state.is_up(l)) {
                continue;
            }
            let flow = FlowId(f as u32);
            match self.router.route(&self.state, &self.keys[f]) {
                Ok(route) => self.move_flow(flow, route),
                Err(e) => self.stalled.push((flow, e)),
            }
        }
    }

    fn move_flow(&mut self, flow: FlowId, route: Route) {
        let links = route.incidence();
        self.engine.reroute(flow, links.clone(), route.latency());
        self.routes[flow.0 as usize] = links;
    }

    /// Flows left with no path by the last link change, and why.
    pub fn stalled(&self) -> &[(FlowId, RouteError)] {
        &self.stalled
    }

    /// Advances to `to`, recording completions.
    pub fn advance(&mut self, to: fabricsim_topology::Nanos, finished: &mut Vec<Completion>) {
        let start = finished.len();
        self.engine.advance(to, finished);
        for c in &finished[start..] {
            self.done[c.flow.0 as usize] = true;
        }
    }

    /// Runs until no flow can make progress; returns the completions in time order.
    pub fn run_to_end(&mut self, finished: &mut Vec<Completion>) {
        while let Some(t) = self.engine.next_event() {
            self.advance(t, finished);
        }
    }
}
