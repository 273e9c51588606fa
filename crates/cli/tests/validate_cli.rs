//! `fabricsim validate` on measurement files of its own: a row within and a row outside its
//! tolerance, the check against a stale page, and bad files named.

mod common;

use common::{fabricsim, stderr, stdout};

const ROW: &str = r#"
[[measurement]]
source = "test"
url = "https://example.org"
what = "one 400G NIC, perftest"
published = PUBLISHED
unit = "Gb/s"
tolerance = 0.05
why = "per-NIC rate"
inputs = "RoCEv2 framing"
[measurement.bench]
preset = "leaf-spine"
set = { k = "4" }
gpus = 2
placement = "per-host"
collective = "sendrecv"
size = "64MiB"
metric = "per-nic"
"#;

#[test]
fn rows_within_and_outside_their_tolerance_and_a_stale_page() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.toml"), ROW.replace("PUBLISHED", "392.0")).unwrap();
    std::fs::write(dir.path().join("b.toml"), ROW.replace("PUBLISHED", "300.0")).unwrap();
    let d = dir.path().to_str().unwrap();
    let o = fabricsim(&["validate", "--dir", d]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = stdout(&o);
    assert!(
        page.contains("2 rows from 1 source; 1 within tolerance, 1 outside."),
        "{page}"
    );
    assert!(page.contains("| ✓ |") && page.contains("| ✗ |"), "{page}");
    // The page written, then checked; a stale page fails the check with status 1.
    let out = dir.path().join("validation.md");
    let o = fabricsim(&["validate", "--dir", d, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = fabricsim(&["validate", "--dir", d, "--check", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(&out, "stale").unwrap();
    let o = fabricsim(&["validate", "--dir", d, "--check", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("differs"), "{}", stderr(&o));
}

#[test]
fn bad_measurement_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let o = fabricsim(&["validate", "--dir", d]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no measurement files"),
        "{}",
        stderr(&o)
    );
    let bad = ROW
        .replace("PUBLISHED", "392.0")
        .replace("metric = \"per-nic\"", "metric = \"speed\"");
    std::fs::write(dir.path().join("a.toml"), bad).unwrap();
    let o = fabricsim(&["validate", "--dir", d]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("a.toml: measurement 1 (one 400G NIC, perftest): metric `speed`"),
        "{e}"
    );
}
