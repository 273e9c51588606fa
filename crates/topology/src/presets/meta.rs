//! Meta's RoCE training fabric (Gangidi et al., SIGCOMM 2024; Llama 3 §3.3).
//!
//! An **AI Zone** is a two-stage Clos: each rack's RTSW takes the NICs of its servers
//! (2 Grand Teton hosts × 8 GPUs, one 400G NIC per GPU) and sends its uplinks to the CTSWs;
//! the zone is non-blocking. RTSW uplink provisioning followed Meta's stages: `1:1`, `2x`
//! (doubled uplinks), `1:1.125` (one extra uplink in eight, to ride out two link failures).
//!
//! The papers do not give the CTSW count. By default each RTSW sends exactly one uplink to
//! each CTSW (16 CTSWs at 1:1, 18 at 1:1.125, 32 at 2x); `ctsws` can fold the uplinks onto
//! fewer CTSWs as parallel cables.
//!
//! A **cluster** joins zones through ATSWs, oversubscribed (1:7 for the Llama 3 24K-GPU
//! cluster). ATSW `c` joins CTSW `c` of every zone, so cross-zone traffic keeps its CTSW index
//! (the same index-preserving wiring as a fat-tree's core groups). Each CTSW gets
//! `round(down / oversubscription)` cables to its ATSW: 27 for the default 192 down-links,
//! which is 1:7.11, the nearest whole number of ports to the published 1:7.

use crate::builder::TopologyBuilder;
use crate::ids::NodeId;
use crate::presets::host::{add_host, check_size, HostSpec};
use crate::presets::params::{ParamSpec, Params, PresetError};
use crate::units::{Bandwidth, Nanos};

pub const ZONE_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "racks",
        default: "192",
        help: "racks (RTSWs) per AI Zone, 1..=1024",
    },
    ParamSpec {
        name: "hosts_per_rack",
        default: "2",
        help: "servers under one RTSW, 1..=16",
    },
    ParamSpec {
        name: "gpus_per_host",
        default: "8",
        help: "GPUs (one 400G NIC each) per server, 1..=16",
    },
    ParamSpec {
        name: "uplinks",
        default: "1:1",
        help: "RTSW down:up provisioning: 1:1, 1:1.125 or 2x",
    },
    ParamSpec {
        name: "ctsws",
        default: "auto",
        help: "CTSWs per zone; auto = one per RTSW uplink, else a divisor of the uplink count",
    },
    ParamSpec {
        name: "nic_speed",
        default: "400Gbps",
        help: "NIC–RTSW link speed",
    },
    ParamSpec {
        name: "link_speed",
        default: "400Gbps",
        help: "RTSW–CTSW and CTSW–ATSW link speed",
    },
];

pub const CLUSTER_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "zones",
        default: "8",
        help: "AI Zones, 1..=64",
    },
    ParamSpec {
        name: "atsw_oversubscription",
        default: "7",
        help: "CTSW down:up capacity toward the ATSWs (7 = the Llama 3 cluster's 1:7)",
    },
];

struct Zone {
    racks: u32,
    hosts_per_rack: u32,
    host: HostSpec,
    uplinks: u32,
    ctsws: u32,
    nic_speed: Bandwidth,
    link_speed: Bandwidth,
    latency: Nanos,
}

impl Zone {
    fn from_params(p: &Params) -> Result<Zone, PresetError> {
        let racks = p.int("racks", 1..=1024)?;
        let hosts_per_rack = p.int("hosts_per_rack", 1..=16)?;
        let gpus = p.int("gpus_per_host", 1..=16)?;
        let down = hosts_per_rack * gpus;
        let uplinks = match p.choice("uplinks", &["1:1", "1:1.125", "2x"])? {
            0 => down,
            1 if down % 8 == 0 => down / 8 * 9,
            1 => {
                return Err(p.bad(
                    "uplinks",
                    format!("1:1.125 needs a multiple of 8 RTSW down-ports, not {down}"),
                ))
            }
            _ => 2 * down,
        };
        let ctsws = match p.choice("ctsws", &["auto"]) {
            Ok(_) => uplinks,
            Err(_) => {
                let n = p.int("ctsws", 1..=uplinks)?;
                if uplinks % n != 0 {
                    return Err(p.bad(
                        "ctsws",
                        format!("expected auto or a divisor of the {uplinks} RTSW uplinks"),
                    ));
                }
                n
            }
        };
        Ok(Zone {
            racks,
            hosts_per_rack,
            host: HostSpec::from_params(p, gpus)?,
            uplinks,
            ctsws,
            nic_speed: p.bandwidth("nic_speed")?,
            link_speed: p.bandwidth("link_speed")?,
            latency: p.latency("link_latency")?,
        })
    }

    fn gpus(&self) -> u64 {
        u64::from(self.racks) * u64::from(self.hosts_per_rack) * u64::from(self.host.gpus)
    }

    /// Adds zone `z`; returns its CTSWs.
    fn add(&self, b: &mut TopologyBuilder, z: u32, next_host: &mut u64) -> Vec<NodeId> {
        let ctsws: Vec<NodeId> = (0..self.ctsws)
            .map(|c| b.add_switch(format!("zone{z}/ctsw{c}"), 2, 0))
            .collect();
        for r in 0..self.racks {
            let rtsw = b.add_switch(format!("zone{z}/rack{r}/rtsw"), 1, 0);
            for u in 0..self.uplinks {
                b.connect(
                    rtsw,
                    ctsws[(u % self.ctsws) as usize],
                    self.link_speed,
                    self.latency,
                );
            }
            for _ in 0..self.hosts_per_rack {
                let host = add_host(b, *next_host, &self.host);
                *next_host += 1;
                for &nic in &host.nics {
                    b.connect(nic, rtsw, self.nic_speed, self.latency);
                }
            }
        }
        ctsws
    }
}

pub fn build_zone(p: &Params) -> Result<TopologyBuilder, PresetError> {
    let zone = Zone::from_params(p)?;
    check_size(p, "racks", zone.gpus())?;
    let mut b = TopologyBuilder::new("meta-ai-zone", vec!["rtsw".into(), "ctsw".into()]);
    zone.add(&mut b, 0, &mut 0);
    Ok(b)
}

pub fn build_cluster(p: &Params) -> Result<TopologyBuilder, PresetError> {
    let zones = p.int("zones", 1..=64)?;
    let zone = Zone::from_params(p)?;
    check_size(p, "zones", zone.gpus() * u64::from(zones))?;
    let (num, den) = p.ratio("atsw_oversubscription")?;
    // Down-cables of one CTSW: one bundle of uplinks/ctsws cables from each rack.
    let down = u64::from(zone.racks) * u64::from(zone.uplinks / zone.ctsws);
    let up = ((2 * down * den + num) / (2 * num)).max(1);
    let mut b = TopologyBuilder::new(
        "meta-cluster",
        vec!["rtsw".into(), "ctsw".into(), "atsw".into()],
    );
    let atsws: Vec<NodeId> = (0..zone.ctsws)
        .map(|c| b.add_switch(format!("atsw{c}"), 3, 0))
        .collect();
    let mut next_host = 0;
    for z in 0..zones {
        for (c, ctsw) in zone.add(&mut b, z, &mut next_host).into_iter().enumerate() {
            for _ in 0..up {
                b.connect(ctsw, atsws[c], zone.link_speed, zone.latency);
            }
        }
    }
    Ok(b)
}
