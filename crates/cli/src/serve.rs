//! `fabricsim serve`: the centralized TE controller daemon (docs/commands/serve.md).

use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;
use fabricsim_controller::{serve as run_server, Config, ServeError};
use fabricsim_te::Solver;
use fabricsim_topology::Nanos;

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
    #[arg(long, required_unless_present = "openapi")]
    db: Option<PathBuf>,
    /// Print the API's OpenAPI document (YAML, generated from the server's code) and exit.
    #[arg(long)]
    openapi: bool,
    /// Bearer token that POST, PUT and DELETE requests must carry. Prefer $FABRICSIM_TOKEN or
    /// --token-file: a token on the command line shows in the process list.
    #[arg(long)]
    token: Option<String>,
    /// A file holding the bearer token (one line), instead of --token.
    #[arg(long, conflicts_with = "token", value_name = "FILE")]
    token_file: Option<std::path::PathBuf>,
    /// TE solver for route computation: cspf, lp, microlp, highs (builds with the `highs`
    /// feature) or mwu.
    #[arg(long, default_value = "cspf")]
    solver: String,
    /// Largest request body accepted, in bytes.
    #[arg(long, default_value_t = 8 << 20)]
    max_body: usize,
    /// Requests handled at once, once their bodies have arrived, and the server's worker
    /// threads (enough that writers waiting on the database never starve readers).
    #[arg(long, default_value_t = 16)]
    threads: usize,
    /// Connections open at once; more wait to be accepted.
    #[arg(long, default_value_t = 4096)]
    max_connections: usize,
    /// Time for a request's headers to arrive before the connection is closed (`10s`, `500ms`).
    #[arg(long, default_value = "10s", value_name = "TIME")]
    header_timeout: String,
    /// Time to answer a request, its body included, before it gets 408.
    #[arg(long, default_value = "30s", value_name = "TIME")]
    request_timeout: String,
}

/// A positive time of at most a day, for a timeout flag.
fn timeout(flag: &str, text: &str) -> Result<std::time::Duration, crate::failure::Failure> {
    match text.parse::<Nanos>() {
        Ok(t) if t.0 > 0 && t.0 <= 86_400_000_000_000 => Ok(std::time::Duration::from_nanos(t.0)),
        _ => Err(bad(
            flag,
            text,
            "a time above 0 and at most 24h, such as 10s or 500ms",
        )),
    }
}

pub fn run(args: ServeArgs) -> CmdResult {
    let db = match args.db {
        Some(db) if !args.openapi => db,
        _ => {
            print!("{}", fabricsim_controller::api::doc::yaml());
            return Ok(());
        }
    };
    let token = match (args.token, &args.token_file) {
        (Some(t), _) => t,
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| input(anyhow!("--token-file {}: {e}", path.display())))?;
            // One line; its end of line is not part of the token.
            text.strip_suffix('\n')
                .map(|t| t.strip_suffix('\r').unwrap_or(t))
                .unwrap_or(&text)
                .to_string()
        }
        (None, None) => std::env::var(TOKEN_VAR).map_err(|_| {
            input(anyhow!(
                "no bearer token: set {TOKEN_VAR}, or give --token-file FILE (or --token TOKEN, \
                 which other users of the machine can read in the process list)"
            ))
        })?,
    };
    // A token a client cannot send as it is would refuse every write.
    if token.is_empty() || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(input(anyhow!(
            "the bearer token is empty or contains whitespace or control characters"
        )));
    }
    let solver = Solver::parse_available(&args.solver)
        .ok_or_else(|| bad("solver", &args.solver, &Solver::expected()))?;
    if args.threads == 0 || args.threads > 256 {
        return Err(bad("threads", &args.threads.to_string(), "1 to 256"));
    }
    if args.max_connections == 0 || args.max_connections > 1 << 20 {
        return Err(bad(
            "max-connections",
            &args.max_connections.to_string(),
            "1 to 1048576",
        ));
    }
    let header_timeout = timeout("header-timeout", &args.header_timeout)?;
    let request_timeout = timeout("request-timeout", &args.request_timeout)?;
    // Request logs to stderr: RUST_LOG filters them (`info` by default; `warn` for quiet).
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
    run_server(Config {
        listen: args.listen,
        db,
        token,
        solver,
        max_body: args.max_body,
        threads: args.threads,
        max_connections: args.max_connections,
        header_timeout,
        request_timeout,
    })
    .map_err(|e| match e {
        ServeError::Listen { .. } => other(e),
        _ => input(e),
    })
}
