//! A flows CSV (`fabricsim flows --flows`), against a small fabric.
#![no_main]
use std::sync::OnceLock;

use fabricsim_topology::{presets, Topology};

fn fabric() -> &'static Topology {
    static TOPO: OnceLock<Topology> = OnceLock::new();
    TOPO.get_or_init(|| presets::build("leaf-spine", &[("k".into(), "4".into())]).unwrap())
}

libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = fabricsim_netsim::flows_file::read_flows_csv(text, fabric());
});
