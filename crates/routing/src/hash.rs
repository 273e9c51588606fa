//! Switch hash functions as ASICs compute them.
//!
//! A switch hashes the header fields it selects (the RoCEv2 5-tuple, plus the destination QP
//! under E-ECMP) and takes the hash modulo its number of next hops. The functions of deployed
//! data-center switch ASICs are linear: XOR folds and CRCs (Zhang et al., "Hashing Linearity
//! Enables Relative Path Control in Data Centers", USENIX ATC 2021, §2–3, from Alibaba's
//! production switches), and a chip offers only a few of them, so hash functions are reused and
//! correlated across stages (Xu et al., "Hashing Design in Modern Networks: Challenges and
//! Mitigation Techniques", USENIX ATC 2022). A seed enters a CRC as its initial value, which
//! for headers of one length XORs a constant into the result: different seeds do not decorrelate
//! two stages that use the same CRC, and when the second stage's next-hop count divides the
//! first's, every flow that reached a second-stage switch through one first-stage choice takes
//! the same next hop there — polarization, from the configuration alone.
//!
//! [`HashFunction::Ideal`] is the idealized random hash fabricsim used before (SplitMix64,
//! Steele et al. 2014, over the fields, seeded per switch): what a fabric whose stages hash
//! independently would do.

use fabricsim_topology::NodeId;

use crate::fields::Fields;
use crate::key::{mix, FlowKey};
use crate::nic::NicPorts;

/// A hash function of a switch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HashFunction {
    /// An idealized random hash, independent between switches with different seeds.
    #[default]
    Ideal,
    /// CRC-16/CCITT (polynomial 0x1021) over the header bytes, the seed as its initial value.
    Crc16,
    /// CRC-32 (polynomial 0x04C11DB7, reflected) over the header bytes, the seed as its
    /// initial value.
    Crc32,
    /// The header bytes folded into 16 bits by XOR, XORed with the seed.
    Xor16,
}

const CRC16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_IBM_3740);
const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

impl HashFunction {
    pub const NAMES: [&'static str; 4] = ["ideal", "crc16", "crc32", "xor16"];

    pub fn parse(s: &str) -> Option<HashFunction> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "ideal" => HashFunction::Ideal,
            "crc16" => HashFunction::Crc16,
            "crc32" => HashFunction::Crc32,
            "xor16" => HashFunction::Xor16,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            HashFunction::Ideal => "ideal",
            HashFunction::Crc16 => "crc16",
            HashFunction::Crc32 => "crc32",
            HashFunction::Xor16 => "xor16",
        }
    }

    /// The hash of `key`'s selected `fields` under `seed`.
    pub fn hash(self, key: &FlowKey, fields: Fields, seed: u64) -> u64 {
        match self {
            // Chained SplitMix64 over the fields, the QP last: over the 5-tuple (with the QP)
            // this is `FlowKey::hash5` (`hash_with_qp`).
            HashFunction::Ideal => {
                let mut h = mix(seed);
                for v in fields.values(key) {
                    h = mix(h ^ v);
                }
                if fields.has_qp() {
                    h = mix(h ^ u64::from(key.qp));
                }
                h
            }
            HashFunction::Crc16 => {
                let (bytes, n) = fields.header(key);
                let mut d = CRC16.digest_with_initial(seed as u16);
                d.update(&bytes[..n]);
                u64::from(d.finalize())
            }
            HashFunction::Crc32 => {
                let (bytes, n) = fields.header(key);
                let mut d = CRC32.digest_with_initial(seed as u32);
                d.update(&bytes[..n]);
                u64::from(d.finalize())
            }
            HashFunction::Xor16 => {
                let (bytes, n) = fields.header(key);
                let folded = bytes[..n].chunks(2).fold(0u16, |h, c| {
                    h ^ u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])
                });
                u64::from(folded ^ seed as u16)
            }
        }
    }
}

/// How a fabric's switches hash: a function and a field selection per tier (tier 1 = ToR / RTSW /
/// leaf, counting up; tiers past the last given use the last), and seeds per switch or one for
/// the whole fabric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashConfig {
    pub seed: u64,
    /// One seed for every switch (`seed` itself) rather than one per switch, derived from
    /// `seed` and the switch's id.
    pub polarized: bool,
    /// Functions of tiers 1, 2 and 3 and up; `None` takes the tier below's (tier 1: `Ideal`).
    pub functions: [Option<HashFunction>; 3],
    /// Fields hashed by tiers 1, 2 and 3 and up; `None` takes the tier below's (tier 1: the
    /// policy's, the 5-tuple for ECMP and the 5-tuple and QP for E-ECMP).
    pub fields: [Option<Fields>; 3],
    /// How a NIC with several ports puts connections on them.
    pub nic_ports: NicPorts,
}

impl HashConfig {
    /// The seed switch `node` hashes with.
    pub fn node_seed(&self, node: NodeId) -> u64 {
        if self.polarized {
            self.seed
        } else {
            mix(self.seed ^ (u64::from(node.0) << 20))
        }
    }

    /// The function of a switch of `tier` (1 and up; 0, a host, takes tier 1's).
    pub fn function(&self, tier: u8) -> HashFunction {
        at_tier(&self.functions, tier).unwrap_or_default()
    }

    /// The fields a switch of `tier` hashes; `policy`'s when none are configured.
    pub fn fields(&self, tier: u8, policy: Fields) -> Fields {
        at_tier(&self.fields, tier).unwrap_or(policy)
    }

    /// Parses `FUNC` or `FUNC,tier2=FUNC,tier3=FUNC` (as `--hash` and `[routing] hash` write
    /// it) into the functions.
    pub fn parse_functions(text: &str) -> Result<[Option<HashFunction>; 3], String> {
        let names = format!("a hash function ({})", HashFunction::NAMES.join(", "));
        per_tier(text, HashFunction::parse, &names)
    }

    /// Parses `FIELDS` or `FIELDS,tier2=FIELDS,tier3=FIELDS` (as `--hash-fields` and
    /// `[routing] hash_fields` write it).
    pub fn parse_fields(text: &str) -> Result<[Option<Fields>; 3], String> {
        per_tier(text, Fields::parse, Fields::EXPECTED)
    }
}

/// The value for `tier` (1 and up; 0 takes tier 1's): its own, or the nearest tier's below.
fn at_tier<T: Copy>(values: &[Option<T>; 3], tier: u8) -> Option<T> {
    let i = usize::from(tier.clamp(1, 3)) - 1;
    values[..=i].iter().rev().find_map(|v| *v)
}

/// `V` or `V,tier2=V,tier3=V`, each `V` read by `parse`.
fn per_tier<T: Copy>(
    text: &str,
    parse: impl Fn(&str) -> Option<T>,
    values: &str,
) -> Result<[Option<T>; 3], String> {
    let expected =
        || format!("`{text}`: expected {values}, optionally followed by `,tier2=…` and `,tier3=…`");
    let mut out = [None; 3];
    for (i, part) in text.split(',').enumerate() {
        let (tier, value) = match part.split_once('=') {
            None if i == 0 => (1, part),
            Some((t, v)) if i > 0 => match t.trim() {
                "tier2" => (2, v),
                "tier3" => (3, v),
                _ => return Err(expected()),
            },
            _ => return Err(expected()),
        };
        out[tier - 1] = Some(parse(value).ok_or_else(expected)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIVE: Fields = Fields::FIVE_TUPLE;

    fn key(i: u32) -> FlowKey {
        FlowKey::connection(NodeId(i % 64), NodeId(64 + i / 64), i % 4, 9)
    }

    #[test]
    fn crcs_are_the_standard_ones() {
        // The check values of the two CRCs ("123456789"), with their standard initial values.
        assert_eq!(CRC16.checksum(b"123456789"), 0x29B1);
        assert_eq!(CRC32.checksum(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn a_crc_seed_xors_a_constant_into_every_hash_of_one_length() {
        // Linearity: for headers of one length, h(s1) ^ h(s2) is the same for every key.
        for f in [
            HashFunction::Crc16,
            HashFunction::Crc32,
            HashFunction::Xor16,
        ] {
            let delta = f.hash(&key(0), FIVE, 0x1234) ^ f.hash(&key(0), FIVE, 0x9876);
            for i in 1..200 {
                let k = key(i);
                assert_eq!(
                    f.hash(&k, FIVE, 0x1234) ^ f.hash(&k, FIVE, 0x9876),
                    delta,
                    "{f:?}"
                );
            }
        }
        // The ideal hash has no such structure.
        let f = HashFunction::Ideal;
        let delta = f.hash(&key(0), FIVE, 1) ^ f.hash(&key(0), FIVE, 2);
        assert!((1..200).any(|i| f.hash(&key(i), FIVE, 1) ^ f.hash(&key(i), FIVE, 2) != delta));
    }

    #[test]
    fn the_qp_enters_only_when_selected() {
        let (a, b) = (
            FlowKey::connection(NodeId(1), NodeId(2), 0, 0),
            FlowKey::connection(NodeId(1), NodeId(2), 5, 0),
        );
        for f in [
            HashFunction::Crc16,
            HashFunction::Crc32,
            HashFunction::Xor16,
        ] {
            assert_eq!(f.hash(&a, FIVE, 7), f.hash(&b, FIVE, 7));
            assert_ne!(
                f.hash(&a, Fields::FIVE_TUPLE_QP, 7),
                f.hash(&b, Fields::FIVE_TUPLE_QP, 7)
            );
        }
        // The ideal hash over the 5-tuple (and QP) is the flow key's own.
        assert_eq!(HashFunction::Ideal.hash(&b, FIVE, 7), b.hash5(7));
        assert_eq!(
            HashFunction::Ideal.hash(&b, Fields::FIVE_TUPLE_QP, 7),
            b.hash_with_qp(7)
        );
    }

    #[test]
    fn functions_parse_per_tier() {
        let c = HashConfig {
            functions: HashConfig::parse_functions("crc16,tier2=crc32").unwrap(),
            ..HashConfig::default()
        };
        assert_eq!(c.function(1), HashFunction::Crc16);
        assert_eq!(c.function(2), HashFunction::Crc32);
        assert_eq!(c.function(3), HashFunction::Crc32);
        assert_eq!(HashConfig::default().function(2), HashFunction::Ideal);
        for bad in ["md5", "crc16,tier4=crc32", "tier2=crc16", "crc16,crc32", ""] {
            assert!(HashConfig::parse_functions(bad).is_err(), "{bad}");
        }
        let c = HashConfig {
            fields: HashConfig::parse_fields("ips,tier2=5tuple+qp").unwrap(),
            ..HashConfig::default()
        };
        assert_eq!(c.fields(1, FIVE), Fields::parse("ips").unwrap());
        assert_eq!(c.fields(3, FIVE), Fields::FIVE_TUPLE_QP);
        assert_eq!(HashConfig::default().fields(2, FIVE), FIVE);
        assert!(HashConfig::parse_fields("ips,tier2=mac").is_err());
    }
}
