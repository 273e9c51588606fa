//! Max-min fair rates by progressive filling (water-filling), heap-based.
//!
//! Every unfrozen flow's rate rises together at level `λ`. A link `l` carries
//! `frozen_l + λ · W_l`, where `W_l` sums the weights of the unfrozen flows crossing it (a flow
//! of weight `w` on a link puts `w · rate` on it: 1 for a path, a fraction for a spread flow),
//! so it saturates at `λ_l = (C_l − frozen_l) / W_l`. A flow with a rate cap freezes when `λ`
//! reaches the cap. Pop the smallest event from a heap, freeze the flows it concerns, update
//! the links they cross, repeat.
//!
//! Events are keyed lazily, one per link. Freezing a flow of weight `w` at level
//! `λ ≤ λ_l` on link `l` never lowers `λ_l`: `(C − F − wλ)/(W − w) ≥ (C − F − wλ_l)/(W − w) = λ_l`.
//! So a link's key is a lower bound of its level; a popped link whose level has risen since is
//! pushed back with its current level instead of saturating. A freeze then touches no heap,
//! and a link crossed by many flows that freeze elsewhere is re-pushed once per pop, not once
//! per freeze: O(incidences + pops · log links). The first keys are all known before the first
//! pop: they are sorted once, at the first pop (a hashed ring's component pops nearly all,
//! and a sort costs less than as many heap pops), only the re-keyed go into a heap, and each
//! step takes the lower of the two. A problem solved in place (`Problem`'s
//! `LISTS_FLOWS`) keys all its links into the heap: its flows freeze early.
//!
//! A link only one flow crosses keeps its level until that flow freezes and is dead after, so
//! of a flow's own links only the one that pops first is keyed at all.
//!
//! Once every flow is frozen the solve stops: the links still in the heap change nothing.
//!
//! Problems of a few flows over a few dozen links (most re-solves of a churning fabric: one
//! or two flows) skip the heap and its link-to-flow index: a scan of every link's key picks
//! the event the heap would pop, so the two give the same rates to the last bit.
//!
//! The result is the max-min fair allocation: every flow is either at its cap or crosses a
//! saturated link on which no flow is faster (its bottleneck).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One flow of a problem: its links with weights, and an optional cap (bytes/s).
#[derive(Clone, Copy)]
pub struct Demand<'a> {
    pub links: &'a [(u32, f64)],
    pub cap: f64,
}

/// A problem over densely numbered links `0..capacity.len()`, flows in CSR form: flow `i`
/// crosses `links[start[i]..start[i + 1]]` (local links). The flow engine builds this for the
/// component it re-solves, so the solver's per-link state sits in short contiguous arrays
/// rather than spread over the whole fabric. A flow's weight on its `j`-th entry is
/// `weights[j] · scale[i]`, either factor 1 where its table is empty: a cohort's weight is its
/// path's (1 on every link but a spread's) times its number of flows, and most problems need
/// neither table per entry (4 bytes an entry, where a weight beside each took 16).
#[derive(Clone, Copy)]
pub struct Dense<'a> {
    /// Per link: the capacity left for these flows (bytes/s).
    pub capacity: &'a [f64],
    /// Per link: a distinct id; of links that saturate at the same level, the lower id goes
    /// first (the fabric link id, so the order does not depend on the local numbering).
    pub ids: &'a [u32],
    /// Per flow: where its links start in `links`; one entry more than flows.
    pub start: &'a [u32],
    pub links: &'a [u32],
    /// Per entry of `links`: the weight of its flow's path there; empty: 1 everywhere.
    pub weights: &'a [f64],
    /// Per flow: the factor of its weights; empty: 1 for every flow.
    pub scale: &'a [f64],
    /// Per flow: its rate cap, `INFINITY` for none.
    pub caps: &'a [f64],
}

impl Dense<'_> {
    /// Flow `f`'s links, each with its weight.
    pub fn flow(&self, f: usize) -> impl Iterator<Item = (u32, f64)> + '_ {
        let (a, b) = (self.start[f] as usize, self.start[f + 1] as usize);
        let scale = self.scale.get(f).copied().unwrap_or(1.0);
        (a..b).map(move |j| {
            (
                self.links[j],
                self.weights.get(j).map_or(scale, |&w| w * scale),
            )
        })
    }

    /// Flow `f`'s links.
    fn flow_ids(&self, f: usize) -> &[u32] {
        &self.links[self.start[f] as usize..self.start[f + 1] as usize]
    }
}

/// What the heap solver reads of a problem: links in local numbers `0..links()`, flows
/// `0..flows()`. [`Dense`] holds a copy; the flow engine reads a component too large to copy
/// where it lies, and lists each link's flows from its own link lists
/// ([`Problem::LISTS_FLOWS`]), so that the solver builds no index of its own.
pub trait Problem {
    fn links(&self) -> usize;
    fn flows(&self) -> usize;
    /// Link `k`'s capacity left for these flows (bytes/s).
    fn capacity(&self, k: usize) -> f64;
    /// Link `k`'s distinct id: of links that saturate at the same level, the lower goes first.
    fn id(&self, k: usize) -> u32;
    /// Flow `f`'s rate cap, `INFINITY` for none.
    fn cap(&self, f: usize) -> f64;
    /// Calls `visit(k, w)` for each of flow `f`'s links with its weight there, in one order.
    fn each_link(&self, f: usize, visit: impl FnMut(u32, f64));
    /// Whether [`Problem::flows_on`] lists links' flows.
    const LISTS_FLOWS: bool = false;
    /// The flows on link `k`, once per entry, in increasing order, into `out` (called only
    /// where [`Problem::LISTS_FLOWS`]).
    fn flows_on(&self, _k: usize, _out: &mut Vec<u32>) {}
}

impl Problem for Dense<'_> {
    fn links(&self) -> usize {
        self.capacity.len()
    }

    fn flows(&self) -> usize {
        self.caps.len()
    }

    fn capacity(&self, k: usize) -> f64 {
        self.capacity[k]
    }

    fn id(&self, k: usize) -> u32 {
        self.ids[k]
    }

    fn cap(&self, f: usize) -> f64 {
        self.caps[f]
    }

    fn each_link(&self, f: usize, mut visit: impl FnMut(u32, f64)) {
        for (k, w) in self.flow(f) {
            visit(k, w);
        }
    }
}

/// A heap event: a level and what reaches it — a link `(id, local index)` or a cap
/// `(u32::MAX, flow)`. Packed into one integer so the heap compares once: levels are never
/// negative, and the bits of non-negative floats order as the floats do. A min-heap on level,
/// ties broken by (what, tag), so the order is deterministic.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Event(Reverse<u128>);

impl Event {
    fn new(level: f64, what: u32, tag: u32) -> Event {
        // `+ 0.0` turns a -0.0 into 0.0, whose bits sort first.
        let bits = (level.max(0.0) + 0.0).to_bits();
        Event(Reverse(
            u128::from(bits) << 64 | u128::from(what) << 32 | u128::from(tag),
        ))
    }

    fn level(self) -> f64 {
        f64::from_bits((self.0 .0 >> 64) as u64)
    }

    fn what(self) -> u32 {
        (self.0 .0 >> 32) as u32
    }

    fn tag(self) -> u32 {
        self.0 .0 as u32
    }
}

/// Events that pop greatest first, all sorted at the first pop: a hashed ring's component
/// pops nearly all its links, and one sort costs less than as many heap pops. Sorting them a
/// chunk at a time as the pops needed them, each chunk twice the last, spent 1.6 % more
/// instructions on the 405B and saved 0.06 % on its sprayed run, whose flows freeze early
/// (docs/performance.md, "Keys sorted at once").
#[derive(Default)]
struct Sorted {
    events: Vec<Event>,
    sorted: bool,
}

impl Sorted {
    fn clear(&mut self) {
        self.events.clear();
        self.sorted = false;
    }

    fn push(&mut self, e: Event) {
        debug_assert!(!self.sorted, "pushed after the first pop");
        self.events.push(e);
    }

    fn peek(&mut self) -> Option<Event> {
        if !self.sorted {
            self.events.sort_unstable();
            self.sorted = true;
        }
        self.events.last().copied()
    }

    fn pop(&mut self) -> Option<Event> {
        let e = self.peek()?;
        self.events.pop();
        Some(e)
    }
}

/// Problems of at most this many flows, over at most this many links, are solved by a scan,
/// not a heap (a scan step costs a pass over the links: spread flows cross hundreds).
const SMALL: usize = 4;
const SMALL_LINKS: usize = 64;

/// Reusable buffers, so that repeated solves do not allocate.
#[derive(Default)]
pub struct Solver {
    /// Per link: the weight of its unfrozen flows, the load of its frozen flows, and where its
    /// flows start in `flows` (CSR; one entry more than links).
    weight: Vec<f64>,
    frozen_load: Vec<f64>,
    start: Vec<u32>,
    flows: Vec<u32>,
    /// The events keyed before the solve starts.
    sorted: Sorted,
    /// Links keyed again during the solve (module docs).
    heap: BinaryHeap<Event>,
    /// The flows on the link being saturated.
    on_link: Vec<u32>,
    /// Per flow: the event of the link of its own (crossed by no other flow) that pops first.
    own: Vec<Option<Event>>,
    /// A small problem's per-link event: what its heap entry would be, `None` once popped.
    keys: Vec<Option<Event>>,
}

impl Solver {
    /// Max-min fair rates for `demands` over links of `capacity` (indexed by the link numbers
    /// the demands use). Writes one rate per demand into `rates`. A convenience that copies the
    /// demands into a [`Dense`] problem; the flow engine builds one directly.
    pub fn solve(&mut self, capacity: &[f64], demands: &[Demand<'_>], rates: &mut Vec<f64>) {
        let ids: Vec<u32> = (0..capacity.len() as u32).collect();
        let mut start = vec![0];
        let (mut links, mut weights) = (Vec::new(), Vec::new());
        for d in demands {
            links.extend(d.links.iter().map(|&(l, _)| l));
            weights.extend(d.links.iter().map(|&(_, w)| w));
            start.push(links.len() as u32);
        }
        let caps: Vec<f64> = demands.iter().map(|d| d.cap).collect();
        self.solve_dense(
            Dense {
                capacity,
                ids: &ids,
                start: &start,
                links: &links,
                weights: &weights,
                scale: &[],
                caps: &caps,
            },
            rates,
        );
    }

    /// Max-min fair rates for the flows of `p`, one per flow into `rates`.
    pub fn solve_dense(&mut self, p: Dense<'_>, rates: &mut Vec<f64>) {
        let (m, n) = (p.capacity.len(), p.caps.len());
        self.prepare(m, n, rates);
        if n <= SMALL && m <= SMALL_LINKS {
            self.solve_small(p, rates);
        } else {
            self.solve_heap(&p, rates);
        }
        unlimited(rates);
    }

    /// Max-min fair rates for the flows of `p`, one per flow into `rates`, with the heap: the
    /// same rates as [`Solver::solve_dense`] of the same problem copied, to the last bit.
    pub fn solve_problem<P: Problem>(&mut self, p: &P, rates: &mut Vec<f64>) {
        self.prepare(p.links(), p.flows(), rates);
        self.solve_heap(p, rates);
        unlimited(rates);
    }

    fn prepare(&mut self, m: usize, n: usize, rates: &mut Vec<f64>) {
        rates.clear();
        rates.resize(n, f64::NAN);
        self.weight.clear();
        self.weight.resize(m, 0.0);
        self.frozen_load.clear();
        self.frozen_load.resize(m, 0.0);
    }

    /// Progressive filling with the heap (module docs).
    fn solve_heap<P: Problem>(&mut self, p: &P, rates: &mut [f64]) {
        let (m, n) = (p.links(), p.flows());
        // Sum the links' weights and, unless the problem lists them, count their flows (in
        // `start`, shifted by one for the prefix sum below).
        let index = !P::LISTS_FLOWS;
        self.start.clear();
        if index {
            self.start.resize(m + 1, 0);
        }
        let mut events = std::mem::take(&mut self.sorted);
        events.clear();
        let (weight, start) = (&mut self.weight, &mut self.start);
        for f in 0..n {
            p.each_link(f, |k, w| {
                weight[k as usize] += w;
                if index {
                    start[k as usize + 1] += 1;
                }
            });
        }
        for f in 0..n {
            let cap = p.cap(f);
            if cap.is_finite() {
                events.push(Event::new(cap, u32::MAX, f as u32));
            }
        }
        if index {
            self.index(p);
        }
        // Of a flow's own links (module docs) only the first to pop is keyed: the same live
        // events pop, in the same order.
        self.own.clear();
        if index {
            self.own.resize(n, None);
        }
        for k in 0..m {
            let event = Event::new(self.level_of(k, p.capacity(k)), p.id(k), k as u32);
            // With the index: the link's flows are `flows[start[k]..start[k + 1]]`.
            if index && self.start[k + 1] - self.start[k] == 1 && self.weight[k] > 0.0 {
                let own = &mut self.own[self.flows[self.start[k] as usize] as usize];
                *own = (*own).max(Some(event));
            } else {
                events.push(event);
            }
        }
        for &own in self.own.iter().flatten() {
            events.push(own);
        }
        // A copied problem's events are sorted at the first pop, and the re-keyed go to the
        // heap. One solved in place stops early (a pipelined ring's channels, an all-to-all):
        // all go to a heap, built in linear time.
        let mut heap = std::mem::take(&mut self.heap).into_vec();
        heap.clear();
        if !index {
            heap.append(&mut events.events);
        }
        self.heap = BinaryHeap::from(heap);
        let mut level = 0.0f64;
        // Once every flow is frozen, the links still in the heap change nothing.
        let mut unfrozen = n;
        let mut on_link = std::mem::take(&mut self.on_link);
        while unfrozen > 0 {
            // Keys are distinct: the lower of the two is what one heap of all would pop.
            let ev = match (events.peek(), self.heap.peek()) {
                (Some(a), Some(&b)) if b > a => self.heap.pop(),
                (Some(_), _) => events.pop(),
                (None, _) => self.heap.pop(),
            };
            let Some(ev) = ev else {
                break;
            };
            if ev.what() == u32::MAX {
                let f = ev.tag() as usize;
                if rates[f].is_nan() {
                    level = level.max(ev.level());
                    self.freeze(f, ev.level().min(level).max(0.0), p, rates);
                    unfrozen -= 1;
                }
                continue;
            }
            let k = ev.tag() as usize;
            if self.weight[k] <= 0.0 {
                continue;
            }
            let current = self.level_of(k, p.capacity(k));
            if current > ev.level() {
                // Flows froze on the link since it was keyed: its level rose (module docs).
                self.heap.push(Event::new(current, ev.what(), ev.tag()));
                continue;
            }
            level = level.max(ev.level());
            if index {
                for i in self.start[k]..self.start[k + 1] {
                    let f = self.flows[i as usize] as usize;
                    if rates[f].is_nan() {
                        self.freeze(f, level, p, rates);
                        unfrozen -= 1;
                    }
                }
            } else {
                p.flows_on(k, &mut on_link);
                for &f in &on_link {
                    let f = f as usize;
                    if rates[f].is_nan() {
                        self.freeze(f, level, p, rates);
                        unfrozen -= 1;
                    }
                }
            }
        }
        self.on_link = on_link;
        self.heap.clear();
        self.sorted = events;
    }

    /// Each link's flows in `flows` (CSR by `start`, in increasing order), from the counts in
    /// `start` shifted by one.
    fn index<P: Problem>(&mut self, p: &P) {
        let m = p.links();
        for k in 0..m {
            self.start[k + 1] += self.start[k];
        }
        self.flows.resize(self.start[m] as usize, 0);
        let (flows, start) = (&mut self.flows, &mut self.start);
        for f in 0..p.flows() {
            p.each_link(f, |k, _| {
                // `start[k]` runs ahead as a fill cursor, and ends where `start[k + 1]` began.
                let k = k as usize;
                flows[start[k] as usize] = f as u32;
                start[k] += 1;
            });
        }
        for k in (1..m).rev() {
            self.start[k] = self.start[k - 1];
        }
        if let Some(first) = self.start.first_mut() {
            *first = 0;
        }
    }

    /// [`Self::solve_heap`] for a few flows: each step scans every link's key and every
    /// unfrozen flow's cap for the event the heap would pop (keys are distinct, so it is the
    /// same one), and finds a saturated link's flows by scanning the flows.
    fn solve_small(&mut self, p: Dense<'_>, rates: &mut [f64]) {
        let (m, n) = (p.capacity.len(), p.caps.len());
        for f in 0..n {
            for (k, w) in p.flow(f) {
                self.weight[k as usize] += w;
            }
        }
        self.keys.clear();
        for k in 0..m {
            let key = Event::new(self.level_of(k, p.capacity[k]), p.ids[k], k as u32);
            self.keys.push(Some(key));
        }
        let mut level = 0.0f64;
        let mut unfrozen = n;
        while unfrozen > 0 {
            // The heap's order is `Event`'s: the greatest event is the lowest level.
            let link = self.keys.iter().flatten().copied().max();
            let cap = (0..n)
                .filter(|&f| rates[f].is_nan() && p.caps[f].is_finite())
                .map(|f| Event::new(p.caps[f], u32::MAX, f as u32))
                .max();
            let Some(ev) = link.max(cap) else {
                break;
            };
            if ev.what() == u32::MAX {
                let f = ev.tag() as usize;
                level = level.max(ev.level());
                self.freeze(f, ev.level().min(level).max(0.0), &p, rates);
                unfrozen -= 1;
                continue;
            }
            let k = ev.tag() as usize;
            self.keys[k] = None;
            if self.weight[k] <= 0.0 {
                continue;
            }
            let current = self.level_of(k, p.capacity[k]);
            if current > ev.level() {
                self.keys[k] = Some(Event::new(current, ev.what(), ev.tag()));
                continue;
            }
            level = level.max(ev.level());
            for f in 0..n {
                if rates[f].is_nan() && p.flow_ids(f).iter().any(|&j| j as usize == k) {
                    self.freeze(f, level, &p, rates);
                    unfrozen -= 1;
                }
            }
        }
    }

    fn freeze<P: Problem>(&mut self, f: usize, rate: f64, p: &P, rates: &mut [f64]) {
        rates[f] = rate;
        let (frozen_load, weight) = (&mut self.frozen_load, &mut self.weight);
        p.each_link(f, |k, w| {
            let k = k as usize;
            frozen_load[k] += w * rate;
            weight[k] -= w;
            if weight[k] < 1e-12 {
                weight[k] = 0.0;
            }
        });
    }

    /// The level at which link `k` saturates if every unfrozen flow on it rises together.
    fn level_of(&self, k: usize, capacity: f64) -> f64 {
        ((capacity - self.frozen_load[k]) / self.weight[k]).max(0.0)
    }
}

/// Flows that cross no link and have no cap are limited by nothing: infinite.
fn unlimited(rates: &mut [f64]) {
    for r in rates.iter_mut() {
        if r.is_nan() {
            *r = f64::INFINITY;
        }
    }
}

#[cfg(test)]
mod tests;
