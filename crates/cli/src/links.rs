//! `--links FILE`: every link that carried bytes in a run, as CSV (docs/outputs.md).

use std::path::Path;

use fabricsim_cluster::sharing::JobSharing;
use fabricsim_netsim::LinkUse;
use fabricsim_routing::balance::link_group;
use fabricsim_topology::Topology;

use crate::failure::{other, CmdResult};
use crate::output::write_output;

const COLUMNS: [&str; 9] = [
    "link",
    "src",
    "dst",
    "group",
    "capacity_gbps",
    "bytes",
    "utilization",
    "peak_utilization",
    "busy_fraction",
];

/// Writes `links` to `path`: `link,src,dst,group,capacity_gbps,bytes,utilization,
/// peak_utilization,busy_fraction`, one row per link in link order; `group` is the direction
/// between tiers (`rtsw->ctsw`) or `host` for a link inside a host.
pub fn write_links(path: &Path, topo: &Topology, links: &[LinkUse]) -> CmdResult {
    write_runs(path, topo, &[], &[(Vec::new(), links)])
}

/// [`write_links`] for several runs, each row led by its run's `lead` values (`bench`: the
/// routing and the size).
pub fn write_runs(
    path: &Path,
    topo: &Topology,
    lead: &[&str],
    runs: &[(Vec<String>, &[LinkUse])],
) -> CmdResult {
    write_output(Some(path), |w| {
        let mut out = csv::Writer::from_writer(w);
        out.write_record(lead.iter().chain(COLUMNS.iter()))?;
        for (values, links) in runs {
            for u in links.iter() {
                let link = topo.link(u.link);
                let row = [
                    u.link.0.to_string(),
                    topo.node_name(link.src).to_string(),
                    topo.node_name(link.dst).to_string(),
                    link_group(topo, u.link).unwrap_or_else(|| "host".into()),
                    format!("{}", link.capacity.0 as f64 * 8e-9),
                    format!("{:.0}", u.bytes),
                    format!("{:.6}", u.utilization),
                    format!("{:.6}", u.peak_utilization),
                    format!("{:.6}", u.busy_fraction),
                ];
                out.write_record(values.iter().chain(row.iter()))?;
            }
        }
        out.flush()
    })
    .map_err(other)
}

/// Writes, per job, every link its bytes crossed: `job,link,src,dst,group,bytes,share,
/// utilization,other_jobs`; `share` is the job's fraction of the link's bytes, `other_jobs`
/// the other jobs on it as `name:bytes`, most first, separated by `;`.
pub fn write_job_links(
    path: &Path,
    topo: &Topology,
    names: &[&str],
    sharing: &[JobSharing],
) -> CmdResult {
    write_output(Some(path), |w| {
        let mut out = csv::Writer::from_writer(w);
        out.write_record([
            "job",
            "link",
            "src",
            "dst",
            "group",
            "bytes",
            "share",
            "utilization",
            "other_jobs",
        ])?;
        for (job, s) in sharing.iter().enumerate() {
            for l in &s.links {
                let link = topo.link(l.link);
                let others: Vec<String> = l
                    .others
                    .iter()
                    .map(|&(o, b)| format!("{}:{b:.0}", names[o]))
                    .collect();
                out.write_record([
                    names[job].to_string(),
                    l.link.0.to_string(),
                    topo.node_name(link.src).to_string(),
                    topo.node_name(link.dst).to_string(),
                    l.group.clone().unwrap_or_else(|| "host".into()),
                    format!("{:.0}", l.bytes),
                    format!("{:.6}", l.bytes / l.link_bytes),
                    format!("{:.6}", l.utilization),
                    others.join(";"),
                ])?;
            }
        }
        out.flush()
    })
    .map_err(other)
}

/// Writes every link's utilization over time to `path`: `time_ms,link,src,dst,group,
/// utilization`, a row per link with load at each sample (a link absent from a sample is idle;
/// a sample holds until the next).
pub fn write_series(
    path: &Path,
    topo: &Topology,
    samples: &[(u64, Vec<(fabricsim_topology::LinkId, f32)>)],
) -> CmdResult {
    write_output(Some(path), |w| {
        let mut out = csv::Writer::from_writer(w);
        out.write_record(["time_ms", "link", "src", "dst", "group", "utilization"])?;
        for (t, links) in samples {
            for &(l, u) in links {
                let link = topo.link(l);
                out.write_record([
                    format!("{:.6}", *t as f64 * 1e-6),
                    l.0.to_string(),
                    topo.node_name(link.src).to_string(),
                    topo.node_name(link.dst).to_string(),
                    link_group(topo, l).unwrap_or_else(|| "host".into()),
                    format!("{u:.6}"),
                ])?;
            }
        }
        out.flush()
    })
    .map_err(other)
}
