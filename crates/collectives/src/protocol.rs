//! NCCL's protocols and the constants of its cost model (NVIDIA/nccl `src/graph/tuning.cc`:
//! `baseLatencies`, `hwLatencies`, the bandwidth refinements of `ncclTopoTuneModel` and
//! `getNetOverhead`).
//!
//! A protocol sets how much of what crosses the wire is payload (its *efficiency*: wire bytes =
//! payload / efficiency), a base latency charged once per collective, and a per-step latency:
//! the software and synchronization cost NCCL charges for each algorithm step over NVLink or
//! over the network. fabricsim adds the fabric's own path latency on top. Both depend on the
//! algorithm's *family* as NCCL's tables do: rings (and every point-to-point algorithm, which
//! NCCL runs on ring connections), trees, and NVLS.

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

/// The rows of NCCL's latency and bandwidth tables an algorithm reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Ring,
    Tree,
    Nvls,
    NvlsTree,
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

    /// Payload per wire byte, NCCL's bandwidth refinements (`ncclTopoTuneModel`): rings halve
    /// LL (4 data bytes in 8) and take LL128 at 0.92; trees take LL at 1/3.8 and LL128 at 7/9
    /// inside one node, 120/128 across nodes; a tree all-reduce runs at 0.92 on top (NCCL's
    /// trees only all-reduce, and fabricsim's broadcast and reduce trees pay the same).
    pub fn efficiency(self, family: Family, one_host: bool) -> f64 {
        let tree = 0.92;
        match (family, self) {
            (Family::Ring | Family::Nvls | Family::NvlsTree, Protocol::Ll) => 0.5,
            (Family::Ring | Family::Nvls | Family::NvlsTree, Protocol::Ll128) => 0.92,
            (Family::Ring | Family::Nvls | Family::NvlsTree, Protocol::Simple) => 1.0,
            (Family::Tree, Protocol::Ll) => tree / 3.8,
            (Family::Tree, Protocol::Ll128) if one_host => tree * 7.0 / 9.0,
            (Family::Tree, Protocol::Ll128) => tree * 120.0 / 128.0,
            (Family::Tree, Protocol::Simple) => tree,
        }
    }

    /// NCCL's base latency (`baseLatencies`, µs, LL / LL128 / Simple): ring 6.6 / 14 / 8.4,
    /// tree 6.8 / 14 / 8.4, NVLS and NVLS-tree 0 (their latency is their steps').
    pub fn base_latency(self, family: Family) -> Nanos {
        Nanos(match (family, self) {
            (Family::Nvls | Family::NvlsTree, _) => 0,
            (Family::Ring, Protocol::Ll) => 6_600,
            (Family::Tree, Protocol::Ll) => 6_800,
            (_, Protocol::Ll128) => 14_000,
            (_, Protocol::Simple) => 8_400,
        })
    }

    /// NCCL's per-step latency (`hwLatencies`, µs, LL / LL128 / Simple). NVLink: ring
    /// 0.6 / 1.9 / 3.4, tree 0.6 / 1.25 / 4.0, NVLS 25 (Simple). Network: ring 2.7 / 4.0 / 14,
    /// tree 5.0 / 8.5 / 14, NVLS 18; NVLS-tree 25 over NVLink and 20.9 over the network. NVLS
    /// and NVLS-tree run Simple only; other protocols read their Simple figures.
    pub fn step_latency(self, family: Family, hop: HopKind) -> Nanos {
        Nanos(match (hop, family, self) {
            (HopKind::NvLink, Family::Ring, Protocol::Ll) => 600,
            (HopKind::NvLink, Family::Ring, Protocol::Ll128) => 1_900,
            (HopKind::NvLink, Family::Ring, Protocol::Simple) => 3_400,
            (HopKind::NvLink, Family::Tree, Protocol::Ll) => 600,
            (HopKind::NvLink, Family::Tree, Protocol::Ll128) => 1_250,
            (HopKind::NvLink, Family::Tree, Protocol::Simple) => 4_000,
            (HopKind::NvLink, Family::Nvls | Family::NvlsTree, _) => 25_000,
            (HopKind::Network, Family::Ring, Protocol::Ll) => 2_700,
            (HopKind::Network, Family::Ring, Protocol::Ll128) => 4_000,
            (HopKind::Network, Family::Ring, Protocol::Simple) => 14_000,
            (HopKind::Network, Family::Tree, Protocol::Ll) => 5_000,
            (HopKind::Network, Family::Tree, Protocol::Ll128) => 8_500,
            (HopKind::Network, Family::Tree, Protocol::Simple) => 14_000,
            (HopKind::Network, Family::Nvls, _) => 18_000,
            (HopKind::Network, Family::NvlsTree, _) => 20_900,
        })
    }

    /// The cost of an NVLink step of a collective that also crosses the network: NCCL charges
    /// it at least the network proxy's overhead per step (`getNetOverhead`: 1 µs on Intel and
    /// other CPUs, 2 µs on AMD; the default here is 1 µs), three times that for Simple.
    pub fn intra_step_latency(self, family: Family, multi_host: bool) -> Nanos {
        let nvlink = self.step_latency(family, HopKind::NvLink);
        if !multi_host {
            return nvlink;
        }
        let overhead = match self {
            Protocol::Simple => 3_000,
            _ => 1_000,
        };
        Nanos(nvlink.0.max(overhead))
    }

    /// Wire bytes for `payload` bytes at `efficiency` (rounded up to whole bytes).
    pub fn wire_bytes(payload: u64, efficiency: f64) -> u64 {
        if efficiency >= 1.0 {
            return payload;
        }
        (payload as f64 / efficiency).ceil() as u64
    }
}
