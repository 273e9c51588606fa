//! Rank layering: the order in which the TP, CP, PP and DP coordinates are laid onto consecutive
//! global ranks, innermost first. Placement puts consecutive ranks on the same host, then the same
//! rack, so the order decides which groups talk over NVLink and which cross the network.
//!
//! Two orders are in use: Llama 3's `[TP, CP, PP, DP]` ("The Llama 3 Herd of Models", §3.3.2),
//! fabricsim's default, and Megatron-Core's `tp-cp-ep-dp-pp` (the default `order` of
//! `megatron.core.parallel_state.initialize_model_parallel`), which keeps data (and expert)
//! parallelism inside the host and puts pipeline stages outermost. Expert parallelism splits the
//! DP dimension: an EP group is `EP` consecutive DP indices, and an expert's data-parallel group
//! the DP indices with the same position in their EP group; so `ep` may be written just inside
//! `dp`, as Megatron writes it, and is otherwise implied.

use std::fmt;

use serde::{Serialize, Serializer};

/// A dimension of the rank grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    Tp,
    Cp,
    Pp,
    Dp,
}

impl Axis {
    fn name(self) -> &'static str {
        match self {
            Axis::Tp => "tp",
            Axis::Cp => "cp",
            Axis::Pp => "pp",
            Axis::Dp => "dp",
        }
    }
}

/// The order of the rank grid's axes, innermost (fastest-varying) first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankOrder([Axis; 4]);

impl RankOrder {
    /// Llama 3's `[TP, CP, PP, DP]`.
    pub const LLAMA3: RankOrder = RankOrder([Axis::Tp, Axis::Cp, Axis::Pp, Axis::Dp]);
    /// Megatron-Core's default, `tp-cp-ep-dp-pp`.
    pub const MEGATRON: RankOrder = RankOrder([Axis::Tp, Axis::Cp, Axis::Dp, Axis::Pp]);

    /// Parses `tp-cp-pp-dp`-style text: each of tp, cp, pp and dp once, innermost first, and
    /// optionally `ep` right before `dp`.
    pub fn parse(text: &str) -> Result<RankOrder, String> {
        let expected = "expected tp, cp, pp and dp each once, joined by `-`, innermost first \
                        (e.g. tp-cp-pp-dp or tp-cp-ep-dp-pp), with ep only right before dp";
        let words: Vec<&str> = text.split('-').map(str::trim).collect();
        let mut axes = Vec::with_capacity(4);
        for (i, w) in words.iter().enumerate() {
            let axis = match w.to_ascii_lowercase().as_str() {
                "tp" => Axis::Tp,
                "cp" => Axis::Cp,
                "pp" => Axis::Pp,
                "dp" => Axis::Dp,
                "ep" if words
                    .get(i + 1)
                    .is_some_and(|n| n.eq_ignore_ascii_case("dp")) =>
                {
                    continue
                }
                _ => return Err(format!("order = \"{text}\": {expected}")),
            };
            if axes.contains(&axis) {
                return Err(format!("order = \"{text}\": {expected}"));
            }
            axes.push(axis);
        }
        axes.try_into()
            .map(RankOrder)
            .map_err(|_| format!("order = \"{text}\": {expected}"))
    }

    pub fn axes(&self) -> [Axis; 4] {
        self.0
    }
}

impl Default for RankOrder {
    fn default() -> Self {
        RankOrder::LLAMA3
    }
}

impl fmt::Display for RankOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|a| a.name()).collect();
        f.write_str(&names.join("-"))
    }
}

impl Serialize for RankOrder {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A communication group's dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dim {
    Tp,
    Cp,
    Dp,
    Ep,
    Edp,
}

impl Dim {
    pub(super) fn name(self) -> &'static str {
        match self {
            Dim::Tp => "tp",
            Dim::Cp => "cp",
            Dim::Dp => "dp",
            Dim::Ep => "ep",
            Dim::Edp => "edp",
        }
    }
}

/// A rank's coordinates.
#[derive(Clone, Copy, Debug)]
pub(super) struct Coord {
    pub tp: u32,
    pub cp: u32,
    pub pp: u32,
    pub dp: u32,
}

impl Coord {
    fn get(&self, a: Axis) -> u32 {
        match a {
            Axis::Tp => self.tp,
            Axis::Cp => self.cp,
            Axis::Pp => self.pp,
            Axis::Dp => self.dp,
        }
    }

    fn set(&mut self, a: Axis, v: u32) {
        match a {
            Axis::Tp => self.tp = v,
            Axis::Cp => self.cp = v,
            Axis::Pp => self.pp = v,
            Axis::Dp => self.dp = v,
        }
    }
}

pub(super) struct Layout {
    pub tp: u32,
    pub cp: u32,
    pub pp: u32,
    pub dp: u32,
    pub ep: u32,
    pub order: RankOrder,
}

impl Layout {
    fn size(&self, a: Axis) -> u32 {
        match a {
            Axis::Tp => self.tp,
            Axis::Cp => self.cp,
            Axis::Pp => self.pp,
            Axis::Dp => self.dp,
        }
    }

    pub fn rank(&self, c: Coord) -> u32 {
        self.order
            .0
            .iter()
            .rev()
            .fold(0, |r, &a| r * self.size(a) + c.get(a))
    }

    pub fn coord(&self, mut r: u32) -> Coord {
        let mut c = Coord {
            tp: 0,
            cp: 0,
            pp: 0,
            dp: 0,
        };
        for &a in &self.order.0 {
            c.set(a, r % self.size(a));
            r /= self.size(a);
        }
        c
    }

    /// The members of `r`'s group along `dim`, in group order.
    pub fn members(&self, dim: Dim, r: u32) -> Vec<u32> {
        let c = self.coord(r);
        (0..self.group_size(dim))
            .map(|i| self.member(dim, c, i))
            .collect()
    }

    /// The first member of `r`'s group along `dim`: the group's name among its dimension's.
    pub fn first_member(&self, dim: Dim, r: u32) -> u32 {
        self.member(dim, self.coord(r), 0)
    }

    fn group_size(&self, dim: Dim) -> u32 {
        match dim {
            Dim::Tp => self.tp,
            Dim::Cp => self.cp,
            Dim::Dp => self.dp,
            Dim::Ep => self.ep,
            Dim::Edp => self.dp / self.ep,
        }
    }

    /// The `i`-th member of the group along `dim` of the rank at `c`.
    fn member(&self, dim: Dim, c: Coord, i: u32) -> u32 {
        let c = match dim {
            Dim::Tp => Coord { tp: i, ..c },
            Dim::Cp => Coord { cp: i, ..c },
            Dim::Dp => Coord { dp: i, ..c },
            Dim::Ep => Coord {
                dp: c.dp / self.ep * self.ep + i,
                ..c
            },
            Dim::Edp => Coord {
                dp: c.dp % self.ep + i * self.ep,
                ..c
            },
        };
        self.rank(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(order: RankOrder) -> Layout {
        Layout {
            tp: 2,
            cp: 1,
            pp: 4,
            dp: 8,
            ep: 4,
            order,
        }
    }

    #[test]
    fn llama3_order_puts_pipeline_stages_inside_data_parallelism() {
        let l = layout(RankOrder::LLAMA3);
        // rank = tp + TP·(cp + CP·(pp + PP·dp))
        assert_eq!(l.members(Dim::Tp, 0), [0, 1]);
        assert_eq!(l.members(Dim::Dp, 0), [0, 8, 16, 24, 32, 40, 48, 56]);
        assert_eq!(l.members(Dim::Ep, 8), [0, 8, 16, 24]);
        assert_eq!(l.members(Dim::Edp, 8), [8, 40]);
        for r in 0..64 {
            assert_eq!(l.rank(l.coord(r)), r);
        }
    }

    #[test]
    fn megatron_order_puts_data_and_expert_parallelism_inside_the_host() {
        let l = layout(RankOrder::MEGATRON);
        // rank = tp + TP·(cp + CP·(dp + DP·pp)): an EP group of 4 × TP 2 fills 8 ranks.
        assert_eq!(l.members(Dim::Ep, 0), [0, 2, 4, 6]);
        assert_eq!(l.members(Dim::Dp, 1), [1, 3, 5, 7, 9, 11, 13, 15]);
        assert_eq!(l.coord(16).pp, 1);
        for r in 0..64 {
            assert_eq!(l.rank(l.coord(r)), r);
        }
    }

    #[test]
    fn a_group_is_named_by_its_first_member_and_its_members_share_it() {
        for order in [RankOrder::LLAMA3, RankOrder::MEGATRON] {
            let l = layout(order);
            for dim in [Dim::Tp, Dim::Cp, Dim::Dp, Dim::Ep, Dim::Edp] {
                for r in 0..64 {
                    let members = l.members(dim, r);
                    assert_eq!(l.first_member(dim, r), members[0], "{dim:?} of {r}");
                    assert!(members.contains(&r), "{dim:?} of {r}: {members:?}");
                    for &m in &members {
                        assert_eq!(l.members(dim, m), members, "{dim:?} of {m}");
                    }
                }
            }
        }
    }

    #[test]
    fn orders_parse_as_megatron_writes_them_and_refuse_the_rest() {
        assert_eq!(RankOrder::parse("tp-cp-ep-dp-pp"), Ok(RankOrder::MEGATRON));
        assert_eq!(RankOrder::parse("TP-CP-PP-DP"), Ok(RankOrder::LLAMA3));
        assert_eq!(RankOrder::MEGATRON.to_string(), "tp-cp-dp-pp");
        for bad in [
            "tp-cp-pp",
            "tp-cp-pp-dp-dp",
            "tp-ep-cp-dp-pp",
            "tp-cp-xx-dp",
            "",
        ] {
            let e = RankOrder::parse(bad).unwrap_err();
            assert!(
                e.contains("expected tp, cp, pp and dp each once"),
                "{bad}: {e}"
            );
        }
    }
}
