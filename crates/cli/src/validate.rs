//! `fabricsim validate`: the validation table (docs/validation.md) regenerated from the
//! published measurements in `validation/`.

use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;
use fabricsim_cluster::validation::{render, validate};

use crate::failure::{input, other, CmdResult};
use crate::output::write_output;

/// The command the generated page names.
const COMMAND: &str = "fabricsim validate -o docs/validation.md";

#[derive(Args)]
pub struct ValidateArgs {
    /// The directory of measurement files (*.toml).
    #[arg(long, default_value = "validation")]
    dir: PathBuf,
    /// Write the table here (default: stdout).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Instead of writing, compare with this file and fail (exit 1) if it differs.
    #[arg(long, conflicts_with = "output")]
    check: Option<PathBuf>,
}

pub fn run(args: ValidateArgs) -> CmdResult {
    let bar = crate::progress::bar(0, "measurements");
    let rows = validate(&args.dir, &|| bar.inc(1)).map_err(|e| input(anyhow!("{e}")))?;
    bar.finish_and_clear();
    let table = render(&rows, COMMAND);
    if let Some(path) = &args.check {
        let committed =
            std::fs::read_to_string(path).map_err(|e| input(anyhow!("{}: {e}", path.display())))?;
        if committed != table {
            return Err(other(anyhow!(
                "{} differs from the table the measurements give now; regenerate it with `{COMMAND}`",
                path.display()
            )));
        }
        println!("{}: up to date ({} rows)", path.display(), rows.len());
        return Ok(());
    }
    write_output(args.output.as_deref(), |out| {
        out.write_all(table.as_bytes())
    })
    .map_err(other)
}
