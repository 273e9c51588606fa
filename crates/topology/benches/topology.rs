//! Building, validating and describing the default fabrics.
//!
//! `cargo bench -p fabricsim-topology`; figures are in docs/performance.md.

use criterion::{criterion_group, criterion_main, Criterion};
use fabricsim_topology::figures::FabricFigures;
use fabricsim_topology::format::{read_json, write_json};
use fabricsim_topology::presets;

fn build_and_validate(c: &mut Criterion) {
    let mut group = c.benchmark_group("build+validate");
    group.sample_size(20);
    for name in ["meta-cluster", "hpn", "dcn-plus"] {
        group.bench_function(name, |b| b.iter(|| presets::build(name, &[]).unwrap()));
    }
    group.bench_function("fat-tree k=48", |b| {
        b.iter(|| presets::build("fat-tree", &[("k".into(), "48".into())]).unwrap())
    });
    group.finish();
}

fn describe(c: &mut Criterion) {
    let topo = presets::build("meta-cluster", &[]).unwrap();
    let mut group = c.benchmark_group("figures");
    group.sample_size(20);
    group.bench_function("meta-cluster", |b| b.iter(|| FabricFigures::of(&topo)));
    group.finish();
}

fn json(c: &mut Criterion) {
    let topo = presets::build("meta-cluster", &[]).unwrap();
    let mut text = Vec::new();
    write_json(&topo, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let mut group = c.benchmark_group("json");
    group.sample_size(10);
    group.bench_function("write meta-cluster", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(text.len());
            write_json(&topo, &mut out).unwrap();
            out
        })
    });
    group.bench_function("read meta-cluster", |b| {
        b.iter(|| read_json(&text).unwrap())
    });
    group.finish();
}

criterion_group!(benches, build_and_validate, describe, json);
criterion_main!(benches);
