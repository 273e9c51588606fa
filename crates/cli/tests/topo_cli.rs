//! The `fabricsim topo` commands as a user runs them: output, JSON fields, exit codes, files.

use std::path::Path;

mod common;

use common::{fabricsim, stderr, stdout};

#[test]
fn describe_defaults_to_the_24k_meta_cluster() {
    let o = fabricsim(&["topo", "describe"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("fabric meta-cluster\n"), "{text}");
    assert!(
        text.contains("24,576 in 3,072 hosts (8 per host)"),
        "{text}"
    );
    assert!(
        text.contains("1,680 (1,536 rtsw, 128 ctsw, 16 atsw)"),
        "{text}"
    );
}

#[test]
fn describe_json_has_the_documented_fields() {
    let o = fabricsim(&["topo", "describe", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    assert_eq!(v["gpus"], 24_576);
    assert_eq!(v["hosts"], 3_072);
    assert_eq!(v["switches"], 1_680);
    assert_eq!(v["switches_by_tier"]["rtsw"], 1_536);
    assert_eq!(v["links"], 203_520);
    assert_eq!(v["diameter_hops"], 5);
    assert_eq!(v["max_equal_cost_paths"], 11_664);
    assert_eq!(v["bisection_bandwidth_gbps"], 691_200.0);
    let over = v["oversubscription"].as_array().unwrap();
    assert_eq!(over.len(), 2);
    assert_eq!(
        (over[1]["lower"].as_str(), over[1]["upper"].as_str()),
        (Some("ctsw"), Some("atsw"))
    );
    assert!((over[1]["ratio"].as_f64().unwrap() - 7.11).abs() < 0.01);
    // Tier names keep tier order in the JSON object.
    let text = stdout(&o);
    assert!(
        text.contains("\"switches_by_tier\": {\n    \"rtsw\": 1536,\n    \"ctsw\": 128,\n    \"atsw\": 16\n  }"),
        "{text}"
    );
}

#[test]
fn describe_text_of_a_small_fat_tree() {
    let o = fabricsim(&["topo", "describe", "--preset", "fat-tree", "--set", "k=4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn list_shows_every_preset_with_parameters() {
    let o = fabricsim(&["topo", "list"]);
    let text = stdout(&o);
    for p in [
        "fat-tree",
        "leaf-spine",
        "meta-ai-zone",
        "meta-cluster  (default)",
        "hpn",
        "dcn-plus",
        "superpod",
        "switch",
    ] {
        assert!(text.contains(p), "{p} missing from\n{text}");
    }
    assert!(text.contains("atsw_oversubscription"));
    let o = fabricsim(&["topo", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let hpn = v
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "hpn")
        .unwrap();
    let segments = hpn["params"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "segments")
        .unwrap();
    assert_eq!(segments["default"], "15");
}

#[test]
fn bad_input_exits_2_with_a_message() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["topo", "describe", "--preset", "torus"],
            "'torus' for '--preset <PRESET>'\n  [possible values: fat-tree, leaf-spine",
        ),
        (
            &["topo", "describe", "--preset", "fat-tree", "--set", "kk=4"],
            "preset `fat-tree` has no parameter `kk`",
        ),
        (
            &["topo", "describe", "--preset", "fat-tree", "--set", "k"],
            "`k` is not a parameter setting",
        ),
        (
            &["topo", "describe", "--preset", "fat-tree", "--set", "k=5"],
            "fat-tree: k=5 is not accepted: expected an even number",
        ),
        (
            &["topo", "describe", "--file", "/nonexistent/fabric.json"],
            "/nonexistent/fabric.json: No such file",
        ),
        (
            &["topo", "describe", "--preset", "hpn", "--file", "x.json"],
            "cannot be used with",
        ),
        (&["topo", "frobnicate"], "unrecognized subcommand"),
    ];
    for (args, expected) in cases {
        let o = fabricsim(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(expected),
            "{args:?}: `{}` should contain `{expected}`",
            stderr(&o)
        );
        assert!(o.stdout.is_empty(), "{args:?} printed to stdout");
    }
}

#[test]
fn a_malformed_file_names_path_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.json");
    std::fs::write(
        &path,
        "{\n  \"format\": \"fabricsim-topology\",\n  \"version\": 1,\n  oops\n}\n",
    )
    .unwrap();
    let o = fabricsim(&["topo", "describe", "--file", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("broken.json: line 4, column 3: key must be a string"),
        "{e}"
    );
}

#[test]
fn export_then_describe_file_gives_the_same_figures() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zone.json");
    let p = path.to_str().unwrap();
    let args = [
        "--preset",
        "meta-ai-zone",
        "--set",
        "racks=8",
        "--set",
        "uplinks=1:1.125",
    ];
    let o = fabricsim(&[&["topo", "export", "--format", "json", "-o", p][..], &args].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let from_file = fabricsim(&["topo", "describe", "--json", "--file", p]);
    let from_preset = fabricsim(&[&["topo", "describe", "--json"][..], &args].concat());
    assert!(from_file.status.success(), "{}", stderr(&from_file));
    assert_eq!(stdout(&from_file), stdout(&from_preset));
    // And the file exports back byte for byte.
    let again = fabricsim(&["topo", "export", "--file", p]);
    assert_eq!(again.stdout, std::fs::read(&path).unwrap());
}

#[test]
fn dot_export_of_a_small_fabric() {
    let o = fabricsim(&[
        "topo",
        "export",
        "--format",
        "dot",
        "--preset",
        "leaf-spine",
        "--set",
        "k=4",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dot = stdout(&o);
    assert!(dot.starts_with("graph \"leaf-spine\" {"), "{dot}");
    assert!(
        dot.contains("\"leaf0\" -- \"spine0\" [label=\"400Gbps\"];"),
        "{dot}"
    );
    assert!(dot.contains("subgraph \"cluster_host0\""), "{dot}");
    assert!(dot.trim_end().ends_with('}'));
}

#[test]
fn failures_leave_no_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("big.dot");
    // Too large to draw: refused as bad input, nothing written.
    let o = fabricsim(&[
        "topo",
        "export",
        "--format",
        "dot",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("DOT output is for fabrics of at most 5000 nodes"),
        "{}",
        stderr(&o)
    );
    // A bad preset: nothing written either.
    let o = fabricsim(&[
        "topo",
        "export",
        "--preset",
        "nope",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no file, no temporary left behind"
    );
    // An unwritable destination is an I/O failure (exit 1), not bad input.
    let o = fabricsim(&[
        "topo",
        "export",
        "--preset",
        "leaf-spine",
        "-o",
        "/nonexistent-dir/x.json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!Path::new("/nonexistent-dir/x.json").exists());
}

/// `-o` writes through a symbolic link and leaves it a link (it used to replace the link with
/// a file), and writes to a device in place.
#[cfg(unix)]
#[test]
fn export_writes_through_a_symlink_and_into_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("zone.json");
    let link = dir.path().join("link.json");
    std::fs::write(&target, "old").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let args = [
        "topo",
        "export",
        "--preset",
        "leaf-spine",
        "--set",
        "k=4",
        "-o",
    ];
    let o = fabricsim(&[&args[..], &[link.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&target)
        .unwrap()
        .contains("fabricsim-topology"));
    let o = fabricsim(&[&args[..], &["/dev/null"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
}

/// A name from the command line is echoed in an error with its control characters escaped, so
/// it cannot drive the terminal.
#[test]
fn errors_escape_control_characters() {
    let o = fabricsim(&["topo", "describe", "--file", "\u{1b}[31mred.json"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        !e.contains('\u{1b}') && e.contains("\\u{1b}[31mred"),
        "{e:?}"
    );
    // A value the argument parser refuses is shown without its escape sequences.
    let o = fabricsim(&["topo", "describe", "--preset", "\u{1b}[31mred"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!stderr(&o).contains('\u{1b}'), "{:?}", stderr(&o));
    // An error that echoes a huge input is cut.
    let huge = "x".repeat(100_000);
    let o = fabricsim(&["topo", "describe", "--preset", &huge]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.len() < 6000 && e.contains("more characters)"),
        "{}",
        e.len()
    );
}
