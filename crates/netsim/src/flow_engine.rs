//! The flow-level engine: flows share links max-min fairly; rates are re-solved only where
//! something changed.
//!
//! Bookkeeping: a flow's remaining bytes are settled lazily, from its rate and the time of its
//! last rate change. Every arrival, drain, reroute or capacity change marks flows or links
//! *dirty*; before time moves on, all changes that share the current timestamp are solved
//! together, and only the flows they can affect are re-solved (SimGrid's "selective update",
//! narrowed further; `component.rs` has the search, the solve and its check).
//!
//! Departures: when flows leave and the slowest of them had rate `r`, progressive filling below
//! level `r` runs exactly as before (every link a departed flow crossed saturated at `r` or
//! above), so every flow slower than `r` keeps its rate. Only flows at or above `r` are
//! re-solved, on the capacity the slower flows leave, starting from the links a departed flow
//! *saturated* (a link below capacity bound no flow, so freeing more of it changes no rate).
//! In a congested fabric the fastest flows finish first, so most departures touch a handful of
//! flows.
//!
//! Arrivals likewise: a new flow's final rate is at least `min over its links of C / W` (the
//! capacity over the total weight crossing the link), and every flow slower than the new flow
//! keeps its rate, so only flows at or above that floor are re-solved. And a new flow that fits
//! at its solo rate on every link it crosses needs no solve at all (the uncongested fast path).
//!
//! The set re-solved grows through saturated links only, and the result is then checked
//! against the max-min certificate on every link it changed; flows that fail join the set and
//! it is solved again. Reroutes and capacity changes take everything they reach instead.
//!
//! A flow *drains* when its last byte leaves the source; it *completes* one path latency later,
//! when the last byte arrives.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fabricsim_topology::{Bandwidth, LinkId, Nanos, Topology};

use crate::engine::{Completion, Engine, FlowId, FlowSpec, LinkStats};
use crate::maxmin::Solver;

mod component;
mod link;

use link::{Link, Spill};

struct Flow {
    links: Span,
    cap: f64,
    latency: Nanos,
    /// Bytes still to send as of `updated`.
    remaining: f64,
    /// Its size, and the bytes it sent before it moved onto `links` (credited to the links it
    /// left when it was rerouted): what its links carried is summed from these when asked
    /// for, not counted as it goes (see `link_stats`).
    size: f64,
    sent_before: f64,
    updated: Nanos,
    /// Bumped whenever the rate changes, so stale drain events are skipped.
    version: u32,
    active: bool,
}

/// Where a flow's links lie in the [`Incidence`] arena.
#[derive(Clone, Copy)]
struct Span {
    ids: usize,
    /// Where its weights start, or `UNWEIGHTED` for a flow with weight 1 on every link (a
    /// single path, the common case, which stores no weights).
    weights: usize,
    len: u32,
}

const UNWEIGHTED: usize = usize::MAX;

/// Every flow's links, in one arena in submission order: no allocation per flow, and a flow's
/// links are one contiguous read. A rerouted flow's new links are appended (its old ones stay,
/// unused: reroutes are rare).
#[derive(Default)]
struct Incidence {
    ids: Vec<u32>,
    weights: Vec<f64>,
}

impl Incidence {
    fn push(&mut self, links: &[(LinkId, f64)]) -> Span {
        let ids = self.ids.len();
        self.ids.extend(links.iter().map(|&(l, _)| l.0));
        let weights = if links.iter().all(|&(_, w)| w == 1.0) {
            UNWEIGHTED
        } else {
            let at = self.weights.len();
            self.weights.extend(links.iter().map(|&(_, w)| w));
            at
        };
        Span {
            ids,
            weights,
            len: links.len() as u32,
        }
    }

    /// The links of `span`, each with its weight.
    fn get(&self, span: Span) -> impl Iterator<Item = (u32, f64)> + '_ {
        let ids = &self.ids[span.ids..span.ids + span.len as usize];
        let weights = (span.weights != UNWEIGHTED)
            .then(|| &self.weights[span.weights..span.weights + span.len as usize]);
        ids.iter()
            .enumerate()
            .map(move |(i, &l)| (l, weights.map_or(1.0, |w| w[i])))
    }
}

/// Scratch for one component's solve, in the component's local link numbers: the flows'
/// links (CSR), their caps, and per link the load that stays and the capacity left.
#[derive(Default)]
struct DenseScratch {
    start: Vec<u32>,
    links: Vec<(u32, f64)>,
    caps: Vec<f64>,
    fixed: Vec<f64>,
    capacity: Vec<f64>,
}

#[derive(Clone, Copy)]
struct FlowHot {
    rate: f64,
    mark: u32,
    /// While a solve runs (`mark` is its epoch): the flow's position in `comp_flows`, or
    /// `PENDING` (taken in, not solved yet) or `CERTIFIED` (left out: it keeps its rate).
    slot: u32,
}

/// An event due at a time (ns) for a flow, with a tag (a drain's rate version), packed into
/// one integer so that the event heaps compare once: ordered by time, then flow, then tag, as
/// the tuple would be.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Due(u128);

impl Due {
    fn new(at: u64, flow: u32, tag: u32) -> Due {
        Due(u128::from(at) << 64 | u128::from(flow) << 32 | u128::from(tag))
    }

    fn parts(self) -> (u64, u32, u32) {
        ((self.0 >> 64) as u64, (self.0 >> 32) as u32, self.0 as u32)
    }
}

/// Relative slack of "saturated" and "no faster": rates and loads are sums of floats.
const TOLERANCE: f64 = 1e-9;

const PENDING: u32 = u32::MAX;
const CERTIFIED: u32 = u32::MAX - 1;

/// See the module docs.
pub struct FlowEngine {
    now: Nanos,
    link: Vec<Link>,
    flows: Vec<Flow>,
    incidence: Incidence,
    /// Per flow: its rate (bytes/s) and the epoch of the last component search that took it.
    /// Kept apart from `flows`, together, because the search reads both for every flow on
    /// every link it visits.
    hot: Vec<FlowHot>,
    /// The link flow lists too long for their link's cache line.
    spill: Spill,
    /// Per link, the bytes carried by flows that were rerouted off it.
    rerouted_bytes: Vec<f64>,
    dirty_flows: Vec<u32>,
    dirty_links: Vec<u32>,
    /// The smallest rate among flows that drained since the last solve. See `solve_dirty`.
    drain_floor: f64,
    /// A reroute or capacity change is pending: everything it touches must be re-solved.
    structural: bool,
    /// Drain times (with the rate version they were computed at) and completions, each a
    /// min-heap of [`Due`].
    drains: BinaryHeap<Reverse<Due>>,
    arrivals: BinaryHeap<Reverse<Due>>,
    solver: Solver,
    // Component search scratch, reused across solves (no allocation in steady state).
    epoch: u32,
    comp_flows: Vec<u32>,
    comp_links: Vec<u32>,
    /// The links the changes being solved touched (see `keeps_floor`), sorted; built on demand.
    touched: Vec<u32>,
    /// Scratch of `widen`: flows that fail the check (with the faster flows that broke their
    /// bottlenecks), and the flows outside the set on its saturated links.
    widened: Vec<u32>,
    outside: Vec<u32>,
    /// Per link, the fastest flow on it as the check numbered `check` found it (see
    /// `fastest_on`; sized on first use).
    fastest: Vec<(u32, f64)>,
    check: u32,
    rates: Vec<f64>,
    dense: DenseScratch,
    /// Link accounting, filled from `link` when asked for.
    stats: LinkStats,
    solves: u64,
    solved_flows: u64,
}

fn ns_to_s(ns: u64) -> f64 {
    ns as f64 * 1e-9
}

impl FlowEngine {
    /// An engine over `topo`'s links at their cabled capacities, at time 0.
    pub fn new(topo: &Topology) -> Self {
        let n = topo.link_count();
        FlowEngine {
            now: Nanos(0),
            link: topo
                .links()
                .iter()
                .map(|l| Link::new(l.capacity.0 as f64))
                .collect(),
            flows: Vec::new(),
            incidence: Incidence::default(),
            hot: Vec::new(),
            spill: Spill::default(),
            rerouted_bytes: vec![0.0; n],
            dirty_flows: Vec::new(),
            dirty_links: Vec::new(),
            drain_floor: f64::INFINITY,
            structural: false,
            drains: BinaryHeap::new(),
            arrivals: BinaryHeap::new(),
            solver: Solver::default(),
            epoch: 0,
            comp_flows: Vec::new(),
            comp_links: Vec::new(),
            touched: Vec::new(),
            widened: Vec::new(),
            outside: Vec::new(),
            fastest: Vec::new(),
            check: 0,
            rates: Vec::new(),
            dense: DenseScratch::default(),
            stats: LinkStats::new(n),
            solves: 0,
            solved_flows: 0,
        }
    }

    /// How many component re-solves ran (for benchmarks and tests of incrementality).
    pub fn solves(&self) -> u64 {
        self.solves
    }

    /// Flows re-solved, summed over all solves.
    pub fn solved_flows(&self) -> u64 {
        self.solved_flows
    }

    /// Flows submitted so far.
    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    /// Whether `flow` still has bytes to send.
    pub fn is_active(&self, flow: FlowId) -> bool {
        self.flows[flow.0 as usize].active
    }

    /// Brings `f`'s remaining bytes up to now.
    fn settle(&mut self, f: u32) {
        let now = self.now;
        let rate = self.hot[f as usize].rate;
        let flow = &mut self.flows[f as usize];
        let sent = if rate.is_finite() {
            (rate * ns_to_s(now.0 - flow.updated.0)).min(flow.remaining)
        } else {
            flow.remaining
        };
        flow.remaining -= sent;
        flow.updated = now;
    }

    /// Reads the cell of every link `f` crosses, each read independent of the others, so that
    /// their cache misses overlap: the work that follows per link is a chain of dependent steps
    /// the processor cannot run far enough ahead to reach the next link's miss. (It made the
    /// churn benchmark about 10% faster; docs/performance.md.)
    fn touch_links(&self, f: u32) {
        let mut sum = 0.0;
        for (l, _) in self.incidence.get(self.flows[f as usize].links) {
            sum += self.link[l as usize].capacity;
        }
        std::hint::black_box(sum);
    }

    /// Takes `f` off its links: its load goes, and the links it saturated are marked for a
    /// re-solve (see the module docs).
    fn detach(&mut self, f: u32) {
        let rate = self.hot[f as usize].rate;
        let now = self.now.0;
        for (l, w) in self.incidence.get(self.flows[f as usize].links) {
            let link = &mut self.link[l as usize];
            let saturated = link.saturated(TOLERANCE);
            if rate.is_finite() {
                link.set_load(now, (link.load() - w * rate).max(0.0));
            }
            if link.flows.remove(f, &mut self.spill) {
                link.weight = if link.flows.is_empty() {
                    0.0
                } else {
                    link.weight - w
                };
            }
            if saturated {
                self.dirty_links.push(l);
            }
        }
    }

    fn attach(&mut self, f: u32) {
        self.touch_links(f);
        for (l, w) in self.incidence.get(self.flows[f as usize].links) {
            let link = &mut self.link[l as usize];
            link.flows.push(f, &mut self.spill);
            link.weight += w;
        }
        self.dirty_flows.push(f);
    }

    /// A lower bound on the rate a new flow will get: its cap, and on each of its links the
    /// capacity over the total weight of the flows crossing it (no such link can saturate at a
    /// lower level, so progressive filling cannot freeze the flow earlier). Every flow slower
    /// than the new flow's final rate keeps its rate (filling below that level is unchanged),
    /// so an arrival re-solves only the flows at or above this floor.
    fn arrival_floor(&self, f: u32) -> f64 {
        let flow = &self.flows[f as usize];
        self.incidence
            .get(flow.links)
            .map(|(l, _)| self.link[l as usize].capacity / self.link[l as usize].weight.max(1e-12))
            .fold(flow.cap, f64::min)
    }

    /// The uncongested fast path (DESIGN.md "Scale"): a new flow that fits at its solo rate
    /// (its cap, or its tightest link alone) on every link it crosses changes no one else's
    /// max-min rate — the links it crosses stay within capacity, so none becomes anybody's new
    /// bottleneck — and needs no solve.
    fn try_fast_path(&mut self, f: u32) -> bool {
        let flow = &self.flows[f as usize];
        let links = || self.incidence.get(flow.links);
        let solo = links()
            .map(|(l, w)| self.link[l as usize].capacity / w)
            .fold(flow.cap, f64::min);
        if !(solo.is_finite() && solo > 0.0) {
            return false;
        }
        let fits = links().all(|(l, w)| {
            let link = &self.link[l as usize];
            link.load() + w * solo <= link.capacity * (1.0 + 1e-12)
        });
        if !fits {
            return false;
        }
        let now = self.now.0;
        for (l, w) in self.incidence.get(self.flows[f as usize].links) {
            let link = &mut self.link[l as usize];
            link.set_load(now, link.load() + w * solo);
            link.note_peak();
        }
        self.set_rate(f, solo);
        true
    }

    /// Gives `f` a new rate (its bytes settled up to now) and schedules its drain at it; the
    /// drain scheduled at the old rate goes stale.
    fn set_rate(&mut self, f: u32, rate: f64) {
        self.hot[f as usize].rate = rate;
        let flow = &mut self.flows[f as usize];
        flow.version = flow.version.wrapping_add(1);
        if rate > 0.0 {
            let at = self.now.0 + (flow.remaining / rate * 1e9).ceil() as u64;
            self.drains.push(Reverse(Due::new(at, f, flow.version)));
        }
    }

    fn next_drain(&mut self) -> Option<u64> {
        while let Some(&Reverse(due)) = self.drains.peek() {
            let (at, f, v) = due.parts();
            let flow = &self.flows[f as usize];
            if flow.active && flow.version == v {
                return Some(at);
            }
            self.drains.pop();
        }
        None
    }

    /// The next known event, without solving pending changes.
    fn peek_event(&mut self) -> Option<Nanos> {
        let drain = self.next_drain();
        let arrival = self.arrivals.peek().map(|Reverse(due)| due.parts().0);
        match (drain, arrival) {
            (Some(a), Some(b)) => Some(Nanos(a.min(b))),
            (a, b) => a.or(b).map(Nanos),
        }
    }
}

impl Engine for FlowEngine {
    fn now(&self) -> Nanos {
        self.now
    }

    fn submit(&mut self, spec: FlowSpec<'_>) -> FlowId {
        let id = self.flows.len() as u32;
        // A flow with nothing to send, or that crosses no link and has no cap, is done at once.
        let instant = spec.bytes == 0 || (spec.links.is_empty() && spec.cap.is_none());
        self.hot.push(FlowHot {
            rate: 0.0,
            mark: 0,
            slot: PENDING,
        });
        self.flows.push(Flow {
            links: self.incidence.push(spec.links),
            cap: spec.cap.map_or(f64::INFINITY, |c| c.0 as f64),
            latency: spec.latency,
            remaining: spec.bytes as f64,
            size: spec.bytes as f64,
            sent_before: 0.0,
            updated: self.now,
            version: 0,
            active: !instant,
        });
        if instant {
            self.flows[id as usize].remaining = 0.0;
            self.arrivals
                .push(Reverse(Due::new(self.now.0 + spec.latency.0, id, 0)));
        } else {
            self.attach(id);
        }
        FlowId(id)
    }

    fn set_link_capacity(&mut self, link: LinkId, capacity: Bandwidth) {
        self.link[link.index()].capacity = capacity.0 as f64;
        self.dirty_links.push(link.0);
        self.structural = true;
    }

    fn reroute(&mut self, flow: FlowId, links: Vec<(LinkId, f64)>, latency: Nanos) {
        let f = flow.0;
        if !self.flows[f as usize].active {
            return;
        }
        self.settle(f);
        // What it sent on the links it leaves stays theirs.
        let flow = &mut self.flows[f as usize];
        let sent = flow.size - flow.remaining - flow.sent_before;
        flow.sent_before += sent;
        for (l, w) in self.incidence.get(flow.links) {
            self.rerouted_bytes[l as usize] += sent * w;
        }
        self.detach(f);
        self.structural = true;
        let flow = &mut self.flows[f as usize];
        flow.links = self.incidence.push(&links);
        flow.latency = latency;
        self.attach(f);
    }

    fn links(&self, flow: FlowId) -> Vec<(LinkId, f64)> {
        self.incidence
            .get(self.flows[flow.0 as usize].links)
            .map(|(l, w)| (LinkId(l), w))
            .collect()
    }

    fn rate(&mut self, flow: FlowId) -> Bandwidth {
        self.solve_dirty();
        let r = self.hot[flow.0 as usize].rate;
        Bandwidth(if r.is_finite() { r as u64 } else { u64::MAX })
    }

    fn next_event(&mut self) -> Option<Nanos> {
        self.solve_dirty();
        self.peek_event()
    }
    fn advance(&mut self, to: Nanos, finished: &mut Vec<Completion>) {
        debug_assert!(to >= self.now, "time never goes back");
        loop {
            // Advancing to the current time needs no solve: a solve cannot create an event at
            // the current time (every solved flow has bytes left and a finite rate), so all
            // submissions at one timestamp stay batched into one solve.
            let next = if to == self.now {
                self.peek_event()
            } else {
                self.next_event()
            };
            let Some(t) = next.filter(|&t| t <= to) else {
                break;
            };
            self.now = t;
            while let Some(&Reverse(due)) = self.arrivals.peek() {
                let (at, f, _) = due.parts();
                if at != t.0 {
                    break;
                }
                self.arrivals.pop();
                finished.push(Completion {
                    flow: FlowId(f),
                    at: t,
                });
            }
            while self.next_drain() == Some(t.0) {
                let Some(Reverse(due)) = self.drains.pop() else {
                    break;
                };
                let f = due.parts().1;
                self.settle(f);
                let flow = &mut self.flows[f as usize];
                // The drain time was rounded up to a whole ns, so everything has been sent.
                debug_assert!(
                    flow.remaining <= 1e-6 * (1.0 + self.hot[f as usize].rate * 1e-9),
                    "flow {f} drained with {} bytes left",
                    flow.remaining
                );
                flow.active = false;
                let at = t.0 + flow.latency.0;
                let rate = self.hot[f as usize].rate;
                self.arrivals.push(Reverse(Due::new(at, f, 0)));
                self.detach(f);
                self.drain_floor = self.drain_floor.min(rate);
            }
        }
        self.now = self.now.max(to);
    }

    /// Sums each link's bytes from the flows that crossed it (every flow's bytes sent on its
    /// current links, plus what rerouted flows left behind): exactly the bytes flows sent,
    /// whatever the rounding of drain times to ns, and nothing to count per event.
    fn link_stats(&mut self) -> &LinkStats {
        self.solve_dirty();
        self.stats.bytes.copy_from_slice(&self.rerouted_bytes);
        for f in 0..self.flows.len() as u32 {
            if self.flows[f as usize].active {
                self.settle(f);
            }
            let flow = &self.flows[f as usize];
            let sent = flow.size - flow.remaining - flow.sent_before;
            if sent > 0.0 {
                for (l, w) in self.incidence.get(flow.links) {
                    self.stats.bytes[l as usize] += sent * w;
                }
            }
        }
        for (l, link) in self.link.iter().enumerate() {
            self.stats.busy[l] = Nanos(link.busy_until(self.now.0));
            self.stats.peak_utilization[l] = link.peak;
        }
        self.stats.elapsed = self.now;
        &self.stats
    }
}
