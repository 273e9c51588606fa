//! The README and the manual show real output and real parameters; these tests keep them so.

use std::process::Command;

fn repo_file(path: &str) -> String {
    let full = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

fn fabricsim(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_fabricsim"))
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout).unwrap()
}

/// The first ```text block after `marker` in `page`.
fn block_after<'a>(page: &'a str, marker: &str) -> &'a str {
    let start = page.find(marker).unwrap_or_else(|| panic!("no `{marker}`"));
    let block = &page[start..];
    let body_start = block.find("```text\n").unwrap() + "```text\n".len();
    &block[body_start..body_start + block[body_start..].find("```").unwrap()]
}

#[test]
fn readme_shows_the_real_main_job_output() {
    let readme = repo_file("README.md");
    let main_job = fabricsim(&["run"]);
    assert_eq!(
        block_after(&readme, "The first command prints:\n\n"),
        main_job
    );
    assert_eq!(
        block_after(&readme, "The fabric itself, `fabricsim topo describe`:"),
        fabricsim(&["topo", "describe"])
    );
    let page = repo_file("docs/commands/run.md");
    let shown = block_after(&page, "## Example: the default scenario");
    assert_eq!(shown.strip_prefix("$ fabricsim run\n").unwrap(), main_job);
}

#[test]
fn presets_page_lists_every_parameter_with_its_default() {
    let page = repo_file("docs/presets.md");
    let list: serde_json::Value =
        serde_json::from_str(&fabricsim(&["topo", "list", "--json"])).unwrap();
    for preset in list.as_array().unwrap() {
        let name = preset["name"].as_str().unwrap();
        assert!(
            page.contains(&format!("## `{name}`")),
            "docs/presets.md has no section for {name}"
        );
        for p in preset["params"].as_array().unwrap() {
            let row = format!(
                "| `{}` | `{}` | {} |",
                p["name"].as_str().unwrap(),
                p["default"].as_str().unwrap(),
                p["help"].as_str().unwrap()
            );
            assert!(page.contains(&row), "docs/presets.md lacks the row {row}");
        }
    }
}

#[test]
fn calibration_page_shows_the_model_against_both_measurements() {
    let page = repo_file("docs/calibration.md");
    let shown = block_after(&page, "## How far the model is from the measurements");
    let measured = |file: &str| {
        format!(
            "{}/../../docs/calibration/{file}",
            env!("CARGO_MANIFEST_DIR")
        )
    };
    let h100 = fabricsim(&["calibrate", &measured("h100-sxm.csv")]);
    let h200 = fabricsim(&["calibrate", &measured("h200.csv"), "--gpu", "H200"]);
    let expected = format!(
        "$ fabricsim calibrate docs/calibration/h100-sxm.csv\n{h100}\
         $ fabricsim calibrate docs/calibration/h200.csv --gpu H200\n{h200}"
    );
    assert_eq!(shown, expected);
}

#[test]
fn run_page_shows_the_real_te_failure_output() {
    let root = format!("{}/../..", env!("CARGO_MANIFEST_DIR"));
    let o = Command::new(env!("CARGO_BIN_EXE_fabricsim"))
        .args(["run", "scenarios/te-failure.toml"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(o.status.success());
    let page = repo_file("docs/commands/run.md");
    let shown = block_after(&page, "## Example: centralized TE and a failure");
    assert_eq!(
        shown
            .strip_prefix("$ fabricsim run scenarios/te-failure.toml\n")
            .unwrap(),
        String::from_utf8(o.stdout).unwrap()
    );
}

#[test]
fn validation_table_is_what_the_measurements_give_now() {
    let root = format!("{}/../..", env!("CARGO_MANIFEST_DIR"));
    let o = Command::new(env!("CARGO_BIN_EXE_fabricsim"))
        .args(["validate", "--check", "docs/validation.md"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The Markdown pages of the repository: the README and everything under docs/.
fn pages() -> Vec<std::path::PathBuf> {
    let root = std::path::PathBuf::from(format!("{}/../..", env!("CARGO_MANIFEST_DIR")));
    let mut pages = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// Flags whose value is a file a command writes, not one it reads.
const WRITTEN: [&str; 11] = [
    "-o",
    "--output",
    "--links",
    "--job-links",
    "--links-series",
    "--report",
    "--trace",
    "--export-chakra",
    "--jobs-csv",
    "--series-csv",
    ">",
];

/// The `fabricsim` command lines of a page: in code blocks (`$ ` prompts dropped, lines ending in
/// `\` joined) and in inline code spans.
fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            pending += line.trim().trim_start_matches("$ ");
            if let Some(cont) = pending.strip_suffix('\\') {
                pending = cont.to_string() + " ";
                continue;
            }
            if pending.starts_with("fabricsim ") {
                out.push(pending.clone());
            }
            pending.clear();
        } else {
            out.extend(
                line.split('`')
                    .skip(1)
                    .step_by(2)
                    .filter(|span| span.starts_with("fabricsim "))
                    .map(str::to_string),
            );
        }
    }
    out
}

/// `path` exists, or names a Chakra trace prefix (`PREFIX.0.et`, `PREFIX.json`).
fn exists_or_prefixes(path: &std::path::Path) -> bool {
    if path.exists() {
        return true;
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return false;
    };
    let prefix = format!("{}.", name.to_string_lossy());
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
    })
}

#[test]
fn every_file_a_documented_command_reads_is_in_the_repository() {
    let root = format!("{}/../..", env!("CARGO_MANIFEST_DIR"));
    let shipped = [
        "scenarios/",
        "examples/",
        "validation/",
        "tests/data/",
        "docs/",
    ];
    let mut checked = 0;
    let mut missing = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for command in commands(&text) {
            let words: Vec<&str> = command.split_whitespace().collect();
            for (i, word) in words.iter().enumerate() {
                let written = i > 0 && WRITTEN.contains(&words[i - 1]);
                let word = word.trim_matches(|c| c == '"' || c == '\'' || c == '`');
                if written || !shipped.iter().any(|dir| word.starts_with(dir)) {
                    continue;
                }
                checked += 1;
                if !exists_or_prefixes(&std::path::PathBuf::from(format!("{root}/{word}"))) {
                    missing.push(format!("{}: {word}", page.display()));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "documented inputs missing: {missing:#?}"
    );
    assert!(
        checked > 20,
        "only {checked} inputs found: is the scan broken?"
    );
}
