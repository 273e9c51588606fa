//! `fabricsim run [SCENARIO]` and `fabricsim replay PREFIX`: training jobs on a fabric.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::Args;
use fabricsim_cluster::control::{TeConfig, Trigger};
use fabricsim_cluster::layout::RankLayout;
use fabricsim_cluster::orchestrator::{RunError, RunOptions, SymmetryUse};
use fabricsim_cluster::overrides::Override;
use fabricsim_cluster::placement::Placement;
use fabricsim_cluster::scenario::{JobEntry, Scenario, WorkloadSource, DEFAULT};
use fabricsim_cluster::simulate::{build_workload, simulate, ScenarioRun, SimError};
use fabricsim_cluster::trace::trace_json;
use fabricsim_cluster::CommConfig;
use fabricsim_routing::PathSelection;
use fabricsim_te::Routing;
use fabricsim_topology::Nanos;
use fabricsim_topology::Topology;
use fabricsim_workload::chakra;
use fabricsim_workload::{Efficiency, GpuSpec};

use crate::failure::{input, other, CmdResult, Failure};
use crate::output::write_output;
use crate::route::RoutingArgs;
use crate::topo::FabricArgs;

/// Outputs shared by `run` and `replay`.
#[derive(Args)]
pub struct OutputArgs {
    /// Print the summary as JSON (fields in docs/outputs.md).
    #[arg(long)]
    json: bool,
    /// Write the summary to this file instead of stdout.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Write a Perfetto / Chrome trace JSON of the first ranks of each job.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Ranks per job the trace shows (default 16, or the scenario's).
    #[arg(long)]
    trace_ranks: Option<u32>,
    /// Write every link that carried bytes, with its utilization, as CSV (docs/outputs.md).
    #[arg(long, value_name = "FILE")]
    links: Option<PathBuf>,
    /// Write, per job, every link its bytes crossed: its bytes, its share of the link's, and
    /// the other jobs on the link, as CSV (docs/outputs.md#links-per-job---job-links-file).
    #[arg(long, value_name = "FILE")]
    job_links: Option<PathBuf>,
    /// Write a self-contained HTML report with plots: jobs, time split, timelines, link heat
    /// map (docs/outputs.md#html-report).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Write every link's utilization over time as CSV (time_ms, link, src, dst, group,
    /// utilization; sampled every --sample-every, default 1ms; docs/outputs.md).
    #[arg(long, value_name = "FILE")]
    links_series: Option<PathBuf>,
    /// Sample each link group's utilization this often, for the trace's counter tracks and the
    /// report's chart (default 1ms with --trace or --report).
    #[arg(long, value_name = "TIME")]
    sample_every: Option<String>,
    /// Simulate every rank, even where the run is symmetric and one rank per orbit gives the
    /// same result (docs/commands/run.md#symmetry).
    #[arg(long)]
    full_detail: bool,
}

#[derive(Args)]
pub struct RunArgs {
    /// A scenario file (TOML, docs/scenarios.md); none runs the built-in default.
    scenario: Option<PathBuf>,
    /// Override the scenario's routing: ecmp, eecmp, pin, spray, or te (te:cspf, te:lp, te:mwu)
    /// for the centralized TE controller.
    #[arg(long)]
    routing: Option<String>,
    /// Take a switch, a NIC or a cable (`A--B`) down from the start; repeatable (a one-off
    /// what-if without editing the scenario; `fabricsim whatif` compares over seeds).
    #[arg(long = "down", value_name = "NAME")]
    down: Vec<String>,
    /// Set a scenario key: `routing.policy=eecmp`, `job.NAME.llm.tp=4` (a job by its name);
    /// repeatable (docs/commands/run.md).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Also write each job's workload as Chakra traces: PREFIX.<rank>.et and PREFIX.json
    /// (PREFIX-<job>.… with several jobs).
    #[arg(long, value_name = "PREFIX")]
    export_chakra: Option<String>,
    #[command(flatten)]
    out: OutputArgs,
}

#[derive(Args)]
pub struct ReplayArgs {
    /// The trace: files PREFIX.0.et, PREFIX.1.et, ...
    prefix: String,
    /// Communicator-group JSON ({"pg_name": [ranks]}).
    #[arg(long)]
    groups: Option<PathBuf>,
    #[command(flatten)]
    fabric: FabricArgs,
    #[command(flatten)]
    routing: RoutingArgs,
    /// How hosts put collectives' messages on paths: hashed, disjoint[:PATHS] or
    /// flowlet[:GAP] (docs/routing.md).
    #[arg(long, default_value = "hashed", value_name = "MODE")]
    path_selection: String,
    /// The GPU the kernels run on.
    #[arg(long, default_value = "H100", value_parser = crate::choices::gpus(), ignore_case = true)]
    gpu: String,
    /// packed or random.
    #[arg(long, default_value = "packed")]
    placement: String,
    /// How the trace's ranks go onto the placed GPUs: `trace` (rank i on the i-th GPU) or
    /// `communicators` (the busiest communicators that fit in a host inside one;
    /// docs/commands/replay.md#rank-layout).
    #[arg(long, default_value = "trace", value_name = "LAYOUT")]
    ranks: String,
    /// Refuse a trace the import would warn about: ranks that disagree (a send without its
    /// receive, different sizes or collectives in one group) or dependencies it had to repair.
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    out: OutputArgs,
}

pub(crate) fn sim_failure(e: SimError) -> Failure {
    if e.is_input() {
        input(e)
    } else {
        other(e)
    }
}

/// The `--set KEY=VALUE` flags, read.
pub(crate) fn overrides(sets: &[String]) -> Result<Vec<Override>, Failure> {
    sets.iter()
        .map(|s| Override::parse(s).map_err(|e| input(anyhow!(e))))
        .collect()
}

pub fn run(args: RunArgs) -> CmdResult {
    let sets = overrides(&args.set)?;
    let (mut scenario, name) = match &args.scenario {
        Some(path) => (
            Scenario::load_with(path, &sets).map_err(input)?,
            path.display().to_string(),
        ),
        None => (
            Scenario::parse_with(DEFAULT, Path::new("scenarios/default.toml"), &sets)
                .map_err(input)?,
            "built-in default (scenarios/default.toml)".to_string(),
        ),
    };
    if let Some(r) = &args.routing {
        scenario.routing = Routing::parse(r)
            .ok_or_else(|| input(anyhow!("--routing {r}: expected {}", Routing::expected())))?;
    }
    for name in &args.down {
        scenario.events.push(fabricsim_cluster::control::LinkEvent {
            at: fabricsim_topology::Nanos(0),
            target: name.clone(),
            state: "down".into(),
            gbps: None,
        });
    }
    if let Some(prefix) = &args.export_chakra {
        export(&scenario, prefix)?;
    }
    execute(scenario, &name, &args.out)
}

fn export(s: &Scenario, prefix: &str) -> CmdResult {
    for j in &s.jobs {
        let (w, _) = build_workload(&j.name, &j.workload).map_err(sim_failure)?;
        let p = if s.jobs.len() == 1 {
            prefix.to_string()
        } else {
            format!("{prefix}-{}", j.name)
        };
        let model = fabricsim_workload::ComputeModel {
            gpu: j.gpu,
            efficiency: j.efficiency,
        };
        let files = chakra::export_with(&w, &p, Some(&model)).map_err(other)?;
        eprintln!(
            "wrote {} Chakra files for job `{}` ({p}.*)",
            files.len(),
            j.name
        );
    }
    Ok(())
}

pub fn replay(args: ReplayArgs) -> CmdResult {
    let gpu = GpuSpec::named(&args.gpu).ok_or_else(|| {
        input(anyhow!(
            "--gpu {}: expected one of {}",
            args.gpu,
            GpuSpec::names().join(", ")
        ))
    })?;
    let placement = match args.placement.as_str() {
        "packed" => Placement::Packed,
        "random" => Placement::Random {
            seed: args.routing.seed,
        },
        p => return Err(input(anyhow!("--placement {p}: expected packed or random"))),
    };
    let name = Path::new(&args.prefix)
        .file_name()
        .map_or(args.prefix.clone(), |n| n.to_string_lossy().into_owned());
    let scenario = Scenario {
        fabric: args.fabric.source()?,
        routing: Routing::Hashed(args.routing.policy()?),
        hash: args.routing.hash()?,
        te_period: TeConfig::DEFAULT_PERIOD,
        te_detection: TeConfig::DEFAULT_DETECTION,
        path_selection: PathSelection::parse(&args.path_selection).ok_or_else(|| {
            crate::bench::bad(
                "path-selection",
                &args.path_selection,
                PathSelection::EXPECTED,
            )
        })?,
        events: Vec::new(),
        jobs: vec![JobEntry {
            name,
            placement,
            gpu,
            efficiency: Efficiency::default(),
            workload: WorkloadSource::Chakra {
                prefix: PathBuf::from(&args.prefix),
                groups: args.groups.clone(),
                strict: args.strict,
                ranks: RankLayout::parse(&args.ranks).ok_or_else(|| {
                    input(anyhow!(
                        "--ranks {}: expected trace or communicators",
                        args.ranks
                    ))
                })?,
            },
            comm: CommConfig::default(),
        }],
        json: None,
        trace: None,
        trace_ranks: 16,
    };
    execute(scenario, &format!("replay of {}", args.prefix), &args.out)
}

fn execute(scenario: Scenario, name: &str, out: &OutputArgs) -> CmdResult {
    let topo = scenario.fabric.load().map_err(input)?;
    let trace_path = out.trace.clone().or_else(|| scenario.trace.clone());
    let trace_ranks = if trace_path.is_some() {
        out.trace_ranks.unwrap_or(scenario.trace_ranks)
    } else {
        0
    };
    // A report draws the first ranks' timelines.
    let trace_ranks = if out.report.is_some() {
        trace_ranks.max(fabricsim_report::TIMELINE_RANKS)
    } else {
        trace_ranks
    };
    let tty = std::io::stderr().is_terminal();
    let options = RunOptions {
        trace_ranks,
        progress_every: if tty { 200_000 } else { 0 },
        full_detail: out.full_detail.then(|| "--full-detail".to_string()),
        lone_ranks: false,
        sample_links: out.links_series.is_some(),
        // The report shows the links jobs shared when there are several.
        attribute_links: out.job_links.is_some()
            || (out.report.is_some() && scenario.jobs.len() > 1),
        sample_every: match &out.sample_every {
            Some(t) => match t.parse::<Nanos>() {
                Ok(t) if t.0 >= 1_000 => t.0,
                _ => {
                    return Err(crate::bench::bad(
                        "sample-every",
                        t,
                        "a time of at least 1us, such as 1ms",
                    ))
                }
            },
            None if trace_path.is_some() || out.report.is_some() || out.links_series.is_some() => {
                1_000_000
            }
            None => 0,
        },
        background: Vec::new(),
    };
    let bar = crate::progress::bar(1, "ops");
    let result = simulate(&scenario, &topo, options, |t, done, total| {
        bar.set_length(total);
        bar.set_position(done);
        bar.set_message(format!("at {:.1} ms simulated", t as f64 * 1e-6));
    });
    bar.finish_and_clear();
    let run = match result {
        Ok(run) => run,
        Err(SimError::Run(RunError::Stalled {
            job,
            at,
            done,
            total,
            diagnosis,
            finished,
        })) => {
            // The jobs that finished are reported; the run still fails (exit 1).
            let mut text = format!(
                "# fabricsim run: {name}\n# job `{job}` did not finish; the jobs that did:\n"
            );
            for stats in &finished {
                text += &fabricsim_cluster::JobReport::new(stats).render();
            }
            write_output(out.output.as_deref(), |o| o.write_all(text.as_bytes())).map_err(other)?;
            return Err(other(anyhow!(
                "job `{job}` stalled at {at} ns with {done} of {total} ops done: {diagnosis}"
            )));
        }
        Err(e) => return Err(sim_failure(e)),
    };
    for w in &run.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(path) = &trace_path {
        let text = trace_json(&run.output.jobs, &run.output.series).to_string();
        write_output(Some(path), |o| o.write_all(text.as_bytes())).map_err(other)?;
    }
    if let Some(path) = &out.report {
        let html = fabricsim_report::run(
            &format!("fabricsim run: {name}"),
            &run_params(&scenario, name, &topo, &run),
            &topo,
            &run.output,
            &run.reports,
        );
        write_output(Some(path), |o| o.write_all(html.as_bytes())).map_err(other)?;
    }
    if let Some(path) = &out.links {
        crate::links::write_links(path, &topo, &run.output.links)?;
    }
    if let Some(path) = &out.job_links {
        let names: Vec<&str> = run.output.jobs.iter().map(|j| j.name.as_str()).collect();
        let sharing =
            fabricsim_cluster::sharing::sharing(&topo, &run.output.links, &run.output.job_links);
        crate::links::write_job_links(path, &topo, &names, &sharing)?;
    }
    if let Some(path) = &out.links_series {
        if run.output.series.truncated {
            eprintln!(
                "warning: --links-series kept the first {} link samples only; a longer \
                 --sample-every keeps them all",
                fabricsim_cluster::stats::TierSeries::MAX_LINK_SAMPLES
            );
        }
        crate::links::write_series(path, &topo, &run.output.series.links)?;
    }
    let text = if out.json {
        json(&scenario, name, &topo, &run)
    } else {
        render(&scenario, name, &topo, &run)
    };
    write_output(out.output.as_deref(), |o| o.write_all(text.as_bytes())).map_err(other)?;
    if let Some(path) = &scenario.json {
        let text = json(&scenario, name, &topo, &run);
        write_output(Some(path), |o| o.write_all(text.as_bytes())).map_err(other)?;
    }
    Ok(())
}

fn render(s: &Scenario, name: &str, topo: &Topology, run: &ScenarioRun) -> String {
    let mut out = format!(
        "# fabricsim run: {name}\n# fabric {} ({} GPUs), routing {}, flow engine\n",
        topo.name(),
        topo.gpus().len(),
        s.routing.name()
    );
    for r in &run.reports {
        out += &r.render();
    }
    for e in &run.output.link_events {
        let gbps = e.gbps.map_or(String::new(), |g| format!(" to {g} Gbit/s"));
        let at = e.at.0 as f64 * 1e-6;
        out += &format!("# at {at:.3} ms: {} {}{gbps}\n", e.target, e.state);
    }
    for te in &run.output.te {
        out += &format!(
            "# te at {:.3} ms ({}): {} demands, max utilization {:.3}{}\n",
            te.at_ns as f64 * 1e-6,
            trigger_name(te.trigger),
            te.demands,
            te.max_utilization,
            te.error
                .as_ref()
                .map_or(String::new(), |e| format!(", kept the old table: {e}"))
        );
    }
    let orbit = match run.output.symmetry {
        SymmetryUse::Applied { order } => {
            format!(" (one rank simulated per {order}: the run is symmetric)")
        }
        SymmetryUse::Off(_) => String::new(),
    };
    out += &format!(
        "# simulated {:.3} ms: {} engine flows, {} events{orbit}\n",
        run.output.end.0 as f64 * 1e-6,
        run.output.flows,
        run.output.events
    );
    out
}

/// The parameters a report lists.
fn run_params(
    s: &Scenario,
    name: &str,
    topo: &Topology,
    run: &ScenarioRun,
) -> Vec<(String, String)> {
    let mut p = vec![
        ("scenario".to_string(), name.to_string()),
        (
            "fabric".to_string(),
            format!("{} ({} GPUs)", topo.name(), topo.gpus().len()),
        ),
        ("routing".to_string(), s.routing.name()),
        ("path selection".to_string(), s.path_selection.name()),
        (
            "simulated".to_string(),
            format!("{:.3} ms", run.output.end.0 as f64 * 1e-6),
        ),
        ("engine flows".to_string(), run.output.flows.to_string()),
        ("events".to_string(), run.output.events.to_string()),
    ];
    for j in &s.jobs {
        let placement = match &j.placement {
            Placement::Packed => "packed".to_string(),
            Placement::Random { seed } => format!("random (seed {seed})"),
            Placement::Hosts(h) => format!("{} listed hosts", h.len()),
        };
        let ranks = match j.workload {
            WorkloadSource::Chakra {
                ranks: RankLayout::Communicators,
                ..
            } => ", ranks laid by communicators",
            _ => "",
        };
        p.push((
            format!("job {}", j.name),
            format!("{placement} placement{ranks}"),
        ));
    }
    for w in &run.warnings {
        p.push(("warning".to_string(), w.clone()));
    }
    p
}

fn trigger_name(t: Trigger) -> &'static str {
    match t {
        Trigger::Start => "start",
        Trigger::Period => "period",
        Trigger::LinkEvent => "after a link event",
    }
}

fn json(s: &Scenario, name: &str, topo: &Topology, run: &ScenarioRun) -> String {
    let v = serde_json::json!({
        "scenario": name,
        "fabric": topo.name(),
        "gpus": topo.gpus().len(),
        "routing": s.routing.name(),
        "simulated_ms": run.output.end.0 as f64 * 1e-6,
        "flows": run.output.flows,
        "events": run.output.events,
        "symmetry": match &run.output.symmetry {
            SymmetryUse::Applied { order } => serde_json::json!({ "orbit": order }),
            SymmetryUse::Off(why) => serde_json::json!({ "orbit": 1, "off": why }),
        },
        "jobs": run.reports,
        "link_events": run.output.link_events,
        "te_recomputes": run.output.te,
        "warnings": run.warnings,
    });
    let mut text = serde_json::to_string_pretty(&v).expect("reports serialise");
    text.push('\n');
    text
}
