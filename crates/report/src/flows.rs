//! The report of `fabricsim flows`: the flows' completion times as a distribution, the links.

use fabricsim_netsim::LinkUse;
use fabricsim_topology::Topology;

use crate::charts::lines_over_time;
use crate::page::{note, table, Page};

/// The page for a list of flows: each one's time from its start to its end, in ms.
pub fn flows(
    title: &str,
    params: &[(String, String)],
    topo: &Topology,
    durations_ms: &[f64],
    links: &[LinkUse],
) -> String {
    let mut page = Page::new(title);
    let mut sorted = durations_ms.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len().max(1) as f64;
    let cdf: Vec<(f64, f64)> = std::iter::once((0.0, 0.0))
        .chain(
            sorted
                .iter()
                .enumerate()
                .map(|(i, &d)| (d, (i + 1) as f64 / n)),
        )
        .collect();
    let at = |p: f64| {
        sorted
            .get(((sorted.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    page.section(
        "Flow completion times",
        &(lines_over_time(
            "Flows done within a time (from each flow's start)",
            "fraction of flows",
            &[("flows".to_string(), cdf)],
        ) + &note("Each flow's time from its start to its last byte.")
            + &table(
                &["flows", "p50 (ms)", "p90 (ms)", "p99 (ms)", "max (ms)"],
                &[vec![
                    sorted.len().to_string(),
                    format!("{:.3}", at(0.5)),
                    format!("{:.3}", at(0.9)),
                    format!("{:.3}", at(0.99)),
                    format!("{:.3}", at(1.0)),
                ]],
            )),
    );
    page.section("Links", &crate::links::section(topo, links, 10));
    page.section("Parameters", &crate::params(params));
    page.finish()
}
