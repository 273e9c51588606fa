//! The collective operations and how nccl-tests measures them.
//!
//! Sizes follow nccl-tests: `size` is the per-rank buffer for all-reduce, broadcast, reduce,
//! send/recv and all-to-all (each rank sends `size / n` to every peer); the whole gathered
//! buffer for all-gather and gather; the whole input buffer for reduce-scatter and scatter.
//! Rooted operations use rank 0 as root, as nccl-tests does by default.

/// A collective operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Collective {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    AllToAll,
    /// All-to-all with per-peer sizes (a matrix given with the request).
    AllToAllV,
    /// Every rank sends `size` to the next rank and receives from the previous one.
    SendRecv,
    Gather,
    Scatter,
    Barrier,
}

impl Collective {
    pub const ALL: [Collective; 11] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
        Collective::Reduce,
        Collective::AllToAll,
        Collective::AllToAllV,
        Collective::SendRecv,
        Collective::Gather,
        Collective::Scatter,
        Collective::Barrier,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "all-reduce",
            Collective::AllGather => "all-gather",
            Collective::ReduceScatter => "reduce-scatter",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::AllToAll => "all-to-all",
            Collective::AllToAllV => "all-to-allv",
            Collective::SendRecv => "sendrecv",
            Collective::Gather => "gather",
            Collective::Scatter => "scatter",
            Collective::Barrier => "barrier",
        }
    }

    /// Accepts the names above, with or without dashes (`allreduce`, `all_reduce`).
    pub fn parse(s: &str) -> Option<Collective> {
        let norm: String = s
            .chars()
            .filter(|c| *c != '-' && *c != '_')
            .collect::<String>()
            .to_ascii_lowercase();
        Collective::ALL
            .into_iter()
            .find(|c| c.name().replace('-', "") == norm)
    }

    /// nccl-tests' bus bandwidth factor for `n` ranks (its `doc/PERFORMANCE.md`): busbw = algbw
    /// × it.
    pub fn busbw_factor(self, n: usize) -> f64 {
        let n = n as f64;
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::AllGather
            | Collective::ReduceScatter
            | Collective::AllToAll
            | Collective::AllToAllV
            | Collective::Gather
            | Collective::Scatter => (n - 1.0) / n,
            Collective::Broadcast | Collective::Reduce | Collective::SendRecv => 1.0,
            Collective::Barrier => 0.0,
        }
    }

    /// Whether the operation reduces (and nccl-tests prints a `redop`).
    pub fn reduces(self) -> bool {
        matches!(
            self,
            Collective::AllReduce | Collective::ReduceScatter | Collective::Reduce
        )
    }

    /// Whether the operation has a root (rank 0).
    pub fn rooted(self) -> bool {
        matches!(
            self,
            Collective::Broadcast | Collective::Reduce | Collective::Gather | Collective::Scatter
        )
    }

    /// The granularity sizes must be a multiple of: operations that split the buffer into one
    /// piece per rank need `size` to divide into whole elements per rank (nccl-tests rounds the
    /// same way).
    pub fn per_rank_pieces(self) -> bool {
        matches!(
            self,
            Collective::AllGather
                | Collective::ReduceScatter
                | Collective::AllToAll
                | Collective::Gather
                | Collective::Scatter
        )
    }
}
