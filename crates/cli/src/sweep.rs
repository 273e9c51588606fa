//! `fabricsim sweep PLAN.toml`: a scenario over the cartesian product of some of its keys
//! (docs/commands/sweep.md).

use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;
use fabricsim_cluster::sweep::{cell, Plan, SweepRow};

use crate::failure::{input, other, CmdResult};
use crate::output::write_output;

#[derive(Args)]
pub struct SweepArgs {
    /// The plan (TOML: scenario, seeds, metrics, [vary]).
    plan: PathBuf,
    /// Print JSON records instead of CSV.
    #[arg(long)]
    json: bool,
    /// Write the table to this file instead of stdout (whole or not at all).
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Also write a self-contained HTML report: each metric against the points, a line per
    /// job (docs/outputs.md#html-report---report-filehtml).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Run only shard K of N (`K/N`, K from 0): the runs whose index in the plan's order is K
    /// modulo N. The N shards' rows together are the whole table (docs/python.md#ray).
    #[arg(long, value_name = "K/N")]
    shard: Option<String>,
}

pub fn run(args: SweepArgs) -> CmdResult {
    let plan = Plan::read(&args.plan).map_err(|e| input(anyhow!(e)))?;
    let shard = match &args.shard {
        None => (0, 1),
        Some(text) => parse_shard(text).ok_or_else(|| {
            crate::bench::bad("shard", text, "K/N with N at least 1 and K below N, as 0/4")
        })?,
    };
    let runs = plan.run_count().div_ceil(shard.1) as u64;
    let bar = crate::progress::bar(runs, "runs");
    let rows = if shard == (0, 1) {
        plan.run(&|| bar.inc(1))
    } else {
        plan.run_shard(shard, &|| bar.inc(1))
    }
    .map_err(|e| input(anyhow!(e)))?;
    bar.finish_and_clear();
    if let Some(path) = &args.report {
        let mut params = vec![
            ("plan".to_string(), args.plan.display().to_string()),
            ("seeds".to_string(), plan.seeds.to_string()),
        ];
        for (k, values) in &plan.vary {
            let v: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            params.push((format!("vary {k}"), v.join(", ")));
        }
        let title = format!("fabricsim sweep: {}", args.plan.display());
        let html = fabricsim_report::sweep(&title, &params, &plan, &rows);
        write_output(Some(path), |w| w.write_all(html.as_bytes())).map_err(other)?;
    }
    let text = if args.json {
        json(&plan, &rows)
    } else {
        csv(&plan, &rows).map_err(other)?
    };
    write_output(args.output.as_deref(), |w| w.write_all(text.as_bytes())).map_err(other)
}

/// `K/N` with `K < N`.
fn parse_shard(text: &str) -> Option<(usize, usize)> {
    let (k, n) = text.split_once('/')?;
    let (k, n) = (k.trim().parse().ok()?, n.trim().parse().ok()?);
    (k < n).then_some((k, n))
}

/// The columns a design search adds (`pareto` empty for a shard: the front needs every point).
const DESIGN_COLUMNS: [&str; 6] = [
    "switches",
    "switch_ports",
    "switch_cables",
    "nic_cables",
    "cost",
    "pareto",
];

fn design_cells(r: &SweepRow) -> [serde_json::Value; 6] {
    let inv = r.inventory.unwrap_or_default();
    [
        inv.switches.into(),
        inv.switch_ports.into(),
        inv.switch_cables.into(),
        inv.nic_cables.into(),
        r.cost.map_or(serde_json::Value::Null, Into::into),
        r.pareto.map_or(serde_json::Value::Null, Into::into),
    ]
}

fn csv(plan: &Plan, rows: &[SweepRow]) -> anyhow::Result<String> {
    let mut out = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = plan.vary.iter().map(|(k, _)| k.clone()).collect();
    header.extend(["seed".to_string(), "job".to_string()]);
    header.extend(plan.metrics.iter().cloned());
    header.push("error".into());
    if plan.design.is_some() {
        header.extend(DESIGN_COLUMNS.map(String::from));
    }
    out.write_record(&header)?;
    for r in rows {
        let mut rec: Vec<String> = r.point.iter().map(cell).collect();
        rec.extend([r.seed.to_string(), r.job.clone()]);
        rec.extend(
            r.metrics
                .iter()
                .map(|m| m.map_or(String::new(), |x| x.to_string())),
        );
        rec.push(r.error.clone().unwrap_or_default());
        if plan.design.is_some() {
            rec.extend(design_cells(r).map(|v| match v {
                serde_json::Value::Null => String::new(),
                v => v.to_string(),
            }));
        }
        out.write_record(&rec)?;
    }
    Ok(String::from_utf8(out.into_inner()?)?)
}

fn json(plan: &Plan, rows: &[SweepRow]) -> String {
    let records: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let mut o = serde_json::Map::new();
            for ((k, _), v) in plan.vary.iter().zip(&r.point) {
                let v = serde_json::to_value(v).unwrap_or(serde_json::Value::Null);
                o.insert(k.clone(), v);
            }
            o.insert("seed".into(), r.seed.into());
            o.insert("job".into(), r.job.clone().into());
            for (m, x) in plan.metrics.iter().zip(&r.metrics) {
                o.insert(m.clone(), x.map_or(serde_json::Value::Null, Into::into));
            }
            o.insert(
                "error".into(),
                r.error.clone().map_or(serde_json::Value::Null, Into::into),
            );
            if plan.design.is_some() {
                for (k, v) in DESIGN_COLUMNS.iter().zip(design_cells(r)) {
                    o.insert(k.to_string(), v);
                }
            }
            serde_json::Value::Object(o)
        })
        .collect();
    serde_json::to_string_pretty(&records).expect("records serialize") + "\n"
}
