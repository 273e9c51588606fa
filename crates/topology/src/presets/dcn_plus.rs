//! Alibaba DCN+, the baseline of the HPN paper (Qian et al., SIGCOMM 2024):
//! a 3-tier full-bisection Clos with dual-ToR.
//!
//! A segment is 16 hosts (128 GPUs) under one ToR pair; every NIC's port 0 goes to ToR 0 and
//! port 1 to ToR 1 (not rail-optimized). A pod is 4 segments under 8 aggregation switches.
//! Every tier is non-blocking: a ToR has as much uplink as NIC-facing capacity, spread evenly
//! over the pod's aggregation switches, and each aggregation switch sends one cable to each of
//! the cores in its group (aggregation switch `a` of every pod uses core group `a`). The
//! default 30 pods give 15,360 GPUs, the size of one HPN pod, for side-by-side comparisons.

use crate::builder::TopologyBuilder;
use crate::ids::NodeId;
use crate::presets::host::{add_host, check_size, HostSpec};
use crate::presets::params::{ParamSpec, Params, PresetError};

pub const DCN_PLUS_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "pods",
        default: "30",
        help: "pods, 1..=256",
    },
    ParamSpec {
        name: "segments_per_pod",
        default: "4",
        help: "ToR pairs per pod, 1..=64",
    },
    ParamSpec {
        name: "hosts_per_segment",
        default: "16",
        help: "hosts under one ToR pair, 1..=128",
    },
    ParamSpec {
        name: "gpus_per_host",
        default: "8",
        help: "GPUs (one dual-port NIC each) per host, 1..=16",
    },
    ParamSpec {
        name: "aggs_per_pod",
        default: "8",
        help: "aggregation switches per pod, 1..=64",
    },
    ParamSpec {
        name: "nic_port_speed",
        default: "200Gbps",
        help: "speed of each of the NIC's two ports",
    },
    ParamSpec {
        name: "link_speed",
        default: "400Gbps",
        help: "ToR–aggregation and aggregation–core link speed",
    },
];

pub fn build_dcn_plus(p: &Params) -> Result<TopologyBuilder, PresetError> {
    let pods = p.int("pods", 1..=256)?;
    let segments = p.int("segments_per_pod", 1..=64)?;
    let hosts = p.int("hosts_per_segment", 1..=128)?;
    let gpus = p.int("gpus_per_host", 1..=16)?;
    let aggs_per_pod = p.int("aggs_per_pod", 1..=64)?;
    let (port_speed, link_speed) = (p.bandwidth("nic_port_speed")?, p.bandwidth("link_speed")?);
    let latency = p.latency("link_latency")?;
    check_size(
        p,
        "pods",
        u64::from(pods) * u64::from(segments) * u64::from(hosts) * u64::from(gpus),
    )?;

    // Full bisection: a ToR's uplink capacity equals its NIC-facing capacity.
    let tor_down = u64::from(hosts) * u64::from(gpus) * port_speed.0;
    if tor_down % link_speed.0 != 0 || (tor_down / link_speed.0) % u64::from(aggs_per_pod) != 0 {
        return Err(p.bad(
            "aggs_per_pod",
            format!(
                "a ToR's {} of host ports must split into whole {link_speed} uplinks, an equal number to each aggregation switch",
                crate::units::Bandwidth(tor_down)
            ),
        ));
    }
    let tor_to_agg = (tor_down / link_speed.0 / u64::from(aggs_per_pod)) as u32;
    // An aggregation switch's down cables, mirrored upward one per core of its group.
    let cores_per_group = segments * 2 * tor_to_agg;

    let mut b = TopologyBuilder::new("dcn-plus", vec!["tor".into(), "agg".into(), "core".into()]);
    let cores: Vec<Vec<NodeId>> = (0..aggs_per_pod)
        .map(|g| {
            (0..cores_per_group)
                .map(|c| b.add_switch(format!("core{g}/{c}"), 3, 0))
                .collect()
        })
        .collect();
    let spec = HostSpec::from_params(p, gpus)?;
    let mut next_host = 0;
    for pod in 0..pods {
        let aggs: Vec<NodeId> = (0..aggs_per_pod)
            .map(|a| b.add_switch(format!("pod{pod}/agg{a}"), 2, 0))
            .collect();
        for (a, &agg) in aggs.iter().enumerate() {
            for &core in &cores[a] {
                b.connect(agg, core, link_speed, latency);
            }
        }
        for s in 0..segments {
            let pair: Vec<NodeId> = (0..2)
                .map(|k| b.add_switch(format!("pod{pod}/seg{s}/tor{k}"), 1, 0))
                .collect();
            for &tor in &pair {
                for &agg in &aggs {
                    for _ in 0..tor_to_agg {
                        b.connect(tor, agg, link_speed, latency);
                    }
                }
            }
            for _ in 0..hosts {
                let host = add_host(&mut b, next_host, &spec);
                next_host += 1;
                for &nic in &host.nics {
                    for &tor in &pair {
                        b.connect(nic, tor, port_speed, latency);
                    }
                }
            }
        }
    }
    Ok(b)
}
