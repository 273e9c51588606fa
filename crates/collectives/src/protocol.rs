//! NCCL's protocols and the constants of its cost model (REFERENCE.md §4, from NVIDIA/nccl
//! `src/graph/tuning.cc`).
//!
//! A protocol sets how much of what crosses the wire is payload (its *efficiency*: wire bytes =
//! payload / efficiency) and a per-step latency: the software and synchronization cost NCCL
//! charges for each algorithm step over NVLink or over the network. fabricsim adds the fabric's
//! own path latency on top; NCCL's base latency is charged once per collective.

use fabricsim_topology::Nanos;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// Low latency: 8-byte stores of 4 data + 4 flag bytes.
    Ll,
    /// 128-byte lines with 120 bytes of data.
    Ll128,
    /// Bulk copies through the staging buffers.
    Simple,
}

/// Where a step's bytes travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HopKind {
    NvLink,
    Network,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::Ll, Protocol::Ll128, Protocol::Simple];

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Ll => "LL",
            Protocol::Ll128 => "LL128",
            Protocol::Simple => "Simple",
        }
    }

    pub fn parse(s: &str) -> Option<Protocol> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
    }

    /// Payload per wire byte: LL carries 4 data bytes in 8; LL128 120 in 128.
    pub fn efficiency(self) -> f64 {
        match self {
            Protocol::Ll => 0.5,
            Protocol::Ll128 => 120.0 / 128.0,
            Protocol::Simple => 1.0,
        }
    }

    /// NCCL's base latency of a ring or tree collective (tuning.cc `baseLat`): 6.6 µs LL,
    /// 14 µs LL128, 8.4 µs Simple for rings; trees use 6.8 µs for LL.
    pub fn base_latency(self, tree: bool) -> Nanos {
        Nanos(match (self, tree) {
            (Protocol::Ll, false) => 6_600,
            (Protocol::Ll, true) => 6_800,
            (Protocol::Ll128, _) => 14_000,
            (Protocol::Simple, _) => 8_400,
        })
    }

    /// NCCL's per-step (per-hop) latency (tuning.cc `hwLat`): NVLink 0.6 / 1.9 / 3.4 µs and
    /// network 2.7 / 4.0 / 14 µs for LL / LL128 / Simple.
    pub fn step_latency(self, hop: HopKind) -> Nanos {
        Nanos(match (hop, self) {
            (HopKind::NvLink, Protocol::Ll) => 600,
            (HopKind::NvLink, Protocol::Ll128) => 1_900,
            (HopKind::NvLink, Protocol::Simple) => 3_400,
            (HopKind::Network, Protocol::Ll) => 2_700,
            (HopKind::Network, Protocol::Ll128) => 4_000,
            (HopKind::Network, Protocol::Simple) => 14_000,
        })
    }

    /// Wire bytes for `payload` bytes.
    pub fn wire_bytes(self, payload: u64) -> u64 {
        match self {
            Protocol::Simple => payload,
            Protocol::Ll => payload * 2,
            // 128 wire bytes per 120 payload bytes, rounded up to whole bytes.
            Protocol::Ll128 => payload + (payload * 8).div_ceil(120),
        }
    }
}
