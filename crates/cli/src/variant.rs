//! A routing policy with the hosts' path selection over it, as `--compare-routing` names one
//! (`ecmp`, `ecmp+disjoint`, `eecmp+flowlet:500us`), for `bench` and `route balance`.

use fabricsim_routing::PathSelection;
use fabricsim_te::Routing;

use crate::bench::bad;
use crate::failure::Failure;

#[derive(Clone, Copy)]
pub struct Variant {
    pub routing: Routing,
    pub selection: PathSelection,
}

impl Variant {
    /// `POLICY[+MODE]`; without a mode, `selection`.
    pub fn parse(text: &str, selection: PathSelection) -> Option<Variant> {
        let (routing, mode) = match text.split_once('+') {
            Some((r, m)) => (r, Some(PathSelection::parse(m)?)),
            None => (text, None),
        };
        Some(Variant {
            routing: Routing::parse(routing)?,
            selection: mode.unwrap_or(selection),
        })
    }

    pub fn name(&self) -> String {
        match self.selection {
            PathSelection::Hashed => self.routing.name(),
            s => format!("{}+{}", self.routing.name(), s.name()),
        }
    }
}

/// `--path-selection`'s mode.
pub fn selection(text: &str) -> Result<PathSelection, Failure> {
    PathSelection::parse(text).ok_or_else(|| bad("path-selection", text, PathSelection::EXPECTED))
}

/// The variants `--compare-routing` lists, or `routing` alone under `selection`.
pub fn variants(
    compare: &[String],
    routing: impl FnOnce() -> Result<Routing, Failure>,
    selection: PathSelection,
) -> Result<Vec<Variant>, Failure> {
    if compare.is_empty() {
        return Ok(vec![Variant {
            routing: routing()?,
            selection,
        }]);
    }
    compare
        .iter()
        .map(|p| {
            Variant::parse(p, selection).ok_or_else(|| {
                bad(
                    "compare-routing",
                    p,
                    &format!(
                        "a policy ({}), optionally +MODE ({})",
                        Routing::expected(),
                        PathSelection::EXPECTED
                    ),
                )
            })
        })
        .collect()
}
