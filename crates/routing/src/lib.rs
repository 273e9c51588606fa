//! # fabricsim-routing: how traffic is spread over a fabric
//!
//! The layer above the topology. It keeps the **link state** overlay (up, down, derated) that
//! failures and drains change without rebuilding the fabric, finds the **equal-cost shortest
//! paths** between GPUs over the links that are up, and maps a **flow key** (what a switch
//! hashes: addresses, UDP source port, destination port, RoCE destination QP) to a path under a
//! **policy**: ECMP, E-ECMP, path pinning, or spraying (Gangidi et al. 2024).
//!
//! What it does not do: decide how fast a flow moves (the network engines) or how a
//! collective splits into flows (the collectives layer). Centralized TE plugs in as a
//! policy backed by an explicit path table (`fabricsim-te`).
//!
//! Start with [`Router::route`], [`FlowKey`] and [`LinkState`].

pub mod balance;
pub mod fields;
pub mod hash;
pub mod key;
pub mod link_state;
pub mod nic;
pub mod paths;
pub mod router;
pub mod select;

pub use fields::Fields;
pub use hash::{HashConfig, HashFunction};
pub use key::{FlowKey, MAX_QPS, ROCEV2_PORT};
pub use link_state::{cables_named, event_condition, DownError, LinkCondition, LinkState};
pub use nic::NicPorts;
pub use paths::PathFinder;
pub use router::{HashedPolicy, Policy, Route, RouteError, Router, RoutingPolicy};
pub use select::{PathSelection, Selector};
