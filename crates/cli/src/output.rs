//! Writing results: to stdout, or to a file (a regular file appears whole or not at all); what
//! would go to stdout can be captured instead, for a caller in the same process.

use std::cell::RefCell;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Context;

thread_local! {
    /// While [`capture_stdout`] runs on this thread, what would go to stdout.
    static CAPTURED: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// Runs `f`, collecting what it writes to stdout through [`write_output`] (on this thread)
/// instead of printing it; returns `f`'s result and the bytes.
pub fn capture_stdout<T>(f: impl FnOnce() -> T) -> (T, Vec<u8>) {
    let before = CAPTURED.with(|c| c.replace(Some(Vec::new())));
    let result = f();
    let bytes = CAPTURED.with(|c| c.replace(before)).unwrap_or_default();
    (result, bytes)
}

/// Runs `write` into `path` (whole or not at all for a regular file, through a symbolic link,
/// in place for a device or FIFO: [`fabricsim_topology::outfile`]), or into stdout with no path.
pub fn write_output(
    path: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<()> {
    let Some(path) = path else {
        let mut buffer = Vec::new();
        if CAPTURED.with(|c| c.borrow().is_some()) {
            write(&mut buffer).context("writing the output")?;
            CAPTURED.with(|c| {
                if let Some(out) = c.borrow_mut().as_mut() {
                    out.append(&mut buffer);
                }
            });
            return Ok(());
        }
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
