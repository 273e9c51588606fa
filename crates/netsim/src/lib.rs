//! # fabricsim-netsim: how fast traffic moves
//!
//! The network engines. Given flows — weighted link sets from the routing layer, sizes,
//! optional rate caps, path latencies — an engine says when each one completes.
//!
//! - [`FlowEngine`] (the default): flow-level; rates are max-min fair over link capacities
//!   ([`maxmin`], progressive filling), re-solved only for the component of flows that a change
//!   touches, all changes at one timestamp batched into one solve.
//! - [`AnalyticalEngine`]: alpha-beta, no contention — instant estimates and a cross-check.
//! - [`Network`]: an engine plus a router and the link state: submits flows by GPU pair and
//!   flow key, and on a link failure re-routes the flows that crossed it (or reports them
//!   stalled); optionally charges each flow's bytes per link to a tag ([`attribution`]).
//!
//! Engines are passive ([`Engine`]): the caller owns the clock, submits at the engine's current
//! time, asks for [`Engine::next_event`] and calls [`Engine::advance`]; an engine never calls up.
//! Not modelled here: packets, queues, PFC and congestion control (a later packet-level engine).

pub mod analytical;
pub mod attribution;
pub mod classes;
pub mod engine;
pub mod flow_engine;
pub mod flows_file;
mod fold;
mod link_sum;
pub mod maxmin;
pub mod network;
mod route_memo;
pub mod window;

pub use analytical::AnalyticalEngine;
pub use classes::{ClassBroken, LinkClasses};
pub use engine::{Completion, Engine, FlowId, FlowSpec, LinkStats, LinkUse};
pub use flow_engine::FlowEngine;
pub use network::{Fold, Leg, Legs, Network, NetworkError, PlacedBundle, Placement, Strand};
