//! NVIDIA DGX H100 SuperPOD compute fabric (NVIDIA's DGX SuperPOD reference architecture),
//! rail-optimized.
//!
//! A scalable unit (SU) is 32 nodes of 8 GPUs with one leaf per rail: NIC `r` of every node of
//! the SU goes to the SU's rail-`r` leaf. Leaves are non-blocking (as many uplinks as nodes)
//! and spread their uplinks evenly over all spines; spines have `spine_radix` ports, so
//! 1 / 2 / 4 SUs have 8 / 16 / 32 leaves and 4 / 8 / 16 spines, as in the reference design.

use crate::builder::TopologyBuilder;
use crate::ids::NodeId;
use crate::presets::host::{add_host, check_size, HostSpec};
use crate::presets::params::{ParamSpec, Params, PresetError};

pub const SUPERPOD_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "sus",
        default: "4",
        help: "scalable units, 1..=64",
    },
    ParamSpec {
        name: "nodes_per_su",
        default: "32",
        help: "DGX nodes per scalable unit, 1..=64",
    },
    ParamSpec {
        name: "gpus_per_host",
        default: "8",
        help: "GPUs per node = rails, 1..=16",
    },
    ParamSpec {
        name: "spine_radix",
        default: "64",
        help: "spine ports (QM9700: 64 x 400G)",
    },
    ParamSpec {
        name: "nic_speed",
        default: "400Gbps",
        help: "NIC–leaf link speed",
    },
    ParamSpec {
        name: "link_speed",
        default: "400Gbps",
        help: "leaf–spine link speed",
    },
];

pub fn build_superpod(p: &Params) -> Result<TopologyBuilder, PresetError> {
    let sus = p.int("sus", 1..=64)?;
    let nodes = p.int("nodes_per_su", 1..=64)?;
    let rails = p.int("gpus_per_host", 1..=16)?;
    let radix = p.int("spine_radix", 2..=1024)?;
    let (nic_speed, link_speed) = (p.bandwidth("nic_speed")?, p.bandwidth("link_speed")?);
    let latency = p.latency("link_latency")?;
    check_size(
        p,
        "sus",
        u64::from(sus) * u64::from(nodes) * u64::from(rails),
    )?;

    let leaves = sus * rails;
    let uplinks = nodes; // one per node port: non-blocking
    let spines = (leaves * uplinks).div_ceil(radix);
    if uplinks % spines != 0 {
        return Err(p.bad(
            "sus",
            format!(
                "{leaves} leaves of {uplinks} uplinks need {spines} spines of {radix} ports, and {uplinks} uplinks \
                 do not spread evenly over {spines} spines (with the other defaults, sus may be 1, 2, 4 or 8)"
            ),
        ));
    }
    let mut b = TopologyBuilder::new("superpod", vec!["leaf".into(), "spine".into()]);
    let spine_ids: Vec<NodeId> = (0..spines)
        .map(|s| b.add_switch(format!("spine{s}"), 2, 0))
        .collect();
    let spec = HostSpec::from_params(p, rails)?;
    for su in 0..sus {
        let rail_leaves: Vec<NodeId> = (0..rails)
            .map(|r| {
                let leaf = b.add_switch(format!("su{su}/rail{r}/leaf"), 1, 0);
                for u in 0..uplinks {
                    b.connect(leaf, spine_ids[(u % spines) as usize], link_speed, latency);
                }
                leaf
            })
            .collect();
        for n in 0..nodes {
            let host = add_host(&mut b, u64::from(su * nodes + n), &spec);
            for (r, &nic) in host.nics.iter().enumerate() {
                b.connect(nic, rail_leaves[r], nic_speed, latency);
            }
        }
    }
    Ok(b)
}
