//! `fabricsim te solve`: centralized TE's placement of a traffic matrix, next to ECMP's and
//! E-ECMP's, as link utilization per tier.

use std::path::PathBuf;

use anyhow::anyhow;
use clap::{Args, Subcommand};
use fabricsim_collectives::bench::{traffic, Bench};
use fabricsim_collectives::placement::{place, Placement};
use fabricsim_collectives::{Algorithm, Collective, Ranks};
use fabricsim_routing::balance::{pairs, Pattern};
use fabricsim_routing::{cables_named, LinkCondition, LinkState, Policy};
use fabricsim_te::report::{hashed_loads, tier_utilization, TierUtilization};
use fabricsim_te::solve::{MwuOptions, SolveOptions};
use fabricsim_te::{Instance, Routing, Solution, Solver, TrafficMatrix};
use fabricsim_topology::Topology;

use crate::bench::{bad, parse_size};
use crate::failure::{input, other, CmdResult, Failure};
use crate::output::write_output;
use crate::route::RoutingArgs;
use crate::topo::FabricArgs;

#[derive(Subcommand)]
pub enum TeCommand {
    /// Place a traffic matrix with TE's solvers and compare link utilization with ECMP's.
    Solve(Box<SolveArgs>),
}

#[derive(Args)]
pub struct SolveArgs {
    #[command(flatten)]
    fabric: FabricArgs,
    #[command(flatten)]
    routing: RoutingArgs,
    /// A demand CSV: src,dst,rate or src,dst,bytes (docs/commands/te.md).
    #[arg(long, conflicts_with_all = ["bench_like", "pattern"])]
    demand: Option<PathBuf>,
    /// Derive the demand from one collective on placed ranks (all-reduce, all-to-all, …), as
    /// `fabricsim bench` would run it.
    #[arg(long, value_name = "COLLECTIVE", conflicts_with = "pattern", value_parser = crate::choices::collectives(), ignore_case = true)]
    bench_like: Option<String>,
    /// Derive the demand from a traffic pattern.
    #[arg(long, value_parser = crate::choices::patterns())]
    pattern: Option<String>,
    /// GPUs of the bench-like collective or the pattern.
    #[arg(long, default_value_t = 128)]
    gpus: usize,
    /// Placement of the bench-like ranks: contiguous, random, fragmented or per-host.
    #[arg(long, default_value = "contiguous")]
    placement: String,
    /// Size of the bench-like collective.
    #[arg(long, default_value = "1G")]
    size: String,
    /// Algorithm of the bench-like collective (NCCL's cost model chooses when absent).
    #[arg(long, value_parser = crate::choices::algorithms(), ignore_case = true)]
    algo: Option<String>,
    /// Channels of the bench-like collective.
    #[arg(long, default_value_t = 16)]
    channels: u32,
    /// TE solvers to run, comma-separated (`highs` needs a build with the `highs` feature).
    #[arg(long, value_delimiter = ',', default_value = "cspf,mwu", value_parser = crate::choices::solvers())]
    solver: Vec<String>,
    /// QPs per connection of the E-ECMP column (Meta: 16 for LLM jobs).
    #[arg(long, default_value_t = 16)]
    qps: u32,
    /// Accuracy ε of the mwu solver.
    #[arg(long, default_value_t = 0.1)]
    epsilon: f64,
    /// Take a switch, a NIC or a cable (`A--B`) down; repeatable.
    #[arg(long = "down", value_name = "NAME")]
    down: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Write the output to this file instead of stdout (whole or not at all).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Also write a self-contained HTML report: each routing's highest utilization and its link
    /// groups (docs/outputs.md#html-report---report-filehtml).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
}

pub fn run(cmd: TeCommand) -> CmdResult {
    match cmd {
        TeCommand::Solve(args) => solve(*args),
    }
}

/// One column of the comparison.
struct Placed {
    routing: String,
    max: f64,
    tiers: Vec<TierUtilization>,
    solution: Option<Solution>,
}

fn solve(args: SolveArgs) -> CmdResult {
    let topo = args.fabric.load()?;
    let mut state = LinkState::new(&topo);
    for name in &args.down {
        for l in cables_named(&topo, name).map_err(|e| input(anyhow!("--down: {e}")))? {
            state.set_cable(l, LinkCondition::Down);
        }
    }
    let solvers: Vec<Solver> = args
        .solver
        .iter()
        .map(|s| Solver::parse_available(s).ok_or_else(|| bad("solver", s, &Solver::expected())))
        .collect::<Result<_, _>>()?;
    if args.qps == 0 || args.qps > fabricsim_routing::MAX_QPS {
        return Err(bad(
            "qps",
            &args.qps.to_string(),
            &format!("1 to {}", fabricsim_routing::MAX_QPS),
        ));
    }
    if !(args.epsilon > 0.0 && args.epsilon <= 0.5) {
        return Err(bad("epsilon", &args.epsilon.to_string(), "in (0, 0.5]"));
    }
    let (tm, source) = demand(&args, &topo)?;
    let inst = Instance::new(&topo, &state, &tm).map_err(|e| input(anyhow!("{e}")))?;
    let hash = args.routing.hash()?;
    let mut placed = Vec::new();
    for (policy, qps) in [(Policy::Ecmp, 1), (Policy::EEcmp, args.qps)] {
        let load = hashed_loads(&inst, &state, policy, hash, qps).map_err(input)?;
        placed.push(Placed {
            routing: if qps > 1 {
                format!("{}/{qps}", policy.name())
            } else {
                policy.name().to_string()
            },
            max: inst.max_utilization(&load),
            tiers: tier_utilization(&inst, &load),
            solution: None,
        });
    }
    let opts = SolveOptions {
        mwu: MwuOptions {
            epsilon: args.epsilon,
            ..MwuOptions::default()
        },
        ..SolveOptions::default()
    };
    let bar = crate::progress::bar(solvers.len() as u64, "solvers");
    for solver in solvers {
        bar.set_message(format!("solving {}", Routing::Te(solver).name()));
        let sol = fabricsim_te::solve(&inst, solver, &opts).map_err(|e| input(anyhow!("{e}")))?;
        bar.inc(1);
        let load = inst.loads(&sol.paths);
        placed.push(Placed {
            routing: Routing::Te(solver).name(),
            max: sol.max_utilization,
            tiers: tier_utilization(&inst, &load),
            solution: Some(sol),
        });
    }
    bar.finish_and_clear();
    if let Some(path) = &args.report {
        let rows: Vec<(String, f64, Vec<TierUtilization>)> = placed
            .iter()
            .map(|p| (p.routing.clone(), p.max, p.tiers.clone()))
            .collect();
        let params = vec![
            (
                "fabric".to_string(),
                format!("{} ({} GPUs)", topo.name(), topo.gpus().len()),
            ),
            ("demand".to_string(), source.clone()),
            ("demands".to_string(), inst.demands.len().to_string()),
        ];
        let html = fabricsim_report::te("fabricsim te solve", &params, &rows);
        write_output(Some(path), |w| w.write_all(html.as_bytes())).map_err(other)?;
    }
    let text = if args.json {
        json(&args, &topo, &inst, &source, &placed).map_err(other)?
    } else {
        text(&args, &topo, &inst, &source, &placed)
    };
    write_output(args.output.as_deref(), |w| w.write_all(text.as_bytes())).map_err(other)
}

/// The traffic matrix and a line saying where it came from.
fn demand(args: &SolveArgs, topo: &Topology) -> Result<(TrafficMatrix, String), Failure> {
    if let Some(path) = &args.demand {
        let text = std::fs::read_to_string(path)
            .map_err(|e| input(anyhow!("--demand {}: {e}", path.display())))?;
        let tm = TrafficMatrix::read_csv(&text, topo)
            .map_err(|e| input(anyhow!("{}: {e}", path.display())))?;
        return Ok((tm, format!("demand file {}", path.display())));
    }
    let all = topo.gpus();
    if args.gpus < 2 || args.gpus > all.len() {
        return Err(bad(
            "gpus",
            &args.gpus.to_string(),
            &format!("2 to {}", all.len()),
        ));
    }
    if let Some(p) = &args.pattern {
        let pattern = Pattern::parse(p).ok_or_else(|| {
            bad(
                "pattern",
                p,
                &format!("one of {}", Pattern::NAMES.join(", ")),
            )
        })?;
        if pattern == Pattern::AllToAll && args.gpus > 2_048 {
            return Err(bad(
                "gpus",
                &args.gpus.to_string(),
                "at most 2048 for all-to-all",
            ));
        }
        let rows = pairs(pattern, &all[..args.gpus], args.routing.seed)
            .into_iter()
            .map(|(s, d)| (s, d, 1));
        return Ok((
            TrafficMatrix::from_bytes(topo, rows),
            format!(
                "{p} over the first {} GPUs, each GPU at most at line rate",
                args.gpus
            ),
        ));
    }
    let Some(name) = &args.bench_like else {
        return Err(input(anyhow!(
            "no demand: give --demand FILE, --bench-like COLLECTIVE or --pattern PATTERN"
        )));
    };
    let op = Collective::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Collective::ALL.iter().map(|c| c.name()).collect();
        bad("bench-like", name, &format!("one of {}", names.join(", ")))
    })?;
    let algorithm = match &args.algo {
        None => None,
        Some(a) => {
            let algo = Algorithm::parse(a)
                .filter(|x| x.supports(op))
                .ok_or_else(|| {
                    bad(
                        "algo",
                        a,
                        &format!("an algorithm that implements {}", op.name()),
                    )
                })?;
            Some(algo)
        }
    };
    if args.channels == 0 || args.channels > 64 {
        return Err(bad("channels", &args.channels.to_string(), "1 to 64"));
    }
    let placement = Placement::parse(&args.placement, args.routing.seed).ok_or_else(|| {
        bad(
            "placement",
            &args.placement,
            "contiguous, random, fragmented or per-host",
        )
    })?;
    let gpus = place(topo, args.gpus, placement).map_err(|e| input(anyhow!("--gpus: {e}")))?;
    let ranks = Ranks::new(topo, gpus).map_err(|e| input(anyhow!("{e}")))?;
    let size = parse_size("size", &args.size)?;
    let mut bench = Bench::new(op);
    bench.algorithm = algorithm;
    bench.channels = args.channels;
    bench.transport.seed = args.routing.seed;
    bench.hash = args.routing.hash()?;
    let rows = traffic(topo, &ranks, &bench, size).map_err(|e| input(anyhow!("{e}")))?;
    Ok((
        TrafficMatrix::from_bytes(topo, rows),
        format!(
            "{} of {} on {} GPUs ({} placement), the busiest GPU at line rate",
            op.name(),
            args.size,
            args.gpus,
            placement.name()
        ),
    ))
}

fn text(
    args: &SolveArgs,
    topo: &Topology,
    inst: &Instance<'_>,
    source: &str,
    placed: &[Placed],
) -> String {
    let mut t = format!(
        "TE on {}: {} demands between GPUs ({:.1} Tbps in all) from {source}\n",
        topo.name(),
        inst.demands.len(),
        inst.demands.iter().map(|d| d.rate).sum::<f64>() * 8e-12,
    );
    if !inst.local.is_empty() {
        t += &format!(
            "  {} demands inside NVLink domains set aside\n",
            inst.local.len()
        );
    }
    for (d, e) in &inst.unroutable {
        t += &format!(
            "  unroutable: {} -> {}: {e}\n",
            topo.node_name(d.src),
            topo.node_name(d.dst)
        );
    }
    for d in &args.down {
        t += &format!("  down: {d}\n");
    }
    t += &format!(
        "\n  {:<10} {:<14} {:>6} {:>7} {:>7} {:>7}\n",
        "routing", "links", "count", "max", "mean", "p99"
    );
    for p in placed {
        for (i, g) in p.tiers.iter().enumerate() {
            t += &format!(
                "  {:<10} {:<14} {:>6} {:>7.3} {:>7.3} {:>7.3}\n",
                if i == 0 { p.routing.as_str() } else { "" },
                g.group,
                g.links,
                g.max,
                g.mean,
                g.p99
            );
        }
    }
    t += &format!(
        "\n  {:<10} {:>9} {:>11} {:>12} {:>7} {:>7}\n",
        "routing", "max util", "fractional", "lower bound", "gap", "phases"
    );
    let opt = |x: Option<f64>, w: usize| x.map_or(format!("{:>w$}", "-"), |v| format!("{v:>w$.3}"));
    for p in placed {
        let s = p.solution.as_ref();
        t += &format!(
            "  {:<10} {:>9.3} {} {} {} {:>7}\n",
            p.routing,
            p.max,
            opt(s.and_then(|s| s.fractional), 11),
            opt(s.and_then(|s| s.lower_bound), 12),
            opt(s.and_then(Solution::gap), 7),
            s.filter(|s| s.solver == Solver::Mwu)
                .map_or("-".to_string(), |s| s.iterations.to_string()),
        );
    }
    t += "\n  utilization = load / capacity, over the links on some equal-cost path of some demand;\n  max util: over the steerable links (switch to switch, or any link with a choice);\n  gap = max util / lower bound (1: no routing, split or not, does better)\n";
    t
}

fn json(
    args: &SolveArgs,
    topo: &Topology,
    inst: &Instance<'_>,
    source: &str,
    placed: &[Placed],
) -> serde_json::Result<String> {
    let routings: Vec<serde_json::Value> = placed
        .iter()
        .map(|p| {
            let s = p.solution.as_ref();
            serde_json::json!({
                "routing": p.routing,
                "max_utilization": p.max,
                "fractional_max_utilization": s.and_then(|s| s.fractional),
                "lower_bound": s.and_then(|s| s.lower_bound),
                "gap_ratio": s.and_then(Solution::gap),
                "phases": s.filter(|s| s.solver == Solver::Mwu).map(|s| s.iterations),
                "tiers": p.tiers,
            })
        })
        .collect();
    let v = serde_json::json!({
        "fabric": topo.name(),
        "demand": source,
        "demands": inst.demands.len(),
        "total_rate_gbps": inst.demands.iter().map(|d| d.rate).sum::<f64>() * 8e-9,
        "local_demands": inst.local.len(),
        "unroutable_demands": inst.unroutable.iter().map(|(d, _)| serde_json::json!({
            "src": topo.node_name(d.src), "dst": topo.node_name(d.dst)})).collect::<Vec<_>>(),
        "down": args.down,
        "qps": args.qps,
        "routings": routings,
    });
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}
