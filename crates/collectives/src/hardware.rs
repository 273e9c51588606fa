//! What the hardware delivers of its line rates: the achieved fraction of each transport (NVLink
//! through the NVSwitch, NVLS in-switch reduction, PCIe, RoCEv2 on Ethernet) per GPU generation.
//! The simulation runs on these figures (each link's capacity is its line rate times its
//! transport's efficiency, see [`link_efficiency`]), and the tuner predicts with the same ones.
//!
//! Every figure is a model input with its source next to it: NCCL's own constants (what NCCL
//! assumes an NVLink delivers), or framing overheads from the protocol standards. None is fitted
//! to a benchmark result that `docs/validation.md` compares against.

use fabricsim_topology::{LinkId, NodeKind, Topology};

/// The GPU generation of the hosts: it sets the NVLink efficiency, whether NVLS exists, and the
/// protocol caps of NCCL's model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Generation {
    A100,
    H100,
    H200,
    B200,
}

/// NVLink line rate per link per direction, GB/s: NVLink3 and NVLink4 carry 25 GB/s per link
/// (A100: 12 links = 300 GB/s; H100: 18 links = 450 GB/s), NVLink5 50 GB/s (B200: 18 links =
/// 900 GB/s) — NVIDIA's A100, H100 and Blackwell datasheets.
const NVLINK3_4_LINK_GBPS: f64 = 25.0;
const NVLINK5_LINK_GBPS: f64 = 50.0;

/// RoCEv2 payload per wire byte for RDMA writes at a 4096-byte MTU. Per packet on the wire:
/// Ethernet preamble + SFD 8, header 14, FCS 4, inter-frame gap 12 (IEEE 802.3); IPv4 20;
/// UDP 8; InfiniBand BTH 12 and ICRC 4 (IBTA Annex A17, RoCEv2). RETH (16 B) rides only the
/// first packet of a message and is left out (0.003 % at NCCL's 512 KiB messages).
pub const ROCE_MTU: f64 = 4096.0;
pub const ROCE_PACKET_OVERHEAD: f64 = 8.0 + 14.0 + 4.0 + 12.0 + 20.0 + 8.0 + 12.0 + 4.0;

/// PCIe payload per wire byte: 128b/130b encoding (PCIe 3.0 and later) and a 256-byte maximum
/// payload per TLP with 26 bytes around it (4 framing, 2 sequence number, 16 header with ECRC
/// off, 4 LCRC) — PCI Express Base Specification 5.0, §4.2 and §2.
pub const PCIE_EFFICIENCY: f64 = (128.0 / 130.0) * (256.0 / (256.0 + 26.0));

impl Generation {
    pub const ALL: [Generation; 4] = [
        Generation::A100,
        Generation::H100,
        Generation::H200,
        Generation::B200,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Generation::A100 => "A100",
            Generation::H100 => "H100",
            Generation::H200 => "H200",
            Generation::B200 => "B200",
        }
    }

    pub fn parse(s: &str) -> Option<Generation> {
        Generation::ALL
            .into_iter()
            .find(|g| g.name().eq_ignore_ascii_case(s))
    }

    /// The payload NCCL gets out of an NVLink, over its line rate: NCCL's per-link bandwidth
    /// (`src/graph/topo.h`: `SM80_NVLINK_BW` 20.0, `SM90_NVLINK_BW` 20.6, `SM100_NVLINK_BW`
    /// 40.1 GB/s) over the link's line rate. H100: 20.6 / 25 = 0.824, i.e. 370.8 of 450 GB/s.
    pub fn nvlink_efficiency(self) -> f64 {
        match self {
            Generation::A100 => 20.0 / NVLINK3_4_LINK_GBPS,
            Generation::H100 | Generation::H200 => 20.6 / NVLINK3_4_LINK_GBPS,
            Generation::B200 => 40.1 / NVLINK5_LINK_GBPS,
        }
    }

    /// NCCL's NVLS efficiency (`src/graph/tuning.cc`, `nvlsEfficiency`: Hopper 0.85,
    /// Blackwell 0.74): the fraction of the NVLink payload rate that in-switch reduction and
    /// multicast sustain. `None` where the NVSwitch has no NVLS (A100's NVSwitch 2).
    pub fn nvls_efficiency(self) -> Option<f64> {
        match self {
            Generation::A100 => None,
            Generation::H100 | Generation::H200 => Some(0.85),
            Generation::B200 => Some(0.74),
        }
    }

    /// NCCL's cap on the LL protocol's bus bandwidth, GB/s (`tuning.cc`, `llMaxBws`): inside
    /// one node by GPU generation (Ampere 87.7, Hopper 141, Blackwell 282); across nodes by
    /// CPU (the Intel row, the default: 39.0 on two nodes, 20.4 on more).
    pub fn ll_max_busbw_gbps(self, hosts: usize) -> f64 {
        match (hosts, self) {
            (1, Generation::A100) => 87.7,
            (1, Generation::H100 | Generation::H200) => 141.0,
            (1, Generation::B200) => 2.0 * 141.0,
            (2, _) => 39.0,
            _ => 20.4,
        }
    }
}

/// Per directed link, the payload fraction of its line rate ([`link_efficiency_of`]).
pub fn link_efficiency(topo: &Topology, gpu: Generation) -> Vec<f64> {
    (0..topo.link_count() as u32)
        .map(|l| link_efficiency_of(topo, gpu, LinkId(l)))
        .collect()
}

/// The payload fraction of `l`'s line rate: NVLink (GPU–NVSwitch, or a direct GPU–GPU link) at
/// [`Generation::nvlink_efficiency`], GPU–NIC at [`PCIE_EFFICIENCY`], and every Ethernet link
/// (NIC–switch, switch–switch) at the RoCEv2 framing of a full MTU packet.
pub fn link_efficiency_of(topo: &Topology, gpu: Generation, l: LinkId) -> f64 {
    let link = topo.link(l);
    match (topo.kind(link.src), topo.kind(link.dst)) {
        (NodeKind::Gpu, NodeKind::Nic) | (NodeKind::Nic, NodeKind::Gpu) => PCIE_EFFICIENCY,
        (NodeKind::Gpu | NodeKind::NvSwitch, _) | (_, NodeKind::Gpu | NodeKind::NvSwitch) => {
            gpu.nvlink_efficiency()
        }
        _ => roce_efficiency(),
    }
}

/// The RoCEv2 efficiency of an Ethernet link.
pub fn roce_efficiency() -> f64 {
    ROCE_MTU / (ROCE_MTU + ROCE_PACKET_OVERHEAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvlink_payload_rates_are_nccls() {
        // 18 H100 links at NCCL's 20.6 GB/s: 370.8 GB/s of 450.
        let h100 = 450.0 * Generation::H100.nvlink_efficiency();
        assert!((h100 - 370.8).abs() < 1e-9);
        let b200 = 900.0 * Generation::B200.nvlink_efficiency();
        assert!((b200 - 721.8).abs() < 1e-9);
    }

    #[test]
    fn roce_framing_at_mtu() {
        // 82 bytes around 4096: 49.02 GB/s of payload on a 400 Gb/s port.
        assert_eq!(ROCE_PACKET_OVERHEAD, 82.0);
        let payload = 50.0 * roce_efficiency();
        assert!((payload - 49.019).abs() < 1e-3, "{payload}");
    }
}
