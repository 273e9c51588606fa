//! Writing an output file the way a user expects of `-o PATH`: a regular file appears whole or
//! not at all (written to a temporary file beside it and renamed over it, keeping the old file's
//! permissions); a symbolic link is written through (its target is replaced, the link stays);
//! anything else that is not a directory — a device such as `/dev/null`, a FIFO, `/dev/stdout` —
//! is opened and written in place, never replaced.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Writes what `write` produces to `path` (see the module docs).
pub fn write_file(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let target = resolve(path)?;
    match fs::metadata(&target) {
        Ok(m) if m.is_dir() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is a directory", target.display()),
        )),
        Ok(m) if !m.is_file() => {
            let mut out = BufWriter::new(OpenOptions::new().write(true).open(&target)?);
            write(&mut out)?;
            out.flush()
        }
        Ok(m) => replace(&target, Some(m.permissions()), write),
        Err(e) if e.kind() == io::ErrorKind::NotFound => replace(&target, None, write),
        Err(e) => Err(e),
    }
}

/// `path` with its symbolic links followed (a dangling link names the file to create).
fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    // A link chain longer than the kernel's own limit (40) is a loop.
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}: too many levels of symbolic links", path.display()),
    ))
}

/// Writes a regular file through a temporary file in its directory, renamed into place only
/// when everything was written; removes the temporary file on failure.
fn replace(
    path: &Path,
    permissions: Option<fs::Permissions>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a file name", path.display()),
        )
    })?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut out = BufWriter::new(File::create(&tmp)?);
        write(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        if let Some(p) = permissions {
            file.set_permissions(p)?;
        }
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, FileTypeExt, PermissionsExt};

    fn text(s: &'static str) -> impl FnOnce(&mut dyn Write) -> io::Result<()> {
        move |w| w.write_all(s.as_bytes())
    }

    #[test]
    fn a_regular_file_is_replaced_whole_keeping_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("out.txt");
        fs::write(&f, "old").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o600)).unwrap();
        write_file(&f, text("new")).unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "new");
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // A failing writer leaves the old file and no temporary file.
        let failed = write_file(&f, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("no"))
        });
        assert!(failed.is_err());
        assert_eq!(fs::read_to_string(&f).unwrap(), "new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_symlink_is_written_through_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.json");
        let link = dir.path().join("link.json");
        fs::write(&target, "old").unwrap();
        symlink("target.json", &link).unwrap();
        write_file(&link, text("new")).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
        // A dangling link creates its target.
        let dangling = dir.path().join("dangling");
        symlink("created.txt", &dangling).unwrap();
        write_file(&dangling, text("made")).unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join("created.txt")).unwrap(),
            "made"
        );
    }

    #[test]
    fn a_device_is_written_in_place_never_replaced() {
        let null = Path::new("/dev/null");
        if !null.exists() {
            return;
        }
        write_file(null, text("discarded")).unwrap();
        assert!(fs::metadata(null).unwrap().file_type().is_char_device());
    }

    #[test]
    fn a_fifo_gets_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            return;
        }
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
        };
        write_file(&fifo, text("through the pipe")).unwrap();
        assert_eq!(reader.join().unwrap(), "through the pipe");
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = write_file(dir.path(), text("x")).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }
}
