//! A TE instance: the network demands of a traffic matrix, each with its candidate paths, and
//! the capacity of every link under the link state.
//!
//! A demand's candidates are its equal-cost shortest paths over the links that are up (the
//! paths the fabric's forwarding can take; TE chooses among them, it does not invent detours),
//! kept as the shortest-path DAG: on a Clos that is an up-port choice per tier, so the DAG
//! stays small where the paths are many (16 × 16 × … on a cluster). Demands between GPUs of
//! one NVLink domain never reach the fabric and are set aside; a demand with no path left is
//! reported, not placed.

use fabricsim_routing::{LinkState, PathFinder, RouteError};
use fabricsim_topology::{LinkId, NodeId, Topology};

use crate::demand::{Demand, TrafficMatrix};

/// A demand's equal-cost paths: nodes in topological order (source first, destination last),
/// each with its next hops as (link, index of the node it leads to).
#[derive(Clone, Debug)]
pub struct Dag {
    offsets: Vec<u32>,
    hops: Vec<(LinkId, u32)>,
}

impl Dag {
    fn nodes(&self) -> usize {
        self.offsets.len() - 1
    }

    fn hops(&self, i: usize) -> &[(LinkId, u32)] {
        &self.hops[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// Every link on some path.
    pub fn links(&self) -> impl Iterator<Item = LinkId> + '_ {
        self.hops.iter().map(|&(l, _)| l)
    }

    /// The links every path starts with: the source's host and NIC links, up to the first
    /// switch with a choice.
    pub fn prefix(&self) -> Vec<LinkId> {
        let mut links = Vec::new();
        let mut i = 0;
        while i + 1 < self.nodes() && self.hops(i).len() == 1 {
            let (l, j) = self.hops(i)[0];
            links.push(l);
            i = j as usize;
        }
        links
    }

    /// The links on only some of the paths: where routing has a choice.
    fn choice_links(&self) -> Vec<LinkId> {
        // Paths from the source to each node, and from each node to the destination.
        let n = self.nodes();
        let mut from = vec![0.0f64; n];
        let mut to = vec![0.0f64; n];
        from[0] = 1.0;
        to[n - 1] = 1.0;
        for i in 0..n {
            for &(_, j) in self.hops(i) {
                from[j as usize] += from[i];
            }
        }
        for i in (0..n).rev() {
            for &(_, j) in self.hops(i) {
                to[i] += to[j as usize];
            }
        }
        let total = to[0];
        (0..n)
            .flat_map(|i| self.hops(i).iter().map(move |&(l, j)| (i, l, j)))
            .filter(|&(i, _, j)| from[i] * to[j as usize] < total * (1.0 - 1e-12))
            .map(|(_, l, _)| l)
            .collect()
    }

    /// The path minimizing the sum of `len` over its links (ties: the first next hop in
    /// link-id order) and that sum.
    pub fn shortest(&self, len: &[f64], scratch: &mut Vec<(f64, f64, u32)>) -> (f64, Vec<LinkId>) {
        self.best(scratch, |l, below| (len[l.index()] + below.0, 0.0));
        (scratch[0].0, self.walk(scratch))
    }

    /// The path whose busiest link, once `rate` is added, is least utilized; among those, the
    /// one with the least total utilization (CSPF with utilization as the constraint).
    /// `steer` is 1 / capacity on the links that count, 0 elsewhere.
    pub fn least_congested(
        &self,
        load: &[f64],
        steer: &[f64],
        rate: f64,
        scratch: &mut Vec<(f64, f64, u32)>,
    ) -> Vec<LinkId> {
        self.best(scratch, |l, below| {
            let u = (load[l.index()] + rate) * steer[l.index()];
            (u.max(below.0), u + below.1)
        });
        self.walk(scratch)
    }

    /// A DP from the destination back: `step(link, value below)` is the value of going
    /// through `link`; the lexicographically least (first, second) wins. Leaves each node's
    /// value and chosen next hop in `scratch`.
    fn best(
        &self,
        scratch: &mut Vec<(f64, f64, u32)>,
        step: impl Fn(LinkId, (f64, f64)) -> (f64, f64),
    ) {
        let n = self.nodes();
        scratch.clear();
        scratch.resize(n, (f64::INFINITY, f64::INFINITY, u32::MAX));
        scratch[n - 1] = (0.0, 0.0, u32::MAX);
        for i in (0..n - 1).rev() {
            for (k, &(l, j)) in self.hops(i).iter().enumerate() {
                let (below0, below1, _) = scratch[j as usize];
                let v = step(l, (below0, below1));
                if v < (scratch[i].0, scratch[i].1) || scratch[i].2 == u32::MAX {
                    scratch[i] = (v.0, v.1, k as u32);
                }
            }
        }
    }

    fn walk(&self, choice: &[(f64, f64, u32)]) -> Vec<LinkId> {
        let mut path = Vec::new();
        let mut i = 0;
        while i + 1 < self.nodes() {
            let (l, j) = self.hops(i)[choice[i].2 as usize];
            path.push(l);
            i = j as usize;
        }
        path
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InstanceError {
    #[error("the traffic matrix has no demand between GPUs of different NVLink domains")]
    NoNetworkDemand,
    #[error(transparent)]
    Route(#[from] RouteError),
}

/// Demands with their candidate paths, over one link state.
///
/// The objective counts the *steerable* links: every switch-to-switch link on a candidate
/// path, and any other link where routing has a choice (on some but not all paths of a
/// demand, such as the two ports of a dual-ToR NIC). A GPU's single NIC link carries its
/// demands whatever TE does; counting it would let a solver stop caring about the fabric
/// once the NICs are the bottleneck.
pub struct Instance<'t> {
    pub topo: &'t Topology,
    /// Bytes/s per directed link under the link state (0 when down).
    pub capacity: Vec<f64>,
    /// Per link: 1 / capacity where the link is steerable, 0 elsewhere.
    pub steer: Vec<f64>,
    /// The demands that cross the fabric and have a path.
    pub demands: Vec<Demand>,
    dags: Vec<Dag>,
    /// Demands inside an NVLink domain (not TE's business).
    pub local: Vec<Demand>,
    /// Demands with no path over the links that are up, and why.
    pub unroutable: Vec<(Demand, RouteError)>,
}

impl<'t> Instance<'t> {
    pub fn new(
        topo: &'t Topology,
        state: &LinkState,
        tm: &TrafficMatrix,
    ) -> Result<Self, InstanceError> {
        let mut finder = PathFinder::new(topo);
        let capacity = topo
            .link_ids()
            .map(|l| state.capacity(topo, l).0 as f64)
            .collect();
        let mut inst = Instance {
            topo,
            steer: vec![0.0; topo.link_count()],
            capacity,
            demands: Vec::new(),
            dags: Vec::new(),
            local: Vec::new(),
            unroutable: Vec::new(),
        };
        for &d in &tm.demands {
            finder.check_gpu(d.src)?;
            finder.check_gpu(d.dst)?;
            if finder.nvlink_path(state, d.src, d.dst).is_some() {
                inst.local.push(d);
                continue;
            }
            match finder.shortest_path_dag(state, d.src, d.dst) {
                Ok(nodes) => {
                    let dag = dag_of(topo, &nodes);
                    let fabric = dag.links().filter(|&l| {
                        let link = topo.link(l);
                        is_switch(topo, link.src) && is_switch(topo, link.dst)
                    });
                    for l in dag.choice_links().into_iter().chain(fabric) {
                        let c = inst.capacity[l.index()];
                        inst.steer[l.index()] = if c > 0.0 { 1.0 / c } else { 0.0 };
                    }
                    inst.dags.push(dag);
                    inst.demands.push(d);
                }
                Err(e @ RouteError::NoPath { .. }) => inst.unroutable.push((d, e)),
                Err(e) => return Err(e.into()),
            }
        }
        if inst.demands.is_empty() && inst.unroutable.is_empty() {
            return Err(InstanceError::NoNetworkDemand);
        }
        Ok(inst)
    }

    pub fn dag(&self, demand: usize) -> &Dag {
        &self.dags[demand]
    }

    /// Link loads (bytes/s) when each demand takes `paths[i]`.
    pub fn loads(&self, paths: &[Vec<LinkId>]) -> Vec<f64> {
        let mut load = vec![0.0; self.capacity.len()];
        for (d, path) in self.demands.iter().zip(paths) {
            for l in path {
                load[l.index()] += d.rate;
            }
        }
        load
    }

    /// The objective: the largest load / capacity over the steerable links.
    pub fn max_utilization(&self, load: &[f64]) -> f64 {
        load.iter()
            .zip(&self.steer)
            .map(|(&x, &s)| x * s)
            .fold(0.0, f64::max)
    }

    /// Whether `link` counts in the objective (see [`Instance`]).
    pub fn steerable(&self, link: LinkId) -> bool {
        self.steer[link.index()] > 0.0
    }

    /// Links on some candidate path of some demand: the links TE can use.
    pub fn scope(&self) -> Vec<bool> {
        let mut scope = vec![false; self.capacity.len()];
        for dag in &self.dags {
            for l in dag.links() {
                scope[l.index()] = true;
            }
        }
        scope
    }
}

fn is_switch(topo: &Topology, n: NodeId) -> bool {
    matches!(topo.kind(n), fabricsim_topology::NodeKind::Switch(_))
}

/// Packs the router's DAG (nodes in topological order with their next hops).
fn dag_of(topo: &Topology, nodes: &[(NodeId, Vec<LinkId>)]) -> Dag {
    let mut order: Vec<(NodeId, u32)> = (0..nodes.len()).map(|i| (nodes[i].0, i as u32)).collect();
    order.sort_unstable();
    let index = |n: NodeId| {
        let at = order.partition_point(|&(m, _)| m < n);
        debug_assert_eq!(order[at].0, n, "a next hop leads to a node of the DAG");
        order[at].1
    };
    let mut dag = Dag {
        offsets: vec![0],
        hops: Vec::new(),
    };
    for (_, hops) in nodes {
        for &l in hops {
            dag.hops.push((l, index(topo.link(l).dst)));
        }
        dag.offsets.push(dag.hops.len() as u32);
    }
    dag
}
