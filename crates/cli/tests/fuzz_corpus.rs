//! The fuzz targets' seed corpora (`fuzz/corpus/<target>/`) through the same parsers on stable:
//! each seed is a valid input, so each must parse (and resolve), and the shipped examples with
//! them. `cargo +nightly fuzz run <target>` mutates these seeds (docs/reliability.md#fuzzing).

use std::path::{Path, PathBuf};

use fabricsim_controller::model::{DemandSet, FabricSpec, JobSpec, LinkEvent};
use fabricsim_topology::{presets, Bandwidth, Bytes, Nanos, Topology};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn seeds(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = repo().join("fuzz/corpus").join(target);
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no seeds for {target}");
    out
}

fn text(p: &Path, bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap_or_else(|_| panic!("{} is not UTF-8", p.display()))
}

fn fabric() -> Topology {
    presets::build("leaf-spine", &[("k".into(), "4".into())]).unwrap()
}

#[test]
fn topology_json_seeds_parse() {
    for (p, b) in seeds("topology_json") {
        fabricsim_topology::format::read_json(&text(&p, &b))
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
}

#[test]
fn scenario_seeds_and_every_shipped_scenario_and_plan_parse() {
    let mut files = seeds("scenario_toml");
    for dir in ["scenarios", "validation/scenarios"] {
        for e in std::fs::read_dir(repo().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                let b = std::fs::read(&p).unwrap();
                files.push((p, b));
            }
        }
    }
    for (p, b) in files {
        let t = text(&p, &b);
        // A cluster plan (`fabricsim cluster`) is a scenario with a [cluster] table.
        let parsed = if t.contains("\n[cluster]") {
            fabricsim_timeline::Plan::parse(&t, &p).map(|_| ())
        } else {
            fabricsim_cluster::scenario::Scenario::parse(&t, &p).map(|_| ())
        };
        parsed.unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
}

#[test]
fn chakra_seeds_and_every_shipped_trace_decode() {
    let mut files = seeds("chakra_et");
    let mut stack = vec![repo().join("tests/data/astra_examples")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "et") {
                let b = std::fs::read(&p).unwrap();
                files.push((p, b));
            }
        }
    }
    assert!(files.len() > 10);
    for (p, b) in files {
        fabricsim_workload::chakra::decode(b, &p).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Every seed and broken copies of a shipped trace, read whole and through the import's view
/// of the schema: what reads whole, the view reads too, the same nodes; nothing panics.
#[test]
fn chakra_seeds_read_alike_whole_and_through_the_view() {
    use fabricsim_workload::chakra::{count_view_nodes, decode};
    let mut inputs = seeds("chakra_et");
    let shipped =
        repo().join("tests/data/astra_examples/generated/stg_gpt_dp4_tp2_pp1/workload.0.et");
    let whole = std::fs::read(&shipped).unwrap();
    for at in (1..whole.len()).step_by(whole.len() / 97 + 1) {
        inputs.push((shipped.clone(), whole[..at].to_vec()));
        let mut flipped = whole.clone();
        flipped[at] ^= 0xa5;
        inputs.push((shipped.clone(), flipped));
    }
    inputs.push((shipped.clone(), whole));
    let mut read = 0;
    for (p, b) in inputs {
        let viewed = count_view_nodes(b.clone(), &p);
        if let Ok(trace) = decode(b, &p) {
            assert_eq!(viewed.ok(), Some(trace.nodes.len()), "{}", p.display());
            read += 1;
        }
    }
    assert!(read > 1);
}

#[test]
fn flows_and_demand_csv_seeds_parse() {
    let topo = fabric();
    for (p, b) in seeds("flows_csv") {
        fabricsim_netsim::flows_file::read_flows_csv(&text(&p, &b), &topo)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
    for (p, b) in seeds("demand_csv") {
        fabricsim_te::TrafficMatrix::read_csv(&text(&p, &b), &topo)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
}

#[test]
fn unit_seeds_parse_as_some_unit() {
    for (p, b) in seeds("units") {
        let t = text(&p, &b);
        assert!(
            t.parse::<Bytes>().is_ok()
                || t.parse::<Bandwidth>().is_ok()
                || t.parse::<Nanos>().is_ok(),
            "{}: {t:?} is no unit",
            p.display()
        );
    }
}

#[test]
fn api_body_seeds_parse_and_resolve() {
    let topo = fabric();
    for (p, b) in seeds("api_bodies") {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let ok = match name.as_str() {
            "demands.json" => serde_json::from_slice::<DemandSet>(&b)
                .map_err(|e| e.to_string())
                .and_then(|d| d.resolve(&topo).map(drop)),
            "job.json" => serde_json::from_slice::<JobSpec>(&b)
                .map_err(|e| e.to_string())
                .and_then(|j| j.resolve(&topo).map(drop)),
            "event.json" => serde_json::from_slice::<LinkEvent>(&b)
                .map_err(|e| e.to_string())
                .and_then(|e| e.resolve(&topo).map(drop)),
            "topology.json" => serde_json::from_slice::<FabricSpec>(&b)
                .map(drop)
                .map_err(|e| e.to_string()),
            other => panic!("unexpected seed {other}"),
        };
        ok.unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
}
