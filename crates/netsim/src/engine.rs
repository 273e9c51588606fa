//! The contract every network engine keeps. Engines are passive state machines, in the style
//! of smoltcp's `poll`: the caller submits flows and changes link capacity at the engine's
//! current time, asks when the next event is due, and advances time; the engine never calls up.

use fabricsim_topology::{Bandwidth, LinkId, Nanos};

/// What the engine needs of a flow: the links it loads with the fraction of its rate each
/// carries (1 on a path; less on each branch of a spread flow), its size, an optional rate cap
/// (NIC line rate, PCIe, a slow receiver) and its path latency.
/// The links are borrowed: the engine copies what it keeps, so a caller can route every flow
/// into one reused buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlowSpec<'a> {
    pub links: &'a [(LinkId, f64)],
    pub bytes: u64,
    pub cap: Option<Bandwidth>,
    pub latency: Nanos,
    /// The caller's name for exactly these links, if it gives them again: every flow submitted
    /// with one name has the same links, so an engine may know a path it has seen by its name
    /// rather than by comparing its links (a ring channel's crosses thousands).
    pub path: Option<u64>,
}

/// Where an engine placed a flow: enough to place a later one on the same links, under the
/// same cap and latency, without them ([`Engine::submit_on`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub(crate) cohort: u32,
    pub(crate) key: u64,
}

/// A flow's handle: dense, in submission order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowId(pub u32);

/// A flow whose last byte arrived at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub flow: FlowId,
    pub at: Nanos,
}

/// Per-directed-link accounting since time 0.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkStats {
    /// Bytes carried.
    pub bytes: Vec<f64>,
    /// Time with any load.
    pub busy: Vec<Nanos>,
    /// Highest load / capacity seen.
    pub peak_utilization: Vec<f64>,
    /// The time the figures run to.
    pub elapsed: Nanos,
}

/// One link's use over a run, as `--links` files give it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkUse {
    pub link: LinkId,
    pub bytes: f64,
    /// Bytes over capacity × the span.
    pub utilization: f64,
    /// The highest load / capacity at any time.
    pub peak_utilization: f64,
    /// Time with any load, over the span.
    pub busy_fraction: f64,
}

impl LinkStats {
    /// Every link that carried bytes, in link order, over a span of `span_ns` (the run's end;
    /// at least 1 ns).
    pub fn uses(&self, topo: &fabricsim_topology::Topology, span_ns: u64) -> Vec<LinkUse> {
        let span = span_ns.max(1) as f64;
        topo.link_ids()
            .filter(|l| self.bytes[l.index()] > 0.0)
            .map(|l| {
                let capacity = topo.link(l).capacity.0 as f64;
                LinkUse {
                    link: l,
                    bytes: self.bytes[l.index()],
                    utilization: if capacity > 0.0 {
                        self.bytes[l.index()] / (capacity * span * 1e-9)
                    } else {
                        0.0
                    },
                    peak_utilization: self.peak_utilization[l.index()],
                    busy_fraction: (self.busy[l.index()].0 as f64 / span).min(1.0),
                }
            })
            .collect()
    }

    pub fn new(links: usize) -> Self {
        LinkStats {
            bytes: vec![0.0; links],
            busy: vec![Nanos(0); links],
            peak_utilization: vec![0.0; links],
            elapsed: Nanos(0),
        }
    }

    /// Mean utilization of `link` over the elapsed time, at capacity `capacity`.
    pub fn utilization(&self, link: LinkId, capacity: Bandwidth) -> f64 {
        if self.elapsed.0 == 0 || capacity.0 == 0 {
            return 0.0;
        }
        self.bytes[link.index()] / (capacity.0 as f64 * self.elapsed.0 as f64 * 1e-9)
    }
}

/// See the module docs.
pub trait Engine {
    /// The engine's current time; submissions and changes take effect at it.
    fn now(&self) -> Nanos;
    fn submit(&mut self, flow: FlowSpec<'_>) -> FlowId;
    /// A link's usable capacity from now on (0 = down).
    fn set_link_capacity(&mut self, link: LinkId, capacity: Bandwidth);
    /// Every link's usable capacity from now on, in link order: what
    /// [`Self::set_link_capacity`] link by link does, which an engine may do at once (a
    /// fabric's transport efficiencies, set before any flow).
    fn set_link_capacities(&mut self, capacities: impl ExactSizeIterator<Item = Bandwidth>) {
        for (l, capacity) in capacities.enumerate() {
            self.set_link_capacity(LinkId(l as u32), capacity);
        }
    }
    /// Where `flow`, the last one submitted, was placed, if the engine can place another
    /// flow there by it ([`Self::submit_on`]).
    fn placed(&self, _flow: FlowId) -> Option<Placed> {
        None
    }
    /// Submits `bytes` under `cap` where a flow was `placed`, as [`Self::submit`] with that
    /// flow's links and latency would now; `None`, with nothing submitted, where the engine
    /// would not place it there (the caller then submits it with its links).
    fn submit_on(
        &mut self,
        _placed: Placed,
        _bytes: u64,
        _cap: Option<Bandwidth>,
    ) -> Option<FlowId> {
        None
    }
    /// Moves an unfinished flow's remaining bytes onto new links.
    fn reroute(&mut self, flow: FlowId, links: Vec<(LinkId, f64)>, latency: Nanos);
    /// A flow's current rate.
    fn rate(&mut self, flow: FlowId) -> Bandwidth;
    /// The links a flow loads now, each with the fraction of its rate it carries.
    fn links(&self, flow: FlowId) -> Vec<(LinkId, f64)>;
    /// When the engine next has something to do (a flow draining or completing), if ever.
    fn next_event(&mut self) -> Option<Nanos>;
    /// Moves time to `to`, appending the flows that completed on the way, in time order.
    fn advance(&mut self, to: Nanos, finished: &mut Vec<Completion>);
    /// Per-link accounting up to now.
    fn link_stats(&mut self) -> &LinkStats;
}
