//! Routing and simulating a permutation of 1 GiB flows under ECMP, and under spray (each flow
//! spread over every equal-cost path: hundreds of weighted links a flow, the hardest case for
//! the incremental re-solve and its check).
//! `cargo bench -p fabricsim-netsim --bench engine`; figures in docs/performance.md.

use criterion::{criterion_group, criterion_main, Criterion};
use fabricsim_netsim::{FlowEngine, Network};
use fabricsim_routing::balance::{pairs, Pattern};
use fabricsim_routing::{FlowKey, HashConfig, Policy, Router};
use fabricsim_topology::{presets, Topology};

fn permutation(topo: &Topology, policy: Policy) -> usize {
    let mut net = Network::new(
        topo,
        Router::new(
            topo,
            policy,
            HashConfig {
                seed: 1,
                polarized: false,
                functions: [None; 3],
                ..HashConfig::default()
            },
        ),
        FlowEngine::new(topo),
    );
    for (s, d) in pairs(Pattern::Permutation, topo.gpus(), 1) {
        net.submit(FlowKey::connection(s, d, 0, 1), 1 << 30, None)
            .unwrap();
    }
    let mut done = Vec::new();
    net.run_to_end(&mut done);
    done.len()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("permutation-ecmp");
    group.sample_size(10);
    let zone = presets::build("meta-ai-zone", &[]).unwrap();
    group.bench_function("meta-ai-zone 3,072 flows", |b| {
        b.iter(|| permutation(&zone, Policy::Ecmp))
    });
    let cluster = presets::build("meta-cluster", &[]).unwrap();
    group.bench_function("meta-cluster 24,576 flows", |b| {
        b.iter(|| permutation(&cluster, Policy::Ecmp))
    });
    group.finish();
    let mut group = c.benchmark_group("permutation-spray");
    group.sample_size(10);
    group.bench_function("meta-ai-zone 3,072 flows", |b| {
        b.iter(|| permutation(&zone, Policy::Spray))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
