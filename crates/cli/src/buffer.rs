//! `fabricsim buffer SCENARIO --fail KIND`: each job's slowdown against the number of failed
//! elements of a kind, per routing policy, and the failures each job tolerates
//! (docs/commands/buffer.md).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;
use fabricsim_cluster::buffer::{
    buffer_runs, capacity_buffer, BufferError, BufferReport, BufferSpec,
};
use fabricsim_cluster::overrides::Override;
use fabricsim_cluster::scenario::Scenario;
use fabricsim_te::Routing;

use crate::failure::{input, other, CmdResult};
use crate::output::write_output;
use crate::run::{overrides, sim_failure};

#[derive(Args)]
pub struct BufferArgs {
    /// The scenario whose jobs run while elements fail.
    scenario: PathBuf,
    /// The kind of element that fails: a tier's switches (`ctsw`) or the cables between two
    /// tiers (`rtsw-ctsw`, `nic-rtsw`).
    #[arg(long, value_name = "KIND")]
    fail: String,
    /// The most elements failed at once (the curve runs from 0 to it).
    #[arg(long, default_value_t = 4)]
    max: usize,
    /// Random sets of failed elements per point.
    #[arg(long, default_value_t = 4)]
    draws: u32,
    /// Seeds each set runs under (ECMP hash, connection ports, random placements).
    #[arg(long, default_value_t = 3)]
    seeds: u32,
    /// Routing policies to compare, comma-separated (the scenario's own when not given).
    #[arg(long, value_delimiter = ',')]
    routing: Vec<String>,
    /// The median slowdown a job tolerates, in percent.
    #[arg(long, default_value = "5%")]
    slowdown: String,
    /// Set a scenario key, as `run --set` does (a fabric variant: `fabric.set=[...]`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// A variant to compare: the scenario with this key set too (`fabric.set=["uplinks=2x"]`,
    /// `routing.policy=spray`); repeatable, one report each, side by side.
    #[arg(long, value_name = "KEY=VALUE")]
    variant: Vec<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: BufferArgs) -> CmdResult {
    let sets = overrides(&args.set)?;
    let slowdown = args
        .slowdown
        .trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p >= 0.0 && *p <= 1e6)
        .ok_or_else(|| {
            input(anyhow!(
                "--slowdown {}: expected a percentage such as 5%",
                args.slowdown
            ))
        })?
        / 100.0;
    for (flag, value, most) in [
        ("--max", args.max, 64),
        ("--draws", args.draws as usize, 64),
    ] {
        if value == 0 || value > most {
            return Err(input(anyhow!("{flag} {value}: expected 1 to {most}")));
        }
    }
    if args.seeds == 0 || args.seeds > 64 {
        return Err(input(anyhow!("--seeds {}: expected 1 to 64", args.seeds)));
    }
    let routings: Vec<Routing> = args
        .routing
        .iter()
        .map(|r| {
            Routing::parse(r)
                .ok_or_else(|| input(anyhow!("--routing {r}: expected {}", Routing::expected())))
        })
        .collect::<Result<_, _>>()?;
    let spec = BufferSpec {
        kind: args.fail.clone(),
        max: args.max,
        draws: args.draws,
        seeds: args.seeds,
        slowdown,
    };
    // No --variant: the scenario as it is (with --set); else one report per variant.
    let variants: Vec<Option<&String>> = if args.variant.is_empty() {
        vec![None]
    } else {
        args.variant.iter().map(Some).collect()
    };
    let mut reports = Vec::with_capacity(variants.len());
    for variant in variants {
        let mut sets = sets.clone();
        if let Some(v) = variant {
            sets.push(Override::parse(v).map_err(|e| input(anyhow!("--variant: {e}")))?);
        }
        let scenario = Scenario::load_with(&args.scenario, &sets).map_err(input)?;
        let topo = scenario.fabric.load().map_err(input)?;
        let routings = if routings.is_empty() {
            vec![scenario.routing]
        } else {
            routings.clone()
        };
        let failure = |e| match e {
            BufferError::Sim(e) => sim_failure(e),
            e @ BufferError::Kind(_) => input(anyhow!(e)),
        };
        let runs = buffer_runs(&topo, routings.len(), &spec).map_err(failure)?;
        let bar = crate::progress::bar(runs, "runs");
        let report =
            capacity_buffer(&scenario, &topo, &routings, &spec, &|| bar.inc(1)).map_err(failure)?;
        bar.finish_and_clear();
        reports.push((variant.cloned(), report));
    }
    let name = args.scenario.display().to_string();
    let text = if args.json && args.variant.is_empty() {
        serde_json::to_string_pretty(&reports[0].1).map_err(other)? + "\n"
    } else if args.json {
        let all: Vec<serde_json::Value> = reports
            .iter()
            .map(|(v, r)| serde_json::json!({ "variant": v, "report": r }))
            .collect();
        serde_json::to_string_pretty(&all).map_err(other)? + "\n"
    } else {
        reports
            .iter()
            .map(|(v, r)| match v {
                Some(v) => format!("# variant {v}\n{}", render(r, &name)),
                None => render(r, &name),
            })
            .collect::<Vec<_>>()
            .join("#\n")
    };
    write_output(None, |w| w.write_all(text.as_bytes())).map_err(other)
}

fn percent(x: f64) -> String {
    if x.is_finite() {
        format!("{:+.1}%", x * 100.0)
    } else {
        "cut off".to_string()
    }
}

fn render(r: &BufferReport, name: &str) -> String {
    let mut out = format!(
        "# fabricsim capacity buffer: {name}, failed {} ({} in the fabric), {} draw(s) × {} seed(s) a point, the same draws for every routing\n",
        r.kind, r.candidates, r.draws, r.seeds
    );
    for c in &r.curves {
        let base: Vec<String> = c
            .baseline_ms
            .iter()
            .map(|(j, ms)| format!("{j} {ms:.3} ms"))
            .collect();
        let _ = writeln!(
            out,
            "#\n# routing {}: baseline {}",
            c.routing,
            base.join(", ")
        );
        let _ = write!(out, "{:<7}", "failed");
        for (j, _) in &c.baseline_ms {
            let _ = write!(out, " {:>26}", format!("{j} median (max)"));
        }
        out += "\n";
        for p in &c.points {
            let _ = write!(out, "{:<7}", p.failed);
            for j in &p.jobs {
                let cut = if j.cut_off > 0 {
                    format!(", {} cut off", j.cut_off)
                } else {
                    String::new()
                };
                let cell = format!(
                    "{} ({}{cut})",
                    percent(j.median_change),
                    percent(j.max_change)
                );
                let _ = write!(out, " {cell:>26}");
            }
            out += "\n";
        }
        let tol: Vec<String> = c
            .tolerates
            .iter()
            .map(|(j, k)| format!("{j} {k}"))
            .collect();
        let _ = writeln!(
            out,
            "# tolerates (median slowdown at most {:.1}%): {}",
            r.slowdown * 100.0,
            tol.join(", ")
        );
    }
    out
}
