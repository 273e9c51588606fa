//! # fabricsim-te: centralized traffic engineering
//!
//! Meta's centralized TE (Gangidi et al. 2024) takes the topology, the link state and the jobs'
//! placement, computes paths for the training traffic from a global view (CSPF, about every
//! 30 s and after failures) and programs them as next hops keyed by ⟨source port,
//! destination prefix⟩, an overlay above the BGP (ECMP) underlay. This layer is that
//! controller's brain:
//!
//! - a **traffic matrix** ([`TrafficMatrix`]): demands between GPUs, as rates, read from a CSV
//!   or derived from the bytes a collective's transfers put between hosts;
//! - an **instance** ([`Instance`]): each demand's candidate paths (its equal-cost
//!   shortest-path DAG over the links that are up) and the links' capacities;
//! - **solvers** ([`solve`]) minimizing the maximum link utilization: CSPF-style greedy, the
//!   exact multi-commodity-flow LP (small instances), and a multiplicative-weights
//!   (Garg–Könemann) approximation with a certified lower bound (full clusters);
//! - the **`te` routing policy** ([`TePolicy`]): the solution as a path table per
//!   (source GPU, destination GPU) — Meta's ⟨source port, destination prefix⟩ with one NIC per
//!   GPU — falling back to ECMP where the table has no entry or its path is down;
//! - **reports** ([`report`]): max / mean / p99 link utilization per tier under ECMP, E-ECMP
//!   and TE, side by side.
//!
//! What it does not do: move bytes (the network engines do, with the table as their policy), and
//! it does not own time: when to recompute is the caller's decision.
//!
//! Start with [`Instance::new`] and [`solve::solve`].

pub mod demand;
pub mod instance;
pub mod policy;
pub mod report;
pub mod solve;

pub use demand::{Demand, DemandError, TrafficMatrix};
pub use instance::{Instance, InstanceError};
pub use policy::{PathTable, Routing, TePolicy};
pub use solve::{solve, Solution, SolveError, Solver};
