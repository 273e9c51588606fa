//! `fabricsim whatif SCENARIO`: what draining, failing, derating or repairing an element costs
//! each job of a scenario, over several seeds (docs/commands/whatif.md).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;
use fabricsim_cluster::maintenance::{plan, MaintenancePlan, PlanError};
use fabricsim_cluster::scenario::Scenario;
use fabricsim_cluster::whatif::{read_actions, what_if, Action, WhatIfReport};
use fabricsim_topology::Topology;

use crate::failure::{input, other, CmdResult};
use crate::output::write_output;
use crate::run::sim_failure;

#[derive(Args)]
pub struct WhatIfArgs {
    /// The scenario to take the actions on.
    scenario: PathBuf,
    /// Drain a switch, a NIC or a cable (`A--B`) for the whole iteration; repeatable, one
    /// action each.
    #[arg(long, value_name = "NAME")]
    drain: Vec<String>,
    /// Fail one (the same as a drain for an iteration's cost); repeatable.
    #[arg(long, value_name = "NAME")]
    fail: Vec<String>,
    /// Repair one that the scenario takes down; repeatable.
    #[arg(long, value_name = "NAME")]
    repair: Vec<String>,
    /// Derate one to a capacity in Gbit/s (`NAME=GBPS`); repeatable.
    #[arg(long, value_name = "NAME=GBPS")]
    derate: Vec<String>,
    /// A file of actions, each a name and the elements it takes down, repairs or derates
    /// together (docs/commands/whatif.md).
    #[arg(long, value_name = "FILE")]
    action_file: Option<PathBuf>,
    /// Seeds to run each action and the baseline under (ECMP hash, connection ports, random
    /// placements).
    #[arg(long, default_value_t = 5)]
    seeds: u32,
    /// Price of a GPU-hour, to give each action a cost per day.
    #[arg(long, value_name = "PER_GPU_HOUR")]
    price: Option<f64>,
    /// Plan a maintenance instead: every action must be taken once, `--at-once` at a time, each
    /// batch for `--hours`; order them into the batches that cost the jobs least.
    #[arg(long)]
    plan: bool,
    /// With --plan: how many actions may be out together.
    #[arg(long, default_value_t = 1, requires = "plan")]
    at_once: usize,
    /// With --plan: how long each batch is out, in hours.
    #[arg(long, default_value_t = 1.0, requires = "plan")]
    hours: f64,
    /// Print the report as JSON.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print the report as CSV: a row per action and job (with --plan, a row per batch).
    #[arg(long)]
    csv: bool,
    /// Also write a self-contained HTML report: each action's cost to each job, median and
    /// range over seeds (docs/outputs.md#html-report---report-filehtml).
    #[arg(long, value_name = "FILE", conflicts_with = "plan")]
    report: Option<PathBuf>,
}

pub fn run(args: WhatIfArgs) -> CmdResult {
    let scenario = Scenario::load(&args.scenario).map_err(input)?;
    if args.seeds == 0 || args.seeds > 64 {
        return Err(input(anyhow!("--seeds {}: expected 1 to 64", args.seeds)));
    }
    if let Some(p) = args.price {
        if !(p.is_finite() && p >= 0.0) {
            return Err(input(anyhow!(
                "--price {p}: expected a price of zero or more"
            )));
        }
    }
    let mut actions = Vec::new();
    for (kind, names) in [
        ("drain", &args.drain),
        ("fail", &args.fail),
        ("repair", &args.repair),
    ] {
        actions.extend(names.iter().map(|n| Action::new(kind, n, None)));
    }
    for d in &args.derate {
        let (name, gbps) = d
            .rsplit_once('=')
            .and_then(|(n, g)| g.parse::<f64>().ok().map(|g| (n, g)))
            .ok_or_else(|| input(anyhow!("--derate {d}: expected NAME=GBPS")))?;
        actions.push(Action::new("derate", name, Some(gbps)));
    }
    if let Some(path) = &args.action_file {
        let text =
            std::fs::read_to_string(path).map_err(|e| input(anyhow!("{}: {e}", path.display())))?;
        actions.extend(
            read_actions(&text, &path.display().to_string()).map_err(|e| input(anyhow!(e)))?,
        );
    }
    if actions.is_empty() {
        return Err(input(anyhow!(
            "no action: give --drain, --fail, --repair or --derate NAME, or --action-file"
        )));
    }
    let topo = scenario.fabric.load().map_err(input)?;
    if args.plan {
        return run_plan(&args, &scenario, &topo, &actions);
    }
    let runs = (actions.len() as u64 + 1) * u64::from(args.seeds.max(1));
    let bar = crate::progress::bar(runs, "runs");
    let report =
        what_if(&scenario, &topo, &actions, args.seeds, &|| bar.inc(1)).map_err(sim_failure)?;
    bar.finish_and_clear();
    if let Some(path) = &args.report {
        let params = vec![
            ("scenario".to_string(), args.scenario.display().to_string()),
            (
                "fabric".to_string(),
                format!("{} ({} GPUs)", topo.name(), topo.gpus().len()),
            ),
            ("routing".to_string(), scenario.routing.name()),
            ("seeds".to_string(), args.seeds.to_string()),
        ];
        let title = format!("fabricsim whatif: {}", args.scenario.display());
        let html = fabricsim_report::whatif(&title, &params, &report);
        write_output(Some(path), |w| w.write_all(html.as_bytes())).map_err(other)?;
    }
    let text = if args.json {
        serde_json::to_string_pretty(&report).map_err(other)? + "\n"
    } else if args.csv {
        report_csv(&report, args.price).map_err(other)?
    } else {
        render(&report, &args.scenario.display().to_string(), args.price)
    };
    write_output(None, |w| w.write_all(text.as_bytes())).map_err(other)
}

fn run_plan(
    args: &WhatIfArgs,
    scenario: &Scenario,
    topo: &Topology,
    actions: &[Action],
) -> CmdResult {
    if args.at_once == 0 || args.at_once > actions.len() {
        return Err(input(anyhow!(
            "--at-once {}: expected 1 to the number of actions ({})",
            args.at_once,
            actions.len()
        )));
    }
    if !(args.hours.is_finite() && args.hours > 0.0 && args.hours <= 8760.0) {
        return Err(input(anyhow!(
            "--hours {}: expected more than 0 and at most a year (8760)",
            args.hours
        )));
    }
    let bar = crate::progress::bar(0, "runs");
    let p = plan(
        scenario,
        topo,
        actions,
        args.at_once,
        args.hours,
        args.seeds,
        &|| bar.inc(1),
    )
    .map_err(|e| match e {
        PlanError::Sim(e) => sim_failure(e),
        e @ PlanError::CutsOff { .. } => input(anyhow!(e)),
    })?;
    bar.finish_and_clear();
    let text = if args.json {
        serde_json::to_string_pretty(&p).map_err(other)? + "\n"
    } else if args.csv {
        plan_csv(&p).map_err(other)?
    } else {
        render_plan(&p, &args.scenario.display().to_string(), args)
    };
    write_output(None, |w| w.write_all(text.as_bytes())).map_err(other)
}

fn render_plan(p: &MaintenancePlan, name: &str, args: &WhatIfArgs) -> String {
    let mut out = format!(
        "# fabricsim maintenance plan: {name}, {} at once, {} h a batch, {} seed(s)\n",
        args.at_once, args.hours, args.seeds
    );
    let _ = writeln!(out, "{:<6} {:>14}  elements", "batch", "GPU-h lost/day");
    for (i, b) in p.batches.iter().enumerate() {
        let _ = writeln!(
            out,
            "{:<6} {:>14.1}  {}",
            i + 1,
            b.gpu_hours_lost_per_day,
            b.elements.join(", ")
        );
    }
    let naive = if p.naive_gpu_hours_lost.is_finite() {
        format!("{:.1} GPU-h", p.naive_gpu_hours_lost)
    } else {
        "cuts a job off".to_string()
    };
    let _ = writeln!(
        out,
        "# plan: {:.1} GPU-h lost in all; the order given: {naive}{}",
        p.gpu_hours_lost,
        if p.naive_kept {
            " (kept: cheaper than the search)"
        } else {
            ""
        }
    );
    out
}

/// A row per action and job; an action that cannot be taken has a row with its error, and rows
/// for the jobs that finished under it.
fn report_csv(r: &WhatIfReport, price: Option<f64>) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "action",
        "job",
        "gpus",
        "median_change",
        "min_change",
        "max_change",
        "tokens_per_s_lost",
        "gpu_hours_lost_per_day",
        "cost_per_day",
        "error",
    ])?;
    for a in &r.actions {
        // An action that cannot be taken: a row with its error, then the jobs it left running.
        if let Some(e) = &a.error {
            w.write_record([a.action.as_str(), "", "", "", "", "", "", "", "", e])?;
        }
        for j in &a.jobs {
            let cost = price.map_or(String::new(), |p| {
                (j.gpu_hours_lost_per_day * p).to_string()
            });
            w.write_record([
                a.action.clone(),
                j.job.clone(),
                j.gpus.to_string(),
                j.median_change.to_string(),
                j.min_change.to_string(),
                j.max_change.to_string(),
                j.tokens_per_s_lost.to_string(),
                j.gpu_hours_lost_per_day.to_string(),
                cost,
                String::new(),
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// A row per batch, of the plan and of the order given.
fn plan_csv(p: &MaintenancePlan) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["order", "batch", "elements", "gpu_hours_lost_per_day"])?;
    for (order, batches) in [("plan", &p.batches), ("given", &p.naive)] {
        for (i, b) in batches.iter().enumerate() {
            w.write_record([
                order.to_string(),
                (i + 1).to_string(),
                b.elements.join(" + "),
                b.gpu_hours_lost_per_day.to_string(),
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

fn render(r: &WhatIfReport, name: &str, price: Option<f64>) -> String {
    let mut out = format!(
        "# fabricsim what-if: {name}, {} seed(s) (ECMP hash, connection ports and random placements redrawn per seed)\n",
        r.seeds
    );
    for (job, ms) in &r.baseline {
        let (lo, hi) = ms
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        let _ = writeln!(out, "# baseline {job}: {lo:.3} to {hi:.3} ms per iteration");
    }
    out += "#\n";
    let cost = if price.is_some() { "    cost/day" } else { "" };
    let _ = writeln!(
        out,
        "{:<40} {:<12} {:>10} {:>10} {:>10} {:>14}{cost}",
        "action (cheapest first)", "job", "median", "min", "max", "GPU-h lost/day"
    );
    for a in &r.actions {
        if let Some(e) = &a.error {
            let _ = writeln!(out, "{:<40} cannot be taken: {e}", a.action);
        }
        let busiest: Vec<String> = a
            .tiers
            .iter()
            .take(3)
            .map(|t| format!("{} {:.2} -> {:.2}", t.group, t.before, t.after))
            .collect();
        for (i, j) in a.jobs.iter().enumerate() {
            // Under an action that cannot be taken, the jobs it left running.
            let label = if i == 0 && a.error.is_none() {
                a.action.as_str()
            } else {
                ""
            };
            let money = price.map_or(String::new(), |p| {
                format!(" {:>11.0}", j.gpu_hours_lost_per_day * p)
            });
            let _ = writeln!(
                out,
                "{label:<40} {:<12} {:>+9.1}% {:>+9.1}% {:>+9.1}% {:>14.1}{money}",
                j.job,
                j.median_change * 100.0,
                j.min_change * 100.0,
                j.max_change * 100.0,
                j.gpu_hours_lost_per_day
            );
        }
        if !busiest.is_empty() {
            let _ = writeln!(
                out,
                "{:<40} busiest link groups: {}",
                "",
                busiest.join(", ")
            );
        }
    }
    out + "# change: the iteration's time under the action against the baseline of the same seed\n\
           # link groups: the busiest link's utilization (payload over line rate), median over seeds, before -> after\n"
}
