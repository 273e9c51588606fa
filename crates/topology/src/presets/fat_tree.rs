//! Textbook Clos fabrics: the k-ary fat-tree and the two-level leaf-spine.
//!
//! Hosts default to one GPU and one NIC, the endpoint of the textbook counts
//! (Al-Fares et al., SIGCOMM 2008: k^3/4 hosts and 5k^2/4 switches). With `gpus_per_host = g`
//! every edge/leaf port still takes one NIC, and the `g` NICs of a host share one switch.

use crate::builder::TopologyBuilder;
use crate::ids::NodeId;
use crate::presets::host::{add_host, check_size, HostSpec};
use crate::presets::params::{ParamSpec, Params, PresetError};

pub const FAT_TREE_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "k",
        default: "16",
        help: "switch radix, even, 2..=128",
    },
    ParamSpec {
        name: "gpus_per_host",
        default: "1",
        help: "GPUs (and NICs) per host; must divide k/2",
    },
    ParamSpec {
        name: "link_speed",
        default: "400Gbps",
        help: "speed of every network link, NIC links included",
    },
];

pub const LEAF_SPINE_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "k",
        default: "32",
        help: "switch radix, even, 2..=256",
    },
    ParamSpec {
        name: "gpus_per_host",
        default: "1",
        help: "GPUs (and NICs) per host; must divide k/2",
    },
    ParamSpec {
        name: "link_speed",
        default: "400Gbps",
        help: "speed of every network link, NIC links included",
    },
];

fn gpus_per_host(p: &Params, ports: u32) -> Result<u32, PresetError> {
    let g = p.int("gpus_per_host", 1..=16)?;
    if !ports.is_multiple_of(g) {
        return Err(p.bad(
            "gpus_per_host",
            format!("expected a divisor of the {ports} host ports of an edge switch"),
        ));
    }
    Ok(g)
}

/// Hangs `ports / g` hosts below `edge`, numbering them from `*next_host`.
fn hosts_below(
    b: &mut TopologyBuilder,
    edge: NodeId,
    ports: u32,
    spec: &HostSpec,
    next_host: &mut u64,
    p: &Params,
) -> Result<(), PresetError> {
    let (speed, lat) = (p.bandwidth("link_speed")?, p.latency("link_latency")?);
    for _ in 0..ports / spec.gpus {
        let host = add_host(b, *next_host, spec);
        *next_host += 1;
        for &nic in &host.nics {
            b.connect(nic, edge, speed, lat);
        }
    }
    Ok(())
}

pub fn build_fat_tree(p: &Params) -> Result<TopologyBuilder, PresetError> {
    let k = p.even("k", 2..=128)?;
    let half = k / 2;
    let g = gpus_per_host(p, half)?;
    check_size(p, "k", u64::from(k).pow(3) / 4)?;
    let spec = HostSpec::from_params(p, g)?;
    let (speed, lat) = (p.bandwidth("link_speed")?, p.latency("link_latency")?);
    let mut b = TopologyBuilder::new("fat-tree", vec!["edge".into(), "agg".into(), "core".into()]);
    let cores: Vec<NodeId> = (0..half * half)
        .map(|c| b.add_switch(format!("core{c}"), 3, 0))
        .collect();
    let mut next_host = 0;
    for pod in 0..k {
        let aggs: Vec<NodeId> = (0..half)
            .map(|a| b.add_switch(format!("pod{pod}/agg{a}"), 2, 0))
            .collect();
        // Aggregation switch `a` of every pod takes core group `a`: cores a*k/2 .. (a+1)*k/2.
        for (a, &agg) in aggs.iter().enumerate() {
            for c in 0..half as usize {
                b.connect(agg, cores[a * half as usize + c], speed, lat);
            }
        }
        for e in 0..half {
            let edge = b.add_switch(format!("pod{pod}/edge{e}"), 1, 0);
            for &agg in &aggs {
                b.connect(edge, agg, speed, lat);
            }
            hosts_below(&mut b, edge, half, &spec, &mut next_host, p)?;
        }
    }
    Ok(b)
}

pub fn build_leaf_spine(p: &Params) -> Result<TopologyBuilder, PresetError> {
    let k = p.even("k", 2..=256)?;
    let half = k / 2;
    let g = gpus_per_host(p, half)?;
    check_size(p, "k", u64::from(k).pow(2) / 2)?;
    let spec = HostSpec::from_params(p, g)?;
    let (speed, lat) = (p.bandwidth("link_speed")?, p.latency("link_latency")?);
    let mut b = TopologyBuilder::new("leaf-spine", vec!["leaf".into(), "spine".into()]);
    let spines: Vec<NodeId> = (0..half)
        .map(|s| b.add_switch(format!("spine{s}"), 2, 0))
        .collect();
    let mut next_host = 0;
    for l in 0..k {
        let leaf = b.add_switch(format!("leaf{l}"), 1, 0);
        for &spine in &spines {
            b.connect(leaf, spine, speed, lat);
        }
        hosts_below(&mut b, leaf, half, &spec, &mut next_host, p)?;
    }
    Ok(b)
}
