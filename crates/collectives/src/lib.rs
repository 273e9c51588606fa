//! # fabricsim-collectives: what a collective puts on the wire
//!
//! NCCL-like collectives over ranks placed on a fabric. A [`Request`] (operation, size, ranks,
//! algorithm, channels, chunk, fidelity) is planned into a [`Schedule`] of transfers between
//! ranks ([`algo`]); [`exec::run`] turns the transfers into flows on a
//! [`fabricsim_netsim::Network`] with a protocol and QPs per connection, and says how long the
//! collective took. [`tuner`] picks an algorithm and protocol as NCCL's cost model would,
//! [`placement`] puts ranks on GPUs, and [`bench`] runs nccl-tests-style size sweeps.
//!
//! Fidelity (docs/collectives.md): `step` makes every algorithm step's chunk a
//! flow; `pipelined` runs each ring channel (tree channel, pair) as one coupled variable with
//! per-step latency added analytically. They agree where nothing is congested.

pub mod algo;
pub mod bench;
pub mod exec;
pub mod hardware;
pub mod layout;
pub mod model;
pub mod op;
pub mod placement;
pub mod protocol;
pub mod qp_window;
pub mod schedule;
pub mod tuner;

pub use algo::{plan, Algorithm, Fidelity, Request, DEFAULT_CHUNK};
pub use exec::{ExecError, Execution, Outcome, QpMode, Transport};
pub use hardware::Generation;
pub use layout::Ranks;
pub use model::Platform;
pub use op::Collective;
pub use protocol::Protocol;
pub use schedule::Schedule;

/// Why a collective cannot be planned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("a collective needs at least one rank")]
    NoRanks,
    #[error("rank {rank} is not placed on a GPU")]
    NotAGpu { rank: usize },
    #[error("rank {rank} is placed on `{gpu}`, which an earlier rank already uses")]
    SharedGpu { rank: usize, gpu: String },
    #[error("algorithm `{algorithm}` does not implement {op}")]
    Unsupported {
        algorithm: &'static str,
        op: &'static str,
    },
    #[error("a collective needs at least one channel")]
    NoChannels,
    #[error("`{algorithm}` needs a power-of-two number of ranks, not {n}")]
    NeedsPowerOfTwo { algorithm: &'static str, n: u32 },
    #[error("`hierarchical` needs the same number of ranks on every host")]
    UnevenHosts,
    #[error("`nvls` reduces inside one NVSwitch domain, but the ranks span {hosts} hosts (use `nvls-tree`)")]
    NvlsSpansHosts { hosts: usize },
    #[error("`nvls-tree` joins hosts; inside one host use `nvls`")]
    NvlsTreeOneHost,
    #[error("all-to-allv needs an {n}×{n} size matrix")]
    SizesShape { n: u32 },
    #[error("the schedule would pass 2^32 transfers (use `pipelined` fidelity or fewer channels)")]
    TooManyTransfers,
}
