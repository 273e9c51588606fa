//! The report of `fabricsim sweep`: each metric against the points of the sweep, a line per
//! job (the median over seeds), the table, and the plan.

use fabricsim_cluster::sweep::{Plan, SweepRow};

use crate::charts::lines_by_point;
use crate::page::{table, Page};

pub fn sweep(title: &str, params: &[(String, String)], plan: &Plan, rows: &[SweepRow]) -> String {
    let mut page = Page::new(title);
    // Points in the order they ran, each labelled by its values.
    let mut points: Vec<String> = Vec::new();
    let label = |r: &SweepRow| {
        r.point
            .iter()
            .map(|v| v.to_string().trim_matches('"').to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut jobs: Vec<String> = Vec::new();
    for r in rows {
        let l = label(r);
        if !points.contains(&l) {
            points.push(l);
        }
        if !jobs.contains(&r.job) {
            jobs.push(r.job.clone());
        }
    }
    let keys: Vec<&str> = plan.vary.iter().map(|(k, _)| k.as_str()).collect();
    for (m, metric) in plan.metrics.iter().enumerate() {
        let series: Vec<(String, Vec<(usize, f64)>)> = jobs
            .iter()
            .map(|job| {
                let values = points
                    .iter()
                    .enumerate()
                    .filter_map(|(p, l)| {
                        let mut v: Vec<f64> = rows
                            .iter()
                            .filter(|r| &r.job == job && &label(r) == l)
                            .filter_map(|r| r.metrics[m])
                            .collect();
                        v.sort_by(f64::total_cmp);
                        v.get(v.len() / 2).map(|&x| (p, x))
                    })
                    .collect();
                (job.clone(), values)
            })
            .collect();
        page.section(
            metric,
            &lines_by_point(
                &format!("{metric}, median over seeds"),
                &keys.join(", "),
                &points,
                &series,
            ),
        );
    }
    let mut head: Vec<&str> = keys.clone();
    head.extend(["seed", "job"]);
    head.extend(plan.metrics.iter().map(String::as_str));
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut c: Vec<String> = r
                .point
                .iter()
                .map(|v| v.to_string().trim_matches('"').to_string())
                .collect();
            c.push(r.seed.to_string());
            c.push(r.job.clone());
            c.extend(
                r.metrics
                    .iter()
                    .map(|x| x.map_or(String::new(), |x| format!("{x:.4}"))),
            );
            c
        })
        .collect();
    page.section("Runs", &table(&head, &cells));
    page.section("Parameters", &crate::params(params));
    page.finish()
}
