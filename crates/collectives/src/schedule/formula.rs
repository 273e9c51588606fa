//! Transfers in closed form: a ring's steps ([`RingSteps`]), a pipeline's chunks
//! ([`Pipeline`]) or an all-to-all's pairs ([`Pairs`]), each transfer, what it waits for and
//! what it releases figured from its id.

use super::pairs::Pairs;
use super::pipeline::Pipeline;
use super::ring_steps::RingSteps;
use super::{Transfer, NONE};

#[derive(Clone, Debug)]
pub(super) enum Formula {
    Ring(RingSteps),
    Pipeline(Pipeline),
    /// A group per transfer, none waiting for another.
    Pairs(Pairs),
}

/// What a transfer in closed form releases: edges listed by the formula (ids from `offset`),
/// and one more given by it (or [`NONE`]).
pub(super) struct Released<'a> {
    pub listed: &'a [u32],
    pub offset: u32,
    pub forward: u32,
}

impl Released<'_> {
    /// One transfer (or none, for [`NONE`]).
    pub fn one(t: u32) -> Released<'static> {
        Released {
            listed: &[],
            offset: 0,
            forward: t,
        }
    }
}

impl Formula {
    pub fn start(&self) -> u32 {
        match self {
            Formula::Ring(r) => r.start,
            Formula::Pipeline(p) => p.start,
            Formula::Pairs(p) => p.start,
        }
    }

    pub fn len(&self) -> u64 {
        match self {
            Formula::Ring(r) => r.len(),
            Formula::Pipeline(p) => p.len(),
            Formula::Pairs(p) => p.len(),
        }
    }

    /// Its group (its first, for pairs: each transfer has its own, on its own channel).
    pub fn group(&self) -> u32 {
        match self {
            Formula::Ring(r) => r.group,
            Formula::Pipeline(p) => p.group,
            Formula::Pairs(p) => p.group_start,
        }
    }

    /// Transfer `id`, on its group's `channel` (pairs figure their own).
    pub fn transfer(&self, id: u32, channel: u32) -> Transfer {
        match self {
            Formula::Ring(r) => r.transfer(r.at(id), channel),
            Formula::Pipeline(p) => p.transfer(id, channel),
            Formula::Pairs(p) => p.transfer(id),
        }
    }

    pub fn has_prev(&self, id: u32) -> bool {
        match self {
            Formula::Ring(r) => r.at(id).k > 0,
            Formula::Pipeline(p) => p.at(id).0 > 0,
            Formula::Pairs(_) => false,
        }
    }

    pub fn waits(&self, id: u32) -> u32 {
        match self {
            Formula::Ring(r) => r.waits(r.at(id)),
            Formula::Pipeline(p) => p.waits(id),
            Formula::Pairs(_) => 0,
        }
    }

    pub fn next(&self, id: u32) -> u32 {
        match self {
            Formula::Ring(r) => r.next(r.at(id)),
            Formula::Pipeline(p) => p.next(id),
            Formula::Pairs(_) => NONE,
        }
    }

    pub fn released(&self, id: u32) -> Released<'_> {
        match self {
            Formula::Ring(r) => Released::one(r.forward(r.at(id))),
            Formula::Pipeline(p) => {
                let (listed, offset) = p.dependents(id);
                Released {
                    listed,
                    offset,
                    forward: NONE,
                }
            }
            Formula::Pairs(_) => Released::one(NONE),
        }
    }

    /// What `id` releases as it starts: the receive slots it frees (`NCCL_STEPS`).
    pub fn freed_by_start(&self, id: u32) -> Released<'_> {
        match self {
            Formula::Ring(r) => Released::one(r.freed_by_start(r.at(id))),
            Formula::Pipeline(p) => p.freed_by_start(id),
            Formula::Pairs(_) => Released::one(NONE),
        }
    }

    /// What `id` releases as it arrives besides its dependents: the receive slot it frees
    /// where nothing forwards it, or [`NONE`].
    pub fn freed_by_arrival(&self, id: u32) -> u32 {
        match self {
            Formula::Pipeline(p) => p.freed_by_arrival(id),
            Formula::Ring(_) | Formula::Pairs(_) => NONE,
        }
    }

    /// The transfers that wait for nothing, in order.
    pub fn starts(&self) -> Vec<u32> {
        match self {
            Formula::Ring(r) => r.starts().collect(),
            Formula::Pipeline(p) => p.starts().collect(),
            Formula::Pairs(p) => (p.start..p.start + p.len() as u32).collect(),
        }
    }

    /// Dependencies on transfers outside the formula, `(d, t)` by `t` in order: a ring's
    /// entries.
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32)> + Clone + '_ {
        let ring = match self {
            Formula::Ring(r) => Some(r),
            Formula::Pipeline(_) | Formula::Pairs(_) => None,
        };
        ring.into_iter().flat_map(|r| {
            (0..r.n())
                .filter(|&i| r.entry(i) != NONE)
                .map(|i| (r.entry(i), r.start + i))
        })
    }

    /// Each edge once, with the bytes of all its transfers.
    pub fn sends(&self, channel: u32) -> Box<dyn Iterator<Item = Transfer> + '_> {
        match self {
            Formula::Ring(r) => Box::new(r.edges(channel)),
            Formula::Pipeline(p) => Box::new(p.edges(channel)),
            Formula::Pairs(p) => {
                Box::new((p.start..p.start + p.len() as u32).map(|id| p.transfer(id)))
            }
        }
    }
}
