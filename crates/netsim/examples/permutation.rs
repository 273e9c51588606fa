//! A random permutation of 1 GiB flows over a preset, to profile the flow engine:
//! `cargo run --release -p fabricsim-netsim --example permutation -- meta-cluster ecmp [zones]`.

use fabricsim_netsim::{Engine, FlowEngine, Network};
use fabricsim_routing::balance::{pairs, Pattern};
use fabricsim_routing::{FlowKey, HashConfig, Policy, Router};
use fabricsim_topology::presets;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let preset = args.get(1).map_or("meta-cluster", String::as_str);
    let policy = Policy::parse(args.get(2).map_or("ecmp", String::as_str)).expect("a policy");
    let overrides: Vec<(String, String)> = args
        .get(3)
        .map(|z| vec![("zones".to_string(), z.clone())])
        .unwrap_or_default();
    let topo = presets::build(preset, &overrides).expect("a preset");
    let mut net = Network::new(
        &topo,
        Router::new(
            &topo,
            policy,
            HashConfig {
                seed: 1,
                polarized: false,
                functions: [None; 3],
                ..HashConfig::default()
            },
        ),
        FlowEngine::new(&topo),
    );
    let started = std::time::Instant::now();
    let pairs = pairs(Pattern::Permutation, topo.gpus(), 1);
    for &(s, d) in &pairs {
        net.submit(FlowKey::connection(s, d, 0, 1), 1 << 30, None)
            .expect("a route");
    }
    let routed = started.elapsed();
    let mut done = Vec::new();
    net.run_to_end(&mut done);
    let makespan = done.iter().map(|c| c.at).max().unwrap_or_default();
    let e = net.engine();
    println!(
        "{} flows, makespan {makespan}, {} solves, {} flows re-solved, routing {:.2?}, total {:.2?}",
        pairs.len(),
        e.solves(),
        e.solved_flows(),
        routed,
        started.elapsed()
    );
    let _ = e.next_event();
}
