//! The header fields a switch hashes. ASICs let the operator choose them per switch (Broadcom's
//! "RTAG7" field selection, Cisco's `ip load-sharing` modes, SONiC's `ecmp_hash` field list):
//! the RoCEv2 5-tuple is the usual choice for ECMP, and Meta's enhanced ECMP adds the RoCE
//! destination QP of the base transport header (Gangidi et al., "RDMA over Ethernet for
//! Distributed AI Training at Meta Scale", SIGCOMM 2024, §5.2). A tier that hashes fewer fields
//! sees less entropy: one that hashes addresses only puts every connection of a GPU pair on one
//! next hop, whatever its ports and QPs.

use crate::key::FlowKey;

/// A set of header fields, in the order they sit in the headers: source and destination
/// address, protocol, UDP source and destination port, destination QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields(u8);

const NAMES: [&str; 6] = ["sip", "dip", "proto", "sport", "dport", "qp"];

impl Fields {
    pub const FIVE_TUPLE: Fields = Fields(0b01_1111);
    pub const FIVE_TUPLE_QP: Fields = Fields(0b11_1111);
    const QP: u8 = 0b10_0000;

    pub const EXPECTED: &'static str = "fields joined by `+` (sip, dip, proto, sport, dport, qp; \
         `5tuple` for the first five, `ips` for sip+dip), e.g. `5tuple+qp`";

    /// `5tuple`, `5tuple+qp`, `ips`, `sip+dip+sport`, …; the order does not matter.
    pub fn parse(text: &str) -> Option<Fields> {
        let mut bits = 0u8;
        for part in text.trim().to_ascii_lowercase().split('+') {
            bits |= match part.trim() {
                "5tuple" => Fields::FIVE_TUPLE.0,
                "ips" => 0b11,
                name => 1 << NAMES.iter().position(|n| *n == name)?,
            };
        }
        Some(Fields(bits))
    }

    /// The shortest spelling [`Fields::parse`] reads back.
    pub fn name(self) -> String {
        let mut parts = Vec::new();
        let mut rest = self.0;
        if rest & Fields::FIVE_TUPLE.0 == Fields::FIVE_TUPLE.0 {
            parts.push("5tuple");
            rest &= !Fields::FIVE_TUPLE.0;
        } else if rest & 0b11 == 0b11 {
            parts.push("ips");
            rest &= !0b11;
        }
        parts.extend((0..6).filter(|i| rest & (1 << i) != 0).map(|i| NAMES[i]));
        parts.join("+")
    }

    pub fn has_qp(self) -> bool {
        self.0 & Fields::QP != 0
    }

    /// The selected fields of `key` but the QP, in header order, as numbers.
    pub fn values(self, key: &FlowKey) -> impl Iterator<Item = u64> + '_ {
        let all = [
            u64::from(key.src.0),
            u64::from(key.dst.0),
            17, // UDP
            u64::from(key.src_port),
            u64::from(key.dst_port),
        ];
        (0..5)
            .filter(move |i| self.0 & (1 << i) != 0)
            .map(move |i| all[i])
    }

    /// The selected fields as bytes on the wire: IPv4 source and destination address (a GPU's
    /// NIC address, numbered by its node id), protocol (UDP, 17), UDP source and destination
    /// port, and the 24-bit RoCE destination QP of the BTH; returns the bytes and their count.
    pub fn header(self, key: &FlowKey) -> ([u8; 16], usize) {
        let mut b = [0u8; 16];
        let mut n = 0;
        let mut put = |bytes: &[u8]| {
            b[n..n + bytes.len()].copy_from_slice(bytes);
            n += bytes.len();
        };
        let on = |i: u8| self.0 & (1 << i) != 0;
        if on(0) {
            put(&(0x0A00_0000 | (key.src.0 & 0x00FF_FFFF)).to_be_bytes());
        }
        if on(1) {
            put(&(0x0A00_0000 | (key.dst.0 & 0x00FF_FFFF)).to_be_bytes());
        }
        if on(2) {
            put(&[17]);
        }
        if on(3) {
            put(&key.src_port.to_be_bytes());
        }
        if on(4) {
            put(&key.dst_port.to_be_bytes());
        }
        if on(5) {
            put(&key.qp.to_be_bytes()[1..4]);
        }
        (b, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_parse_in_any_order_and_name_themselves_back() {
        for (text, name) in [
            ("5tuple", "5tuple"),
            ("qp+5tuple", "5tuple+qp"),
            ("sip+dip", "ips"),
            ("dip+sip+sport", "ips+sport"),
            ("sip+proto+dport+dip+sport", "5tuple"),
            ("dport", "dport"),
        ] {
            let f = Fields::parse(text).unwrap();
            assert_eq!(f.name(), name, "{text}");
            assert_eq!(Fields::parse(&f.name()), Some(f));
        }
        assert_eq!(Fields::parse("5tuple+qp"), Some(Fields::FIVE_TUPLE_QP));
        for bad in ["", "5tuple+", "mac", "5tuple,qp"] {
            assert_eq!(Fields::parse(bad), None, "{bad}");
        }
    }
}
