//! Flow keys and the hash switches compute over them.
//!
//! A RoCEv2 packet's ECMP entropy is its 5-tuple: source and destination address, protocol
//! (UDP, 17), UDP source port, and destination port (4791 for RoCEv2). Meta's enhanced ECMP also
//! hashes the RoCE destination QP (Gangidi et al. 2024), so a collective library that spreads a
//! connection over several QPs spreads it over several paths.

use fabricsim_topology::NodeId;

/// IANA UDP port of RoCEv2.
pub const ROCEV2_PORT: u16 = 4791;

/// The most QPs a connection may spread over: NCCL's `NCCL_IB_MAX_QPS` (128,
/// `src/transport/net_ib/common.h`), the bound of `NCCL_IB_QPS_PER_CONNECTION`.
pub const MAX_QPS: u32 = 128;

/// What a switch's hash sees of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub src: NodeId,
    pub dst: NodeId,
    /// UDP source port: the per-connection entropy a RoCE NIC sets.
    pub src_port: u16,
    pub dst_port: u16,
    /// RoCE destination queue pair.
    pub qp: u32,
}

impl FlowKey {
    /// The key of QP `qp` of the connection `src -> dst`. The UDP source port is fixed per
    /// connection (derived from `seed`, `src` and `dst`), as a NIC assigns it when the
    /// connection is set up; only E-ECMP sees `qp`.
    pub fn connection(src: NodeId, dst: NodeId, qp: u32, seed: u64) -> FlowKey {
        let h = mix(mix(seed ^ u64::from(src.0)) ^ (u64::from(dst.0) << 32));
        // The dynamic/private port range 49152..=65535.
        let src_port = 0xC000 | (h as u16 & 0x3FFF);
        FlowKey {
            src,
            dst,
            src_port,
            dst_port: ROCEV2_PORT,
            qp,
        }
    }

    /// The same connection from its `i`-th other source port in the dynamic range (0: this
    /// one): the switches hash it afresh. Flowlets and host-side path search use it.
    pub fn port_variant(&self, i: u16) -> FlowKey {
        let mut k = *self;
        k.src_port = 0xC000 | (self.src_port.wrapping_add(i.wrapping_mul(0x2F1B)) & 0x3FFF);
        k
    }

    /// The 5-tuple hash under `seed`.
    pub fn hash5(&self, seed: u64) -> u64 {
        let mut h = mix(seed);
        for field in [
            u64::from(self.src.0),
            u64::from(self.dst.0),
            17,
            u64::from(self.src_port),
            u64::from(self.dst_port),
        ] {
            h = mix(h ^ field);
        }
        h
    }

    /// The 5-tuple plus destination QP (Meta's E-ECMP).
    pub fn hash_with_qp(&self, seed: u64) -> u64 {
        mix(self.hash5(seed) ^ u64::from(self.qp))
    }
}

/// SplitMix64's finalizer: a fast, well-mixed 64-bit bijection (Steele et al., 2014).
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
