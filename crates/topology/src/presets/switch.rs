//! One switch joining every NIC: the ideal non-blocking network, with no tier above the hosts'
//! and so no path to choose. It is the network ASTRA-sim calls `Switch` (one switch, one link per
//! NPU), the fabric to compare the two simulators on (docs/performance.md, "Chakra replay").
//! The switch has as many ports as NICs: an idealization, not a product.

use crate::builder::TopologyBuilder;
use crate::presets::host::{add_host, HostSpec};
use crate::presets::params::{ParamSpec, Params, PresetError};

pub const SWITCH_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "hosts",
        default: "32",
        help: "servers under the switch, 1..=16384",
    },
    ParamSpec {
        name: "gpus_per_host",
        default: "8",
        help: "GPUs (one NIC each) per server, 1..=16",
    },
    ParamSpec {
        name: "nic_speed",
        default: "400Gbps",
        help: "NIC–switch link speed",
    },
];

pub fn build_switch(p: &Params) -> Result<TopologyBuilder, PresetError> {
    let hosts = p.int("hosts", 1..=16_384)?;
    let gpus = p.int("gpus_per_host", 1..=16)?;
    let (speed, latency) = (p.bandwidth("nic_speed")?, p.latency("link_latency")?);
    let mut b = TopologyBuilder::new("switch", vec!["switch".into()]);
    let switch = b.add_switch("switch", 1, 0);
    let spec = HostSpec::from_params(p, gpus)?;
    for h in 0..hosts {
        for nic in add_host(&mut b, u64::from(h), &spec).nics {
            b.connect(nic, switch, speed, latency);
        }
    }
    Ok(b)
}
