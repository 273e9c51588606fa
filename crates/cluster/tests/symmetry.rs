//! One rank per orbit: a symmetric run reports exactly what the full simulation does, with
//! fewer engine flows; what breaks symmetry is named, and the run keeps every rank.

use std::path::Path;

use fabricsim_cluster::orchestrator::{RunOptions, RunOutput, SymmetryUse};
use fabricsim_cluster::scenario::Scenario;

mod common;
use common::reports;

/// Two Llama jobs on an 8-rack AI Zone: pipeline, FSDP and tensor parallelism, packed.
fn scenario(routing: &str, tp: u32, extra: &str) -> Scenario {
    let dp = 16 / tp;
    let text = format!(
        r#"
[fabric]
preset = "meta-ai-zone"
set = ["racks=8"]

[routing]
policy = "{routing}"

[[job]]
name = "a"
placement = "packed"

[job.llm]
model = "llama3-8b"
layers = 4
tp = {tp}
sp = true
pp = 2
dp = {dp}
seq = 2048
global_batch = {batch}

[[job]]
name = "b"
placement = "packed"

[job.llm]
model = "llama3-8b"
layers = 2
tp = 8
sp = true
dp = 4
seq = 2048
global_batch = 8
{extra}
"#,
        batch = 2 * dp
    );
    Scenario::parse(&text, Path::new("symmetry-test.toml")).unwrap()
}

fn run(s: &Scenario, full: bool) -> RunOutput {
    let options = RunOptions {
        full_detail: full.then(|| "asked".to_string()),
        ..RunOptions::default()
    };
    common::run(s, options)
}

#[test]
fn a_symmetric_run_reports_what_the_full_one_does() {
    let s = scenario("spray", 8, "");
    let (sym, full) = (run(&s, true), run(&s, false));
    assert_eq!(full.symmetry, SymmetryUse::Applied { order: 8 });
    assert_eq!(sym.symmetry, SymmetryUse::Off("asked".into()));
    assert_eq!(reports(&sym), reports(&full));
    assert_eq!(sym.end, full.end);
    // An eighth of the engine flows, and the same bytes on every link.
    assert_eq!(full.flows * 8, sym.flows);
    assert_eq!(sym.links.len(), full.links.len());
    for (a, b) in sym.links.iter().zip(&full.links) {
        assert_eq!(a.link, b.link);
        assert!(
            (a.bytes - b.bytes).abs() <= 1e-9 * a.bytes + 1.0,
            "{a:?} vs {b:?}"
        );
    }
}

#[test]
fn hashing_and_failures_keep_every_rank_and_say_why() {
    let ecmp = run(&scenario("ecmp", 8, ""), false);
    match ecmp.symmetry {
        SymmetryUse::Off(why) => assert!(why.contains("ecmp"), "{why}"),
        other => panic!("{other:?}"),
    }
    // With TP 4, GPU 4 of a server holds the next pipeline stage: no turn maps ranks onto
    // ranks that run the same program.
    let tp4 = run(&scenario("spray", 4, ""), false);
    assert!(
        matches!(tp4.symmetry, SymmetryUse::Off(ref why) if why.contains("different programs"))
    );
    let down =
        "[[event]]\nat = \"1ms\"\ntarget = \"zone0/rack0/rtsw--zone0/ctsw0\"\nstate = \"down\"\n";
    let failed = run(&scenario("spray", 8, down), false);
    assert!(matches!(failed.symmetry, SymmetryUse::Off(ref why) if why.contains("fabric changes")));
}
