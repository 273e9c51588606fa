//! `fabricsim cluster PLAN`: the cluster over days — jobs arriving, placed by a scheduler,
//! running at their simulated iteration times, failing, checkpointing and restarting
//! (docs/commands/cluster.md).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;
use fabricsim_timeline::{Outcome, Plan};

use crate::failure::{input, other, CmdResult};
use crate::output::write_output;
use crate::progress;

#[derive(Args)]
pub struct ClusterArgs {
    /// The plan: a scenario file whose jobs are the workloads, with a [cluster] table.
    plan: PathBuf,
    /// The placement policy, instead of the plan's.
    #[arg(long, value_parser = crate::choices::schedulers())]
    scheduler: Option<String>,
    /// Whole hosts each zone keeps for restarts, instead of the plan's.
    #[arg(long)]
    spares: Option<u32>,
    /// GPUs up to which jobs sharing links are simulated together, instead of the plan's
    /// `exact_group_gpus`; wider chains are cut into their jobs.
    #[arg(long, value_name = "N")]
    exact_group_gpus: Option<u64>,
    /// Days to simulate, instead of the plan's.
    #[arg(long)]
    days: Option<f64>,
    /// The seed (arrivals, failures, random placement), instead of the plan's.
    #[arg(long)]
    seed: Option<u64>,
    /// Run this many seeds (from the seed on) and print the spread of the cluster figures.
    #[arg(long, default_value_t = 1)]
    seeds: u32,
    /// Print the outcome as JSON (with --seeds, one per seed).
    #[arg(long)]
    json: bool,
    /// Write a row per job (CSV) to FILE.
    #[arg(long, value_name = "FILE")]
    jobs_csv: Option<PathBuf>,
    /// Write the utilization time series (CSV) to FILE.
    #[arg(long, value_name = "FILE")]
    series_csv: Option<PathBuf>,
}

pub fn run(args: ClusterArgs) -> CmdResult {
    let mut plan = Plan::load(&args.plan).map_err(input)?;
    // The argument parser took only the schedulers' names (crate::choices::schedulers).
    if let Some(s) = &args.scheduler {
        plan.scheduler = s.clone();
    }
    if let Some(n) = args.spares {
        plan.spares = n;
    }
    if let Some(n) = args.exact_group_gpus {
        plan.exact_group_gpus = n;
    }
    if let Some(d) = args.days {
        if !(d.is_finite() && d > 0.0 && d <= 3650.0) {
            return Err(input(anyhow!(
                "--days {d}: expected more than 0 and at most 3650"
            )));
        }
        plan.duration = d * 86_400.0;
    }
    if args.seeds == 0 || args.seeds > 64 {
        return Err(input(anyhow!("--seeds {}: expected 1 to 64", args.seeds)));
    }
    if args.seeds > 1 && (args.jobs_csv.is_some() || args.series_csv.is_some()) {
        return Err(input(anyhow!(
            "--jobs-csv and --series-csv take one seed: leave out --seeds"
        )));
    }
    let topo = plan.scenario.fabric.load().map_err(input)?;
    let first = args.seed.unwrap_or(plan.seed);
    let mut outcomes = Vec::new();
    let hours = (plan.duration / 3600.0).ceil() as u64;
    let bar = progress::bar(hours * u64::from(args.seeds), "simulated hours");
    for k in 0..u64::from(args.seeds) {
        let done = k * hours;
        let run = fabricsim_timeline::run_with_progress(&plan, &topo, first.wrapping_add(k), |h| {
            bar.set_position(done + h as u64)
        });
        outcomes.push(run.map_err(|e| if e.is_input() { input(e) } else { other(e) })?);
    }
    bar.finish_and_clear();
    if let Some(path) = &args.jobs_csv {
        let text = outcomes[0].jobs_csv();
        write_output(Some(path), |w| w.write_all(text.as_bytes())).map_err(other)?;
    }
    if let Some(path) = &args.series_csv {
        let text = outcomes[0].series_csv();
        write_output(Some(path), |w| w.write_all(text.as_bytes())).map_err(other)?;
    }
    let text = if args.json {
        let value = if outcomes.len() == 1 {
            serde_json::to_string_pretty(&outcomes[0])
        } else {
            serde_json::to_string_pretty(&outcomes)
        };
        value.map_err(other)? + "\n"
    } else if outcomes.len() == 1 {
        outcomes[0].text()
    } else {
        spread(&outcomes)
    };
    write_output(None, |w| w.write_all(text.as_bytes())).map_err(other)
}

/// The cluster figures of each seed, and their range.
fn spread(outcomes: &[Outcome]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} days of {} GPUs, scheduler {}, {} spare hosts per zone, {} seeds",
        outcomes[0].days,
        outcomes[0].gpus,
        outcomes[0].scheduler,
        outcomes[0].spares_per_zone,
        outcomes.len()
    );
    let _ = writeln!(
        o,
        "  seed  finished  held %  computing %  fragmented %   ETTR  lost GPU-h"
    );
    let lost = |x: &Outcome| x.jobs.iter().map(|j| j.lost_gpu_h).sum::<f64>() + 0.0;
    for x in outcomes {
        let _ = writeln!(
            o,
            "  {:>4} {:>9} {:>7.1} {:>12.1} {:>13.1} {:>6.3} {:>11.0}",
            x.seed,
            x.jobs_finished,
            100.0 * x.utilization,
            100.0 * x.computing,
            100.0 * x.fragmentation,
            x.ettr,
            lost(x)
        );
    }
    let range = |f: &dyn Fn(&Outcome) -> f64| {
        let v: Vec<f64> = outcomes.iter().map(f).collect();
        (
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )
    };
    let (a, b) = range(&|x| x.ettr);
    let (c, d) = range(&|x| 100.0 * x.computing);
    let _ = writeln!(o, "  range: ETTR {a:.3}–{b:.3}, computing {c:.1}–{d:.1} %");
    o
}
