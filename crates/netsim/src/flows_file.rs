//! Lists of flows: the CSV that `fabricsim flows` reads, and the simulation of such a list.
//!
//! ```text
//! # src,dst,bytes,start[,qp]
//! src,dst,bytes,start,qp
//! host0/gpu0,host9/gpu0,1GiB,0,0
//! host1/gpu0,host9/gpu0,512MiB,1.5us,3
//! ```
//!
//! `src` and `dst` are GPU names; `bytes` a size (`1GiB`, `4096`); `start` a time (`1.5us`; a
//! bare integer is nanoseconds); `qp` the RoCE destination QP (default 0), which only E-ECMP
//! hashes. The header line is required; `#` starts a comment line.
//!
//! [`QpUse`] spreads the flows of a list over several QPs per connection, as a RoCE NIC under
//! E-ECMP does (`fabricsim flows --qps N --qp-mode split|round-robin`).

use std::collections::HashMap;

use fabricsim_routing::{FlowKey, HashConfig, Policy, Router};
use fabricsim_topology::text::data_lines;
use fabricsim_topology::units::MAX_QUANTITY;
use fabricsim_topology::{Bytes, Nanos, NodeId, NodeKind, Topology};

use crate::engine::{Completion, Engine};
use crate::network::Network;
use crate::{AnalyticalEngine, FlowEngine};

/// One flow of a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowRecord {
    pub src: NodeId,
    pub dst: NodeId,
    pub bytes: u64,
    pub start: Nanos,
    pub qp: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FlowsError {
    #[error("line {line}: {message}")]
    Parse { line: usize, message: String },
    #[error("flow on line {line}: {message}")]
    Route { line: usize, message: String },
}

/// Reads the CSV, resolving GPU names in `topo`.
pub fn read_flows_csv(text: &str, topo: &Topology) -> Result<Vec<(usize, FlowRecord)>, FlowsError> {
    let mut rows = data_lines(text);
    let Some((hline, header)) = rows.next() else {
        return Err(FlowsError::Parse {
            line: 1,
            message: "the file is empty; expected the header src,dst,bytes,start[,qp]".into(),
        });
    };
    let columns: Vec<&str> = header.split(',').map(str::trim).collect();
    if columns != ["src", "dst", "bytes", "start"]
        && columns != ["src", "dst", "bytes", "start", "qp"]
    {
        return Err(FlowsError::Parse {
            line: hline,
            message: format!("expected the header src,dst,bytes,start[,qp], found `{header}`"),
        });
    }
    let mut out = Vec::new();
    for (line, row) in rows {
        let err = |message: String| FlowsError::Parse { line, message };
        let cells: Vec<&str> = row.split(',').map(str::trim).collect();
        if cells.len() != columns.len() {
            return Err(err(format!(
                "expected {} columns, found {}",
                columns.len(),
                cells.len()
            )));
        }
        let gpu = |col: &str, name: &str| match topo.node_by_name(name) {
            Some(n) if topo.kind(n) == NodeKind::Gpu => Ok(n),
            Some(_) => Err(err(format!("{col}: `{name}` is not a GPU"))),
            None => Err(err(format!("{col}: the fabric has no node `{name}`"))),
        };
        let src = gpu("src", cells[0])?;
        let dst = gpu("dst", cells[1])?;
        if src == dst {
            return Err(err(format!("src and dst are both `{}`", cells[0])));
        }
        let bytes: Bytes = cells[2]
            .parse()
            .map_err(|e: fabricsim_topology::UnitError| err(format!("bytes: {e}")))?;
        if bytes.0 == 0 {
            return Err(err("bytes: a flow carries at least one byte".into()));
        }
        let start = match cells[3].parse::<u64>() {
            Ok(ns) if ns > MAX_QUANTITY => {
                return Err(err(format!("start: {ns} ns is above 2^62 ns")));
            }
            Ok(ns) => Nanos(ns),
            Err(_) => cells[3]
                .parse::<Nanos>()
                .map_err(|e| err(format!("start: {e}")))?,
        };
        let qp = match cells.get(4) {
            Some(q) => q.parse::<u32>().map_err(|_| {
                err(format!(
                    "qp: `{q}` is not a queue-pair number (0 to 4294967295)"
                ))
            })?,
            None => 0,
        };
        out.push((
            line,
            FlowRecord {
                src,
                dst,
                bytes: bytes.0,
                start,
                qp,
            },
        ));
    }
    Ok(out)
}

/// Which engine simulates the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    Flow,
    Analytical,
}

/// How the flows of a list use the QPs of their connection (src, dst). Each QP has its own
/// destination QP number, which only E-ECMP hashes; other policies route all QPs alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpUse {
    /// Each flow on the QP its line names.
    AsListed,
    /// Each flow split evenly over `n` QPs (the QP its line names and the `n - 1` after it);
    /// it completes when its last part does.
    Split(u32),
    /// Whole flows on successive QPs: the `k`-th flow of a connection, in list order, on the
    /// QP its line names plus `k mod n`.
    RoundRobin(u32),
    /// Whole flows, each on the QP of its connection (the one its line names and the `n - 1`
    /// after it) with the fewest bytes outstanding when it starts, the first among equals.
    Dynamic(u32),
}

/// Each flow's completion time (index = position in the list), and the network-link
/// utilizations over the makespan.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowsOutcome {
    pub completions: Vec<Nanos>,
    pub makespan: Nanos,
    /// Mean utilization of every network link (NIC and switch links) over the makespan.
    pub utilization: Vec<(fabricsim_topology::LinkId, f64)>,
    /// Every link that carried bytes, over the makespan.
    pub links: Vec<crate::engine::LinkUse>,
}

/// How far a simulation of flows has come: engine flows (a flow's parts, split over QPs)
/// started and finished, of how many, and the simulated time.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub started: u64,
    pub done: u64,
    pub total: u64,
    pub at: Nanos,
}

/// Flows started or engine steps between two reports to the progress callback.
const REPORT_EVERY: usize = 4096;

/// Simulates `flows` in start order (ties in list order), telling `progress` how far it has
/// come now and then, and at the end.
pub fn simulate_flows(
    topo: &Topology,
    policy: Policy,
    hash: HashConfig,
    engine: EngineKind,
    qps: QpUse,
    flows: &[(usize, FlowRecord)],
    progress: &mut dyn FnMut(Progress),
) -> Result<FlowsOutcome, FlowsError> {
    match engine {
        EngineKind::Flow => run(
            Network::new(topo, Router::new(topo, policy, hash), FlowEngine::new(topo)),
            topo,
            hash.seed,
            qps,
            flows,
            progress,
        ),
        EngineKind::Analytical => run(
            Network::new(
                topo,
                Router::new(topo, policy, hash),
                AnalyticalEngine::new(topo),
            ),
            topo,
            hash.seed,
            qps,
            flows,
            progress,
        ),
    }
}

/// The QP of each flow and how many consecutive QPs its bytes are split over.
fn qp_plan(qps: QpUse, flows: &[(usize, FlowRecord)]) -> Vec<(u32, u32)> {
    match qps {
        QpUse::AsListed => flows.iter().map(|(_, f)| (f.qp, 1)).collect(),
        QpUse::Split(n) => flows.iter().map(|(_, f)| (f.qp, n.max(1))).collect(),
        QpUse::Dynamic(_) => flows.iter().map(|(_, f)| (f.qp, 1)).collect(),
        QpUse::RoundRobin(n) => {
            let mut sent: HashMap<(NodeId, NodeId), u32> = HashMap::new();
            flows
                .iter()
                .map(|(_, f)| {
                    let k = sent.entry((f.src, f.dst)).or_insert(0);
                    let qp = f.qp.wrapping_add(*k % n.max(1));
                    *k += 1;
                    (qp, 1)
                })
                .collect()
        }
    }
}

/// Outstanding bytes per QP of each connection, for [`QpUse::Dynamic`].
struct Outstanding {
    qps: u32,
    bytes: HashMap<(NodeId, NodeId, u32), u64>,
    /// Per engine flow submitted: its connection, QP and bytes.
    flows: Vec<(NodeId, NodeId, u32, u64)>,
}

impl Outstanding {
    fn new(qps: u32) -> Outstanding {
        Outstanding {
            qps: qps.max(1),
            bytes: HashMap::new(),
            flows: Vec::new(),
        }
    }

    /// The QP, among `first` and the `qps - 1` after it, with the fewest bytes outstanding.
    fn take(&self, src: NodeId, dst: NodeId, first: u32) -> u32 {
        (0..self.qps)
            .map(|k| first.wrapping_add(k))
            .min_by_key(|&q| self.bytes.get(&(src, dst, q)).copied().unwrap_or(0))
            .unwrap_or(first)
    }

    fn submitted(&mut self, id: u32, src: NodeId, dst: NodeId, qp: u32, bytes: u64) {
        debug_assert_eq!(id as usize, self.flows.len());
        self.flows.push((src, dst, qp, bytes));
        *self.bytes.entry((src, dst, qp)).or_insert(0) += bytes;
    }

    fn completed(&mut self, done: &[Completion]) {
        for c in done {
            let (src, dst, qp, bytes) = self.flows[c.flow.0 as usize];
            if let Some(b) = self.bytes.get_mut(&(src, dst, qp)) {
                *b -= bytes;
            }
        }
    }
}

fn run<E: Engine>(
    mut net: Network<'_, E>,
    topo: &Topology,
    seed: u64,
    qps: QpUse,
    flows: &[(usize, FlowRecord)],
    progress: &mut dyn FnMut(Progress),
) -> Result<FlowsOutcome, FlowsError> {
    let plan = qp_plan(qps, flows);
    let total: u64 = plan.iter().map(|&(_, parts)| u64::from(parts)).sum();
    let mut report = |started: u64, done: &[Completion], at: Nanos| {
        progress(Progress {
            started,
            done: done.len() as u64,
            total,
            at,
        })
    };
    let mut order: Vec<usize> = (0..flows.len()).collect();
    order.sort_by_key(|&i| (flows[i].1.start, i));
    // Per flow: its parts' engine ids, which are consecutive (first, count).
    let mut ids = vec![(0u32, 0u32); flows.len()];
    let mut done: Vec<Completion> = Vec::new();
    let mut dynamic = match qps {
        QpUse::Dynamic(n) => Some(Outstanding::new(n)),
        _ => None,
    };
    let mut started = 0;
    for (n, &i) in order.iter().enumerate() {
        let (line, f) = &flows[i];
        let (mut qp, parts) = plan[i];
        let seen = done.len();
        net.advance(f.start, &mut done);
        if n.is_multiple_of(REPORT_EVERY) {
            report(started, &done, f.start);
        }
        started += u64::from(parts);
        if let Some(d) = &mut dynamic {
            d.completed(&done[seen..]);
            qp = d.take(f.src, f.dst, f.qp);
        }
        for p in 0..parts {
            // Split evenly; the first `bytes mod parts` parts carry one byte more.
            let bytes =
                f.bytes / u64::from(parts) + u64::from(u64::from(p) < f.bytes % u64::from(parts));
            let key = FlowKey::connection(f.src, f.dst, qp.wrapping_add(p), seed);
            let id = net
                .submit(key, bytes, None)
                .map_err(|e| FlowsError::Route {
                    line: *line,
                    message: e.to_string(),
                })?;
            if p == 0 {
                ids[i] = (id.0, parts);
            }
            if let Some(d) = &mut dynamic {
                d.submitted(id.0, f.src, f.dst, qp, bytes);
            }
        }
    }
    let mut steps = 0usize;
    while let Some(t) = net.engine().next_event() {
        net.advance(t, &mut done);
        steps += 1;
        if steps.is_multiple_of(REPORT_EVERY) {
            report(total, &done, t);
        }
    }
    report(total, &done, net.engine().now());
    let submitted = ids
        .iter()
        .map(|&(first, n)| (first + n) as usize)
        .max()
        .unwrap_or(0);
    let mut by_id = vec![Nanos(0); submitted];
    for c in &done {
        by_id[c.flow.0 as usize] = c.at;
    }
    let completions: Vec<Nanos> = ids
        .iter()
        .map(|&(first, n)| {
            (first..first + n)
                .map(|id| by_id[id as usize])
                .max()
                .unwrap_or(Nanos(0))
        })
        .collect();
    let makespan = completions.iter().copied().max().unwrap_or(Nanos(0));
    let stats = net.engine().link_stats().clone();
    let network_link = |l: fabricsim_topology::LinkId| {
        let link = topo.link(l);
        let net_node = |n| matches!(topo.kind(n), NodeKind::Switch(_) | NodeKind::Nic);
        net_node(link.src) && net_node(link.dst)
    };
    let span = makespan.0 as f64 * 1e-9;
    let utilization = topo
        .link_ids()
        .filter(|&l| network_link(l))
        .map(|l| {
            (
                l,
                if span > 0.0 {
                    stats.bytes[l.index()] / (topo.link(l).capacity.0 as f64 * span)
                } else {
                    0.0
                },
            )
        })
        .collect();
    Ok(FlowsOutcome {
        completions,
        makespan,
        utilization,
        links: stats.uses(topo, makespan.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FlowId;

    #[test]
    fn dynamic_qps_take_the_least_outstanding_and_free_up_on_completion() {
        let (a, b) = (NodeId(1), NodeId(2));
        let mut q = Outstanding::new(2);
        // A large message on QP 5 (the line's), a small one beside it on QP 6.
        assert_eq!(q.take(a, b, 5), 5);
        q.submitted(0, a, b, 5, 1 << 30);
        assert_eq!(q.take(a, b, 5), 6);
        q.submitted(1, a, b, 6, 1 << 20);
        // The small one done, the next goes on its QP again, not on the busy one's.
        q.completed(&[Completion {
            flow: FlowId(1),
            at: Nanos(10),
        }]);
        assert_eq!(q.take(a, b, 5), 6);
        // Another connection has its own QPs.
        assert_eq!(q.take(b, a, 5), 5);
    }

    /// Enough flows for reports on the way: what was started and finished only grows, and
    /// the last report counts every engine flow (each flow's two QP parts) finished.
    #[test]
    fn progress_counts_up_to_every_engine_flow() {
        let topo = fabricsim_topology::presets::build_with("leaf-spine", &[]).unwrap();
        let gpus = topo.gpus();
        let mut text = String::from("src,dst,bytes,start\n");
        let n = 3 * REPORT_EVERY;
        for i in 0..n {
            let (s, d) = (i % gpus.len(), (i * 7 + 1) % gpus.len());
            let d = if s == d { (d + 1) % gpus.len() } else { d };
            let (s, d) = (topo.node_name(gpus[s]), topo.node_name(gpus[d]));
            text.push_str(&format!("{s},{d},64KiB,{}\n", i * 10));
        }
        let flows = read_flows_csv(&text, &topo).unwrap();
        let mut reports = Vec::new();
        let hash = HashConfig::default();
        let outcome = simulate_flows(
            &topo,
            Policy::Ecmp,
            hash,
            EngineKind::Flow,
            QpUse::Split(2),
            &flows,
            &mut |p| reports.push(p),
        )
        .unwrap();
        assert!(reports.len() > 3, "reports on the way, not only at the end");
        for w in reports.windows(2) {
            assert!(w[0].started <= w[1].started && w[0].done <= w[1].done);
            assert!(w[0].at <= w[1].at);
        }
        let last = reports.last().unwrap();
        assert_eq!(
            (last.started, last.done, last.total),
            (2 * n as u64, 2 * n as u64, 2 * n as u64)
        );
        assert_eq!(last.at, outcome.makespan);
        assert!(reports.iter().any(|p| p.done > 0 && p.done < p.total));
    }
}
