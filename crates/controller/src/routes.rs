//! A route version: the TE solution for one state, programmed as per-switch next-hop tables
//! keyed by ⟨ingress port, destination prefix⟩, as Meta's controller programs its overlay.
//!
//! A table keyed that way cannot tell two flows apart that enter a switch through the same port
//! toward the same destination, so they leave the same way. The solver assigns paths per
//! (source, destination) pair, and on a fabric of three tiers two sources in one rack may be
//! given different uplinks above their shared RTSW port. Programming resolves this in demand
//! order: the first demand through a ⟨switch, ingress port, prefix⟩ sets its entry and later
//! ones follow it from there (counted as `conflicts`). The loads reported are those of the
//! traffic forwarded by the tables, not of the solver's paths.
//!
//! A destination prefix is the destination NIC (one prefix per NIC, named by the NIC); ports
//! are numbered by the switch's links in topology order.

use std::collections::BTreeMap;

use fabricsim_te::report::{tier_utilization, TierUtilization};
use fabricsim_te::solve::SolveOptions;
use fabricsim_te::{Instance, InstanceError, Solver};
use fabricsim_topology::{LinkId, NodeId, Topology};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::state::Snapshot;

/// One next-hop entry of a switch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Entry {
    /// The switch's port the traffic arrives on (ports are numbered by the switch's links in
    /// topology order).
    pub ingress_port: u32,
    /// The node on the other end of the ingress port.
    pub ingress_peer: String,
    /// The destination NIC.
    pub prefix: String,
    /// The port the traffic leaves on.
    pub egress_port: u32,
    /// The node on the other end of the egress port.
    pub next_hop: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchTable {
    pub switch: String,
    pub entries: Vec<Entry>,
}

/// A directed link's load under the programmed tables.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LinkLoad {
    /// `from->to`.
    #[schema(example = "zone0/rack0/rtsw->zone0/ctsw3")]
    pub link: String,
    /// Load, Gbit/s.
    pub gbps: f64,
    /// Capacity under the link state, Gbit/s.
    pub capacity_gbps: f64,
    /// Load over capacity.
    pub utilization: f64,
}

/// A demand TE could not place.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Unroutable {
    /// Source GPU.
    pub src: String,
    /// Destination GPU.
    pub dst: String,
    /// Why it has no route.
    pub reason: String,
}

/// What a recomputation decided, without its tables and loads: what `GET /routes` serves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RouteSummary {
    /// Counts recomputations, from 1; 0 is "no routes yet".
    pub version: u64,
    /// The state version the routes were computed for.
    pub state_version: u64,
    #[schema(example = "cspf")]
    pub solver: String,
    /// Demands placed over the fabric (GPU pairs; sets and jobs on one pair add up).
    pub demands: usize,
    /// Demands inside one NVLink domain (not the fabric's business).
    pub local: usize,
    pub unroutable: Vec<Unroutable>,
    /// Max utilization over the steerable links (switch to switch, or with a routing choice),
    /// under the programmed tables.
    pub max_utilization: f64,
    /// The same under the solver's own paths.
    pub solver_max_utilization: f64,
    /// Demands that follow another demand's entry for part of their way (see the module docs).
    pub conflicts: usize,
}

/// Everything one recomputation produced. Published whole: readers see one version or the next.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RouteVersion {
    #[serde(flatten)]
    pub summary: RouteSummary,
    pub tiers: Vec<TierUtilization>,
    pub switches: Vec<SwitchTable>,
    /// Links with load, busiest first.
    pub links: Vec<LinkLoad>,
}

/// Solves the snapshot's demand and programs the tables.
pub fn compute(
    snap: &Snapshot,
    solver: Solver,
    opts: &SolveOptions,
) -> Result<RouteVersion, String> {
    let topo = &*snap.topo;
    let mut rv = RouteVersion {
        summary: RouteSummary {
            state_version: snap.state_version,
            solver: solver.name().to_string(),
            ..RouteSummary::default()
        },
        ..RouteVersion::default()
    };
    let inst = match Instance::new(topo, &snap.links, &snap.demand) {
        Ok(inst) => inst,
        Err(InstanceError::NoNetworkDemand) => {
            rv.summary.local = snap.demand.demands.len();
            return Ok(rv);
        }
        Err(e) => return Err(e.to_string()),
    };
    let sol = fabricsim_te::solve(&inst, solver, opts).map_err(|e| e.to_string())?;
    let programmed = program(topo, &sol.paths);
    let load = inst.loads(&programmed.paths);
    rv.summary.demands = inst.demands.len();
    rv.summary.local = inst.local.len();
    rv.summary.unroutable = inst
        .unroutable
        .iter()
        .map(|(d, e)| Unroutable {
            src: topo.node_name(d.src).to_string(),
            dst: topo.node_name(d.dst).to_string(),
            reason: e.to_string(),
        })
        .collect();
    rv.summary.max_utilization = inst.max_utilization(&load);
    rv.summary.solver_max_utilization = sol.max_utilization;
    rv.summary.conflicts = programmed.conflicts;
    rv.tiers = tier_utilization(&inst, &load);
    rv.switches = tables(topo, &programmed.table);
    rv.links = link_loads(topo, &inst.capacity, &load);
    Ok(rv)
}

/// ⟨switch, ingress port, destination prefix⟩ → egress link.
type Table = BTreeMap<(NodeId, u32, NodeId), LinkId>;

struct Programmed {
    table: Table,
    /// Each demand's path as the tables forward it.
    paths: Vec<Vec<LinkId>>,
    conflicts: usize,
}

fn is_switch(topo: &Topology, n: NodeId) -> bool {
    topo.kind(n).is_switch()
}

/// A switch's port number of a link leaving it.
fn port(topo: &Topology, switch: NodeId, out: LinkId) -> u32 {
    let links = topo.out_links(switch);
    links
        .iter()
        .position(|&l| l == out)
        .expect("a link leaves its source") as u32
}

fn program(topo: &Topology, paths: &[Vec<LinkId>]) -> Programmed {
    let mut table = Table::new();
    let mut conflicts = 0;
    let mut forwarded = Vec::with_capacity(paths.len());
    for path in paths {
        // The destination NIC: the node right after the last switch.
        let Some(last) = path
            .iter()
            .rposition(|&l| is_switch(topo, topo.link(l).src))
        else {
            forwarded.push(path.clone());
            continue;
        };
        let prefix = topo.link(path[last]).dst;
        // Into the first switch, the host's own links, as the solver chose them.
        let mut i = path
            .iter()
            .position(|&l| is_switch(topo, topo.link(l).dst))
            .expect("a path that leaves a switch entered one");
        let mut out: Vec<LinkId> = path[..=i].to_vec();
        let mut conflicted = false;
        let mut into = path[i];
        loop {
            let sw = topo.link(into).dst;
            if !is_switch(topo, sw) {
                break;
            }
            let key = (sw, port(topo, sw, into.reverse()), prefix);
            let own = (!conflicted).then(|| path[i + 1]);
            let egress = *table.entry(key).or_insert_with(|| {
                own.expect("an entry is missing only while a demand is on its own path")
            });
            if own.is_some_and(|o| o != egress) {
                conflicted = true;
            }
            out.push(egress);
            into = egress;
            i += 1;
        }
        debug_assert_eq!(topo.link(into).dst, prefix);
        // From the destination NIC on, the host's own links, as the solver chose them.
        let nic_on = path[last + 1..].iter().copied();
        out.extend(nic_on);
        conflicts += usize::from(conflicted);
        forwarded.push(out);
    }
    Programmed {
        table,
        paths: forwarded,
        conflicts,
    }
}

fn tables(topo: &Topology, table: &Table) -> Vec<SwitchTable> {
    let mut switches: Vec<SwitchTable> = Vec::new();
    for (&(sw, ingress_port, prefix), &egress) in table {
        let peer = |p: u32| topo.link(topo.out_links(sw)[p as usize]).dst;
        let entry = Entry {
            ingress_port,
            ingress_peer: topo.node_name(peer(ingress_port)).to_string(),
            prefix: topo.node_name(prefix).to_string(),
            egress_port: port(topo, sw, egress),
            next_hop: topo.node_name(topo.link(egress).dst).to_string(),
        };
        match switches.last_mut() {
            Some(t) if t.switch == topo.node_name(sw) => t.entries.push(entry),
            _ => switches.push(SwitchTable {
                switch: topo.node_name(sw).to_string(),
                entries: vec![entry],
            }),
        }
    }
    switches
}

fn link_loads(topo: &Topology, capacity: &[f64], load: &[f64]) -> Vec<LinkLoad> {
    let mut links: Vec<LinkLoad> = topo
        .link_ids()
        .filter(|l| load[l.index()] > 0.0)
        .map(|l| {
            let link = topo.link(l);
            let cap = capacity[l.index()];
            debug_assert!(cap > 0.0, "TE routes nothing over a link that is down");
            LinkLoad {
                link: format!("{}->{}", topo.node_name(link.src), topo.node_name(link.dst)),
                gbps: load[l.index()] * 8e-9,
                capacity_gbps: cap * 8e-9,
                utilization: load[l.index()] / cap,
            }
        })
        .collect();
    links.sort_by(|a, b| b.utilization.total_cmp(&a.utilization));
    links
}
