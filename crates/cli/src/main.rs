//! The `fabricsim` binary: the command line of [`fabricsim_cli`].

use std::process::ExitCode;

fn main() -> ExitCode {
    match fabricsim_cli::execute(std::env::args_os()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", e.message);
            ExitCode::from(e.code)
        }
    }
}
