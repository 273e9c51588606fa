//! The controller's view of the world: the fabric, the link state its events made, and the
//! demand sets and jobs, each kept with the document it came from and its resolved rows.

use std::collections::BTreeMap;
use std::sync::Arc;

use fabricsim_routing::LinkState;
use fabricsim_te::TrafficMatrix;
use fabricsim_topology::Topology;

use crate::model::{DemandSet, FabricSpec, JobSpec, LinkEvent, Row};

pub struct Fabric {
    pub spec: FabricSpec,
    pub topo: Arc<Topology>,
    pub links: LinkState,
}

/// A document and what it resolved to.
pub struct Resolved<T> {
    pub doc: T,
    pub rows: Vec<Row>,
}

#[derive(Default)]
pub struct State {
    /// Bumped by every acknowledged change.
    pub version: u64,
    pub fabric: Option<Fabric>,
    /// (sequence number, event), in the order they were applied.
    pub events: Vec<(u64, LinkEvent)>,
    pub demands: BTreeMap<String, Resolved<DemandSet>>,
    pub jobs: BTreeMap<String, Resolved<JobSpec>>,
}

/// What a route computation needs, taken under the lock and used without it.
pub struct Snapshot {
    pub state_version: u64,
    pub topo: Arc<Topology>,
    pub links: LinkState,
    pub demand: TrafficMatrix,
}

impl State {
    pub fn set_fabric(&mut self, spec: FabricSpec, topo: Topology) {
        let links = LinkState::new(&topo);
        self.fabric = Some(Fabric {
            spec,
            topo: Arc::new(topo),
            links,
        });
        self.events.clear();
        self.demands.clear();
        self.jobs.clear();
    }

    /// Applies a resolved event; the fabric is there, as the event resolved against it.
    pub fn apply_event(
        &mut self,
        seq: u64,
        event: LinkEvent,
        resolved: (
            Vec<fabricsim_topology::LinkId>,
            fabricsim_routing::LinkCondition,
        ),
    ) {
        let fabric = self
            .fabric
            .as_mut()
            .expect("an event resolves only against a fabric");
        for l in resolved.0 {
            fabric.links.set(l, resolved.1);
        }
        self.events.push((seq, event));
    }

    pub fn topo(&self) -> Option<Arc<Topology>> {
        self.fabric.as_ref().map(|f| Arc::clone(&f.topo))
    }

    pub fn next_event_seq(&self) -> u64 {
        self.events.last().map_or(1, |&(s, _)| s + 1)
    }

    pub fn snapshot(&self) -> Option<Snapshot> {
        let fabric = self.fabric.as_ref()?;
        let rows = self
            .demands
            .values()
            .flat_map(|d| d.rows.iter())
            .chain(self.jobs.values().flat_map(|j| j.rows.iter()))
            .copied();
        Some(Snapshot {
            state_version: self.version,
            topo: Arc::clone(&fabric.topo),
            links: fabric.links.clone(),
            demand: TrafficMatrix::from_rates(rows),
        })
    }
}
