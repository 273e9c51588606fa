//! The report of `fabricsim run` and `replay`: per job its figures, time split, collectives and
//! the first ranks' timelines; the fabric's link groups and busiest links; the parameters.

use fabricsim_cluster::stats::Lane;
use fabricsim_cluster::{JobReport, RunOutput};
use fabricsim_topology::Topology;

use crate::charts::{lines_over_time, stacked_bars, timeline, Span};
use crate::page::{note, table, Page};

/// Ranks a timeline shows at most.
pub const TIMELINE_RANKS: u32 = 8;

/// The page for a run: `out` as the orchestrator left it, `reports` its jobs' summaries.
pub fn run(
    title: &str,
    params: &[(String, String)],
    topo: &Topology,
    out: &RunOutput,
    reports: &[JobReport],
) -> String {
    let mut page = Page::new(title);
    let jobs: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                r.gpus.to_string(),
                format!("{:.3}", r.iteration_ms),
                format!("{:.0}", r.tokens_per_s),
                format!("{:.1}", r.model_tflops_per_gpu),
                format!("{:.1} %", r.mfu * 100.0),
            ]
        })
        .collect();
    page.section(
        "Jobs",
        &table(
            &[
                "job",
                "GPUs",
                "iteration (ms)",
                "tokens/s",
                "model TFLOP/s per GPU",
                "MFU",
            ],
            &jobs,
        ),
    );
    let split: Vec<(String, Vec<(String, f64)>)> = reports
        .iter()
        .map(|r| {
            let mut segs = vec![("compute".to_string(), r.compute_fraction)];
            for (scope, f) in &r.exposed_comm_by_scope {
                segs.push((format!("exposed {scope}"), *f));
            }
            segs.push(("idle".to_string(), r.idle_fraction));
            (r.name.clone(), segs)
        })
        .collect();
    page.section(
        "Where the time goes",
        &(stacked_bars("Time split per GPU", &split)
            + &note(
                "Compute, communication not hidden behind compute (by communicator kind), \
                     and idle time, as fractions of the iteration summed over the job's GPUs.",
            )),
    );
    for r in reports {
        let rows: Vec<Vec<String>> = r
            .collectives
            .iter()
            .map(|c| {
                vec![
                    c.op.to_string(),
                    c.scope.clone(),
                    c.ranks.to_string(),
                    c.algorithm.clone(),
                    c.count.to_string(),
                    format!("{:.1}", c.mean_us),
                    format!("{:.1}", c.busbw_gbps),
                ]
            })
            .collect();
        page.section(
            &format!("Collectives of {}", r.name),
            &table(
                &[
                    "op",
                    "scope",
                    "ranks",
                    "algorithm",
                    "count",
                    "mean (us)",
                    "busbw (GB/s)",
                ],
                &rows,
            ),
        );
    }
    for stats in &out.jobs {
        let ranks: Vec<u32> = (0..stats.ranks.min(TIMELINE_RANKS)).collect();
        let spans: Vec<Span> = stats
            .slices
            .iter()
            .filter(|s| s.rank < TIMELINE_RANKS)
            .map(|s| {
                let lane = match s.lane {
                    Lane::Compute => 0,
                    Lane::Comm => 1,
                    Lane::Memory => 2,
                };
                (s.rank, lane, s.start, s.end)
            })
            .collect();
        if !spans.is_empty() {
            page.section(
                &format!("Timeline of {}'s first ranks", stats.name),
                &timeline(
                    "Kernels and communication per rank",
                    &ranks,
                    &["compute", "communication", "memory"],
                    &spans,
                ),
            );
        }
    }
    if !out.series.samples.is_empty() {
        let lines: Vec<(String, Vec<(f64, f64)>)> = out
            .series
            .groups
            .iter()
            .enumerate()
            .map(|(g, name)| {
                let points = out
                    .series
                    .samples
                    .iter()
                    .map(|(t, stats)| (*t as f64 * 1e-6, f64::from(stats[g].1)))
                    .collect();
                (name.clone(), points)
            })
            .collect();
        page.section(
            "Link utilization over time",
            &(lines_over_time("Busiest link of each group", "utilization", &lines)
                + &note("Sampled at fixed instants; a value holds until the next sample.")),
        );
    }
    let tiers: Vec<Vec<String>> = out
        .tiers
        .iter()
        .map(|g| {
            vec![
                g.group.clone(),
                g.links.to_string(),
                format!("{:.3}", g.max_load),
                format!("{:.3}", g.mean_load),
                format!("{:.1} %", g.idle_fraction * 100.0),
            ]
        })
        .collect();
    page.section(
        "Link groups",
        &table(
            &[
                "group",
                "links",
                "max utilization",
                "mean utilization",
                "idle",
            ],
            &tiers,
        ),
    );
    page.section("Links", &crate::links::section(topo, &out.links, 10));
    if out.jobs.len() > 1 && !out.job_links.is_empty() {
        let names: Vec<&str> = out.jobs.iter().map(|j| j.name.as_str()).collect();
        let sharing = fabricsim_cluster::sharing::sharing(topo, &out.links, &out.job_links);
        page.section(
            "Links each job loaded most",
            &crate::links::shared(topo, &names, &sharing, 10),
        );
    }
    page.section("Parameters", &crate::params(params));
    page.finish()
}
