//! `fabricsim topo …`: list presets, describe a fabric, export it.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use fabricsim_topology::figures::FabricFigures;
use fabricsim_topology::format::{write_dot, write_json, MAX_DOT_NODES};
use fabricsim_topology::presets;
use fabricsim_topology::{FabricSource, Topology};

use crate::failure::{input, other, CmdResult};
use crate::output::write_output;

#[derive(Subcommand)]
pub enum TopoCommand {
    /// List the built-in fabrics with their parameters and defaults.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print a fabric's figures: counts, capacity per tier, oversubscription, bisection
    /// bandwidth, diameter and equal-cost paths.
    Describe {
        #[command(flatten)]
        fabric: FabricArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write a fabric as a JSON topology file or a Graphviz drawing.
    Export {
        #[command(flatten)]
        fabric: FabricArgs,
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
        /// Output file (written whole or not at all); stdout when absent.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Dot,
}

/// Which fabric: a preset (default `meta-cluster`) with `--set` overrides, or a file.
#[derive(Args)]
pub struct FabricArgs {
    /// A built-in fabric (see `fabricsim topo list`).
    #[arg(long, conflicts_with = "file", value_parser = crate::choices::presets())]
    preset: Option<String>,
    /// A JSON topology file (see docs/formats/topology-json.md).
    #[arg(long)]
    file: Option<PathBuf>,
    /// Set a preset parameter, as key=value; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", conflicts_with = "file")]
    set: Vec<String>,
}

impl FabricArgs {
    pub fn source(&self) -> Result<FabricSource, crate::failure::Failure> {
        FabricSource::from_args(self.preset.as_deref(), self.file.as_deref(), &self.set)
            .map_err(input)
    }

    pub fn load(&self) -> Result<Topology, crate::failure::Failure> {
        self.source()?.load().map_err(input)
    }
}

pub fn run(cmd: TopoCommand) -> CmdResult {
    match cmd {
        TopoCommand::List { json } => {
            let text = if json { list_json() } else { list_text() };
            write_output(None, |out| out.write_all(text.as_bytes())).map_err(other)
        }
        TopoCommand::Describe { fabric, json } => {
            let figures = FabricFigures::of(&fabric.load()?);
            let text = if json {
                serde_json::to_string_pretty(&figures).map_err(other)? + "\n"
            } else {
                figures.render_text()
            };
            write_output(None, |out| out.write_all(text.as_bytes())).map_err(other)
        }
        TopoCommand::Export {
            fabric,
            format,
            output,
        } => {
            let topo = fabric.load()?;
            match format {
                ExportFormat::Json => write_output(output.as_deref(), |out| write_json(&topo, out)),
                ExportFormat::Dot => {
                    if topo.node_count() > MAX_DOT_NODES {
                        return Err(input(anyhow::anyhow!(
                            "`{}` has {} nodes; DOT output is for fabrics of at most {MAX_DOT_NODES} nodes \
                             (shrink the preset with --set, or export JSON)",
                            topo.name(),
                            topo.node_count()
                        )));
                    }
                    write_output(output.as_deref(), |out| write_dot(&topo, out))
                }
            }
            .map_err(other)
        }
    }
}

fn list_text() -> String {
    let mut out = String::new();
    for p in presets::all() {
        let default = if p.name == presets::DEFAULT_PRESET {
            "  (default)"
        } else {
            ""
        };
        out += &format!("{}{default}\n  {}\n", p.name, p.summary);
        for param in p.params() {
            out += &format!(
                "    {:<22} {:<10} {}\n",
                param.name, param.default, param.help
            );
        }
        out += "\n";
    }
    out
}

fn list_json() -> String {
    let presets: Vec<serde_json::Value> = presets::all()
        .iter()
        .map(|p| {
            let params: Vec<serde_json::Value> = p
                .params()
                .map(
                    |s| serde_json::json!({ "name": s.name, "default": s.default, "help": s.help }),
                )
                .collect();
            serde_json::json!({ "name": p.name, "summary": p.summary, "params": params })
        })
        .collect();
    serde_json::to_string_pretty(&presets).unwrap_or_default() + "\n"
}
