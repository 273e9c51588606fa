//! # fabricsim-topology: the physical fabric
//!
//! The bottom layer of fabricsim. It models what is cabled: GPUs, NICs, the NVSwitch of each
//! host, and network switches arranged in tiers (leaf/ToR/RTSW at tier 1, then spine/CTSW,
//! then aggregation/core/ATSW) and, where a fabric has them, planes. Links are directed, come in
//! pairs (one cable = two links) and carry a capacity in bytes per second and a latency in
//! nanoseconds.
//!
//! What it does not model: link state (up, down, derated) lives in the routing layer as an
//! overlay, so that failures never rebuild a topology; how traffic picks among paths is routing;
//! how fast it moves is the network engines'.
//!
//! Start with:
//! - [`Topology`]: the validated, immutable graph (struct-of-arrays, CSR adjacency, typed ids);
//! - [`TopologyBuilder`]: the only way to make one, and the list of invariants it checks;
//! - [`presets`]: Meta AI Zones and clusters, Alibaba HPN and DCN+, NVIDIA SuperPOD, fat-tree,
//!   leaf-spine; [`format`]: the JSON file format and Graphviz output;
//! - [`figures::FabricFigures`]: what `fabricsim topo describe` reports.
//!
//! ```
//! use fabricsim_topology::figures::FabricFigures;
//! use fabricsim_topology::presets;
//!
//! let topo = presets::build("fat-tree", &[("k".into(), "4".into())])?;
//! let figures = FabricFigures::of(&topo);
//! assert_eq!(figures.hosts, 16); // k^3/4
//! assert_eq!(figures.switches, 20); // 5k^2/4
//! assert_eq!(figures.diameter_hops, 5); // edge, agg, core, agg, edge
//! # Ok::<(), fabricsim_topology::presets::PresetError>(())
//! ```
//!
//! The forwarding rule used by every figure (and later every route) is in [`reach`]: GPUs of a
//! host talk over NVLink; between hosts, traffic leaves through a NIC of the source GPU, crosses
//! only switches, and enters through a NIC of the destination GPU.

pub mod builder;
pub mod figures;
pub mod format;
pub mod ids;
pub mod inventory;
pub mod model;
mod names;
pub mod outfile;
pub mod presets;
pub mod reach;
pub mod source;
pub mod symmetry;
pub mod text;
pub mod units;

pub use builder::{TopologyBuilder, TopologyError};
pub use ids::{HostId, LinkId, NodeId};
pub use model::{Host, Link, NodeKind, SwitchRole, Topology};
pub use source::{FabricSource, LoadError};
pub use units::{Bandwidth, Bytes, Nanos, UnitError};
