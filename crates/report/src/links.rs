//! The fabric's links in a report: a heat strip per link group (tier to tier, by direction) and
//! the busiest links by name.

use fabricsim_cluster::sharing::JobSharing;
use fabricsim_netsim::LinkUse;
use fabricsim_routing::balance::link_group;
use fabricsim_topology::Topology;

use crate::charts::heat_strips;
use crate::page::{note, table};

/// A heat map of `uses` by link group (every link of a group that some path could use is a
/// cell, idle ones white) and a table of the `top` busiest links.
pub fn section(topo: &Topology, uses: &[LinkUse], top: usize) -> String {
    let mut by_group: Vec<(String, Vec<f64>)> = Vec::new();
    for u in uses {
        let Some(g) = link_group(topo, u.link) else {
            continue; // inside a host
        };
        match by_group.iter_mut().find(|(name, _)| *name == g) {
            Some((_, cells)) => cells.push(u.utilization),
            None => by_group.push((g, vec![u.utilization])),
        }
    }
    by_group.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, cells) in &mut by_group {
        cells.sort_by(|a, b| b.total_cmp(a));
    }
    let mut busiest: Vec<&LinkUse> = uses.iter().collect();
    busiest.sort_by(|a, b| {
        b.utilization
            .total_cmp(&a.utilization)
            .then(a.link.cmp(&b.link))
    });
    let rows: Vec<Vec<String>> = busiest
        .iter()
        .take(top)
        .map(|u| {
            let l = topo.link(u.link);
            vec![
                format!("{} -> {}", topo.node_name(l.src), topo.node_name(l.dst)),
                link_group(topo, u.link).unwrap_or_else(|| "host".into()),
                format!("{:.3}", u.utilization),
                format!("{:.3}", u.peak_utilization),
                format!("{:.3}", u.busy_fraction),
            ]
        })
        .collect();
    let mut out = String::new();
    if by_group.is_empty() {
        out += &note("No link between switches or NICs carried bytes.");
    } else {
        let scale = uses.iter().map(|u| u.utilization).fold(0.0, f64::max);
        out += &heat_strips(
            "Mean utilization of each link that carried bytes",
            &by_group,
            scale,
        );
        out += &note(&format!(
            "One row per link group, one cell per link that carried bytes, busiest first; \
             white is idle, dark red the busiest link's mean utilization ({scale:.3})."
        ));
    }
    out += &table(&["link", "group", "utilization", "peak", "busy"], &rows);
    out
}

/// Per job, the jobs it met on fabric links and the `top` fabric links it loaded most, with
/// who else was on them (`names`: the run's jobs).
pub fn shared(topo: &Topology, names: &[&str], sharing: &[JobSharing], top: usize) -> String {
    let mut out = note(
        "Each job's bytes are charged to the links its flows crossed. A link shared with \
         another job is where the two can slow each other down.",
    );
    for (j, s) in sharing.iter().enumerate() {
        let met: Vec<String> = s
            .neighbours
            .iter()
            .map(|n| format!("{} ({} links)", names[n.job], n.links))
            .collect();
        out += &note(&format!(
            "{}: {}",
            names[j],
            if met.is_empty() {
                "no fabric link shared with another job".to_string()
            } else {
                format!("shares fabric links with {}", met.join(", "))
            }
        ));
        let rows: Vec<Vec<String>> = s
            .busiest(top)
            .iter()
            .map(|l| {
                let link = topo.link(l.link);
                let others: Vec<String> = l
                    .others
                    .iter()
                    .map(|&(o, b)| format!("{} {:.0} %", names[o], 100.0 * b / l.link_bytes))
                    .collect();
                vec![
                    format!(
                        "{} -> {}",
                        topo.node_name(link.src),
                        topo.node_name(link.dst)
                    ),
                    l.group.clone().unwrap_or_default(),
                    format!("{:.3}", l.bytes * 1e-9),
                    format!("{:.0} %", 100.0 * l.bytes / l.link_bytes),
                    format!("{:.3}", l.utilization),
                    others.join(", "),
                ]
            })
            .collect();
        out += &table(
            &["link", "group", "GB", "share", "utilization", "other jobs"],
            &rows,
        );
    }
    out
}
