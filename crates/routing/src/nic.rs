//! How a NIC with several ports (HPN's 2×200G, one port to each of two ToRs) puts connections
//! on them. The ports are the NIC's next hops; a port whose cable or ToR is down is not one, so
//! whatever the mapping, its connections move to the ports left.

use crate::key::{mix, FlowKey};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NicPorts {
    /// The NIC picks a port as a switch picks a next hop: the fabric's tier-1 hash function
    /// over the policy's fields, with the NIC's own seed.
    #[default]
    Hash,
    /// A Linux bond's `layer3+4` transmit hash (the kernel's
    /// `Documentation/networking/bonding.rst`, `xmit_hash_policy`): the source port XOR the
    /// destination port, XOR the source and destination addresses, folded by `h ^= h >> 16;
    /// h ^= h >> 8`, modulo the ports. A linear hash of its own, blind to the QP.
    BondL34,
    /// RoCE over a port-aggregating NIC (LAG): each QP is given the next port in turn as it is
    /// created (round-robin transmit affinity, as NVIDIA's mlx5 driver does by default), so
    /// the QPs of a connection alternate ports. Where a connection's run of QP numbers starts
    /// is unknown to a simulation; it is drawn from the connection.
    QpAffinity,
}

impl NicPorts {
    pub const NAMES: [&'static str; 3] = ["hash", "bond-l34", "qp-affinity"];

    pub fn parse(s: &str) -> Option<NicPorts> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "hash" => NicPorts::Hash,
            "bond-l34" => NicPorts::BondL34,
            "qp-affinity" => NicPorts::QpAffinity,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        NicPorts::NAMES[self as usize]
    }

    /// The port index (before the modulo over the ports up) of `key`, for the mappings that
    /// do not hash as a switch does (`None` for [`NicPorts::Hash`]).
    pub fn port(self, key: &FlowKey) -> Option<u64> {
        match self {
            NicPorts::Hash => None,
            NicPorts::BondL34 => {
                let mut h = u32::from(key.src_port) ^ u32::from(key.dst_port);
                // The NICs' IPv4 addresses, as the header lays them out (crate::fields).
                h ^= (0x0A00_0000 | (key.src.0 & 0x00FF_FFFF))
                    ^ (0x0A00_0000 | (key.dst.0 & 0x00FF_FFFF));
                h ^= h >> 16;
                h ^= h >> 8;
                Some(u64::from(h))
            }
            NicPorts::QpAffinity => {
                let first = mix(u64::from(key.src_port)
                    ^ (u64::from(key.src.0) << 16)
                    ^ (u64::from(key.dst.0) << 40));
                Some(first.wrapping_add(u64::from(key.qp)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use fabricsim_topology::NodeId;

    use super::*;

    #[test]
    fn names_round_trip() {
        for name in NicPorts::NAMES {
            assert_eq!(NicPorts::parse(name).unwrap().name(), name);
        }
        assert_eq!(NicPorts::parse("lacp"), None);
    }

    #[test]
    fn a_bond_hashes_ports_and_addresses_and_a_lag_alternates_qps() {
        let key = |port: u16, qp: u32| {
            let mut k = FlowKey::connection(NodeId(3), NodeId(9), qp, 0);
            k.src_port = port;
            k
        };
        // layer3+4 by hand: (0xC001 ^ 4791) ^ (0x0A000003 ^ 0x0A000009), folded.
        let mut h: u32 = (0xC001 ^ 4791) ^ (3 ^ 9);
        h ^= h >> 16;
        h ^= h >> 8;
        assert_eq!(NicPorts::BondL34.port(&key(0xC001, 0)), Some(u64::from(h)));
        // The bond does not see the QP; the LAG gives consecutive QPs consecutive ports.
        assert_eq!(
            NicPorts::BondL34.port(&key(0xC001, 0)),
            NicPorts::BondL34.port(&key(0xC001, 5))
        );
        let (a, b) = (
            NicPorts::QpAffinity.port(&key(0xC001, 0)).unwrap(),
            NicPorts::QpAffinity.port(&key(0xC001, 1)).unwrap(),
        );
        assert_ne!(a % 2, b % 2);
        assert_eq!(NicPorts::Hash.port(&key(0xC001, 0)), None);
    }
}
