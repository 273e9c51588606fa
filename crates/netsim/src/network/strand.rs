//! What a bundle is made of: strands of legs, and what a flow is kept as to be routed again.

use fabricsim_routing::FlowKey;
use fabricsim_topology::LinkId;
use smallvec::SmallVec;

/// A part of a strand: the route of a flow key under the policy, or one fixed link.
#[derive(Clone, Debug, PartialEq)]
pub enum Leg {
    Routed(FlowKey),
    Link(LinkId),
}

/// A strand's legs: one or two inline (a direct path, or NVLink to a proxy then the network).
pub type Legs = SmallVec<[Leg; 2]>;

/// Legs in series, carrying `weight` times the bundle's rate on each of their links.
#[derive(Clone, Debug, PartialEq)]
pub struct Strand {
    pub legs: Legs,
    pub weight: f64,
}

/// What a flow was submitted as, so that it can be routed again after a link change; dropped
/// when the flow is done (a finished flow keeps no memory here but this tag).
pub(super) enum Recipe {
    Key(FlowKey),
    /// A bundle of one strand of weight 1 over one or two routed legs (a message sent
    /// directly, or through a PXN proxy: most of an all-to-all's), kept without a boxed strand.
    Routed(FlowKey, Option<FlowKey>),
    Bundle(Box<[Strand]>),
    /// A bundle in flight under link classes, which hold for a fixed link state: nothing will
    /// route it again, so its strands are not kept (after [`super::Network::fix_link_state`], no
    /// flow keeps a recipe at all).
    Fixed,
    Done,
}

impl Recipe {
    pub(super) fn of_bundle(strands: Vec<Strand>) -> Recipe {
        if let [strand] = &strands[..] {
            if strand.weight == 1.0 {
                match strand.legs[..] {
                    [Leg::Routed(a)] => return Recipe::Routed(a, None),
                    [Leg::Routed(a), Leg::Routed(b)] => return Recipe::Routed(a, Some(b)),
                    _ => {}
                }
            }
        }
        Recipe::Bundle(strands.into_boxed_slice())
    }

    /// A bundle's strands (`None` for a key or a finished flow).
    pub(super) fn strands(&self) -> Option<Vec<Strand>> {
        match self {
            Recipe::Routed(a, b) => Some(vec![Strand {
                legs: [Some(*a), *b]
                    .into_iter()
                    .flatten()
                    .map(Leg::Routed)
                    .collect(),
                weight: 1.0,
            }]),
            Recipe::Bundle(strands) => Some(strands.to_vec()),
            Recipe::Key(_) | Recipe::Fixed | Recipe::Done => None,
        }
    }
}
