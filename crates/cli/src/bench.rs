//! `fabricsim bench`: an nccl-tests-style size sweep of one collective on placed ranks.

use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;
use fabricsim_collectives::bench::{
    data_type, run_size_with_progress, sweep_sizes, Bench, Busiest, Row, DATA_TYPES,
};
use fabricsim_collectives::exec::Progress;
use fabricsim_collectives::placement::{place, Placement};
use fabricsim_collectives::{
    Algorithm, Collective, Fidelity, Generation, Protocol, QpMode, Ranks, Transport, DEFAULT_CHUNK,
};
use fabricsim_routing::PathSelection;
use fabricsim_routing::{cables_named, MAX_QPS};
use fabricsim_topology::{Bytes, Topology};

use crate::failure::{input, other, CmdResult, Failure};
use crate::output::write_output;
use crate::route::RoutingArgs;
use crate::topo::FabricArgs;
use crate::variant::{self, Variant};

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    fabric: FabricArgs,
    #[command(flatten)]
    routing: RoutingArgs,
    /// Ranks (GPUs) in the collective.
    #[arg(long, default_value_t = 16)]
    gpus: usize,
    /// The collective (nccl-tests' spelling, `all_reduce`, is taken too).
    #[arg(long, default_value = "all-reduce", value_parser = crate::choices::collectives(), ignore_case = true)]
    collective: String,
    /// The algorithm; chosen by NCCL's cost model when absent.
    #[arg(long, value_parser = crate::choices::algorithms(), ignore_case = true)]
    algo: Option<String>,
    /// The protocol; chosen by NCCL's cost model when absent.
    #[arg(long, value_parser = crate::choices::protocols(), ignore_case = true)]
    proto: Option<String>,
    /// The GPUs' generation: their NVLink, NVLS and protocol figures.
    /// The fabric's NVLink line rate is the preset's `nvlink_bandwidth`.
    #[arg(long, default_value = "H100", value_parser = crate::choices::generations(), ignore_case = true)]
    gpu: String,
    /// Channels (rings, trees) the collective is split over.
    #[arg(long, default_value_t = 16)]
    channels: u32,
    /// QPs per connection (Meta runs 16 for LLM jobs under eecmp).
    #[arg(long, default_value_t = 1)]
    qps: u32,
    /// How a connection's messages use its QPs: split evenly, or whole messages round-robin.
    #[arg(long, default_value = "split", value_parser = crate::choices::qp_modes(), ignore_case = true)]
    qp_mode: String,
    /// How hosts put messages on paths: hashed (the switches' hash decides), disjoint[:PATHS]
    /// (the path with the fewest outstanding bytes among disjoint ones, as HPN) or
    /// flowlet[:GAP] (re-hashed after an idle gap). See docs/routing.md.
    #[arg(long, default_value = "hashed", value_name = "MODE")]
    path_selection: String,
    /// Chunk of pipelined trees, chains and NVLS, e.g. 512KiB.
    #[arg(long)]
    chunk: Option<String>,
    /// step: every algorithm step a flow; pipelined: one variable per channel.
    #[arg(long, default_value = "pipelined", value_parser = crate::choices::fidelities(), ignore_case = true)]
    fidelity: String,
    /// Smallest size (`1M` = 1 MiB, as nccl-tests; or `16MiB`, `1GB`).
    #[arg(short = 'b', long = "minbytes", default_value = "1M")]
    min_bytes: String,
    /// Largest size.
    #[arg(short = 'e', long = "maxbytes", default_value = "1G")]
    max_bytes: String,
    /// Size multiplication factor between steps.
    #[arg(short = 'f', long = "stepfactor", default_value_t = 4)]
    step_factor: u64,
    /// contiguous, random, fragmented or per-host (random choices follow --seed).
    #[arg(long, default_value = "contiguous")]
    placement: String,
    /// Take a switch, a NIC or a cable (`A--B`) down for the run; repeatable.
    #[arg(long = "down", value_name = "NAME")]
    down: Vec<String>,
    /// Run the sweep under each of these routing policies and print them side by side; each
    /// may name a host-side path selection too (`ecmp,ecmp+disjoint,eecmp+flowlet:500us`).
    #[arg(long, value_name = "POLICIES", value_delimiter = ',')]
    compare_routing: Vec<String>,
    /// Print JSON.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV.
    #[arg(long)]
    csv: bool,
    /// Add fabricsim's columns after nccl-tests' ones: what ran (algorithm/protocol), the
    /// busiest link group and its utilization.
    #[arg(long)]
    wide: bool,
    /// Reduction operation, as nccl-tests' `-o` (all move the same bytes; it is printed in the
    /// redop column).
    #[arg(short = 'o', long = "op", default_value = "sum", value_parser = crate::choices::redops(), ignore_case = true)]
    op: String,
    /// Data type, as nccl-tests' `-d`. It sets the count column and how sizes round.
    #[arg(short = 'd', long = "datatype", default_value = "float", value_parser = crate::choices::data_types(), ignore_case = true)]
    datatype: String,
    /// Iterations, as nccl-tests' `-n`: accepted for its command lines, and of no effect (a
    /// simulation gives the same time every iteration).
    #[arg(short = 'n', long = "iters", value_name = "N")]
    iters: Option<u64>,
    /// Warm-up iterations (`-w`): accepted, of no effect.
    #[arg(short = 'w', long = "warmup_iters", value_name = "N")]
    warmup_iters: Option<u64>,
    /// nccl-tests' GPUs per thread (`-g`): refused; say how many GPUs with --gpus.
    #[arg(short = 'g', long = "ngpus", value_name = "N", hide = true)]
    ngpus: Option<String>,
    /// nccl-tests' threads per process (`-t`): refused; say how many GPUs with --gpus.
    #[arg(short = 't', long = "nthreads", value_name = "N", hide = true)]
    nthreads: Option<String>,
    /// Write the output to this file instead of stdout (whole or not at all).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Write every link that carried bytes, per routing and size, as CSV (docs/outputs.md).
    #[arg(long, value_name = "FILE")]
    links: Option<PathBuf>,
    /// Write a self-contained HTML report with plots: bandwidth against size per routing, the
    /// links at the largest size (docs/outputs.md#html-report).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Solve every link, even where the collective is laid alike on every server and one link
    /// per class gives the same result (docs/commands/bench.md#server-classes).
    #[arg(long)]
    full_detail: bool,
}

pub(crate) fn bad(flag: &str, value: &str, expected: &str) -> Failure {
    input(anyhow!("--{flag}: `{value}` is not {expected}"))
}

/// nccl-tests sizes: a number with an optional binary suffix K, M, G or T; or any size unit.
pub(crate) fn parse_size(flag: &str, s: &str) -> Result<u64, Failure> {
    let t = s.trim();
    let (num, shift) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 30),
        Some('T' | 't') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    if let Ok(v) = num.parse::<u64>() {
        return v
            .checked_mul(1 << shift)
            .ok_or_else(|| bad(flag, s, "a size that fits in 64 bits"));
    }
    s.parse::<Bytes>()
        .map(|b| b.0)
        .map_err(|e| input(anyhow!("--{flag}: {e}")))
}

fn names<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> String {
    all.iter().map(|&x| name(x)).collect::<Vec<_>>().join(", ")
}

struct Setup {
    topo: Topology,
    ranks: Ranks,
    bench: Bench,
    sizes: Vec<u64>,
    placement: Placement,
    policies: Vec<Variant>,
}

fn setup(args: &BenchArgs) -> Result<Setup, Failure> {
    let topo = args.fabric.load()?;
    let op = Collective::parse(&args.collective).ok_or_else(|| {
        bad(
            "collective",
            &args.collective,
            &format!("one of {}", names(&Collective::ALL, Collective::name)),
        )
    })?;
    let algorithm = match &args.algo {
        None => None,
        Some(a) => Some(Algorithm::parse(a).ok_or_else(|| {
            bad(
                "algo",
                a,
                &format!("one of {}", names(&Algorithm::ALL, Algorithm::name)),
            )
        })?),
    };
    if let Some(a) = algorithm {
        if !a.supports(op) {
            return Err(input(anyhow!(
                "--algo: `{}` does not implement {}",
                a.name(),
                op.name()
            )));
        }
    }
    let protocol = match &args.proto {
        None => None,
        Some(p) => {
            Some(Protocol::parse(p).ok_or_else(|| bad("proto", p, "one of LL, LL128, Simple"))?)
        }
    };
    let gpu = Generation::parse(&args.gpu)
        .ok_or_else(|| bad("gpu", &args.gpu, "one of A100, H100, H200, B200"))?;
    let fidelity = Fidelity::parse(&args.fidelity)
        .ok_or_else(|| bad("fidelity", &args.fidelity, "step or pipelined"))?;
    let qp_mode = QpMode::parse(&args.qp_mode)
        .ok_or_else(|| bad("qp-mode", &args.qp_mode, "split or round-robin"))?;
    if args.channels == 0 || args.channels > 64 {
        return Err(bad(
            "channels",
            &args.channels.to_string(),
            "1 to 64 (NCCL's limit)",
        ));
    }
    if args.qps == 0 || args.qps > MAX_QPS {
        return Err(bad(
            "qps",
            &args.qps.to_string(),
            &format!("1 to {MAX_QPS} (NCCL's limit)"),
        ));
    }
    let chunk = match &args.chunk {
        None => DEFAULT_CHUNK,
        Some(c) => match parse_size("chunk", c)? {
            0 => return Err(bad("chunk", c, "a positive size")),
            v => v,
        },
    };
    let (b, e) = (
        parse_size("minbytes", &args.min_bytes)?,
        parse_size("maxbytes", &args.max_bytes)?,
    );
    if b > e {
        return Err(input(anyhow!(
            "--minbytes ({b}) is larger than --maxbytes ({e})"
        )));
    }
    if args.step_factor == 0 {
        return Err(bad("stepfactor", "0", "at least 1"));
    }
    let placement = Placement::parse(&args.placement, args.routing.seed).ok_or_else(|| {
        bad(
            "placement",
            &args.placement,
            &format!("one of {}", Placement::NAMES.join(", ")),
        )
    })?;
    let gpus = place(&topo, args.gpus, placement).map_err(|e| input(anyhow!("--gpus: {e}")))?;
    let ranks = Ranks::new(&topo, gpus).map_err(|e| input(anyhow!("{e}")))?;
    let mut down = Vec::new();
    for name in &args.down {
        down.extend(cables_named(&topo, name).map_err(|e| input(anyhow!("--down: {e}")))?);
    }
    for (flag, given) in [
        ("-g/--ngpus", &args.ngpus),
        ("-t/--nthreads", &args.nthreads),
    ] {
        if given.is_some() {
            return Err(input(anyhow!(
                "{flag}: nccl-tests' GPUs per thread and threads per process have no meaning in a \
                 simulation; give the number of GPUs with --gpus N"
            )));
        }
    }
    let _ = (args.iters, args.warmup_iters); // a simulated iteration is the same every time
    let dtype = data_type(&args.datatype).ok_or_else(|| {
        bad(
            "datatype",
            &args.datatype,
            &format!(
                "one of {}",
                DATA_TYPES
                    .iter()
                    .map(|d| d.0)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let selection = variant::selection(&args.path_selection)?;
    let policies = variant::variants(&args.compare_routing, || args.routing.routing(), selection)?;
    let bench = Bench {
        op,
        algorithm,
        protocol,
        channels: args.channels,
        chunk,
        fidelity,
        transport: Transport {
            protocol: protocol.unwrap_or(Protocol::Simple),
            qps: args.qps,
            qp_mode,
            seed: args.routing.seed,
            gpu,
        },
        routing: policies[0].routing,
        hash: args.routing.hash()?,
        down,
        path_selection: policies[0].selection,
        dtype,
        full_detail: args.full_detail,
        keep_links: args.links.is_some() || args.report.is_some(),
        // nccl-tests' own table has no column for them.
        link_figures: args.wide
            || args.json
            || args.csv
            || args.report.is_some()
            || policies.len() > 1,
    };
    Ok(Setup {
        topo,
        ranks,
        bench,
        // A barrier moves no data: one line.
        sizes: if op == Collective::Barrier {
            vec![0]
        } else {
            sweep_sizes(b, e, args.step_factor)
        },
        placement,
        policies,
    })
}

pub fn run(args: BenchArgs) -> CmdResult {
    let s = setup(&args)?;
    // clap took only nccl-tests' operations (crate::choices::redops), in any case.
    let redop = args.op.to_ascii_lowercase();
    let mut results: Vec<(Variant, Vec<Row>)> = Vec::new();
    // One bar for the whole sweep: each size's transfers done, and which run of the sweep.
    let bar = crate::progress::bar(1, "transfers");
    let runs = s.policies.len() * s.sizes.len();
    for (v, &variant) in s.policies.iter().enumerate() {
        let bench = Bench {
            routing: variant.routing,
            path_selection: variant.selection,
            ..s.bench.clone()
        };
        let mut rows = Vec::new();
        for (k, &size) in s.sizes.iter().enumerate() {
            let run = v * s.sizes.len() + k + 1;
            let mut report = |p: Progress| {
                bar.set_length(p.total as u64);
                bar.set_position(p.done as u64);
                bar.set_message(format!(
                    "of {} (run {run} of {runs}), at {:.3} ms simulated",
                    Bytes(size),
                    p.at.0 as f64 * 1e-6
                ));
            };
            let row = run_size_with_progress(&s.topo, &s.ranks, &bench, size, &mut report);
            rows.push(row.map_err(|e| {
                // Name what was taken down: it is what cut the ranks off.
                if args.down.is_empty() {
                    input(anyhow!("{e}"))
                } else {
                    input(anyhow!("{e} (down: {})", args.down.join(", ")))
                }
            })?);
        }
        results.push((variant, rows));
    }
    bar.finish_and_clear();
    if let Some(path) = &args.report {
        let runs: Vec<(String, Vec<Row>)> = results
            .iter()
            .map(|(v, rows)| (v.name(), rows.clone()))
            .collect();
        let mut params = vec![
            ("fabric".to_string(), s.topo.name().to_string()),
            ("collective".to_string(), s.bench.op.name().to_string()),
            (
                "GPUs".to_string(),
                format!("{} ({} hosts)", s.ranks.len(), s.ranks.hosts().len()),
            ),
            ("GPU".to_string(), s.bench.transport.gpu.name().to_string()),
            ("placement".to_string(), s.placement.name().to_string()),
            ("channels".to_string(), s.bench.channels.to_string()),
            (
                "QPs".to_string(),
                format!(
                    "{} ({})",
                    s.bench.transport.qps,
                    s.bench.transport.qp_mode.name()
                ),
            ),
            ("fidelity".to_string(), s.bench.fidelity.name().to_string()),
        ];
        params.extend(args.down.iter().map(|d| ("down".to_string(), d.clone())));
        let title = format!(
            "fabricsim bench: {} on {} GPUs of {}",
            s.bench.op.name(),
            s.ranks.len(),
            s.topo.name()
        );
        let html = fabricsim_report::bench(&title, &params, &s.topo, &runs);
        write_output(Some(path), |o| o.write_all(html.as_bytes())).map_err(other)?;
    }
    if let Some(path) = &args.links {
        let runs: Vec<(Vec<String>, &[fabricsim_netsim::LinkUse])> = results
            .iter()
            .flat_map(|(variant, rows)| {
                rows.iter()
                    .map(move |r| (vec![variant.name(), r.size.to_string()], &r.links[..]))
            })
            .collect();
        crate::links::write_runs(path, &s.topo, &["routing", "size"], &runs)?;
    }
    let text = if args.json {
        json(&args, &s, &results).map_err(other)?
    } else if args.csv {
        csv(&results)
    } else if results.len() > 1 {
        header(&args, &s) + &side_by_side(&results)
    } else {
        let tuned = Tuned {
            algorithm: args.algo.is_none(),
            protocol: args.proto.is_none(),
        };
        header(&args, &s) + &table(&results[0].1, &redop, tuned, args.wide)
    };
    write_output(args.output.as_deref(), |w| w.write_all(text.as_bytes())).map_err(other)
}

fn header(args: &BenchArgs, s: &Setup) -> String {
    let routing = if s.policies.len() > 1 {
        "compared".to_string()
    } else {
        s.policies[0].routing.name()
    };
    let mut h = format!(
        "# fabricsim bench: {} on {} {} GPUs ({} hosts, {} placement) of {}\n# routing {routing}, {} QP(s) per connection ({}), {} channels, {} fidelity, flow engine\n",
        s.bench.op.name(),
        s.ranks.len(),
        s.bench.transport.gpu.name(),
        s.ranks.hosts().len(),
        s.placement.name(),
        s.topo.name(),
        s.bench.transport.qps,
        s.bench.transport.qp_mode.name(),
        s.bench.channels,
        s.bench.fidelity.name(),
    );
    if s.policies.len() == 1 && s.bench.path_selection != PathSelection::Hashed {
        h += &format!("# path selection {}\n", s.bench.path_selection.name());
    }
    for d in &args.down {
        h += &format!("# down: {d}\n");
    }
    h + "#\n"
}

/// Which of a row's choices NCCL's cost model made (the others were forced by flags).
#[derive(Clone, Copy)]
struct Tuned {
    algorithm: bool,
    protocol: bool,
}

impl Tuned {
    /// `ALGO/PROTO`, a `*` on what the cost model chose.
    fn label(self, r: &Row) -> String {
        let star = |tuned: bool| if tuned { "*" } else { "" };
        format!(
            "{}{}/{}{}",
            r.algorithm,
            star(self.algorithm),
            r.protocol,
            star(self.protocol)
        )
    }

    fn any(self) -> bool {
        self.algorithm || self.protocol
    }
}

/// nccl-tests' table, field for field, so its log parsers read it: size, count, type, redop,
/// root, then out-of-place and in-place time, algbw, busbw and `#wrong` (fabricsim moves the
/// same bytes in place, and checks no data: `N/A`, as nccl-tests prints without `-c`). `wide`
/// adds fabricsim's own columns after them: what ran, the busiest link group and its
/// utilization. Without it, what ran is said in a comment under the table, one span of sizes
/// per algorithm and protocol.
fn table(rows: &[Row], redop: &str, tuned: Tuned, wide: bool) -> String {
    let mut out = format!(
        "#{:>12} {:>13} {:>6} {:>6} {:>5}  {:>40}  {:>40}\n",
        "", "", "", "", "", "out-of-place", "in-place"
    );
    out += &format!(
        "#{:>12} {:>13} {:>6} {:>6} {:>5}  {:>11} {:>8} {:>8} {:>6}  {:>11} {:>8} {:>8} {:>6}",
        "size",
        "count",
        "type",
        "redop",
        "root",
        "time",
        "algbw",
        "busbw",
        "#wrong",
        "time",
        "algbw",
        "busbw",
        "#wrong"
    );
    if wide {
        out += &format!(
            "  {:<20} {:<12} {:>8} {:>9}",
            "algorithm", "busiest tier", "max util", "mean util"
        );
    }
    out += &format!(
        "\n#{:>12} {:>13} {:>6} {:>6} {:>5}  {:>11} {:>8} {:>8} {:>6}  {:>11} {:>8} {:>8}\n",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)"
    );
    for r in rows {
        let run = format!(
            "{:>11.1} {:>8.2} {:>8.2} {:>6}",
            r.time_us, r.algbw_gbps, r.busbw_gbps, "N/A"
        );
        out += &format!(
            " {:>12} {:>13} {:>6} {:>6} {:>5}  {run}  {run}",
            r.size,
            r.count,
            r.dtype,
            r.redop.map_or("none", |_| redop),
            r.root.map_or("-1".to_string(), |x| x.to_string()),
        );
        if wide {
            let b = busiest(r);
            out += &format!(
                "  {:<20} {:<12} {:>8.3} {:>9.3}",
                tuned.label(r),
                b.busiest_tier,
                b.max_link_utilization,
                b.mean_link_utilization
            );
        }
        out += "\n";
    }

    let avg = rows.iter().map(|r| r.busbw_gbps).sum::<f64>() / rows.len().max(1) as f64;
    out += &format!("# Avg bus bandwidth    : {avg:.3} GB/s\n");
    if !wide {
        out += &format!("# algorithm: {}\n", what_ran(rows, tuned));
    }
    if tuned.any() {
        out += "# *: chosen by NCCL's cost model (the tuner)\n";
    }
    out
}

/// What ran over the sweep, as spans of sizes: `ring*/Simple* at every size`, or
/// `tree*/LL* 1048576-4194304, ring*/Simple* 16777216-1073741824`.
fn what_ran(rows: &[Row], tuned: Tuned) -> String {
    let mut spans: Vec<(String, u64, u64)> = Vec::new();
    for r in rows {
        let label = tuned.label(r);
        match spans.last_mut() {
            Some((l, _, last)) if *l == label => *last = r.size,
            _ => spans.push((label, r.size, r.size)),
        }
    }
    if let [(label, _, _)] = &spans[..] {
        return format!("{label} at every size");
    }
    spans
        .iter()
        .map(|(label, first, last)| {
            if first == last {
                format!("{label} {first}")
            } else {
                format!("{label} {first}-{last}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn side_by_side(results: &[(Variant, Vec<Row>)]) -> String {
    let mut out = format!("#{:>12}", "size");
    for (p, _) in results {
        out += &format!(
            "  {:>11} {:>8} {:>8}",
            format!("{} time", p.name()),
            "busbw",
            "max util"
        );
    }
    out += &format!("\n#{:>12}", "(B)");
    for _ in results {
        out += &format!("  {:>11} {:>8} {:>8}", "(us)", "(GB/s)", "");
    }
    out += "\n";
    for i in 0..results[0].1.len() {
        out += &format!(" {:>12}", results[0].1[i].size);
        for (_, rows) in results {
            let r = &rows[i];
            out += &format!(
                "  {:>11.1} {:>8.2} {:>8.3}",
                r.time_us,
                r.busbw_gbps,
                busiest(r).max_link_utilization
            );
        }
        out += "\n";
    }
    out
}

fn csv(results: &[(Variant, Vec<Row>)]) -> String {
    let mut out = String::from(
        "routing,size,count,type,redop,root,algorithm,protocol,tuned,time_us,algbw_gbps,busbw_gbps,busiest_tier,max_link_utilization,mean_link_utilization,flows\n",
    );
    for (p, rows) in results {
        for r in rows {
            let b = busiest(r);
            out += &format!(
                "{},{},{},{},{},{},{},{},{},{:.3},{:.4},{:.4},{},{:.4},{:.4},{}\n",
                p.name(),
                r.size,
                r.count,
                r.dtype,
                r.redop.unwrap_or(""),
                r.root.map_or(String::new(), |x| x.to_string()),
                r.algorithm,
                r.protocol,
                r.tuned,
                r.time_us,
                r.algbw_gbps,
                r.busbw_gbps,
                b.busiest_tier,
                b.max_link_utilization,
                b.mean_link_utilization,
                r.flows
            );
        }
    }
    out
}

fn json(
    args: &BenchArgs,
    s: &Setup,
    results: &[(Variant, Vec<Row>)],
) -> serde_json::Result<String> {
    let runs: Vec<_> = results
        .iter()
        .map(|(p, rows)| serde_json::json!({ "routing": p.name(), "results": rows }))
        .collect();
    let v = serde_json::json!({
        "fabric": s.topo.name(),
        "collective": s.bench.op.name(),
        "gpus": s.ranks.len(),
        "hosts": s.ranks.hosts().len(),
        "placement": s.placement.name(),
        "channels": s.bench.channels,
        "qps": s.bench.transport.qps,
        "qp_mode": s.bench.transport.qp_mode.name(),
        "path_selection": s.bench.path_selection.name(),
        "fidelity": s.bench.fidelity.name(),
        "down": args.down,
        "runs": runs,
    });
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}

/// A row's busiest link group: every output that prints it runs the bench with
/// [`Bench::link_figures`] (`setup`).
fn busiest(r: &Row) -> &Busiest {
    r.busiest
        .as_ref()
        .expect("the bench figures its links wherever they are printed")
}
