//! Running the `fabricsim` binary from integration tests.

use std::process::{Command, Output};

pub fn fabricsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fabricsim"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[allow(dead_code)] // not every test binary reads stdout
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Checks that `html` is a whole page that names nothing to fetch, with `charts` SVG charts at
/// least, and returns it. (Used by the test binaries that write reports, not by all.)
#[allow(dead_code)]
pub fn self_contained_report(path: &std::path::Path, charts: usize) -> String {
    let html = std::fs::read_to_string(path).expect("the report was written");
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    for fetch in ["<script", "<link", "src=", "@import", "url(", "href=\"http"] {
        assert!(
            !html.contains(fetch),
            "the report fetches something: {fetch}"
        );
    }
    let svgs = html.matches("<svg").count();
    assert!(svgs >= charts, "{svgs} charts");
    html
}
