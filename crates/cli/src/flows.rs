//! `fabricsim flows`: simulate a list of flows and report completion times.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use fabricsim_netsim::flows_file::{read_flows_csv, simulate_flows, EngineKind, Progress, QpUse};
use fabricsim_topology::figures::group;

use crate::failure::{input, other, CmdResult};
use crate::output::write_output;
use crate::route::RoutingArgs;
use crate::topo::FabricArgs;

#[derive(Args)]
pub struct FlowsArgs {
    #[command(flatten)]
    fabric: FabricArgs,
    #[command(flatten)]
    routing: RoutingArgs,
    /// The flows: CSV with columns src,dst,bytes,start[,qp] (see docs/formats/flows-csv.md).
    #[arg(long)]
    flows: PathBuf,
    #[arg(long, value_enum, default_value_t = EngineArg::Flow)]
    engine: EngineArg,
    /// QPs per connection: each flow's bytes split over them, or whole flows on successive
    /// QPs (see --qp-mode). Only eecmp hashes the QP. Default: each flow on its `qp` column.
    #[arg(long)]
    qps: Option<u32>,
    /// How a connection's flows use its QPs: split, round-robin or dynamic (each whole flow on
    /// the QP with the fewest bytes outstanding).
    #[arg(long, value_enum, default_value_t = QpModeArg::Split)]
    qp_mode: QpModeArg,
    /// Write per-flow results (CSV) to this file.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Write every link that carried bytes, with its utilization, as CSV (docs/outputs.md).
    #[arg(long, value_name = "FILE")]
    links: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Also write a self-contained HTML report: the completion times' distribution, the links
    /// (docs/outputs.md#html-report---report-filehtml).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum QpModeArg {
    /// Every flow split evenly over the QPs.
    Split,
    /// Whole flows on successive QPs.
    RoundRobin,
    /// Whole flows, each on the QP with the fewest bytes outstanding.
    Dynamic,
}

#[derive(Clone, Copy, ValueEnum)]
enum EngineArg {
    /// Flow-level, max-min fair sharing.
    Flow,
    /// Alpha-beta, no contention.
    Analytical,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

pub fn run(args: FlowsArgs) -> CmdResult {
    let topo = args.fabric.load()?;
    let policy = args.routing.policy()?;
    let path = args.flows.display().to_string();
    let text =
        std::fs::read_to_string(&args.flows).map_err(|e| input(anyhow::anyhow!("{path}: {e}")))?;
    let flows = read_flows_csv(&text, &topo).map_err(|e| input(anyhow::anyhow!("{path}: {e}")))?;
    let engine = match args.engine {
        EngineArg::Flow => EngineKind::Flow,
        EngineArg::Analytical => EngineKind::Analytical,
    };
    let qps = match (args.qps, args.qp_mode) {
        (None, _) => QpUse::AsListed,
        (Some(n), _) if n == 0 || n > fabricsim_routing::MAX_QPS => {
            return Err(input(anyhow::anyhow!(
                "--qps: `{n}` is not a number of QPs (1 to {}, NCCL's limit)",
                fabricsim_routing::MAX_QPS
            )))
        }
        (Some(n), QpModeArg::Split) => QpUse::Split(n),
        (Some(n), QpModeArg::RoundRobin) => QpUse::RoundRobin(n),
        (Some(n), QpModeArg::Dynamic) => QpUse::Dynamic(n),
    };
    let hash = args.routing.hash()?;
    let bar = crate::progress::bar(1, "flows done");
    let mut report = |p: Progress| {
        bar.set_length(p.total);
        bar.set_position(p.done);
        bar.set_message(format!(
            "({} started), at {:.3} ms simulated",
            p.started,
            p.at.0 as f64 * 1e-6
        ));
    };
    let outcome = simulate_flows(&topo, policy, hash, engine, qps, &flows, &mut report);
    bar.finish_and_clear();
    let outcome = outcome.map_err(|e| input(anyhow::anyhow!("{path}: {e}")))?;
    if let Some(path) = &args.links {
        crate::links::write_links(path, &topo, &outcome.links)?;
    }
    if let Some(report) = &args.report {
        let durations: Vec<f64> = flows
            .iter()
            .zip(&outcome.completions)
            .map(|((_, f), end)| (end.0 - f.start.0) as f64 * 1e-6)
            .collect();
        let params = vec![
            ("flows".to_string(), path.clone()),
            (
                "fabric".to_string(),
                format!("{} ({} GPUs)", topo.name(), topo.gpus().len()),
            ),
            ("routing".to_string(), policy.name().to_string()),
            (
                "makespan".to_string(),
                format!("{:.3} ms", outcome.makespan.0 as f64 * 1e-6),
            ),
        ];
        let title = format!("fabricsim flows: {path}");
        let html = fabricsim_report::flows(&title, &params, &topo, &durations, &outcome.links);
        write_output(Some(report), |w| w.write_all(html.as_bytes())).map_err(other)?;
    }

    if let Some(out) = &args.output {
        write_output(Some(out), |w| {
            writeln!(w, "src,dst,bytes,start_ns,end_ns,duration_ns,rate_gbps")?;
            for ((_, f), end) in flows.iter().zip(&outcome.completions) {
                let dur = end.0 - f.start.0;
                let gbps = if dur > 0 {
                    f.bytes as f64 * 8.0 / dur as f64
                } else {
                    0.0
                };
                writeln!(
                    w,
                    "{},{},{},{},{},{dur},{gbps:.3}",
                    topo.node_name(f.src),
                    topo.node_name(f.dst),
                    f.bytes,
                    f.start.0,
                    end.0
                )?;
            }
            Ok(())
        })
        .map_err(other)?;
    }

    let mut util: Vec<f64> = outcome.utilization.iter().map(|&(_, u)| u).collect();
    util.sort_by(f64::total_cmp);
    let busiest = outcome
        .utilization
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
    let total_bytes: u64 = flows.iter().map(|(_, f)| f.bytes).sum();
    let engine_name = match engine {
        EngineKind::Flow => "flow",
        EngineKind::Analytical => "analytical",
    };
    let summary = if args.json {
        let v = serde_json::json!({
            "fabric": topo.name(), "routing": policy.name(), "engine": engine_name, "flows": flows.len(),
            "bytes": total_bytes, "makespan_ns": outcome.makespan.0,
            "link_utilization": {
                "links": util.len(), "mean": util.iter().sum::<f64>() / util.len().max(1) as f64,
                "p50": percentile(&util, 0.5), "p90": percentile(&util, 0.9), "p99": percentile(&util, 0.99),
                "max": util.last().copied().unwrap_or(0.0),
                "busiest_link": busiest.map(|&(l, _)| format!("{} -> {}", topo.node_name(topo.link(l).src), topo.node_name(topo.link(l).dst))),
            },
        });
        serde_json::to_string_pretty(&v).map_err(other)? + "\n"
    } else {
        let mut s = format!(
            "{} flows, {} bytes on {} under {}, {} engine\n  makespan            {}\n",
            group(flows.len() as u64),
            group(total_bytes),
            topo.name(),
            policy.name(),
            engine_name,
            outcome.makespan
        );
        s += &format!(
            "  link utilization    mean {:.3}, p50 {:.3}, p90 {:.3}, p99 {:.3}, max {:.3} over {} network links\n",
            util.iter().sum::<f64>() / util.len().max(1) as f64,
            percentile(&util, 0.5),
            percentile(&util, 0.9),
            percentile(&util, 0.99),
            util.last().copied().unwrap_or(0.0),
            group(util.len() as u64)
        );
        if let Some(&(l, u)) = busiest {
            s += &format!(
                "  busiest link        {} -> {} ({u:.3})\n",
                topo.node_name(topo.link(l).src),
                topo.node_name(topo.link(l).dst)
            );
        }
        s
    };
    write_output(None, |w| w.write_all(summary.as_bytes())).map_err(other)
}
