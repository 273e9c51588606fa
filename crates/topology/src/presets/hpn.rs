//! Alibaba HPN 7.0 pod (Qian et al., SIGCOMM 2024).
//!
//! A host has 8 GPUs and 8 NICs of 2 × 200G, one NIC per GPU (a rail). A **segment** is
//! rail-optimized: NIC `r` of each of its 128 hosts goes to rail `r`'s ToR pair, port 0 to one
//! ToR and port 1 to the other (non-stacked **dual-ToR**). A ToR has 128 × 200G down and
//! 60 × 400G up (1.067:1). Tier 2 is **dual-plane**: the ToRs that take port 0 form plane 0,
//! and their uplinks go only to plane 0's 60 aggregation switches, one cable to each; traffic
//! that leaves on port 0 stays in plane 0 end to end. 15 segments make a 15,360-GPU pod.
//!
//! The switches: fabricsim lets each aggregation switch take at most `agg_down_ports` ToR
//! cables (120: a 128 × 400G chip minus the 8 uplinks toward the core at 15:1). That limit is
//! why dual-plane matters: with one plane each aggregation switch must reach both ToRs of
//! every pair, so a pod holds only 7 segments.
//!
//! Switching the features off:
//! - `dual_tor=false`: each rail has one ToR that takes both ports of the NIC and the pair's
//!   120 uplinks (same capacity, one box: no ToR redundancy);
//! - `dual_plane=false`: one plane of 60 aggregation switches that every ToR reaches.
//!
//! The core tier between pods is not built: a preset is one pod.

use crate::builder::TopologyBuilder;
use crate::ids::NodeId;
use crate::presets::host::{add_host, check_size, HostSpec};
use crate::presets::params::{ParamSpec, Params, PresetError};

pub const HPN_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "segments",
        default: "15",
        help: "segments per pod, 1..=64 (at most 7 with dual_plane=false)",
    },
    ParamSpec {
        name: "hosts_per_segment",
        default: "128",
        help: "hosts per segment, 1..=256",
    },
    ParamSpec {
        name: "gpus_per_host",
        default: "8",
        help: "GPUs per host = rails per segment, 1..=16",
    },
    ParamSpec {
        name: "dual_tor",
        default: "true",
        help: "each NIC's two ports go to two different ToRs",
    },
    ParamSpec {
        name: "dual_plane",
        default: "true",
        help: "tier 2 split into two planes, by NIC port",
    },
    ParamSpec {
        name: "tor_uplinks",
        default: "60",
        help: "uplinks per ToR = aggregation switches per plane, 1..=256",
    },
    ParamSpec {
        name: "agg_down_ports",
        default: "120",
        help: "ToR-facing ports of an aggregation switch",
    },
    ParamSpec {
        name: "nic_port_speed",
        default: "200Gbps",
        help: "speed of each of the NIC's two ports",
    },
    ParamSpec {
        name: "link_speed",
        default: "400Gbps",
        help: "ToR–aggregation link speed",
    },
];

pub fn build_hpn(p: &Params) -> Result<TopologyBuilder, PresetError> {
    let segments = p.int("segments", 1..=64)?;
    let hosts = p.int("hosts_per_segment", 1..=256)?;
    let rails = p.int("gpus_per_host", 1..=16)?;
    let (dual_tor, dual_plane) = (p.flag("dual_tor")?, p.flag("dual_plane")?);
    let aggs_per_plane = p.int("tor_uplinks", 1..=256)?;
    let agg_ports = p.int("agg_down_ports", 1..=4096)?;
    let (port_speed, link_speed) = (p.bandwidth("nic_port_speed")?, p.bandwidth("link_speed")?);
    let latency = p.latency("link_latency")?;
    check_size(
        p,
        "segments",
        u64::from(segments) * u64::from(hosts) * u64::from(rails),
    )?;

    let tors_per_rail: u32 = if dual_tor { 2 } else { 1 };
    let planes: u32 = if dual_plane { 2 } else { 1 };
    // Cables one aggregation switch takes from each rail of each segment: one per plane served,
    // so two when a single plane carries both NIC ports' uplinks.
    let per_agg = segments * rails * if dual_plane { 1 } else { 2 };
    if per_agg > agg_ports {
        return Err(p.bad(
            "segments",
            format!(
                "{segments} segments need {per_agg} ToR cables on each aggregation switch, more than its \
                 {agg_ports} agg_down_ports; use at most {} segments{}",
                segments * agg_ports / per_agg,
                if dual_plane { "" } else { " without dual-plane" }
            ),
        ));
    }

    let mut b = TopologyBuilder::new("hpn", vec!["tor".into(), "agg".into()]);
    let aggs: Vec<Vec<NodeId>> = (0..planes)
        .map(|pl| {
            (0..aggs_per_plane)
                .map(|a| b.add_switch(format!("plane{pl}/agg{a}"), 2, pl as u8))
                .collect()
        })
        .collect();
    let spec = HostSpec::from_params(p, rails)?;
    let mut next_host = 0;
    for s in 0..segments {
        // tors[rail][k]: ToR k of the rail's pair (one ToR without dual-ToR).
        let mut tors = Vec::with_capacity(rails as usize);
        for r in 0..rails {
            let pair: Vec<NodeId> = (0..tors_per_rail)
                .map(|k| {
                    let plane = if dual_plane && dual_tor { k } else { 0 };
                    let tor = b.add_switch(format!("seg{s}/rail{r}/tor{k}"), 1, plane as u8);
                    // With dual-ToR each ToR reaches its own plane; a lone ToR reaches all planes.
                    let reach: Vec<u32> = if dual_tor {
                        vec![plane]
                    } else {
                        (0..planes).collect()
                    };
                    let cables_per_agg = if !dual_tor && !dual_plane { 2 } else { 1 };
                    for pl in reach {
                        for &agg in &aggs[pl as usize] {
                            for _ in 0..cables_per_agg {
                                b.connect(tor, agg, link_speed, latency);
                            }
                        }
                    }
                    tor
                })
                .collect();
            tors.push(pair);
        }
        for _ in 0..hosts {
            let host = add_host(&mut b, next_host, &spec);
            next_host += 1;
            for (r, &nic) in host.nics.iter().enumerate() {
                for port in 0..2 {
                    let tor = tors[r][if dual_tor { port } else { 0 }];
                    b.connect(nic, tor, port_speed, latency);
                }
            }
        }
    }
    Ok(b)
}
