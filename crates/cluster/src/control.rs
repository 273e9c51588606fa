//! What happens to the fabric while jobs run: link events from the scenario (a cable or a
//! switch going down, coming back, derated) and the centralized TE controller.
//!
//! The controller (Meta's TE, Gangidi et al. 2024) holds the jobs' traffic matrix, solves it on the
//! link state it knows, and programs the result as the routing policy: a path per (source GPU,
//! destination GPU) over the ECMP underlay ([`TePolicy`]). It recomputes every `period` of
//! simulated time and `detection` after each link event (the time to notice the event and
//! program new paths). A new table applies to flows that start afterwards: flows in flight keep
//! their paths, except those crossing a link that goes down, which the switches move at that
//! instant under the table in force, falling back to ECMP where its path is broken.

use fabricsim_netsim::{FlowEngine, Network};
use fabricsim_routing::{cables_named, event_condition, HashConfig, LinkCondition};
use fabricsim_te::{solve, Instance, PathTable, Solver, TePolicy, TrafficMatrix};
use fabricsim_topology::{LinkId, Nanos, Topology};

/// The TE controller's settings in a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TeConfig {
    pub solver: Solver,
    /// Recompute period (Meta: about 30 s).
    pub period: Nanos,
    /// From a link event to the new paths being programmed.
    pub detection: Nanos,
}

impl TeConfig {
    /// Meta's controller runs about every 30 s (Gangidi et al. 2024).
    pub const DEFAULT_PERIOD: Nanos = Nanos(30_000_000_000);
    /// An assumption: noticing a failure, solving and programming take about a second.
    pub const DEFAULT_DETECTION: Nanos = Nanos(1_000_000_000);

    pub fn new(solver: Solver) -> TeConfig {
        TeConfig {
            solver,
            period: Self::DEFAULT_PERIOD,
            detection: Self::DEFAULT_DETECTION,
        }
    }
}

/// A scenario's link event: at `at`, every cable of `target` (a switch, a NIC, or one cable
/// `A--B`) goes `down`, comes `up`, or is derated to `gbps` (`derate`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LinkEvent {
    #[serde(serialize_with = "as_ns")]
    pub at: Nanos,
    pub target: String,
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gbps: Option<f64>,
}

fn as_ns<S: serde::Serializer>(at: &Nanos, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(at.0)
}

/// A link event resolved on the fabric.
#[derive(Clone, Debug)]
pub struct ResolvedEvent {
    pub event: LinkEvent,
    pub cables: Vec<LinkId>,
    pub condition: LinkCondition,
}

impl LinkEvent {
    pub fn resolve(&self, topo: &Topology) -> Result<ResolvedEvent, String> {
        let cables = cables_named(topo, &self.target).map_err(|e| format!("target: {e}"))?;
        let condition = event_condition(topo, &cables, &self.state, self.gbps)?;
        Ok(ResolvedEvent {
            event: self.clone(),
            cables,
            condition,
        })
    }
}

/// Why a recompute happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    Start,
    Period,
    LinkEvent,
}

/// One TE computation during a run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Recompute {
    pub at_ns: u64,
    pub trigger: Trigger,
    /// Demands solved (pairs of GPUs on different hosts).
    pub demands: usize,
    /// Max link utilization of the programmed table, at the demand's rates.
    pub max_utilization: f64,
    /// Why no table was programmed (the previous one stays), if so.
    pub error: Option<String>,
}

/// The controller during a run.
pub struct TeController {
    config: TeConfig,
    demand: TrafficMatrix,
    hash: HashConfig,
    next_period: u64,
    /// Recomputes due after link events, in time order.
    after_events: Vec<u64>,
    pub log: Vec<Recompute>,
}

impl TeController {
    pub fn new(config: TeConfig, demand: TrafficMatrix, hash: HashConfig) -> TeController {
        TeController {
            config,
            demand,
            hash,
            next_period: config.period.0.max(1),
            after_events: Vec::new(),
            log: Vec::new(),
        }
    }

    /// When the controller next acts: after a link event, or (only while the jobs still have
    /// work, so that a run ends) at the next period.
    pub fn next(&self, busy: bool) -> Option<u64> {
        let event = self.after_events.first().copied();
        let period = busy.then_some(self.next_period);
        match (event, period) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn link_changed(&mut self, at: u64) {
        let due = at + self.config.detection.0;
        let i = self.after_events.partition_point(|&t| t <= due);
        self.after_events.insert(i, due);
    }

    /// Recomputes if something is due at `t` (at most once per instant).
    pub fn act(&mut self, net: &mut Network<'_, FlowEngine>, t: u64) {
        let mut trigger = None;
        while self.after_events.first().is_some_and(|&d| d <= t) {
            self.after_events.remove(0);
            trigger = Some(Trigger::LinkEvent);
        }
        if self.next_period <= t {
            self.next_period = t + self.config.period.0.max(1);
            trigger = trigger.or(Some(Trigger::Period));
        }
        if let Some(trigger) = trigger {
            self.program(net, t, trigger);
        }
    }

    /// Solves the demand on the network's link state and installs the table.
    pub fn program(&mut self, net: &mut Network<'_, FlowEngine>, t: u64, trigger: Trigger) {
        let topo = net.topology();
        let mut entry = Recompute {
            at_ns: t,
            trigger,
            demands: self.demand.demands.len(),
            max_utilization: 0.0,
            error: None,
        };
        let solved = if self.demand.demands.is_empty() {
            Ok(PathTable::default())
        } else {
            Instance::new(topo, net.link_state(), &self.demand)
                .map_err(|e| e.to_string())
                .and_then(|inst| {
                    let sol = solve(&inst, self.config.solver, &Default::default())
                        .map_err(|e| e.to_string())?;
                    entry.max_utilization = sol.max_utilization;
                    Ok(PathTable::new(&inst, &sol))
                })
        };
        match solved {
            Ok(table) => net.set_policy(Box::new(TePolicy::new(table, self.hash))),
            Err(e) => entry.error = Some(e),
        }
        self.log.push(entry);
    }
}
