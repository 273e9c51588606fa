//! Spreads over every equal-cost path, and the part between switches of those between
//! single-homed GPUs, kept per pair of switches.
//!
//! Between two single-homed GPUs under different switches every path is the source's way onto
//! the fabric, one of the equal-cost paths between the two switches, and the destination's way
//! off; under one switch, the ways on and off are the only shortest path. The weights of the
//! links between switches are counts of such paths over their total, the same for every pair
//! of GPUs under these switches, and the access links carry weight 1; so a spread between
//! switches is found once and each pair of GPUs adds its own ways on and off, to the last bit
//! what a search from the GPUs gives (`spray`'s network path latencies route the first GPUs
//! of pairs of hosts, many under the same switches).

use rustc_hash::FxHashMap;

use fabricsim_topology::{LinkId, Nanos, NodeId};

use super::dag::Dag;
use super::endpoint::Endpoint;
use super::PathFinder;
use crate::link_state::LinkState;
use crate::router::{Route, RouteError};

/// The links between two switches of a spread, with their weights, and its latency between
/// them (ns).
struct Between {
    links: Box<[(LinkId, f64)]>,
    latency: u64,
}

/// The spreads between switches kept, by (source, destination) switch index, with their links
/// in all (at most `MAX_LINKS`); and the latencies between switches of those asked for their
/// latency alone (at most `MAX_LINKS` of them).
#[derive(Default)]
pub(super) struct SwitchSpreads {
    by_switches: FxHashMap<(u32, u32), Between>,
    links: usize,
    latencies: FxHashMap<(u32, u32), u64>,
}

/// Links kept in all: 16 MiB.
const MAX_LINKS: usize = 1 << 20;

impl SwitchSpreads {
    pub fn clear(&mut self) {
        self.by_switches.clear();
        self.links = 0;
        self.latencies.clear();
    }

    /// The latency between the switches of `key` (ns), of a spread or on its own.
    fn latency(&self, key: (u32, u32)) -> Option<u64> {
        self.by_switches
            .get(&key)
            .map(|between| between.latency)
            .or_else(|| self.latencies.get(&key).copied())
    }
}

/// Two single-homed GPUs on different hosts, every link up: their switches, and their ways on
/// and off the fabric, each link with its latency (ns). The spread between them is their
/// switches' plus these.
struct Access {
    switches: (u32, u32),
    links: [(LinkId, u32); 4],
}

impl Access {
    fn of(a: &Endpoint, b: &Endpoint, state: &LinkState) -> Option<Access> {
        (a.single_homed() && b.single_homed() && a.host != b.host && state.all_up()).then(|| {
            Access {
                switches: (a.sw, b.sw),
                links: [
                    (a.to_nic, a.to_nic_latency),
                    (a.port, a.port_latency),
                    (b.port.reverse(), b.port_latency),
                    (b.to_nic.reverse(), b.to_nic_latency),
                ],
            }
        })
    }

    /// The ways on and off's latency (ns).
    fn latency(&self) -> u64 {
        self.links.iter().map(|&(_, ns)| u64::from(ns)).sum()
    }
}

impl PathFinder<'_> {
    /// Bytes spread evenly over every equal-cost path: link weight = share of paths using it.
    pub fn spread(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
    ) -> Result<Route, RouteError> {
        let (a, b) = (self.ends[src.index()], self.ends[dst.index()]);
        let Some(ends) = Access::of(&a, &b, state) else {
            return self.spread_over_dag(state, src, dst);
        };
        let (key, on_and_off, access) = (ends.switches, ends.latency(), ends.links);
        if key.0 == key.1 {
            // Under one switch: the way on and the way off are the only shortest path.
            let mut links: Vec<(LinkId, f64)> = access.iter().map(|&(l, _)| (l, 1.0)).collect();
            links.sort_by_key(|&(l, _)| l);
            return Ok(Route::Spread {
                links,
                latency: Nanos(on_and_off),
            });
        }
        self.sync_caches(state);
        if let Some(between) = self.switch_spreads.by_switches.get(&key) {
            let mut links = Vec::with_capacity(between.links.len() + access.len());
            links.extend_from_slice(&between.links);
            links.extend(access.iter().map(|&(l, _)| (l, 1.0)));
            links.sort_by_key(|&(l, _)| l);
            return Ok(Route::Spread {
                links,
                latency: Nanos(between.latency + on_and_off),
            });
        }
        let route = self.spread_over_dag(state, src, dst)?;
        if let Route::Spread { links, latency } = &route {
            let kept = &mut self.switch_spreads;
            if kept.links + links.len() <= MAX_LINKS {
                let between: Box<[(LinkId, f64)]> = links
                    .iter()
                    .filter(|(l, _)| !access.iter().any(|&(m, _)| m == *l))
                    .copied()
                    .collect();
                kept.links += between.len();
                debug_assert!(
                    latency.0 >= on_and_off,
                    "a spread crosses its ends' access links"
                );
                let between = Between {
                    links: between,
                    latency: latency.0.saturating_sub(on_and_off),
                };
                kept.by_switches.insert(key, between);
            }
        }
        Ok(route)
    }

    /// The latency of [`Self::spread`] (its slowest path's) without its links: between
    /// single-homed GPUs, their ways on and off plus their switches' latency, found once per
    /// pair of switches (a collective's network path latencies ask for hundreds of pairs of
    /// hosts, whose spreads no flow takes).
    pub fn spread_latency(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
    ) -> Result<Nanos, RouteError> {
        let (a, b) = (self.ends[src.index()], self.ends[dst.index()]);
        let Some(access) = Access::of(&a, &b, state) else {
            let dag = self.dag(state, src, dst)?;
            return Ok(Nanos(self.latencies_to_dst(&dag)[0]));
        };
        let (key, on_and_off) = (access.switches, access.latency());
        if key.0 == key.1 {
            return Ok(Nanos(on_and_off));
        }
        self.sync_caches(state);
        if let Some(between) = self.switch_spreads.latency(key) {
            return Ok(Nanos(between + on_and_off));
        }
        let dag = self.dag(state, src, dst)?;
        let latency = self.latencies_to_dst(&dag)[0];
        let kept = &mut self.switch_spreads;
        if kept.latencies.len() < MAX_LINKS {
            kept.latencies
                .insert(key, latency.saturating_sub(on_and_off));
        }
        Ok(Nanos(latency))
    }

    /// Per node of `dag` (by position), the latency of its slowest path to the destination.
    fn latencies_to_dst(&self, dag: &Dag) -> Vec<u64> {
        let mut latency_to_dst = vec![0u64; dag.nodes.len()];
        for i in (0..dag.nodes.len()).rev() {
            for &(l, j) in dag.hops(i) {
                latency_to_dst[i] =
                    latency_to_dst[i].max(latency_to_dst[j as usize] + self.topo.link(l).latency.0);
            }
        }
        latency_to_dst
    }

    /// [`Self::spread`] from the shortest-path DAG.
    fn spread_over_dag(
        &mut self,
        state: &LinkState,
        src: NodeId,
        dst: NodeId,
    ) -> Result<Route, RouteError> {
        let dag = self.dag(state, src, dst)?;
        let n = dag.nodes.len();
        let mut to_dst = vec![0f64; n];
        for i in (0..n).rev() {
            if dag.nodes[i] == dst {
                to_dst[i] = 1.0;
            }
            for &(_, j) in dag.hops(i) {
                to_dst[i] += to_dst[j as usize];
            }
        }
        let latency = self.latencies_to_dst(&dag)[0];
        let total = to_dst[0];
        let mut from_src = vec![0f64; n];
        from_src[0] = 1.0;
        let mut links = Vec::new();
        for i in 0..n {
            for &(l, j) in dag.hops(i) {
                let j = j as usize;
                from_src[j] += from_src[i];
                links.push((l, from_src[i] * to_dst[j] / total));
            }
        }
        links.sort_by_key(|&(l, _)| l);
        Ok(Route::Spread {
            links,
            latency: Nanos(latency),
        })
    }
}
