//! The HTML reports as a browser shows them: headless Chromium opens the default `run`'s report
//! and a `bench --compare-routing` report with every network name unresolvable, and the test
//! checks that the page logged nothing to its console, asked for nothing over the network, and
//! drew a screenshot that is not blank.
//!
//! Chromium is Debian's `chromium` package (`.ci/run` installs it). Where it is missing the test
//! says so and passes, unless `FABRICSIM_REQUIRE_BROWSER=1` (set by `.ci/run` once installed).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{fabricsim, stderr};

fn chromium() -> Option<PathBuf> {
    let names = ["chromium", "chromium-browser", "google-chrome"];
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .flat_map(|dir| names.map(|n| dir.join(n)))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("FABRICSIM_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "FABRICSIM_REQUIRE_BROWSER=1 but no chromium on PATH"
        );
        eprintln!("skipped: no chromium on PATH (Debian: apt-get install chromium)");
    }
    found
}

/// What a browser made of a page: its console lines, the network requests the page made and
/// the screenshot's pixels.
struct Rendered {
    console: Vec<String>,
    requests: Vec<String>,
    pixels: Vec<[u8; 3]>,
}

fn render(browser: &Path, page: &Path, dir: &Path) -> Rendered {
    let shot = dir.join("shot.png");
    let netlog = dir.join("net.json");
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox", // root in CI containers
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
            // No name resolves: a page that fetched anything would fail, and the net log says.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--window-size=1280,2400",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let console = stderr(&out)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    // Requests made for the page carry its network isolation key (`file://`); Chromium's own
    // background requests carry none of it.
    let log: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&netlog).expect("a net log")).expect("net log JSON");
    let requests = log["events"]
        .as_array()
        .expect("net log events")
        .iter()
        .filter_map(|e| {
            let p = &e["params"];
            let isolation = p["network_isolation_key"].as_str()?;
            let url = p["url"].as_str()?;
            (isolation.starts_with("file://") && !url.starts_with("file:")).then(|| url.to_string())
        })
        .collect();
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&shot).expect("a screenshot"),
    ));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut bytes = vec![0; reader.output_buffer_size().expect("a sized PNG")];
    let info = reader.next_frame(&mut bytes).expect("a frame");
    assert!(
        matches!(info.color_type, png::ColorType::Rgb | png::ColorType::Rgba)
            && info.bit_depth == png::BitDepth::Eight,
        "Chromium writes 8-bit RGB(A): {info:?}"
    );
    let pixels = bytes[..info.buffer_size()]
        .chunks(info.color_type.samples())
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    Rendered {
        console,
        requests,
        pixels,
    }
}

/// Not blank: a good share of the pixels are not the background, in many colours (text, bars,
/// heat maps).
fn drawn(px: &[[u8; 3]]) -> Result<(), String> {
    let background = px[0];
    let drawn = px.iter().filter(|&&p| p != background).count();
    let colours: std::collections::BTreeSet<[u8; 3]> = px.iter().copied().collect();
    if drawn * 50 > px.len() && colours.len() > 50 {
        Ok(())
    } else {
        Err(format!(
            "{drawn} of {} pixels drawn, {} colours",
            px.len(),
            colours.len()
        ))
    }
}

fn check(browser: &Path, page: &Path, dir: &Path) {
    let r = render(browser, page, dir);
    assert!(r.console.is_empty(), "console: {:#?}", r.console);
    assert!(r.requests.is_empty(), "network: {:#?}", r.requests);
    if let Err(e) = drawn(&r.pixels) {
        panic!("{} looks blank: {e}", page.display());
    }
}

#[test]
fn reports_open_in_chromium_without_errors_or_network() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.html");
    let out = fabricsim(&["run", "--report", run.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    check(&browser, &run, dir.path());

    let bench = dir.path().join("bench.html");
    let out = fabricsim(&[
        "bench",
        "--preset",
        "meta-ai-zone",
        "--gpus",
        "32",
        "-b",
        "1M",
        "-e",
        "64M",
        "--compare-routing",
        "ecmp,eecmp,spray",
        "--qps",
        "4",
        "--report",
        bench.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    check(&browser, &bench, dir.path());
}

/// The checks above catch what they are meant to: a page that logs, fetches and draws next to
/// nothing fails them.
#[test]
fn a_page_that_logs_or_fetches_is_caught() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><script>console.error('boom')</script>\
         <img src=\"http://example.com/x.png\"></body></html>",
    )
    .unwrap();
    let r = render(&browser, &page, dir.path());
    assert!(
        r.console.iter().any(|l| l.contains("boom")),
        "{:?}",
        r.console
    );
    assert_eq!(r.requests, ["http://example.com/x.png"]);
    assert!(drawn(&r.pixels).is_err());
}
