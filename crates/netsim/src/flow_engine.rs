//! The flow-level engine: flows share links max-min fairly; rates are re-solved only where
//! something changed.
//!
//! Bookkeeping: what a flow has sent is settled lazily, from its rate and the time of its last
//! rate change. Every arrival, drain, reroute or capacity change marks flows or links
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
//! The set re-solved grows through saturated links only (on a link it only passes through,
//! to the link's fastest flows: those bottlenecked there), and the result is then checked
//! against the max-min certificate on every link it changed; flows that fail join the set and
//! it is solved again. Reroutes and capacity changes take everything they reach instead.
//!
//! A flow *drains* when its last byte leaves the source; it *completes* one path latency later,
//! when the last byte arrives.
//!
//! The variables of all this are *cohorts* (`cohort.rs`): the flows on one path in flight, one
//! variable weighted by their number, so that dense sharing costs per path, not per flow. And
//! of links that carry the same flows at every instant (a NIC's PCIe link and its port; under
//! spraying, a switch's links up and the links down into it), a cohort crosses only one
//! (`twins.rs`).

use std::cmp::Reverse;
use std::collections::HashMap;

use fabricsim_topology::{Bandwidth, LinkId, Nanos, Topology};

use crate::engine::{Completion, Engine, FlowId, FlowSpec, LinkStats, Placed};
use crate::maxmin::Solver;
use crate::window::Window;

mod cohort;
mod component;
mod figures;
mod groups;
mod in_place;
mod link;
mod membership;
mod twins;

use cohort::{Cohort, Member, NO_COHORT, PATH_SLOTS};
use link::{Link, Spill};
use twins::Twins;

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

impl Span {
    /// Whether some link of it has a weight other than 1.
    fn weighted(&self) -> bool {
        self.weights != UNWEIGHTED
    }
}

/// Every cohort's links, in one arena in the order cohorts formed: no allocation per cohort,
/// and a cohort's links are one contiguous read.
#[derive(Default)]
struct Incidence {
    ids: Vec<u32>,
    weights: Vec<f64>,
    /// Per entry of `ids`: the cohort's position in that link's flow list while it is on it,
    /// so that taking it off is a swap, not a search through the link's thousands.
    pos: Vec<u32>,
}

impl Incidence {
    fn push(&mut self, links: &[(LinkId, f64)]) -> Span {
        let ids = self.ids.len();
        self.ids.extend(links.iter().map(|&(l, _)| l.0));
        self.pos.resize(self.ids.len(), 0);
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

    /// The `i`-th link of `span` and its weight (one flow's).
    fn at(&self, span: Span, i: usize) -> (u32, f64) {
        let w = if span.weights == UNWEIGHTED {
            1.0
        } else {
            self.weights[span.weights + i]
        };
        (self.ids[span.ids + i], w)
    }

    /// The links of `span`, and their weights unless all are 1.
    fn slices(&self, span: Span) -> (&[u32], Option<&[f64]>) {
        let len = span.len as usize;
        let ids = &self.ids[span.ids..span.ids + len];
        let weights =
            (span.weights != UNWEIGHTED).then(|| &self.weights[span.weights..span.weights + len]);
        (ids, weights)
    }

    /// The links of `span`, each with its weight (one flow's).
    fn get(&self, span: Span) -> impl Iterator<Item = (u32, f64)> + '_ {
        let (ids, weights) = self.slices(span);
        ids.iter()
            .enumerate()
            .map(move |(i, &l)| (l, weights.map_or(1.0, |w| w[i])))
    }
}

/// Cohort `b`'s links, each with its weight on the link: its flows' weight times their number.
fn weighted<'a>(incidence: &'a Incidence, b: &Cohort) -> impl Iterator<Item = (u32, f64)> + 'a {
    let members = f64::from(b.members);
    incidence.get(b.links).map(move |(l, w)| (l, w * members))
}

/// Scratch for one component's solve, in the component's local link numbers: the flows'
/// links (CSR) and weights ([`crate::maxmin::Dense`]), their caps, and per link the load that
/// stays and the capacity left.
#[derive(Default)]
struct DenseScratch {
    start: Vec<u32>,
    links: Vec<u32>,
    weights: Vec<f64>,
    scale: Vec<f64>,
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

/// An event due at a time (ns) for a cohort or a flow, packed into one integer so that the
/// event heaps compare once: ordered by time, then id, as the pair would be.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Due(u128);

impl Due {
    fn new(at: u64, id: u32) -> Due {
        Due(u128::from(at) << 64 | u128::from(id))
    }

    fn parts(self) -> (u64, u32) {
        ((self.0 >> 64) as u64, self.0 as u32)
    }
}

/// No drain: a cohort at rate 0, or not solved yet.
const NEVER: u64 = u64::MAX;

/// Relative slack of "saturated" and "no faster": rates and loads are sums of floats.
const TOLERANCE: f64 = 1e-9;

const PENDING: u32 = u32::MAX;
const CERTIFIED: u32 = u32::MAX - 1;

/// See the module docs.
pub struct FlowEngine {
    now: Nanos,
    link: Vec<Link>,
    /// Per link: the epoch of the last component search that took it, and its local number in
    /// that solve (its place in the set's links, given as the search takes it in). Kept apart
    /// from `link`, 8 bytes each: the search reads the mark, and the solve and the check the
    /// number, for every link entry of every cohort they take, where they read a link's cell
    /// once; side by side, the number is in the line the mark brought. Allocated zeroed, so
    /// pages no search reaches are never touched.
    link_mark: Vec<(u32, u32)>,
    /// The variables: the flows on one path (`cohort.rs`). The internals below say "flow" for a
    /// cohort; the flows the user submits are `members`.
    cohorts: Vec<Cohort>,
    /// By flow id, from the oldest unfinished one (finished flows' records are dropped).
    members: Window<Member>,
    /// The last cohort of each path, in flight or retired, by its key's slot (`cohort.rs`), or
    /// `NO_COHORT`, complemented (see `cohort::in_slot`).
    /// Each with the key's low 32 bits, so that a lookup reads a cohort only when the keys
    /// agree (most lookups of a run of distinct paths find another path's cohort).
    paths: Vec<(u32, u32)>,
    incidence: Incidence,
    /// Per cohort: its rate per flow (bytes/s) and the epoch of the last component search that
    /// took it. Kept apart from `cohorts`, together, because the search reads both for every
    /// cohort on every link it visits.
    hot: Vec<FlowHot>,
    /// The link flow lists too long for their link's cache line.
    spill: Spill,
    /// Scratch: the members a drain finished.
    done: Vec<u32>,
    dirty_flows: Vec<u32>,
    dirty_links: Vec<u32>,
    /// The smallest rate among flows that drained since the last solve. See `solve_dirty`.
    drain_floor: f64,
    /// A reroute or capacity change is pending: everything it touches must be re-solved.
    structural: bool,
    /// Drain times (of cohorts, see `schedule_drain`) and completions (of flows), each a
    /// min-heap of [`Due`].
    drains: dary_heap::QuaternaryHeap<Reverse<Due>>,
    arrivals: dary_heap::QuaternaryHeap<Reverse<Due>>,
    solver: Solver,
    // Component search scratch, reused across solves (no allocation in steady state).
    epoch: u32,
    comp_flows: Vec<u32>,
    comp_links: Vec<u32>,
    /// Per link of `comp_links`: its load and capacity as the search found them.
    comp_held: Vec<component::Held>,
    /// Changed links that no flow crosses: out of the problem, their load 0 on a commit.
    idle_links: Vec<u32>,
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
    /// Components with more link entries are solved in place (`in_place.rs`).
    in_place_entries: usize,
    /// Link accounting, filled from `link` when asked for.
    stats: LinkStats,
    /// Twin links, solved as one (`twins.rs`).
    twins: Twins,
    /// NIC ports that the same cohorts cross, solved as one (`groups.rs`).
    groups: groups::Groups,
    /// Folded cohorts' paths as given, where kept (`Cohort::given`).
    given: Vec<Span>,
    /// Cohorts given a named path ([`FlowSpec::path`]), with its name (`cohort.rs`).
    named: HashMap<u32, u64, rustc_hash::FxBuildHasher>,
    /// Where the last flow was placed (`placed`).
    last_placed: Placed,
    /// Per link: its peak utilization before its capacity last changed (`close_peak`); empty
    /// until a capacity changes under load (most runs never read or write it).
    peak_before: Vec<f64>,
    solves: u64,
    solved_flows: u64,
}

fn ns_to_s(ns: u64) -> f64 {
    ns as f64 * 1e-9
}

impl FlowEngine {
    /// An engine over `topo`'s links at their cabled capacities, at time 0.
    pub fn new(topo: &Topology) -> Self {
        let twins = Twins::new(topo);
        let mut link: Vec<Link> = topo
            .links()
            .iter()
            .map(|l| Link::new(l.capacity.0 as f64))
            .collect();
        for c in twins.active_classes() {
            link[c.rep as usize].capacity = twins.solved_capacity(c);
        }
        FlowEngine {
            now: Nanos(0),
            link_mark: vec![(0, 0); link.len()],
            link,
            cohorts: Vec::new(),
            members: Window::default(),
            paths: vec![(0, 0); PATH_SLOTS],
            incidence: Incidence::default(),
            hot: Vec::new(),
            spill: Spill::default(),
            done: Vec::new(),
            dirty_flows: Vec::new(),
            dirty_links: Vec::new(),
            drain_floor: f64::INFINITY,
            structural: false,
            drains: dary_heap::QuaternaryHeap::new(),
            arrivals: dary_heap::QuaternaryHeap::new(),
            solver: Solver::default(),
            epoch: 0,
            comp_flows: Vec::new(),
            comp_links: Vec::new(),
            comp_held: Vec::new(),
            idle_links: Vec::new(),
            touched: Vec::new(),
            widened: Vec::new(),
            outside: Vec::new(),
            fastest: Vec::new(),
            check: 0,
            rates: Vec::new(),
            dense: DenseScratch::default(),
            in_place_entries: in_place::IN_PLACE_ENTRIES,
            stats: LinkStats::default(),
            twins,
            groups: groups::Groups::new(topo),
            given: Vec::new(),
            named: HashMap::default(),
            last_placed: Placed {
                cohort: NO_COHORT,
                key: 0,
            },
            peak_before: Vec::new(),
            solves: 0,
            solved_flows: 0,
        }
    }

    /// Solves components of more than `entries` link entries in place rather than from a
    /// compact copy (by default above 2^18; the rates are the same to the last bit, which
    /// the tests check by solving everything in place).
    pub fn solve_in_place_above(&mut self, entries: usize) {
        self.in_place_entries = entries;
    }

    /// Solves every link on its own, twin links too (`twins.rs`), where they would be solved
    /// as one: the same rates and link figures, for tests. Before the first flow.
    pub fn keep_twins_apart(&mut self) {
        debug_assert_eq!(self.flow_count(), 0, "before the first flow");
        self.unfold_all(None);
    }

    /// How many component re-solves ran (for benchmarks and tests of incrementality).
    pub fn solves(&self) -> u64 {
        self.solves
    }

    /// Port groups in force (`groups.rs`): for benchmarks and tests.
    pub fn port_groups(&self) -> usize {
        self.groups.count()
    }

    /// Cohorts re-solved (each the flows on one path), summed over all solves.
    pub fn solved_flows(&self) -> u64 {
        self.solved_flows
    }

    /// Each link's utilization now (load over capacity; 0 for a link of no capacity), in link
    /// order, into `out`.
    pub fn utilization_now(&mut self, out: &mut Vec<f64>) {
        self.solve_dirty();
        out.clear();
        out.extend((0..self.link.len() as u32).map(|l| {
            let (cell, capacity) = self.figured_as(l);
            if capacity > 0.0 {
                self.link[cell as usize].load() / capacity
            } else {
                0.0
            }
        }));
    }

    /// Flows submitted so far.
    pub fn flow_count(&self) -> usize {
        self.members.end() as usize
    }

    /// Flows whose records are held: from the oldest unfinished one to the newest (finished
    /// flows before it are forgotten).
    pub fn flows_held(&self) -> usize {
        self.members.len()
    }

    /// Paths that carried flows so far (cohorts formed): at most `flow_count`, and far fewer
    /// where many flows share paths.
    pub fn cohort_count(&self) -> usize {
        self.cohorts.len()
    }

    /// Whether `flow` still has bytes to send.
    pub fn is_active(&self, flow: FlowId) -> bool {
        self.members.get(flow.0).is_some_and(|m| m.active)
    }

    /// Cohort `f`'s links as the re-solve reads them (`groups.rs`), each with its path's
    /// weight there (one flow's).
    fn solve_links(&self, f: u32) -> impl Iterator<Item = (u32, f64)> + '_ {
        self.groups
            .links(&self.incidence, f, self.cohorts[f as usize].links)
    }

    /// Brings `f`'s service (and what it carried) up to now: never past its next member's
    /// target, where its next drain is due.
    fn settle(&mut self, f: u32) {
        let now = self.now;
        let rate = self.hot[f as usize].rate;
        let left = self.next_target(f) - self.cohorts[f as usize].service;
        let flow = &mut self.cohorts[f as usize];
        let sent = if rate.is_finite() {
            (rate * ns_to_s(now.0 - flow.updated.0)).min(left)
        } else {
            left
        };
        if sent.is_finite() && sent > 0.0 {
            flow.service += sent;
            flow.carried += sent * f64::from(flow.members);
        }
        flow.updated = now;
    }

    /// Reads the cell of every link `f` crosses, each read independent of the others, so that
    /// their cache misses overlap: the work that follows per link is a chain of dependent steps
    /// the processor cannot run far enough ahead to reach the next link's miss. (It made the
    /// churn benchmark about 10% faster; docs/performance.md.)
    fn touch_links(&self, f: u32) {
        let mut sum = 0.0;
        for (l, _) in self.incidence.get(self.cohorts[f as usize].links) {
            sum += self.link[l as usize].capacity;
        }
        std::hint::black_box(sum);
    }

    /// A lower bound on the rate a new flow will get: its cap, and on each of its links the
    /// capacity over the total weight of the flows crossing it (no such link can saturate at a
    /// lower level, so progressive filling cannot freeze the flow earlier). Every flow slower
    /// than the new flow's final rate keeps its rate (filling below that level is unchanged),
    /// so an arrival re-solves only the flows at or above this floor.
    fn arrival_floor(&self, f: u32) -> f64 {
        let flow = &self.cohorts[f as usize];
        self.incidence
            .get(flow.links)
            .map(|(l, _)| self.link[l as usize].capacity / self.link[l as usize].weight.max(1e-12))
            .fold(flow.cap, f64::min)
    }

    /// The uncongested fast path: a new flow that fits at its solo rate
    /// (its cap, or its tightest link alone) on every link it crosses changes no one else's
    /// max-min rate — the links it crosses stay within capacity, so none becomes anybody's new
    /// bottleneck — and needs no solve.
    fn try_fast_path(&mut self, f: u32) -> bool {
        let flow = &self.cohorts[f as usize];
        let links = || weighted(&self.incidence, flow);
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
        for (l, w) in weighted(&self.incidence, &self.cohorts[f as usize]) {
            let link = &mut self.link[l as usize];
            link.set_load(now, link.load() + w * solo);
            link.note_peak();
        }
        self.set_rate(f, solo);
        true
    }

    /// Gives `f` a new rate (its service settled up to now) and its next drain at it.
    fn set_rate(&mut self, f: u32, rate: f64) {
        self.hot[f as usize].rate = rate;
        let left = (self.next_target(f) - self.cohorts[f as usize].service).max(0.0);
        let at = if rate > 0.0 && left.is_finite() {
            self.now.0 + (left / rate * 1e9).ceil() as u64
        } else {
            NEVER
        };
        self.schedule_drain(f, at);
    }

    /// Makes `at` (or `NEVER`) `f`'s drain time. The heap gets an entry only when the drain
    /// moves earlier than `f`'s entry there: an entry that surfaces before its cohort's drain
    /// is put back at the drain time (see `next_drain`). Rates that fall as flows arrive move
    /// drains later, so a dense arrival phase adds no entries, where an entry per re-solve
    /// would pile up millions of stale ones.
    fn schedule_drain(&mut self, f: u32, at: u64) {
        let flow = &mut self.cohorts[f as usize];
        flow.drain_at = at;
        if at < flow.queued_at {
            flow.queued_at = at;
            self.drains.push(Reverse(Due::new(at, f)));
        }
    }

    /// Cohort `f` comes back on its links with its new number of flows, to be solved as an
    /// arrival (after `detach` with the old number).
    fn reattach(&mut self, f: u32) {
        self.hot[f as usize].rate = 0.0;
        self.cohorts[f as usize].drain_at = NEVER;
        self.attach(f);
    }

    /// Cohort `f` has no flow left (and is off its links).
    /// It stays in its slot of the table of paths, to be revived by the next flow on its path
    /// (`place`): flows that take a path one after another (a ring's steps, every iteration's
    /// collectives) then share one cohort's record, links and place in the link lists' index.
    fn retire(&mut self, f: u32) {
        self.cohorts[f as usize].active = false;
    }

    /// The earliest drain due. A cohort's live heap entry is the one at its `queued_at`
    /// (others were superseded by an earlier one); one that surfaced before its drain time
    /// goes back in at that time.
    fn next_drain(&mut self) -> Option<u64> {
        while let Some(&Reverse(due)) = self.drains.peek() {
            let (at, f) = due.parts();
            let flow = &mut self.cohorts[f as usize];
            if flow.active && flow.queued_at == at {
                if flow.drain_at == at {
                    return Some(at);
                }
                self.drains.pop();
                flow.queued_at = flow.drain_at;
                if flow.drain_at != NEVER {
                    self.drains.push(Reverse(Due::new(flow.drain_at, f)));
                }
                continue;
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
        let id = self.members.push(Member {
            cohort: NO_COHORT,
            target: 0.0,
            active: false,
        });
        // A flow with nothing to send, or that crosses no link and has no cap, is done at once.
        if spec.bytes == 0 || (spec.links.is_empty() && spec.cap.is_none()) {
            self.arrivals
                .push(Reverse(Due::new(self.now.0 + spec.latency.0, id)));
        } else {
            let cap = spec.cap.map_or(f64::INFINITY, |c| c.0 as f64);
            self.place(id, &spec, cap, spec.bytes as f64);
        }
        FlowId(id)
    }

    fn set_link_capacity(&mut self, link: LinkId, capacity: Bandwidth) {
        let (l, capacity) = (link.0, capacity.0 as f64);
        self.close_peak(l);
        let solved = self
            .twins
            .set_capacity(l, capacity)
            .unwrap_or((l, capacity));
        // A shadow's own cell keeps its capacity too: paths too sparse in shadows to fold
        // cross it (`twins.rs`), and their load there is bounded by it as by its
        // representative's.
        self.link[l as usize].capacity = capacity;
        self.link[solved.0 as usize].capacity = solved.1;
        self.dirty_links.push(solved.0);
        if solved.0 != l {
            self.dirty_links.push(l);
        }
        self.structural = true;
        self.dissolve_groups();
    }

    fn placed(&self, flow: FlowId) -> Option<Placed> {
        let m = self.members.get(flow.0)?;
        (m.active && m.cohort == self.last_placed.cohort).then_some(self.last_placed)
    }

    fn submit_on(&mut self, placed: Placed, bytes: u64, cap: Option<Bandwidth>) -> Option<FlowId> {
        let cap = cap.map_or(f64::INFINITY, |c| c.0 as f64);
        if bytes == 0 || !self.still_placed(placed, cap) {
            return None;
        }
        let id = self.members.push(Member {
            cohort: NO_COHORT,
            target: 0.0,
            active: false,
        });
        self.join_path(placed.cohort, id, bytes as f64);
        self.last_placed = placed;
        Some(FlowId(id))
    }

    fn set_link_capacities(&mut self, capacities: impl ExactSizeIterator<Item = Bandwidth>) {
        if self.flow_count() > 0 || capacities.len() != self.link.len() {
            for (l, capacity) in capacities.enumerate() {
                self.set_link_capacity(LinkId(l as u32), capacity);
            }
            return;
        }
        self.set_capacities_before_any_flow(capacities);
    }

    fn reroute(&mut self, flow: FlowId, links: Vec<(LinkId, f64)>, latency: Nanos) {
        let m = flow.0;
        let Some(&member) = self.members.get(m).filter(|m| m.active) else {
            return;
        };
        // It leaves its cohort (what it sent there stays in the cohort's `carried`) and takes
        // what it has left to its new path.
        let b = member.cohort;
        self.settle(b);
        let left = self.member_remaining(m);
        let cap = self.cohorts[b as usize].cap;
        self.detach(b, self.cohorts[b as usize].members);
        self.leave(m);
        if self.cohorts[b as usize].members > 0 {
            self.reattach(b);
        } else {
            self.retire(b);
        }
        self.structural = true;
        self.dissolve_groups();
        let spec = FlowSpec {
            links: &links,
            latency,
            ..FlowSpec::default()
        };
        self.place(m, &spec, cap, left);
    }

    fn links(&self, flow: FlowId) -> Vec<(LinkId, f64)> {
        let b = self.members.get(flow.0).map_or(NO_COHORT, |m| m.cohort);
        if b == NO_COHORT {
            return Vec::new();
        }
        let cohort = &self.cohorts[b as usize];
        let links = self.incidence.get(cohort.links);
        if cohort.folded {
            let mut out = Vec::with_capacity(cohort.links.len as usize * 3 / 2);
            self.twins.unfold(links, &mut out);
            out
        } else {
            links.map(|(l, w)| (LinkId(l), w)).collect()
        }
    }

    fn rate(&mut self, flow: FlowId) -> Bandwidth {
        self.solve_dirty();
        let b = self.members.get(flow.0).map_or(NO_COHORT, |m| m.cohort);
        let r = if b == NO_COHORT {
            0.0
        } else {
            self.hot[b as usize].rate
        };
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
                let (at, f) = due.parts();
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
                let flow = &mut self.cohorts[f as usize];
                (flow.queued_at, flow.drain_at) = (NEVER, NEVER);
                self.settle(f);
                let rate = self.hot[f as usize].rate;
                let before = self.cohorts[f as usize].members;
                let mut done = std::mem::take(&mut self.done);
                done.clear();
                self.pop_done(f, &mut done);
                if done.is_empty() {
                    // Rounding left its next member a sliver short: due again a ns later.
                    self.set_rate(f, rate);
                    self.done = done;
                    continue;
                }
                let at = t.0 + self.cohorts[f as usize].latency.0;
                for &m in &done {
                    self.arrivals.push(Reverse(Due::new(at, m)));
                }
                self.done = done;
                self.detach(f, before);
                self.drain_floor = self.drain_floor.min(rate);
                if self.cohorts[f as usize].members > 0 {
                    self.reattach(f);
                } else {
                    self.retire(f);
                }
            }
        }
        self.members.trim(|m| !m.active);
        self.now = self.now.max(to);
    }

    /// Each link's bytes ([`Self::sum_link_bytes`]), time with load and peak utilization.
    fn link_stats(&mut self) -> &LinkStats {
        self.sum_link_bytes();
        let n = self.link.len();
        self.stats.busy.resize(n, Nanos(0));
        self.stats.peak_utilization.resize(n, 0.0);
        for l in 0..self.link.len() as u32 {
            let (cell, capacity) = self.figured_as(l);
            self.stats.busy[l as usize] = Nanos(self.link[cell as usize].busy_until(self.now.0));
            self.stats.peak_utilization[l as usize] = self.peak_on(l, cell, capacity);
        }
        &self.stats
    }
}
