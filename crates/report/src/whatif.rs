//! The report of `fabricsim whatif`: per action, each job's change of iteration (median and
//! range over seeds) as a chart and a table, the link groups' change, and the parameters.

use fabricsim_cluster::whatif::WhatIfReport;

use crate::charts::ranges;
use crate::page::{note, table, Page};

pub fn whatif(title: &str, params: &[(String, String)], report: &WhatIfReport) -> String {
    let mut page = Page::new(title);
    let mut bars = Vec::new();
    let mut rows = Vec::new();
    for a in &report.actions {
        if let Some(e) = &a.error {
            rows.push(vec![
                a.action.clone(),
                "-".into(),
                e.clone(),
                String::new(),
                String::new(),
            ]);
            continue;
        }
        for j in &a.jobs {
            bars.push((
                format!("{} · {}", a.action, j.job),
                j.median_change * 100.0,
                j.min_change * 100.0,
                j.max_change * 100.0,
            ));
            rows.push(vec![
                a.action.clone(),
                j.job.clone(),
                format!("{:+.2} %", j.median_change * 100.0),
                format!(
                    "{:+.2} % to {:+.2} %",
                    j.min_change * 100.0,
                    j.max_change * 100.0
                ),
                format!("{:.1}", j.gpu_hours_lost_per_day),
            ]);
        }
    }
    page.section(
        "What each action costs each job",
        &(ranges(
            &format!("Change of the iteration over {} seed(s)", report.seeds),
            "%",
            &bars,
        ) + &note("The bar is the median over seeds, the line the range (min to max).")
            + &table(
                &[
                    "action",
                    "job",
                    "median change",
                    "range",
                    "GPU-hours lost per day",
                ],
                &rows,
            )),
    );
    let tiers: Vec<Vec<String>> = report
        .actions
        .iter()
        .flat_map(|a| {
            a.tiers.iter().map(move |t| {
                vec![
                    a.action.clone(),
                    t.group.clone(),
                    format!("{:.3}", t.before),
                    format!("{:.3}", t.after),
                ]
            })
        })
        .collect();
    page.section(
        "Link groups",
        &table(&["action", "group", "utilization before", "after"], &tiers),
    );
    page.section("Parameters", &crate::params(params));
    page.finish()
}
