//! # fabricsim-controller: centralized TE as a running controller
//!
//! Meta's TE controller (Gangidi et al. 2024) watches the fabric and the jobs, recomputes paths
//! from a global view, and programs each switch's next hops keyed by ⟨source port, destination
//! prefix⟩. This layer runs [`fabricsim_te`]'s solvers that way, behind an HTTP JSON API
//! (`fabricsim serve`):
//!
//! - **documents in** ([`model`]): a fabric (preset or topology file), link events
//!   (down / up / derate), demand sets (GPU-to-GPU rates) and jobs (placed ranks and a
//!   collective), each checked against the fabric before anything changes;
//! - **durable state** ([`store`]): SQLite in WAL mode, one transaction per change, committed
//!   before the change is acknowledged;
//! - **route versions** ([`routes`]): the solution programmed as per-switch next-hop tables,
//!   with the link loads of the traffic those tables forward, recomputed off the request path
//!   and published whole ([`Controller`]);
//! - **the API** ([`api`], [`metrics`], [`server`]): docs/api/openapi.yaml.
//!
//! What it does not do: talk to real switches (the tables are served, not pushed), or own
//! simulated time (the simulator's `te` policy does that).
//!
//! Start with [`Controller`] and [`api::handle`].

pub mod api;
pub mod controller;
pub mod metrics;
pub mod model;
pub mod routes;
pub mod server;
pub mod state;
pub mod store;

pub use controller::Controller;
pub use server::{serve, Config, ServeError};
