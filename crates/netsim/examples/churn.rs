//! Flow churn: `N` flows between random GPU pairs of the default `meta-cluster`, arriving as a
//! Poisson process, sizes log-uniform from 64 KiB to 16 MiB, under ECMP.
//! `cargo run --release -p fabricsim-netsim --example churn -- [N] [mean gap ns]`.

use fabricsim_netsim::{Engine, FlowEngine, Network};
use fabricsim_routing::key::mix;
use fabricsim_routing::{FlowKey, HashConfig, Policy, Router};
use fabricsim_topology::{presets, Nanos};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let gap: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20.0);
    let topo = presets::build("meta-cluster", &[]).expect("the default cluster");
    let gpus = topo.gpus();
    let mut net = Network::new(
        &topo,
        Router::new(
            &topo,
            Policy::Ecmp,
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
    let (mut rng, mut t) = (42u64, 0f64);
    let mut uniform = || {
        rng = mix(rng);
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut done = Vec::new();
    for _ in 0..n {
        t += -gap * (1.0 - uniform()).ln();
        let src = gpus[(uniform() * gpus.len() as f64) as usize];
        let mut dst = gpus[(uniform() * gpus.len() as f64) as usize];
        if dst == src {
            dst = gpus[(src.0 as usize + 8) % gpus.len()];
        }
        let bytes = (65_536.0 * 256f64.powf(uniform())) as u64;
        net.advance(Nanos(t as u64), &mut done);
        net.submit(FlowKey::connection(src, dst, 0, 1), bytes, None)
            .expect("a route");
    }
    net.run_to_end(&mut done);
    let wall = started.elapsed().as_secs_f64();
    let e = net.engine();
    println!(
        "{n} flows, {} completed, simulated {}, {} solves, {} flows re-solved, wall {wall:.2} s, {:.0} completions/s",
        done.len(),
        done.iter().map(|c| c.at).max().unwrap_or_default(),
        e.solves(),
        e.solved_flows(),
        done.len() as f64 / wall
    );
    let _ = e.next_event();
}
