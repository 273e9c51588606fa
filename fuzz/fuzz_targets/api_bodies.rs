//! The controller API's request bodies (`PUT /demands/{id}`, `PUT /jobs/{id}`, `POST /events`,
//! `POST /topology`), parsed and resolved against a small fabric as the API does.
#![no_main]
use std::sync::OnceLock;

use fabricsim_controller::model::{DemandSet, FabricSpec, JobSpec, LinkEvent};
use fabricsim_topology::{presets, Topology};

fn fabric() -> &'static Topology {
    static TOPO: OnceLock<Topology> = OnceLock::new();
    TOPO.get_or_init(|| presets::build("leaf-spine", &[("k".into(), "4".into())]).unwrap())
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(d) = serde_json::from_slice::<DemandSet>(data) {
        let _ = d.resolve(fabric());
    }
    if let Ok(j) = serde_json::from_slice::<JobSpec>(data) {
        let _ = j.resolve(fabric());
    }
    if let Ok(e) = serde_json::from_slice::<LinkEvent>(data) {
        let _ = e.resolve(fabric());
    }
    // Parsed only: building a preset allocates what its parameters ask, within its limits.
    let _ = serde_json::from_slice::<FabricSpec>(data);
});
