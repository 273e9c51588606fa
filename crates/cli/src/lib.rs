//! `fabricsim`: the command-line front end. It parses arguments, calls the library crates and
//! prints; anything a test or another front end would need lives in the libraries. The binary
//! (`main.rs`) runs [`execute`] on its arguments; the Python package runs it in process, with
//! what it prints captured ([`capture_stdout`]).
//!
//! Exit codes: 0 success, 2 bad usage or bad input (the message names the place), 1 anything
//! else (an output file that could not be written).

mod bench;
mod buffer;
mod calibrate;
mod choices;
mod days;
mod failure;
mod flows;
mod links;
mod output;
mod progress;
mod route;
mod run;
mod serve;
mod sweep;
mod te;
mod topo;
mod validate;
mod variant;
mod whatif;

use std::ffi::OsString;

use clap::{Parser, Subcommand};

pub use output::capture_stdout;

#[derive(Parser)]
#[command(
    name = "fabricsim",
    version,
    about = "Design, simulate and operate the networks that train large AI models"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Describe, list and export fabrics.
    #[command(subcommand)]
    Topo(topo::TopoCommand),
    /// Equal-cost paths and load balance under a routing policy.
    #[command(subcommand)]
    Route(route::RouteCommand),
    /// Simulate a list of flows (CSV) and report completion times.
    Flows(flows::FlowsArgs),
    /// Benchmark a collective over a size sweep, as nccl-tests does.
    Bench(Box<bench::BenchArgs>),
    /// Run a scenario: training jobs on a fabric (no file: the built-in default).
    Run(Box<run::RunArgs>),
    /// Replay a Chakra execution trace on a fabric.
    Replay(Box<run::ReplayArgs>),
    /// Centralized traffic engineering: solve a traffic matrix, compare with ECMP.
    #[command(subcommand)]
    Te(te::TeCommand),
    /// Run the centralized TE controller: an HTTP JSON API over a SQLite database.
    Serve(serve::ServeArgs),
    /// Compare the compute model with kernels measured on a GPU.
    Calibrate(calibrate::CalibrateArgs),
    /// Regenerate the validation table (docs/validation.md) from published measurements.
    Validate(validate::ValidateArgs),
    /// What draining, failing, derating or repairing an element costs each job, over seeds.
    Whatif(Box<whatif::WhatIfArgs>),
    /// Each job's slowdown against the number of failed elements of a kind, per routing policy.
    Buffer(Box<buffer::BufferArgs>),
    /// A scenario over the cartesian product of some of its keys' values: one table row per
    /// point, seed and job.
    Sweep(sweep::SweepArgs),
    /// The cluster over days: a job trace placed by a scheduler, failures, checkpoints and
    /// repairs, each job at its simulated iteration time.
    Cluster(Box<days::ClusterArgs>),
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell) to stdout.
    Completions { shell: clap_complete::Shell },
}

/// A failed command line: its exit status and its message (escaped and cut as printed, without
/// the `error: ` the binary puts before it).
#[derive(Debug)]
pub struct CliError {
    pub code: u8,
    pub message: String,
}

/// Runs the command line `args` (the program's name first); help and version are printed as
/// output.
pub fn execute<I, T>(args: I) -> Result<(), CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // A usage error (status 2) echoes the value given, escaped and cut as ours are.
            let text = printable(&e.render().to_string());
            let text = text.trim_end();
            return Err(CliError {
                code: 2,
                message: text.strip_prefix("error: ").unwrap_or(text).to_string(),
            });
        }
        Err(e) => {
            // Help and version.
            let text = e.render().to_string();
            return output::write_output(None, |w| w.write_all(text.as_bytes())).map_err(|e| {
                CliError {
                    code: 1,
                    message: printable(&format!("{e:#}")),
                }
            });
        }
    };
    let result = match cli.command {
        Command::Topo(cmd) => topo::run(cmd),
        Command::Route(cmd) => route::run(cmd),
        Command::Flows(args) => flows::run(args),
        Command::Bench(args) => bench::run(*args),
        Command::Run(args) => run::run(*args),
        Command::Replay(args) => run::replay(*args),
        Command::Te(cmd) => te::run(cmd),
        Command::Serve(args) => serve::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Whatif(args) => whatif::run(*args),
        Command::Buffer(args) => buffer::run(*args),
        Command::Sweep(args) => sweep::run(args),
        Command::Cluster(args) => days::run(*args),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "fabricsim",
                &mut script,
            );
            output::write_output(None, |w| w.write_all(&script)).map_err(failure::other)
        }
    };
    result.map_err(|failure| CliError {
        code: failure.code,
        message: printable(&format!("{:#}", failure.error)),
    })
}

/// The most characters of an error message printed: an error can echo a line of the input,
/// which may be as long as the file.
const MAX_MESSAGE_CHARS: usize = 4096;

/// `message` with control characters other than line breaks and tabs escaped (`\u{1b}`): an
/// error echoes names from user input, which must not drive the terminal. Past
/// [`MAX_MESSAGE_CHARS`] it is cut, and says how much was left out.
fn printable(message: &str) -> String {
    let total = message.chars().count();
    let shown: String = message
        .chars()
        .take(MAX_MESSAGE_CHARS)
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect();
    if total > MAX_MESSAGE_CHARS {
        format!("{shown}… ({} more characters)", total - MAX_MESSAGE_CHARS)
    } else {
        shown
    }
}
