//! The report of `fabricsim te solve`: each routing's highest utilization, and per link group.

use fabricsim_te::report::TierUtilization;

use crate::charts::ranges;
use crate::page::{note, table, Page};

/// The page for a TE comparison: per routing, its max utilization of the steerable links and
/// its link groups' utilization.
pub fn te(
    title: &str,
    params: &[(String, String)],
    routings: &[(String, f64, Vec<TierUtilization>)],
) -> String {
    let mut page = Page::new(title);
    let bars: Vec<(String, f64, f64, f64)> = routings
        .iter()
        .map(|(name, max, tiers)| {
            // The line spans the link groups' p99 utilizations.
            let p99 = tiers.iter().map(|t| t.p99);
            let (lo, hi) = p99.fold((f64::MAX, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
            (name.clone(), *max, lo.min(hi), hi)
        })
        .collect();
    page.section(
        "Highest link utilization",
        &(ranges(
            "Max utilization of the steerable links",
            "utilization",
            &bars,
        ) + &note("The bar is the highest utilization; the line spans the link groups' p99.")),
    );
    let rows: Vec<Vec<String>> = routings
        .iter()
        .flat_map(|(name, _, tiers)| {
            tiers.iter().map(move |t| {
                vec![
                    name.clone(),
                    t.group.clone(),
                    t.links.to_string(),
                    format!("{:.3}", t.max),
                    format!("{:.3}", t.mean),
                    format!("{:.3}", t.p99),
                ]
            })
        })
        .collect();
    page.section(
        "Link groups",
        &table(&["routing", "group", "links", "max", "mean", "p99"], &rows),
    );
    page.section("Parameters", &crate::params(params));
    page.finish()
}
