//! nccl-tests / PARAM-style benchmarks: one collective over a sweep of sizes on placed ranks,
//! each size simulated on a fresh network (every link idle, the `--down` cables down), reported
//! with nccl-tests' columns and the link utilization of the busiest tier.
//!
//! Sizes are nccl-tests': the data type is `float` (4 bytes); a size is rounded down to whole
//! elements, and for operations that give every rank one piece, to whole elements per rank.
//! `algbw = size / time`, `busbw = algbw × factor` ([`Collective::busbw_factor`]).
//!
//! Every link runs at its transport's efficiency ([`crate::hardware`]) for the bench's GPU
//! generation.
//!
//! Utilization: payload bytes a link carried over the simulated span, over its line rate (so a
//! saturated link shows its transport's efficiency: 0.824 for H100 NVLink, 0.980 for RoCE).
//! The figures are those of the busiest group of inter-switch links (by direction between
//! tiers, such as `rtsw->ctsw`), counting the links on some equal-cost path of the collective's
//! network pairs; when no pair crosses a switch, of the NIC links; inside one host, of the
//! ranks' NVLink ports.

use fabricsim_netsim::{FlowEngine, LinkClasses, Network, NetworkError};
use std::sync::Arc;

use fabricsim_routing::balance::{group_loads, links_in_scope_over};
use fabricsim_routing::key::mix;
use fabricsim_routing::PathSelection;
use fabricsim_routing::{HashConfig, LinkCondition, LinkState, PathFinder, RouteError, Router};
use fabricsim_te::{Instance, InstanceError, PathTable, SolveError, TePolicy, TrafficMatrix};

pub use fabricsim_te::Routing;
use fabricsim_topology::{HostId, LinkId, NodeId, NodeKind, Topology};

use crate::algo::{plan, Algorithm, Fidelity, Request};
use crate::exec::{run_with_progress, ExecError, Progress, Transport};
use crate::hardware::{link_efficiency, link_efficiency_of};
use crate::layout::Ranks;
use crate::model::Platform;
use crate::op::Collective;
use crate::protocol::Protocol;
use crate::schedule::{Path, Schedule};
use crate::tuner::settle;
use crate::PlanError;

/// Bytes per element of nccl-tests' default data type (`float`).
pub const TYPE_SIZE: u64 = 4;

/// nccl-tests' data types (`-d`), with their bytes per element. They set the element count and
/// how sizes round; the simulation moves bytes, so none changes a time.
pub const DATA_TYPES: [(&str, u64); 11] = [
    ("int8", 1),
    ("uint8", 1),
    ("int32", 4),
    ("uint32", 4),
    ("int64", 8),
    ("uint64", 8),
    ("half", 2),
    ("float", 4),
    ("double", 8),
    ("bfloat16", 2),
    ("fp8_e4m3", 1),
];

/// The data type named `name` (nccl-tests' names; `all` is not supported).
pub fn data_type(name: &str) -> Option<(&'static str, u64)> {
    DATA_TYPES
        .iter()
        .copied()
        .find(|&(n, _)| n.eq_ignore_ascii_case(name))
}

/// What to benchmark, apart from the size.
#[derive(Clone, Debug)]
pub struct Bench {
    pub op: Collective,
    /// `None`: the tuner picks per size.
    pub algorithm: Option<Algorithm>,
    pub protocol: Option<Protocol>,
    pub channels: u32,
    pub chunk: u64,
    pub fidelity: Fidelity,
    pub transport: Transport,
    /// A hashed policy, or TE: a path table solved, before the run, from the traffic the
    /// collective puts between GPUs of different hosts (the busiest GPU at line rate) over the
    /// link state with the `down` cables down.
    pub routing: Routing,
    pub hash: HashConfig,
    /// Cables down for the whole run.
    pub down: Vec<LinkId>,
    /// How hosts put messages on paths ([`fabricsim_routing::select`]).
    pub path_selection: PathSelection,
    /// The data type: its name and bytes per element ([`DATA_TYPES`]).
    pub dtype: (&'static str, u64),
    /// Solve every link, even where the collective is laid alike on every server and one link
    /// per class of identical constraints gives the same result ([`LinkClasses`]).
    pub full_detail: bool,
    /// Keep every link's figures in each row ([`Row::links`]).
    pub keep_links: bool,
    /// Figure each row's busiest link group and its utilization ([`Row::busiest`]): a scope
    /// of links routed for every pair of hosts the collective joins, left out where nothing
    /// prints it (nccl-tests' own table).
    pub link_figures: bool,
}

impl Bench {
    /// `op` as nccl-tests runs it by default: the tuner picks algorithm and protocol per size,
    /// 16 channels, one QP per connection, ECMP with the default hash seeds, every cable up.
    pub fn new(op: Collective) -> Bench {
        Bench {
            op,
            algorithm: None,
            protocol: None,
            channels: 16,
            chunk: crate::algo::DEFAULT_CHUNK,
            fidelity: Fidelity::Pipelined,
            transport: Transport {
                protocol: Protocol::Simple,
                qps: 1,
                qp_mode: crate::exec::QpMode::Split,
                seed: 0,
                gpu: crate::Generation::H100,
            },
            routing: Routing::Hashed(fabricsim_routing::Policy::Ecmp),
            hash: HashConfig::default(),
            down: Vec::new(),
            path_selection: PathSelection::Hashed,
            dtype: ("float", TYPE_SIZE),
            full_detail: false,
            keep_links: false,
            link_figures: true,
        }
    }

    /// Whether the tuner decides something: the algorithm or the protocol left open.
    pub fn tuned(&self) -> bool {
        self.algorithm.is_none() || self.protocol.is_none()
    }
}

/// One line of results.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Row {
    /// Bytes (nccl-tests' size).
    pub size: u64,
    /// Elements of `type`.
    pub count: u64,
    #[serde(rename = "type")]
    pub dtype: &'static str,
    pub redop: Option<&'static str>,
    pub root: Option<u32>,
    pub algorithm: &'static str,
    pub protocol: &'static str,
    /// Whether the tuner chose the algorithm and protocol.
    pub tuned: bool,
    pub time_us: f64,
    /// GB/s (10^9 bytes per second), as nccl-tests.
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    /// The busiest link group and its utilization, where [`Bench::link_figures`] asks for
    /// them (their three fields sit among the row's in JSON).
    #[serde(flatten)]
    pub busiest: Option<Busiest>,
    /// Engine variables the run submitted.
    pub flows: u64,
    /// Every link that carried bytes, where [`Bench::keep_links`] asks for them (`bench
    /// --links`, `--report`; not in the JSON rows).
    #[serde(skip)]
    pub links: Vec<fabricsim_netsim::LinkUse>,
    /// Links solved as one of their class of identical constraints (0: every link solved).
    #[serde(skip)]
    pub classed_links: usize,
}

/// The link group of a run with the highest utilization, and its figures.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Busiest {
    /// The link group the utilization figures are of (`rtsw->ctsw`).
    pub busiest_tier: String,
    pub max_link_utilization: f64,
    pub mean_link_utilization: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Exec(#[from] ExecError),
    #[error(transparent)]
    Route(#[from] RouteError),
    #[error("TE: {0}")]
    TeInstance(#[from] InstanceError),
    #[error("TE: {0}")]
    TeSolve(#[from] SolveError),
}

/// The sizes of a `-b`/`-e`/`-f` sweep: from `begin`, times `factor`, up to `end`.
pub fn sweep_sizes(begin: u64, end: u64, factor: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut s = begin;
    while s <= end {
        out.push(s);
        if factor <= 1 || s == 0 {
            break;
        }
        s = match s.checked_mul(factor) {
            Some(x) => x,
            None => break,
        };
    }
    out
}

/// `size` rounded down to whole elements of `elem` bytes (per rank where the operation splits
/// by rank).
pub fn round_size(op: Collective, size: u64, n: usize, elem: u64) -> u64 {
    if op == Collective::Barrier {
        return 0;
    }
    let unit = if op.per_rank_pieces() {
        elem * n as u64
    } else {
        elem
    };
    size / unit * unit
}

/// The all-to-allv size matrix of a benchmark: per pair, uniform in [0, 2·size/n] (mean
/// size/n, like all-to-all), deterministic in `seed`; nothing to oneself.
pub fn alltoallv_sizes(size: u64, n: usize, seed: u64, elem: u64) -> Vec<u64> {
    let per = 2 * size / n as u64;
    (0..n * n)
        .map(|ij| {
            let (i, j) = (ij / n, ij % n);
            if i == j || per == 0 {
                0
            } else {
                mix(seed ^ ((i as u64) << 32) ^ j as u64) % (per + 1) / elem * elem
            }
        })
        .collect()
}

/// A size's collective, planned.
struct Planned {
    size: u64,
    algorithm: Algorithm,
    protocol: Protocol,
    tuned: bool,
    sizes: Option<Vec<u64>>,
    /// Shared with the execution, which reads it as it runs (not copied: a step schedule is
    /// hundreds of MB at a thousand ranks).
    sched: Arc<Schedule>,
}

impl Planned {
    fn request<'a>(&'a self, bench: &Bench, ranks: &'a Ranks) -> Request<'a> {
        Request {
            op: bench.op,
            bytes: self.size,
            ranks,
            algorithm: self.algorithm,
            channels: bench.channels,
            chunk: bench.chunk,
            fidelity: bench.fidelity,
            sizes: self.sizes.as_deref(),
        }
    }
}

/// Rounds `size`, chooses the algorithm and protocol the bench leaves open (the tuner, on
/// `platform`), and plans.
fn plan_size(
    ranks: &Ranks,
    bench: &Bench,
    size: u64,
    platform: &Platform,
) -> Result<Planned, BenchError> {
    let op = bench.op;
    let size = round_size(op, size, ranks.len(), bench.dtype.1);
    let sizes = (op == Collective::AllToAllV)
        .then(|| alltoallv_sizes(size, ranks.len(), bench.transport.seed, bench.dtype.1));
    let mut planned = Planned {
        size,
        algorithm: Algorithm::Ring,
        protocol: Protocol::Simple,
        tuned: bench.tuned(),
        sizes,
        sched: Arc::default(),
    };
    let (algorithm, protocol) = settle(
        &planned.request(bench, ranks),
        platform,
        bench.algorithm,
        bench.protocol,
    );
    planned.algorithm = algorithm;
    planned.protocol = protocol;
    planned.sched = Arc::new(plan(&planned.request(bench, ranks))?);
    Ok(planned)
}

/// The bytes one size of the benchmark puts between GPUs of different hosts, per (source,
/// destination) pair in pair order: the traffic matrix TE is solved for.
pub fn traffic(
    topo: &Topology,
    ranks: &Ranks,
    bench: &Bench,
    size: u64,
) -> Result<Vec<(NodeId, NodeId, u64)>, BenchError> {
    let platform = Platform::of(topo, ranks, bench.transport.gpu);
    Ok(network_traffic(
        ranks,
        &plan_size(ranks, bench, size, &platform)?.sched,
    ))
}

/// TE's path table solved for `sched`'s traffic, over the link state with the bench's `down`
/// cables down.
fn te_policy(
    topo: &Topology,
    ranks: &Ranks,
    bench: &Bench,
    solver: fabricsim_te::Solver,
    sched: &Schedule,
) -> Result<TePolicy, BenchError> {
    let mut state = LinkState::new(topo);
    for &l in &bench.down {
        state.set_cable(l, LinkCondition::Down);
    }
    let tm = TrafficMatrix::from_bytes(topo, network_traffic(ranks, sched));
    let table = if tm.demands.is_empty() {
        PathTable::default()
    } else {
        let inst = Instance::new(topo, &state, &tm)?;
        let sol = fabricsim_te::solve(&inst, solver, &Default::default())?;
        PathTable::new(&inst, &sol)
    };
    Ok(TePolicy::new(table, bench.hash))
}

/// Benchmarks one size.
pub fn run_size(
    topo: &Topology,
    ranks: &Ranks,
    bench: &Bench,
    size: u64,
) -> Result<Row, BenchError> {
    run_size_with_progress(topo, ranks, bench, size, &mut |_| {})
}

/// [`run_size`], telling `progress` how far the collective's run has come now and then.
pub fn run_size_with_progress(
    topo: &Topology,
    ranks: &Ranks,
    bench: &Bench,
    size: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<Row, BenchError> {
    let op = bench.op;
    // The tuner's network path latency is routed under ECMP (TE's table needs the plan first;
    // both take shortest paths).
    let policy = match bench.routing {
        Routing::Hashed(policy) => policy,
        Routing::Te(_) => fabricsim_routing::Policy::Ecmp,
    };
    let fresh = || {
        let mut net = Network::new(
            topo,
            Router::new(topo, policy, bench.hash),
            FlowEngine::new(topo),
        );
        net.set_link_efficiency(link_efficiency(topo, bench.transport.gpu));
        net.set_path_selection(bench.path_selection);
        for &l in &bench.down {
            net.set_cable(l, LinkCondition::Down);
        }
        // A bench changes no link while it runs: its flows need no recipe to be routed again.
        net.fix_link_state();
        net
    };
    let mut net = fresh();
    // Only the tuner reads the network path latencies: where it decides nothing, their routes
    // (one per pair of consecutive hosts and per host under another leaf) would be walked for
    // nothing.
    let platform = Platform::of(topo, ranks, bench.transport.gpu);
    let platform = if bench.tuned() {
        platform
            .with_network_path(&mut net, ranks)
            .map_err(ExecError::from)?
    } else {
        platform
    };
    let planned = plan_size(ranks, bench, size, &platform)?;
    let (size, algorithm, protocol, tuned) = (
        planned.size,
        planned.algorithm,
        planned.protocol,
        planned.tuned,
    );
    let sched = &planned.sched;
    let req = planned.request(bench, ranks);
    if let Routing::Te(solver) = bench.routing {
        net.set_policy(Box::new(te_policy(topo, ranks, bench, solver, sched)?));
    }
    let transport = Transport {
        protocol,
        ..bench.transport
    };
    // Laid alike on every server, the run solves one link per class of identical
    // constraints; a bundle that is not alike shows at the start (every group starts at
    // once), and the size runs again in full.
    let (mut outcome, mut classed_links) = (None, 0);
    if let Some(classes) = server_classes(topo, ranks, bench, sched) {
        classed_links = classes.classed();
        net.set_link_classes(classes);
        match run_with_progress(&mut net, Arc::clone(sched), &req, transport, progress) {
            Err(ExecError::Network(NetworkError::ClassBroken(_))) => {
                (net, classed_links) = (fresh(), 0);
            }
            run => outcome = Some(run?),
        }
    }
    let outcome = match outcome {
        Some(outcome) => outcome,
        None => run_with_progress(&mut net, Arc::clone(sched), &req, transport, progress)?,
    };
    let links = if bench.keep_links {
        let stats = net.link_stats();
        stats.uses(topo, stats.elapsed.0)
    } else {
        Vec::new()
    };
    let busiest = if bench.link_figures {
        Some(link_figures(net, ranks, sched)?)
    } else {
        None
    };
    let time_us = outcome.time.0 as f64 / 1e3;
    let algbw = if outcome.time.0 > 0 {
        size as f64 / (outcome.time.0 as f64)
    } else {
        0.0
    };
    Ok(Row {
        size,
        count: size / bench.dtype.1,
        dtype: bench.dtype.0,
        redop: op.reduces().then_some("sum"),
        root: op.rooted().then_some(0),
        algorithm: algorithm.name(),
        protocol: protocol.name(),
        tuned,
        time_us,
        algbw_gbps: algbw,
        busbw_gbps: algbw * op.busbw_factor(ranks.len()),
        busiest,
        flows: outcome.flows,
        links,
        classed_links,
    })
}

/// Classes of identical constraints for a pipelined run of `sched` whose groups all start at
/// once and are laid alike on every server, under a hashed policy with every cable up, on
/// ranks that fill whole servers (at least two) with single-port NICs: the links of those
/// servers by their place in the server, where capacity and efficiency agree
/// ([`LinkClasses::by_server`]). `None` where that cannot hold or gains nothing.
fn server_classes(
    topo: &Topology,
    ranks: &Ranks,
    bench: &Bench,
    sched: &Schedule,
) -> Option<LinkClasses> {
    let eligible = !bench.full_detail
        && bench.fidelity == Fidelity::Pipelined
        && matches!(bench.routing, Routing::Hashed(_))
        && bench.down.is_empty()
        && (0..sched.groups.len() as u32).all(|i| sched.after(i).is_empty());
    if !eligible {
        return None;
    }
    // The ranks' servers, each held whole (its ranks on distinct GPUs, as many as it has).
    let mut hosts = ranks
        .hosts()
        .iter()
        .map(|local| {
            let h = topo.host_of(ranks.gpu(local[0]))?;
            (topo.host(h).gpus.len() == local.len()).then_some(h)
        })
        .collect::<Option<Vec<HostId>>>()?;
    if hosts.len() < 2 {
        return None;
    }
    // A NIC of several ports puts each connection on one by its hash: servers differ.
    let multiport = hosts.iter().flat_map(|&h| &topo.host(h).nics).any(|&nic| {
        let up = topo.out_links(nic).iter();
        up.filter(|&&l| topo.host_of(topo.link(l).dst).is_none())
            .count()
            > 1
    });
    if multiport || !laid_alike(topo, ranks, sched) {
        return None;
    }
    hosts.sort_unstable();
    let gpu = bench.transport.gpu;
    let alike = |a: LinkId, b: LinkId| {
        topo.link(a).capacity == topo.link(b).capacity
            && link_efficiency_of(topo, gpu, a) == link_efficiency_of(topo, gpu, b)
    };
    let classes = LinkClasses::by_server(topo, &hosts, alike);
    (classes.classed() > 0).then_some(classes)
}

/// Whether every group of `sched` sends and receives alike on every server of `ranks`: the same
/// transfers by the GPUs' places in their servers, bytes and path, up to a hash (a collision
/// only costs a refused bundle and a run in full). A tree's root server, a chain's ends, an
/// all-to-all's single messages are not.
fn laid_alike(topo: &Topology, ranks: &Ranks, sched: &Schedule) -> bool {
    let servers = ranks.hosts().len();
    if sched.groups.len().saturating_mul(servers) > sched.len() {
        // Fewer transfers than a group needs on every server (an all-to-all's messages).
        return false;
    }
    let slot: Vec<u64> = (0..ranks.len() as u32)
        .map(|r| {
            let gpu = ranks.gpu(r);
            let host = topo.host_of(gpu).map(|h| &topo.host(h).gpus[..]);
            host.and_then(|gpus| gpus.iter().position(|&g| g == gpu))
                .unwrap_or(usize::MAX) as u64
        })
        .collect();
    // Per group and server, the sum of a hash of each transfer it sends and receives.
    let mut sums = vec![0u64; sched.groups.len() * servers];
    for t in sched.transfers() {
        let path = match t.path {
            Path::Direct => 0,
            Path::Via(p) => 1 + slot[p as usize],
            Path::NvlsUp => 1 << 20,
            Path::NvlsDown => 2 << 20,
        };
        let crosses = u64::from(!ranks.same_host(t.src, t.dst));
        let what = mix(t.bytes ^ mix(path ^ (crosses << 32)));
        let (a, b) = (slot[t.src as usize], slot[t.dst as usize]);
        let at = |r: u32| t.group as usize * servers + ranks.host(r) as usize;
        sums[at(t.src)] = sums[at(t.src)].wrapping_add(mix(what ^ (a << 40) ^ (b << 48)));
        sums[at(t.dst)] = sums[at(t.dst)].wrapping_add(mix(!what ^ (b << 40) ^ (a << 48)));
    }
    sums.chunks(servers).all(|g| g.iter().all(|&s| s == g[0]))
}

/// The bytes a schedule puts between GPUs of different hosts, per (source, destination) pair
/// in pair order. A PXN transfer leaves from its proxy's GPU; NVLS stays inside the host.
pub fn network_traffic(ranks: &Ranks, sched: &Schedule) -> Vec<(NodeId, NodeId, u64)> {
    let mut rows: Vec<(NodeId, NodeId, u64)> = sched
        .sends()
        .filter_map(|t| {
            let from = match t.path {
                Path::Direct => t.src,
                Path::Via(p) => p,
                Path::NvlsUp | Path::NvlsDown => return None,
            };
            (!ranks.same_host(from, t.dst)).then(|| (ranks.gpu(from), ranks.gpu(t.dst), t.bytes))
        })
        .collect();
    rows.sort_unstable_by_key(|r| (r.0, r.1));
    let mut merged: Vec<(NodeId, NodeId, u64)> = Vec::with_capacity(rows.len());
    for r in rows {
        match merged.last_mut() {
            Some(m) if (m.0, m.1) == (r.0, r.1) => m.2 += r.2,
            _ => merged.push(r),
        }
    }
    merged
}

/// The busiest link group of a finished run on `net` and its utilization over the run.
fn link_figures(
    mut net: Network<'_, FlowEngine>,
    ranks: &Ranks,
    sched: &Schedule,
) -> Result<Busiest, RouteError> {
    let topo = net.topology();
    let state = net.link_state().clone();
    // Each link's utilization over the run, in place of its bytes; a link that carried nothing
    // keeps its zero (and its page of the table untouched) unless its capacity is zero.
    let (mut util, elapsed) = net.take_link_bytes();
    let span = elapsed.0 as f64 * 1e-9;
    for (u, link) in util.iter_mut().zip(topo.links()) {
        let capacity = link.capacity.0 as f64;
        if *u == 0.0 && capacity != 0.0 {
            continue;
        }
        *u = if span > 0.0 {
            *u / (capacity * span)
        } else {
            0.0
        };
    }
    // The run's flows are done with; its path finder knows the distances the scope needs.
    let mut router = net.into_router();
    let (busiest_tier, max_link_utilization, mean_link_utilization) =
        busiest(&state, ranks, sched, &util, router.paths_mut())?;
    Ok(Busiest {
        busiest_tier,
        max_link_utilization,
        mean_link_utilization,
    })
}

fn busiest(
    state: &LinkState,
    ranks: &Ranks,
    sched: &Schedule,
    util: &[f64],
    paths: &mut PathFinder<'_>,
) -> Result<(String, f64, f64), RouteError> {
    let topo = paths.topology();
    let pairs: Vec<(NodeId, NodeId)> = network_traffic(ranks, sched)
        .into_iter()
        .map(|(s, d, _)| (s, d))
        .collect();
    if pairs.is_empty() {
        // Inside one host: the ranks' NVLink ports, both directions.
        let ports: Vec<f64> = (0..ranks.len() as u32)
            .flat_map(|r| topo.out_links(ranks.gpu(r)).iter().copied())
            .filter(|&l| topo.kind(topo.link(l).dst) == NodeKind::NvSwitch)
            .flat_map(|l| [util[l.index()], util[l.reverse().index()]])
            .collect();
        let max = ports.iter().copied().fold(0.0, f64::max);
        let mean = ports.iter().sum::<f64>() / ports.len().max(1) as f64;
        return Ok(("nvlink".to_string(), max, mean));
    }
    let scope = links_in_scope_over(paths, state, &pairs)?;
    let groups = group_loads(topo, util, &scope);
    let inter_switch: Vec<_> = groups
        .iter()
        .filter(|g| !g.group.starts_with("nic") && !g.group.ends_with("nic"))
        .collect();
    let pool: Vec<_> = if inter_switch.is_empty() {
        groups.iter().collect()
    } else {
        inter_switch
    };
    Ok(pool
        .into_iter()
        .max_by(|a, b| a.max_load.total_cmp(&b.max_load))
        .map_or(("none".to_string(), 0.0, 0.0), |g| {
            (g.group.clone(), g.max_load, g.mean_load)
        }))
}
