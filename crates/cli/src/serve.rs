//! `fabricsim serve`: the centralized TE controller daemon (docs/commands/serve.md).

use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;
use fabricsim_controller::{serve as run_server, Config, ServeError};
use fabricsim_te::Solver;

use crate::bench::bad;
use crate::failure::{input, other, CmdResult};

/// The environment variable the bearer token may come from instead of `--token`.
const TOKEN_VAR: &str = "FABRICSIM_TOKEN";

#[derive(Args)]
pub struct ServeArgs {
    /// Address and port to listen on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// SQLite database holding the controller's state (created if absent).
    #[arg(long)]
    db: PathBuf,
    /// Bearer token that POST, PUT and DELETE requests must carry (else $FABRICSIM_TOKEN).
    #[arg(long)]
    token: Option<String>,
    /// TE solver for route computation: cspf, lp, highs (builds with the `highs` feature) or mwu.
    #[arg(long, default_value = "cspf")]
    solver: String,
    /// Largest request body accepted, in bytes.
    #[arg(long, default_value_t = 8 << 20)]
    max_body: usize,
    /// Threads answering requests (enough that writers waiting on the database never starve
    /// readers).
    #[arg(long, default_value_t = 16)]
    threads: usize,
}

pub fn run(args: ServeArgs) -> CmdResult {
    let token = match args.token {
        Some(t) => t,
        None => std::env::var(TOKEN_VAR).map_err(|_| {
            input(anyhow!(
                "no bearer token: give --token TOKEN or set {TOKEN_VAR}"
            ))
        })?,
    };
    let solver = Solver::parse_available(&args.solver)
        .ok_or_else(|| bad("solver", &args.solver, &Solver::expected()))?;
    if args.threads == 0 || args.threads > 256 {
        return Err(bad("threads", &args.threads.to_string(), "1 to 256"));
    }
    run_server(Config {
        listen: args.listen,
        db: args.db,
        token,
        solver,
        max_body: args.max_body,
        threads: args.threads,
    })
    .map_err(|e| match e {
        ServeError::Listen { .. } => other(e),
        _ => input(e),
    })
}
