//! # fabricsim-report: what a run looks like
//!
//! One self-contained HTML page per run (`--report FILE.html`): the run's figures as tables,
//! its plots as SVG drawn by plotters and inlined, and its parameters. The page names nothing
//! to fetch (no scripts, fonts or style sheets), so it opens offline and can be mailed.
//!
//! - [`bench`]: bus and algorithm bandwidth against size per policy, the busiest link group,
//!   the links at the largest size;
//! - [`run`]: per job its figures, time split, collectives and its first ranks' timeline; the
//!   link groups over time, a heat map of every link by tier and the busiest links;
//! - [`flows`]: the flows' completion times as a distribution, the links;
//! - [`te`]: each routing's highest link utilization, and per link group;
//! - [`whatif`]: each action's cost to each job, median and range over seeds;
//! - [`sweep`]: each metric against the sweep's points, a line per job.
//!
//! The front ends pass their results in; this layer computes nothing of the simulation.

pub mod charts;
pub mod page;

mod bench;
mod flows;
mod links;
mod run;
mod sweep;
mod te;
mod whatif;

pub use bench::bench;
pub use flows::flows;
pub use run::{run, TIMELINE_RANKS};
pub use sweep::sweep;
pub use te::te;
pub use whatif::whatif;

/// The parameters table.
fn params(params: &[(String, String)]) -> String {
    let rows: Vec<Vec<String>> = params
        .iter()
        .map(|(k, v)| vec![k.clone(), v.clone()])
        .collect();
    page::table(&["parameter", "value"], &rows)
}
