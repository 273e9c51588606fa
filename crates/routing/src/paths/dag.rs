//! The equal-cost shortest-path DAG between two nodes: what `spray` spreads over, what TE
//! steers on, and the links a busiest-tier figure takes in.

use rustc_hash::{FxHashMap, FxHashSet};

use fabricsim_topology::{LinkId, NodeId};

use super::toward::Hops;
use super::PathFinder;
use crate::link_state::LinkState;
use crate::router::RouteError;

/// A DAG's nodes in topological order (decreasing cost to the destination, then node id: the
/// source first, the destination last), and each node's next hops in link-id order, each with
/// the position of the node it leads to.
pub(super) struct Dag {
    pub nodes: Vec<NodeId>,
    start: Vec<u32>,
    hops: Vec<(LinkId, u32)>,
}

impl Dag {
    /// The next hops of the node at position `i`.
    pub fn hops(&self, i: usize) -> &[(LinkId, u32)] {
        &self.hops[self.start[i] as usize..self.start[i + 1] as usize]
    }
}

impl PathFinder<'_> {
    /// The equal-cost shortest-path DAG from `src` to `dst` over the links that are up: its
    /// nodes in order of decreasing cost to `dst` (a topological order: `src` first, `dst`
    /// last), each with its next hops in link-id order. Every walk from `src` along next hops
    /// is one of the equal-cost paths. For GPUs of different NVLink domains.
    pub fn shortest_path_dag(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
    ) -> Result<Vec<(NodeId, Vec<LinkId>)>, RouteError> {
        let dag = self.dag(state, src, dst)?;
        Ok(dag
            .nodes
            .iter()
            .enumerate()
            .map(|(i, &u)| (u, dag.hops(i).iter().map(|&(l, _)| l).collect()))
            .collect())
    }

    /// [`Self::shortest_path_dag`] in compact form: each node's next hops found once, read
    /// where they lie, and kept with the positions they lead to.
    pub(super) fn dag(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
    ) -> Result<Dag, RouteError> {
        let dist = self.distances(state, dst);
        let t = self.toward(state, src, dst, dist);
        let Some(cost) = t.cost(src) else {
            return Err(self.no_path(src, dst));
        };
        // Breadth first from the source: the nodes as found, with their costs, and their next
        // hops to the nodes' places in that order.
        let mut found = vec![(cost, src)];
        let mut place = FxHashMap::from_iter([(src, 0u32)]);
        let (mut start, mut hops) = (vec![0u32], Vec::new());
        let mut buffer = Hops::default();
        let mut i = 0;
        while i < found.len() {
            let u = found[i].1;
            if let Some(c) = t.cost(u) {
                let at = t.next_hops_into(u, self.graph.switch_index[u.index()], c, &mut buffer);
                let pool = self.pool.borrow();
                let (next, ends) = at.read(&buffer, &pool);
                for (&l, end) in next.iter().zip(ends) {
                    let v = end.node;
                    let j = *place.entry(v).or_insert_with(|| {
                        found.push((t.cost(v).unwrap_or(0), v));
                        found.len() as u32 - 1
                    });
                    hops.push((l, j));
                }
            }
            start.push(hops.len() as u32);
            i += 1;
        }
        // Into topological order.
        let mut order: Vec<u32> = (0..found.len() as u32).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (found[a as usize], found[b as usize]);
            b.0.cmp(&a.0).then(a.1.cmp(&b.1))
        });
        let mut position = vec![0u32; found.len()];
        for (k, &o) in order.iter().enumerate() {
            position[o as usize] = k as u32;
        }
        let mut dag = Dag {
            nodes: order.iter().map(|&o| found[o as usize].1).collect(),
            start: Vec::with_capacity(start.len()),
            hops: Vec::with_capacity(hops.len()),
        };
        dag.start.push(0);
        for &o in &order {
            let own = &hops[start[o as usize] as usize..start[o as usize + 1] as usize];
            dag.hops
                .extend(own.iter().map(|&(l, j)| (l, position[j as usize])));
            dag.start.push(dag.hops.len() as u32);
        }
        Ok(dag)
    }

    /// Marks in `scope` (by link index) the links of [`Self::shortest_path_dag`] from `src`
    /// to `dst`: the same search, in no order, with the next hops read where they lie (a
    /// busiest-tier figure takes the links of a thousand pairs' DAGs and needs nothing else).
    pub fn mark_dag_links(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
        scope: &mut [bool],
    ) -> Result<(), RouteError> {
        let dist = self.distances(state, dst);
        let t = self.toward(state, src, dst, dist);
        if t.cost(src).is_none() {
            return Err(self.no_path(src, dst));
        }
        let mut hops = Hops::default();
        let mut seen = FxHashSet::from_iter([src]);
        let mut stack = vec![src];
        while let Some(u) = stack.pop() {
            let Some(c) = t.cost(u) else { continue };
            let found = t.next_hops_into(u, self.graph.switch_index[u.index()], c, &mut hops);
            let pool = self.pool.borrow();
            let (next, ends) = found.read(&hops, &pool);
            for (&l, end) in next.iter().zip(ends) {
                scope[l.index()] = true;
                if seen.insert(end.node) {
                    stack.push(end.node);
                }
            }
        }
        Ok(())
    }
}
