//! `--set key=value` parameters of a preset: declared with defaults, read with types and ranges.

use std::ops::RangeInclusive;

use crate::builder::TopologyError;
use crate::units::{Bandwidth, Nanos};

/// One parameter a preset accepts.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    /// The default, written as a user would write the value.
    pub default: &'static str,
    pub help: &'static str,
}

/// Why a preset could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PresetError {
    #[error("unknown preset `{name}`; the presets are: {}", known.join(", "))]
    UnknownPreset {
        name: String,
        known: Vec<&'static str>,
    },
    #[error("`{assignment}` is not a parameter setting; write it as key=value, as in k=8")]
    BadAssignment { assignment: String },
    #[error("preset `{preset}` has no parameter `{key}`; its parameters are: {}", known.join(", "))]
    UnknownParam {
        preset: &'static str,
        key: String,
        known: Vec<&'static str>,
    },
    #[error("{preset}: {key}={value} is not accepted: {expected}")]
    BadParam {
        preset: &'static str,
        key: &'static str,
        value: String,
        expected: String,
    },
    #[error("{preset}: {error}")]
    Topology {
        preset: &'static str,
        error: TopologyError,
    },
}

/// Splits `key=value`.
pub fn parse_assignment(s: &str) -> Result<(String, String), PresetError> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(PresetError::BadAssignment {
            assignment: s.to_string(),
        }),
    }
}

/// The values of a preset's parameters: overrides where given, defaults elsewhere.
pub struct Params {
    preset: &'static str,
    values: Vec<(&'static str, String)>,
}

impl Params {
    /// Checks every override against `specs`; a later override of the same key wins.
    pub fn new(
        preset: &'static str,
        specs: &[ParamSpec],
        overrides: &[(String, String)],
    ) -> Result<Params, PresetError> {
        let mut values: Vec<(&'static str, String)> = specs
            .iter()
            .map(|s| (s.name, s.default.to_string()))
            .collect();
        for (key, value) in overrides {
            let Some(slot) = values.iter_mut().find(|(k, _)| k == key) else {
                return Err(PresetError::UnknownParam {
                    preset,
                    key: key.clone(),
                    known: specs.iter().map(|s| s.name).collect(),
                });
            };
            slot.1 = value.clone();
        }
        Ok(Params { preset, values })
    }

    pub fn preset(&self) -> &'static str {
        self.preset
    }

    /// The effective values, in declaration order (for reports).
    pub fn values(&self) -> &[(&'static str, String)] {
        &self.values
    }

    fn raw(&self, key: &'static str) -> &str {
        // Presets read only keys they declare; a miss is a bug in the preset, not user input.
        let found = self.values.iter().find(|(k, _)| *k == key);
        debug_assert!(
            found.is_some(),
            "preset {} reads undeclared parameter {key}",
            self.preset
        );
        found.map(|(_, v)| v.as_str()).unwrap_or("")
    }

    pub fn bad(&self, key: &'static str, expected: impl Into<String>) -> PresetError {
        PresetError::BadParam {
            preset: self.preset,
            key,
            value: self.raw(key).to_string(),
            expected: expected.into(),
        }
    }

    /// An integer within `range`.
    pub fn int(&self, key: &'static str, range: RangeInclusive<u32>) -> Result<u32, PresetError> {
        let expected = || {
            format!(
                "expected a whole number from {} to {}",
                range.start(),
                range.end()
            )
        };
        let v: u32 = self
            .raw(key)
            .parse()
            .map_err(|_| self.bad(key, expected()))?;
        if range.contains(&v) {
            Ok(v)
        } else {
            Err(self.bad(key, expected()))
        }
    }

    /// An even integer within `range`.
    pub fn even(&self, key: &'static str, range: RangeInclusive<u32>) -> Result<u32, PresetError> {
        let v = self.int(key, range.clone())?;
        if v % 2 == 0 {
            Ok(v)
        } else {
            Err(self.bad(
                key,
                format!(
                    "expected an even number from {} to {}",
                    range.start(),
                    range.end()
                ),
            ))
        }
    }

    pub fn flag(&self, key: &'static str) -> Result<bool, PresetError> {
        match self.raw(key) {
            "true" | "on" | "yes" | "1" => Ok(true),
            "false" | "off" | "no" | "0" => Ok(false),
            _ => Err(self.bad(key, "expected true or false")),
        }
    }

    pub fn bandwidth(&self, key: &'static str) -> Result<Bandwidth, PresetError> {
        match self.raw(key).parse::<Bandwidth>() {
            Ok(b) if b.0 > 0 => Ok(b),
            Ok(_) => Err(self.bad(key, "expected a positive bandwidth")),
            Err(e) => Err(self.bad(key, e.why)),
        }
    }

    pub fn latency(&self, key: &'static str) -> Result<Nanos, PresetError> {
        match self.raw(key).parse::<Nanos>() {
            Ok(t) if t.0 > 0 => Ok(t),
            Ok(_) => Err(self.bad(key, "expected a positive duration")),
            Err(e) => Err(self.bad(key, e.why)),
        }
    }

    /// One of `choices`, returned as its index.
    pub fn choice(&self, key: &'static str, choices: &[&str]) -> Result<usize, PresetError> {
        let v = self.raw(key);
        choices
            .iter()
            .position(|c| *c == v)
            .ok_or_else(|| self.bad(key, format!("expected one of {}", choices.join(", "))))
    }

    /// An oversubscription ratio such as `7`, `1:7`, `7:1` or `2.8`, returned as an exact
    /// fraction (numerator, denominator) of the larger side over the smaller, so at least 1:
    /// operators write it both ways round, and oversubscription is never below 1.
    pub fn ratio(&self, key: &'static str) -> Result<(u64, u64), PresetError> {
        let raw = self.raw(key);
        let expected = "expected an oversubscription ratio such as 7, 1:7 or 2.8";
        let side = |s: &str| -> Option<(u64, u64)> {
            let s = s.trim();
            let (int, frac) = s.split_once('.').unwrap_or((s, ""));
            if int.is_empty() && frac.is_empty() || frac.len() > 6 {
                return None;
            }
            let digits: u64 = format!("{int}{frac}").parse().ok()?;
            Some((digits, 10u64.pow(frac.len() as u32)))
        };
        let (n, d) = match raw.split_once(':') {
            Some((a, b)) => {
                let ((an, ad), (bn, bd)) = side(a)
                    .zip(side(b))
                    .ok_or_else(|| self.bad(key, expected))?;
                (bn * ad, an * bd)
            }
            None => side(raw).ok_or_else(|| self.bad(key, expected))?,
        };
        if d == 0 || n == 0 {
            return Err(self.bad(key, expected));
        }
        Ok(if n < d { (d, n) } else { (n, d) })
    }
}
