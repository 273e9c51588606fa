//! The server every preset uses: GPUs on one NVSwitch, one NIC per GPU over PCIe.

use crate::builder::TopologyBuilder;
use crate::ids::NodeId;
use crate::model::NodeKind;
use crate::presets::params::{ParamSpec, Params, PresetError};
use crate::units::{Bandwidth, Nanos};

/// NVSwitch hop latency (≈ 25 ns: an assumed figure for one NVSwitch hop).
pub const NVLINK_LATENCY: Nanos = Nanos(25);
/// GPU–NIC latency over PCIe. An assumed order of magnitude (one PCIe switch traversal); it
/// is small next to the 0.5 µs network hop and no figure depends on it yet.
pub const PCIE_LATENCY: Nanos = Nanos(100);

/// Parameters every preset accepts, after its own.
pub const COMMON_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "nvlink_bandwidth",
        default: "3.6Tbps",
        help: "GPU–NVSwitch bandwidth per direction (H100 NVLink4: 450 GB/s)",
    },
    ParamSpec {
        name: "pcie_bandwidth",
        default: "512Gbps",
        help: "GPU–NIC bandwidth per direction (PCIe Gen5 x16: 64 GB/s)",
    },
    ParamSpec {
        name: "link_latency",
        default: "500ns",
        help: "latency of every network link (switch + cable, per hop)",
    },
];

/// The largest fabric a preset will build, in GPUs (keeps a typo from exhausting memory).
pub const MAX_GPUS: u64 = 1 << 20;

pub struct HostSpec {
    pub gpus: u32,
    pub nvlink: Bandwidth,
    pub pcie: Bandwidth,
}

impl HostSpec {
    pub fn from_params(p: &Params, gpus: u32) -> Result<HostSpec, PresetError> {
        Ok(HostSpec {
            gpus,
            nvlink: p.bandwidth("nvlink_bandwidth")?,
            pcie: p.bandwidth("pcie_bandwidth")?,
        })
    }
}

/// A host's NICs, in GPU order: `nics[j]` serves GPU `j` (rail `j`).
pub struct BuiltHost {
    pub nics: Vec<NodeId>,
}

/// Adds `host{index}` with `host{index}/gpu{j}`, `host{index}/nic{j}` and, when it has more
/// than one GPU, `host{index}/nvswitch`.
pub fn add_host(b: &mut TopologyBuilder, index: u64, spec: &HostSpec) -> BuiltHost {
    let name = format!("host{index}");
    let host = b.add_host(name.clone());
    let nvswitch = (spec.gpus > 1)
        .then(|| b.add_host_node(host, NodeKind::NvSwitch, format!("{name}/nvswitch")));
    let mut nics = Vec::with_capacity(spec.gpus as usize);
    let mut part = String::new();
    for j in 0..spec.gpus {
        let gpu = b.add_host_node(host, NodeKind::Gpu, part_name(&mut part, &name, "/gpu", j));
        let nic = b.add_host_node(host, NodeKind::Nic, part_name(&mut part, &name, "/nic", j));
        b.connect(gpu, nic, spec.pcie, PCIE_LATENCY);
        if let Some(nvs) = nvswitch {
            b.connect(gpu, nvs, spec.nvlink, NVLINK_LATENCY);
        }
        nics.push(nic);
    }
    BuiltHost { nics }
}

/// `{host}{part}{j}` (`host7/gpu3`) in `buf`, written without the formatting machinery or an
/// allocation per name: a 24K-GPU fabric names 50,000 of them.
fn part_name<'a>(buf: &'a mut String, host: &str, part: &str, j: u32) -> &'a str {
    let mut digits = itoa::Buffer::new();
    buf.clear();
    buf.push_str(host);
    buf.push_str(part);
    buf.push_str(digits.format(j));
    buf
}

/// Rejects a fabric of more than [`MAX_GPUS`] before building it.
pub fn check_size(p: &Params, key: &'static str, gpus: u64) -> Result<(), PresetError> {
    if gpus > MAX_GPUS {
        return Err(p.bad(
            key,
            format!("the fabric would have {gpus} GPUs, more than the {MAX_GPUS} a preset builds"),
        ));
    }
    Ok(())
}
