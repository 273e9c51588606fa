//! Units shared by every layer: simulated time ([`Nanos`]), data ([`Bytes`]) and rates
//! ([`Bandwidth`], stored as bytes per second).
//!
//! Every quantity is an integer. Parsing is exact decimal arithmetic (no floating point), so
//! `1.5us` is exactly 1,500 ns and `400Gbps` exactly 50,000,000,000 B/s; an input that does not
//! land on a whole unit (`0.3ns`, `1bps`) is an error rather than a silent rounding. Printing is
//! canonical and exact, so `parse(print(x)) == x` for every value; the file formats rely on it.
//!
//! Accepted spellings:
//! - time: `ns`, `us` (or `µs`), `ms`, `s` — `1.5us`, `500ns`;
//! - bytes: `B`, decimal `KB MB GB TB`, binary `KiB MiB GiB TiB`, and nccl-tests' bare binary
//!   suffixes `K M G T` (`-b 1M` means 1 MiB there) — `16MiB`, `1M`, `4096`;
//! - bandwidth: bits per second `bps Kbps Mbps Gbps Tbps` (also `Gb/s`), the port-speed
//!   shorthand `400G` (= 400 Gbps, as network engineers say it), or bytes per second
//!   `B/s KB/s MB/s GB/s TB/s GiB/s` (also `GBps`) — `400Gbps`, `50GB/s`.
//!
//! ```
//! use fabricsim_topology::units::{Bandwidth, Nanos};
//!
//! let nic: Bandwidth = "400Gbps".parse()?;
//! assert_eq!(nic, "50GB/s".parse()?);
//! assert_eq!(nic.to_string(), "400Gbps");
//! assert_eq!("1.5us".parse::<Nanos>()?, Nanos(1_500));
//! # Ok::<(), fabricsim_topology::units::UnitError>(())
//! ```

use std::fmt;
use std::str::FromStr;

/// A span or instant of simulated time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

/// An amount of data in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

/// A rate in bytes per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bandwidth(pub u64);

impl Bandwidth {
    /// `gbps` gigabits per second (the unit switch ports are sold in).
    pub const fn from_gbps(gbps: u64) -> Self {
        Bandwidth(gbps * 125_000_000)
    }
    /// `gbs` gigabytes (10^9 bytes) per second (the unit NVLink and HBM are quoted in).
    pub const fn from_gbytes_per_s(gbs: u64) -> Self {
        Bandwidth(gbs * 1_000_000_000)
    }
    pub const fn bytes_per_sec(self) -> u64 {
        self.0
    }
    /// Bits per second; exact, as u128 cannot overflow for any u64 byte rate.
    pub const fn bits_per_sec(self) -> u128 {
        self.0 as u128 * 8
    }
    /// Gigabits per second, for reports.
    pub fn as_gbps(self) -> f64 {
        self.0 as f64 * 8.0 / 1e9
    }
}

/// A string that could not be read as a quantity.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{input}` is not {what}: {why}")]
pub struct UnitError {
    pub input: String,
    pub what: &'static str,
    pub why: String,
}

struct Unit {
    suffixes: &'static [&'static str],
    /// The value of one unit is `numer / denom` base units.
    numer: u128,
    denom: u128,
}

const TIME_UNITS: &[Unit] = &[
    Unit {
        suffixes: &["ns"],
        numer: 1,
        denom: 1,
    },
    Unit {
        suffixes: &["us", "µs"],
        numer: 1_000,
        denom: 1,
    },
    Unit {
        suffixes: &["ms"],
        numer: 1_000_000,
        denom: 1,
    },
    Unit {
        suffixes: &["s"],
        numer: 1_000_000_000,
        denom: 1,
    },
];

const BYTE_UNITS: &[Unit] = &[
    Unit {
        suffixes: &["B", ""],
        numer: 1,
        denom: 1,
    },
    Unit {
        suffixes: &["KB"],
        numer: 1_000,
        denom: 1,
    },
    Unit {
        suffixes: &["MB"],
        numer: 1_000_000,
        denom: 1,
    },
    Unit {
        suffixes: &["GB"],
        numer: 1_000_000_000,
        denom: 1,
    },
    Unit {
        suffixes: &["TB"],
        numer: 1_000_000_000_000,
        denom: 1,
    },
    Unit {
        suffixes: &["KiB", "K"],
        numer: 1 << 10,
        denom: 1,
    },
    Unit {
        suffixes: &["MiB", "M"],
        numer: 1 << 20,
        denom: 1,
    },
    Unit {
        suffixes: &["GiB", "G"],
        numer: 1 << 30,
        denom: 1,
    },
    Unit {
        suffixes: &["TiB", "T"],
        numer: 1 << 40,
        denom: 1,
    },
];

const BANDWIDTH_UNITS: &[Unit] = &[
    Unit {
        suffixes: &["bps", "b/s"],
        numer: 1,
        denom: 8,
    },
    Unit {
        suffixes: &["Kbps", "Kb/s"],
        numer: 1_000,
        denom: 8,
    },
    Unit {
        suffixes: &["Mbps", "Mb/s", "M"],
        numer: 1_000_000,
        denom: 8,
    },
    Unit {
        suffixes: &["Gbps", "Gb/s", "G"],
        numer: 1_000_000_000,
        denom: 8,
    },
    Unit {
        suffixes: &["Tbps", "Tb/s", "T"],
        numer: 1_000_000_000_000,
        denom: 8,
    },
    Unit {
        suffixes: &["B/s", "Bps"],
        numer: 1,
        denom: 1,
    },
    Unit {
        suffixes: &["KB/s", "KBps"],
        numer: 1_000,
        denom: 1,
    },
    Unit {
        suffixes: &["MB/s", "MBps"],
        numer: 1_000_000,
        denom: 1,
    },
    Unit {
        suffixes: &["GB/s", "GBps"],
        numer: 1_000_000_000,
        denom: 1,
    },
    Unit {
        suffixes: &["TB/s", "TBps"],
        numer: 1_000_000_000_000,
        denom: 1,
    },
    Unit {
        suffixes: &["KiB/s"],
        numer: 1 << 10,
        denom: 1,
    },
    Unit {
        suffixes: &["MiB/s"],
        numer: 1 << 20,
        denom: 1,
    },
    Unit {
        suffixes: &["GiB/s"],
        numer: 1 << 30,
        denom: 1,
    },
];

/// Reads `<decimal><unit>` exactly into a count of base units.
fn parse_quantity(
    input: &str,
    what: &'static str,
    units: &[Unit],
    base: &str,
    example: &str,
) -> Result<u64, UnitError> {
    let err = |why: String| UnitError {
        input: input.to_string(),
        what,
        why,
    };
    let s = input.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = (&s[..split], s[split..].trim_start());
    if number.is_empty() || number == "." {
        return Err(err(format!(
            "expected a number followed by a unit, as in `{example}`"
        )));
    }
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if frac_part.contains('.') {
        return Err(err("the number has more than one decimal point".into()));
    }
    let digits = format!("{int_part}{frac_part}");
    if digits.len() > 30 {
        return Err(err("the number has too many digits".into()));
    }
    let mantissa: u128 = digits
        .parse()
        .map_err(|_| err("the number is malformed".into()))?;
    let Some(unit) = units.iter().find(|u| u.suffixes.contains(&suffix)) else {
        let known: Vec<&str> = units
            .iter()
            .flat_map(|u| u.suffixes.iter().copied())
            .filter(|s| !s.is_empty())
            .collect();
        let why = if suffix.is_empty() {
            format!("a unit is required, one of {}", known.join(", "))
        } else {
            format!(
                "unknown unit `{suffix}`; expected one of {}",
                known.join(", ")
            )
        };
        return Err(err(why));
    };
    let scale = 10u128.pow(frac_part.len() as u32) * unit.denom;
    let numer = mantissa
        .checked_mul(unit.numer)
        .ok_or_else(|| err("the value is too large".into()))?;
    if numer % scale != 0 {
        return Err(err(format!("it is not a whole number of {base}")));
    }
    let value = numer / scale;
    if value > u128::from(MAX_QUANTITY) {
        return Err(err(format!(
            "the value is too large: at most 2^62 {base}, so that sums and simulated times stay exact"
        )));
    }
    Ok(value as u64)
}

/// The largest quantity an input may give (2^62 nanoseconds, bytes or bytes per second): sums of
/// a few of them and simulated times stay inside 64 bits. 2^62 ns is 146 years.
pub const MAX_QUANTITY: u64 = 1 << 62;

/// Writes `value / unit` as an exact decimal with trailing zeros trimmed.
fn write_exact(f: &mut fmt::Formatter<'_>, value: u128, unit: u128, suffix: &str) -> fmt::Result {
    let (whole, frac) = (value / unit, value % unit);
    if frac == 0 {
        return write!(f, "{whole}{suffix}");
    }
    let width = unit.ilog10() as usize;
    let frac = format!("{frac:0width$}");
    write!(f, "{whole}.{}{suffix}", frac.trim_end_matches('0'))
}

impl FromStr for Nanos {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        parse_quantity(s, "a duration", TIME_UNITS, "nanoseconds", "1.5us").map(Nanos)
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0 as u128;
        let (unit, suffix) = match v {
            v if v >= 1_000_000_000 => (1_000_000_000, "s"),
            v if v >= 1_000_000 => (1_000_000, "ms"),
            v if v >= 1_000 => (1_000, "us"),
            _ => (1, "ns"),
        };
        write_exact(f, v, unit, suffix)
    }
}

impl FromStr for Bytes {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        parse_quantity(s, "a size", BYTE_UNITS, "bytes", "16MiB").map(Bytes)
    }
}

impl fmt::Display for Bytes {
    /// The largest binary unit that divides the value, else the largest decimal one, else bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0 as u128;
        let units: [(u128, &str); 8] = [
            (1 << 40, "TiB"),
            (1 << 30, "GiB"),
            (1 << 20, "MiB"),
            (1 << 10, "KiB"),
            (1_000_000_000_000, "TB"),
            (1_000_000_000, "GB"),
            (1_000_000, "MB"),
            (1_000, "KB"),
        ];
        match units.iter().find(|(u, _)| v != 0 && v.is_multiple_of(*u)) {
            Some((u, suffix)) => write!(f, "{}{suffix}", v / u),
            None => write!(f, "{v}B"),
        }
    }
}

impl FromStr for Bandwidth {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        parse_quantity(
            s,
            "a bandwidth",
            BANDWIDTH_UNITS,
            "bytes per second",
            "400Gbps",
        )
        .map(Bandwidth)
    }
}

impl fmt::Display for Bandwidth {
    /// In bits per second with the largest SI prefix not above the value: `400Gbps`, `3.6Tbps`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = self.bits_per_sec();
        let (unit, suffix) = match bits {
            b if b >= 1_000_000_000_000 => (1_000_000_000_000, "Tbps"),
            b if b >= 1_000_000_000 => (1_000_000_000, "Gbps"),
            b if b >= 1_000_000 => (1_000_000, "Mbps"),
            b if b >= 1_000 => (1_000, "Kbps"),
            _ => (1, "bps"),
        };
        write_exact(f, bits, unit, suffix)
    }
}

macro_rules! serde_as_string {
    ($($t:ty),*) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    )*};
}
serde_as_string!(Nanos, Bytes, Bandwidth);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_stop_at_two_to_the_62() {
        assert_eq!(
            "4611686018427387904".parse::<Bytes>().unwrap().0,
            MAX_QUANTITY
        );
        for big in ["4611686018427387905", "18446744073709551615ns", "147years"] {
            let e = big
                .parse::<Bytes>()
                .map(|_| ())
                .or_else(|_| big.parse::<Nanos>().map(|_| ()));
            assert!(e.is_err(), "{big}");
        }
        let e = "18446744073709551615ns"
            .parse::<Nanos>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 2^62 nanoseconds"), "{e}");
        let e = "40000000Tbps".parse::<Bandwidth>().unwrap_err().to_string();
        assert!(e.contains("at most 2^62 bytes per second"), "{e}");
    }

    #[test]
    fn parses_the_spellings_people_use() {
        assert_eq!(
            "400Gbps".parse::<Bandwidth>().unwrap(),
            Bandwidth(50_000_000_000)
        );
        assert_eq!(
            "400G".parse::<Bandwidth>().unwrap(),
            Bandwidth::from_gbps(400)
        );
        assert_eq!(
            "400 Gb/s".parse::<Bandwidth>().unwrap(),
            Bandwidth::from_gbps(400)
        );
        assert_eq!(
            "50GB/s".parse::<Bandwidth>().unwrap(),
            Bandwidth::from_gbps(400)
        );
        assert_eq!(
            "3.6Tbps".parse::<Bandwidth>().unwrap(),
            Bandwidth::from_gbytes_per_s(450)
        );
        assert_eq!("1.5us".parse::<Nanos>().unwrap(), Nanos(1_500));
        assert_eq!("1.5µs".parse::<Nanos>().unwrap(), Nanos(1_500));
        assert_eq!("2s".parse::<Nanos>().unwrap(), Nanos(2_000_000_000));
        assert_eq!("16MiB".parse::<Bytes>().unwrap(), Bytes(16 << 20));
        assert_eq!("1M".parse::<Bytes>().unwrap(), Bytes(1 << 20));
        assert_eq!("1.5KB".parse::<Bytes>().unwrap(), Bytes(1_500));
        assert_eq!("4096".parse::<Bytes>().unwrap(), Bytes(4_096));
    }

    #[test]
    fn rejects_what_is_not_exact_or_not_a_quantity() {
        for bad in ["", "Gbps", "1.2.3Gbps", "400", "400Gbit", "1bps", "-5Gbps"] {
            assert!(
                bad.parse::<Bandwidth>().is_err(),
                "{bad:?} should not parse"
            );
        }
        let e = "0.3ns".parse::<Nanos>().unwrap_err();
        assert!(
            e.to_string().contains("not a whole number of nanoseconds"),
            "{e}"
        );
        let e = "10 parsecs".parse::<Nanos>().unwrap_err();
        assert!(e.to_string().contains("unknown unit `parsecs`"), "{e}");
        assert!("99999999999999999999TB".parse::<Bytes>().is_err());
    }

    #[test]
    fn printing_is_canonical() {
        assert_eq!(Bandwidth::from_gbps(400).to_string(), "400Gbps");
        assert_eq!(Bandwidth::from_gbytes_per_s(450).to_string(), "3.6Tbps");
        assert_eq!(Nanos(1_500).to_string(), "1.5us");
        assert_eq!(Nanos(25).to_string(), "25ns");
        assert_eq!(Bytes(16 << 20).to_string(), "16MiB");
        assert_eq!(Bytes(1_500).to_string(), "1500B");
        assert_eq!(Bytes(0).to_string(), "0B");
    }

    proptest::proptest! {
        #[test]
        fn print_then_parse_is_identity(v in 0u64..u64::MAX / 8) {
            proptest::prop_assert_eq!(Nanos(v).to_string().parse::<Nanos>().unwrap(), Nanos(v));
            proptest::prop_assert_eq!(Bytes(v).to_string().parse::<Bytes>().unwrap(), Bytes(v));
            proptest::prop_assert_eq!(
                Bandwidth(v).to_string().parse::<Bandwidth>().unwrap(), Bandwidth(v));
        }
    }
}
