//! The analytical engine: alpha-beta, no contention. A flow takes
//! `latency + bytes / bottleneck`, where the bottleneck is its cap and, on each link, the
//! link's capacity divided by the flow's weight there — as if it were alone on the fabric.
//! Instant estimates, and a cross-check: uncongested, the flow-level engine must agree.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fabricsim_topology::{Bandwidth, LinkId, Nanos, Topology};

use crate::engine::{Completion, Engine, FlowId, FlowSpec, LinkStats};

struct Flow {
    links: Vec<(LinkId, f64)>,
    cap: f64,
    remaining: f64,
    updated: Nanos,
    rate: f64,
    latency: Nanos,
    version: u32,
    active: bool,
}

pub struct AnalyticalEngine {
    now: Nanos,
    capacity: Vec<f64>,
    flows: Vec<Flow>,
    events: BinaryHeap<Reverse<(u64, u32, u32)>>,
    stats: LinkStats,
}

impl AnalyticalEngine {
    pub fn new(topo: &Topology) -> Self {
        AnalyticalEngine {
            now: Nanos(0),
            capacity: topo.links().iter().map(|l| l.capacity.0 as f64).collect(),
            flows: Vec::new(),
            events: BinaryHeap::new(),
            stats: LinkStats::new(topo.link_count()),
        }
    }

    fn schedule(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        let rate = flow
            .links
            .iter()
            .map(|&(l, w)| self.capacity[l.index()] / w)
            .fold(flow.cap, f64::min);
        flow.rate = rate;
        flow.version += 1;
        if rate > 0.0 {
            let drain = self.now.0 + (flow.remaining / rate * 1e9).ceil() as u64;
            self.events
                .push(Reverse((drain + flow.latency.0, f, flow.version)));
        }
    }

    fn settle(&mut self, f: u32) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        if flow.rate.is_finite() {
            let sent = (flow.rate * (now.0 - flow.updated.0) as f64 * 1e-9).min(flow.remaining);
            flow.remaining -= sent;
            for &(l, w) in &flow.links {
                self.stats.bytes[l.index()] += sent * w;
            }
        }
        flow.updated = now;
    }
}

impl Engine for AnalyticalEngine {
    fn now(&self) -> Nanos {
        self.now
    }

    fn submit(&mut self, spec: FlowSpec<'_>) -> FlowId {
        let id = self.flows.len() as u32;
        self.flows.push(Flow {
            links: spec.links.to_vec(),
            cap: spec.cap.map_or(f64::INFINITY, |c| c.0 as f64),
            remaining: spec.bytes as f64,
            updated: self.now,
            rate: 0.0,
            latency: spec.latency,
            version: 0,
            active: true,
        });
        self.schedule(id);
        FlowId(id)
    }

    fn set_link_capacity(&mut self, link: LinkId, capacity: Bandwidth) {
        self.capacity[link.index()] = capacity.0 as f64;
        for f in 0..self.flows.len() as u32 {
            if self.flows[f as usize].active
                && self.flows[f as usize].links.iter().any(|&(l, _)| l == link)
            {
                self.settle(f);
                self.schedule(f);
            }
        }
    }

    fn reroute(&mut self, flow: FlowId, links: Vec<(LinkId, f64)>, latency: Nanos) {
        if self.flows[flow.0 as usize].active {
            self.settle(flow.0);
            self.flows[flow.0 as usize].links = links;
            self.flows[flow.0 as usize].latency = latency;
            self.schedule(flow.0);
        }
    }

    fn links(&self, flow: FlowId) -> Vec<(LinkId, f64)> {
        self.flows[flow.0 as usize].links.clone()
    }

    fn rate(&mut self, flow: FlowId) -> Bandwidth {
        let r = self.flows[flow.0 as usize].rate;
        Bandwidth(if r.is_finite() { r as u64 } else { u64::MAX })
    }

    fn next_event(&mut self) -> Option<Nanos> {
        while let Some(&Reverse((at, f, v))) = self.events.peek() {
            if self.flows[f as usize].active && self.flows[f as usize].version == v {
                return Some(Nanos(at));
            }
            self.events.pop();
        }
        None
    }

    fn advance(&mut self, to: Nanos, finished: &mut Vec<Completion>) {
        while let Some(t) = self.next_event().filter(|&t| t <= to) {
            let Some(Reverse((_, f, _))) = self.events.pop() else {
                break;
            };
            self.now = t;
            self.settle(f);
            let flow = &mut self.flows[f as usize];
            for &(l, w) in &flow.links {
                self.stats.bytes[l.index()] += flow.remaining * w;
            }
            flow.remaining = 0.0;
            flow.active = false;
            finished.push(Completion {
                flow: FlowId(f),
                at: t,
            });
        }
        self.now = self.now.max(to);
    }

    fn link_stats(&mut self) -> &LinkStats {
        self.stats.elapsed = self.now;
        &self.stats
    }
}
