//! Algorithms: a collective request becomes a [`Schedule`].
//!
//! | algorithm | operations |
//! |---|---|
//! | `ring` | all-reduce, all-gather, reduce-scatter; broadcast and reduce as a pipelined chain |
//! | `tree` | all-reduce, broadcast, reduce: chain inside a host, double binary tree across hosts |
//! | `direct` | all-to-all(v), sendrecv, gather, scatter, barrier (dissemination) |
//! | `pxn` | as `direct`, with inter-host traffic forwarded over NVLink to the destination's rail |
//! | `halving-doubling` | all-reduce (Rabenseifner), reduce-scatter (recursive halving) |
//! | `recursive-doubling` | all-reduce, all-gather |
//! | `hierarchical` | all-reduce: intra-host reduce-scatter, inter-host all-reduce per rail, intra-host all-gather |
//! | `nvls` | all-reduce, all-gather, reduce-scatter inside one NVSwitch domain |
//! | `nvls-tree` | all-reduce across hosts: NVLS inside each host, a tree of heads across |

mod direct;
mod doubling;
mod hierarchical;
mod nvls;
mod nvls_tree;
mod ring;
mod tree;

use crate::layout::Ranks;
use crate::op::Collective;
use crate::protocol::Family;
use crate::schedule::Schedule;
use crate::PlanError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    Ring,
    Tree,
    Direct,
    Pxn,
    HalvingDoubling,
    RecursiveDoubling,
    Hierarchical,
    Nvls,
    NvlsTree,
}

impl Algorithm {
    pub const ALL: [Algorithm; 9] = [
        Algorithm::Ring,
        Algorithm::Tree,
        Algorithm::Direct,
        Algorithm::Pxn,
        Algorithm::HalvingDoubling,
        Algorithm::RecursiveDoubling,
        Algorithm::Hierarchical,
        Algorithm::Nvls,
        Algorithm::NvlsTree,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::Tree => "tree",
            Algorithm::Direct => "direct",
            Algorithm::Pxn => "pxn",
            Algorithm::HalvingDoubling => "halving-doubling",
            Algorithm::RecursiveDoubling => "recursive-doubling",
            Algorithm::Hierarchical => "hierarchical",
            Algorithm::Nvls => "nvls",
            Algorithm::NvlsTree => "nvls-tree",
        }
    }

    pub fn parse(s: &str) -> Option<Algorithm> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == s.to_ascii_lowercase())
    }

    /// Whether the algorithm implements `op`.
    pub fn supports(self, op: Collective) -> bool {
        use Collective::*;
        match self {
            Algorithm::Ring => matches!(
                op,
                AllReduce | AllGather | ReduceScatter | Broadcast | Reduce
            ),
            Algorithm::Tree => matches!(op, AllReduce | Broadcast | Reduce),
            Algorithm::Direct => matches!(
                op,
                AllToAll | AllToAllV | SendRecv | Gather | Scatter | Barrier
            ),
            Algorithm::Pxn => matches!(op, AllToAll | AllToAllV | SendRecv),
            Algorithm::HalvingDoubling => matches!(op, AllReduce | ReduceScatter),
            Algorithm::RecursiveDoubling => matches!(op, AllReduce | AllGather),
            Algorithm::Hierarchical => op == AllReduce,
            Algorithm::Nvls => matches!(op, AllReduce | AllGather | ReduceScatter),
            Algorithm::NvlsTree => op == AllReduce,
        }
    }

    /// The rows of NCCL's latency and bandwidth tables it reads: trees, NVLS, and rings for
    /// everything else (NCCL runs point-to-point traffic on ring connections).
    pub fn family(self) -> Family {
        match self {
            Algorithm::Tree => Family::Tree,
            Algorithm::Nvls => Family::Nvls,
            Algorithm::NvlsTree => Family::NvlsTree,
            _ => Family::Ring,
        }
    }
}

/// How finely a collective is simulated (docs/collectives.md, "Fidelity").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fidelity {
    /// Every algorithm step's chunk is a flow that waits for the steps before it.
    Step,
    /// One variable per group (a ring channel, a tree channel, a pair), all its bytes at one
    /// rate, per-step latency added analytically.
    Pipelined,
}

impl Fidelity {
    pub fn name(self) -> &'static str {
        match self {
            Fidelity::Step => "step",
            Fidelity::Pipelined => "pipelined",
        }
    }

    pub fn parse(s: &str) -> Option<Fidelity> {
        [Fidelity::Step, Fidelity::Pipelined]
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
    }
}

/// NCCL's default chunk for pipelined trees and chains: one of the `NCCL_STEPS` (8) slots of
/// the 4 MiB Simple buffer (`NCCL_BUFFSIZE`'s default).
pub const DEFAULT_CHUNK: u64 = 512 * 1024;

/// One collective to plan.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub op: Collective,
    /// The nccl-tests size (see [`crate::op`]).
    pub bytes: u64,
    pub ranks: &'a Ranks,
    pub algorithm: Algorithm,
    pub channels: u32,
    /// Chunk size of pipelined trees, chains and NVLS.
    pub chunk: u64,
    pub fidelity: Fidelity,
    /// All-to-allv: `sizes[i * n + j]` bytes from rank `i` to rank `j`.
    pub sizes: Option<&'a [u64]>,
}

impl Request<'_> {
    pub fn n(&self) -> u32 {
        self.ranks.len() as u32
    }

    pub fn step(&self) -> bool {
        self.fidelity == Fidelity::Step
    }
}

/// Plans `req`: checks that the algorithm fits the operation and the placement, and builds its
/// schedule.
pub fn plan(req: &Request<'_>) -> Result<Schedule, PlanError> {
    let n = req.n();
    if n == 0 {
        return Err(PlanError::NoRanks);
    }
    if !req.algorithm.supports(req.op) {
        return Err(PlanError::Unsupported {
            algorithm: req.algorithm.name(),
            op: req.op.name(),
        });
    }
    if req.channels == 0 {
        return Err(PlanError::NoChannels);
    }
    if req.op == Collective::AllToAllV {
        match req.sizes {
            Some(s) if s.len() == (n as usize) * (n as usize) => {}
            _ => return Err(PlanError::SizesShape { n }),
        }
    }
    let mut s = Schedule::new();
    if n == 1 {
        s.finish();
        return Ok(s);
    }
    match req.algorithm {
        Algorithm::Ring => ring::plan(req, &mut s),
        Algorithm::Tree => tree::plan(req, &mut s),
        Algorithm::Direct | Algorithm::Pxn => direct::plan(req, &mut s),
        Algorithm::HalvingDoubling | Algorithm::RecursiveDoubling => doubling::plan(req, &mut s)?,
        Algorithm::Hierarchical => hierarchical::plan(req, &mut s)?,
        Algorithm::Nvls => nvls::plan(req, &mut s)?,
        Algorithm::NvlsTree => nvls_tree::plan(req, &mut s)?,
    }
    if s.too_large() {
        return Err(PlanError::TooManyTransfers);
    }
    s.finish();
    Ok(s)
}
