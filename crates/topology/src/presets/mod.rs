//! Built-in fabrics, each parameterised with documented defaults that reproduce a published
//! shape (the sources are in each preset's module docs and docs/presets.md). A preset is a
//! function from [`Params`] to a [`TopologyBuilder`]; the builder's validation applies to presets
//! as to files.

mod dcn_plus;
mod fat_tree;
mod host;
mod hpn;
mod meta;
mod params;
mod superpod;
mod switch;

pub use host::{COMMON_PARAMS, MAX_GPUS, NVLINK_LATENCY, PCIE_LATENCY};
pub use params::{parse_assignment, ParamSpec, Params, PresetError};

use crate::builder::TopologyBuilder;
use crate::model::Topology;

/// A named, parameterised fabric.
pub struct Preset {
    pub name: &'static str,
    pub summary: &'static str,
    /// Its own parameter groups, in order (a cluster preset reuses its zone's).
    own_params: &'static [&'static [ParamSpec]],
    build: fn(&Params) -> Result<TopologyBuilder, PresetError>,
}

impl Preset {
    /// Its parameters: its own, then [`COMMON_PARAMS`].
    pub fn params(&self) -> impl Iterator<Item = &'static ParamSpec> {
        self.own_params
            .iter()
            .flat_map(|g| g.iter())
            .chain(COMMON_PARAMS)
    }

    /// Builds and validates the fabric with `overrides` (key, value) applied to the defaults.
    pub fn build(&self, overrides: &[(String, String)]) -> Result<Topology, PresetError> {
        let specs: Vec<ParamSpec> = self.params().copied().collect();
        let params = Params::new(self.name, &specs, overrides)?;
        (self.build)(&params)?
            .build()
            .map_err(|error| PresetError::Topology {
                preset: self.name,
                error,
            })
    }
}

/// The preset `fabricsim` uses when none is named: the Llama 3 cluster.
pub const DEFAULT_PRESET: &str = "meta-cluster";

/// Every preset, in the order `topo list` shows them.
pub fn all() -> &'static [Preset] {
    &PRESETS
}

pub fn find(name: &str) -> Result<&'static Preset, PresetError> {
    PRESETS
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| PresetError::UnknownPreset {
            name: name.to_string(),
            known: PRESETS.iter().map(|p| p.name).collect(),
        })
}

/// Builds preset `name` with `overrides`.
pub fn build(name: &str, overrides: &[(String, String)]) -> Result<Topology, PresetError> {
    find(name)?.build(overrides)
}

/// [`build`] with the settings as string slices (`&[("racks", "4")]`).
pub fn build_with(name: &str, settings: &[(&str, &str)]) -> Result<Topology, PresetError> {
    let owned: Vec<(String, String)> = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    build(name, &owned)
}

static PRESETS: [Preset; 8] = [
    Preset {
        name: "fat-tree",
        summary: "k-ary fat-tree (Al-Fares 2008): k pods, (k/2)^2 cores, k^3/4 hosts, full bisection",
        own_params: &[fat_tree::FAT_TREE_PARAMS],
        build: fat_tree::build_fat_tree,
    },
    Preset {
        name: "leaf-spine",
        summary: "two-level leaf-spine of radix k: k leaves, k/2 spines, k^2/2 hosts, full bisection",
        own_params: &[fat_tree::LEAF_SPINE_PARAMS],
        build: fat_tree::build_leaf_spine,
    },
    Preset {
        name: "meta-ai-zone",
        summary: "Meta AI Zone: RTSW/CTSW two-stage Clos, 192 racks x 16 GPUs = 3,072 GPUs, non-blocking",
        own_params: &[meta::ZONE_PARAMS],
        build: meta::build_zone,
    },
    Preset {
        name: "meta-cluster",
        summary: "Meta 24K-GPU cluster: 8 AI Zones joined by ATSWs at 1:7 oversubscription",
        own_params: &[meta::CLUSTER_PARAMS, meta::ZONE_PARAMS],
        build: meta::build_cluster,
    },
    Preset {
        name: "hpn",
        summary: "Alibaba HPN 7.0 pod: dual-ToR, rail-optimized 1,024-GPU segments, dual-plane tier 2, 15,360 GPUs",
        own_params: &[hpn::HPN_PARAMS],
        build: hpn::build_hpn,
    },
    Preset {
        name: "dcn-plus",
        summary: "Alibaba DCN+: 3-tier full-bisection dual-ToR Clos, 128-GPU segments, 512-GPU pods",
        own_params: &[dcn_plus::DCN_PLUS_PARAMS],
        build: dcn_plus::build_dcn_plus,
    },
    Preset {
        name: "superpod",
        summary: "NVIDIA H100 SuperPOD: rail-optimized leaf/spine by scalable units of 32 nodes x 8 rails",
        own_params: &[superpod::SUPERPOD_PARAMS],
        build: superpod::build_superpod,
    },
    Preset {
        name: "switch",
        summary: "one switch joining every NIC: the ideal non-blocking network (ASTRA-sim's Switch), 256 GPUs",
        own_params: &[switch::SWITCH_PARAMS],
        build: switch::build_switch,
    },
];
