//! The report of `fabricsim bench`: bandwidth against size per policy, the links at the
//! largest size, the results and the parameters.

use fabricsim_collectives::bench::Row;
use fabricsim_topology::Topology;

use crate::charts::{lines_by_size, size_label};
use crate::page::{note, table, Page};

/// The page for a bench sweep: `runs` are (policy, rows by size).
pub fn bench(
    title: &str,
    params: &[(String, String)],
    topo: &Topology,
    runs: &[(String, Vec<Row>)],
) -> String {
    let mut page = Page::new(title);
    let series = |f: fn(&Row) -> f64| -> Vec<(String, Vec<(u64, f64)>)> {
        runs.iter()
            .map(|(name, rows)| (name.clone(), rows.iter().map(|r| (r.size, f(r))).collect()))
            .collect()
    };
    page.section(
        "Bandwidth",
        &(lines_by_size("Bus bandwidth", "GB/s", &series(|r| r.busbw_gbps))
            + &lines_by_size("Algorithm bandwidth", "GB/s", &series(|r| r.algbw_gbps))
            + &note(
                "Bus bandwidth as nccl-tests computes it: algorithm bandwidth times the \
                     collective's factor (2(n-1)/n for an all-reduce).",
            )),
    );
    page.section(
        "Link utilization",
        &lines_by_size(
            "Busiest link group's highest utilization",
            "utilization",
            // Rows run without link figures (`Bench::link_figures`) have no point.
            &runs
                .iter()
                .map(|(name, rows)| {
                    let points = rows
                        .iter()
                        .filter_map(|r| Some((r.size, r.busiest.as_ref()?.max_link_utilization)));
                    (name.clone(), points.collect())
                })
                .collect::<Vec<_>>(),
        ),
    );
    let mut rows = Vec::new();
    for (name, results) in runs {
        for r in results {
            rows.push(vec![
                name.clone(),
                size_label(r.size),
                format!("{}/{}", r.algorithm, r.protocol),
                format!("{:.1}", r.time_us),
                format!("{:.2}", r.algbw_gbps),
                format!("{:.2}", r.busbw_gbps),
                r.busiest
                    .as_ref()
                    .map_or("-".to_string(), |b| b.busiest_tier.clone()),
                r.busiest.as_ref().map_or("-".to_string(), |b| {
                    format!("{:.3}", b.max_link_utilization)
                }),
            ]);
        }
    }
    page.section(
        "Results",
        &table(
            &[
                "routing",
                "size",
                "algorithm",
                "time (us)",
                "algbw (GB/s)",
                "busbw (GB/s)",
                "busiest tier",
                "max util",
            ],
            &rows,
        ),
    );
    for (name, results) in runs {
        if let Some(last) = results.last() {
            page.section(
                &format!("Links under {name} at {}", size_label(last.size)),
                &crate::links::section(topo, &last.links, 10),
            );
        }
    }
    page.section("Parameters", &crate::params(params));
    page.finish()
}
