//! Writing results: to stdout, or to a file (a regular file appears whole or not at all).

use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Context;

/// Runs `write` into `path` (whole or not at all for a regular file, through a symbolic link,
/// in place for a device or FIFO: [`fabricsim_topology::outfile`]), or into stdout with no path.
pub fn write_output(
    path: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<()> {
    let Some(path) = path else {
        let stdout = io::stdout();
        let mut out = BufWriter::new(stdout.lock());
        return write(&mut out)
            .and_then(|()| out.flush())
            .or_else(ignore_broken_pipe)
            .context("writing to stdout");
    };
    fabricsim_topology::outfile::write_file(path, write)
        .with_context(|| format!("writing {}", path.display()))
}

/// `fabricsim … | head` is not an error.
fn ignore_broken_pipe(e: io::Error) -> io::Result<()> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(e)
    }
}
