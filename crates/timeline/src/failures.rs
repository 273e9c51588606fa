//! The failure model: per component class, a rate per unit and hour and a mean repair time;
//! failures of a class arrive as a Poisson process over its units (exponential gaps), repairs
//! take an exponential time. What a failure does is [`Class::effect`]'s.
//!
//! Default rates (docs/commands/cluster.md#failure-model has the derivations):
//! - GPU, host, NIC and software: the Llama 3 paper (Dubey et al., "The Llama 3 Herd of
//!   Models", arXiv 2407.21783, Table 5): 419 unexpected interruptions in 54 days of
//!   pre-training on 16,384 H100s (2,048 hosts). GPU: faulty GPU 148, HBM3 72, SRAM 19, GPU
//!   system processor 17, silent data corruption 6, thermal 6 (268 in 16,384 × 1,296
//!   GPU-hours). Host: unplanned host maintenance 32, SSD 3, power supply 3, chassis 2, IO
//!   expansion board 2, CPU 2, system memory 2 (46 in 2,048 × 1,296 host-hours). NIC: 7 in
//!   16,384 × 1,296 NIC-hours. Software: software bug 54, NCCL watchdog 7, dependency 2 (63,
//!   per GPU-hour of a running job).
//! - Cables and ToRs: Alibaba HPN (Qian et al., SIGCOMM 2024, §2): 0.057 % of NIC–ToR links
//!   and 0.051 % of ToRs fail per month (730 h). Switches above the ToR: the ToR's rate
//!   (assumed; no public per-tier figure in these sources).
//! - Repair times are assumptions (no public distribution in these sources), overridable:
//!   24 h for a GPU, host or NIC (a swap), 4 h for a cable, 6 h for a switch.

use serde::Serialize;

/// Component classes, in report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    Gpu,
    Host,
    Nic,
    Cable,
    Tor,
    Switch,
    Software,
}

pub const CLASSES: [Class; 7] = [
    Class::Gpu,
    Class::Host,
    Class::Nic,
    Class::Cable,
    Class::Tor,
    Class::Switch,
    Class::Software,
];

/// What a failure does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// The host goes out until repair; its jobs are interrupted.
    HostOut,
    /// A single-homed host loses its network until repair (its jobs are interrupted); a
    /// dual-homed one keeps its other port.
    Cable,
    /// The ToR's single-homed hosts go out until repair.
    Tor,
    /// Routing goes around it; jobs go on (the lost capacity is not yet in the step times).
    RoutedAround,
    /// The job restarts; nothing needs repair.
    JobRestart,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Gpu => "gpu",
            Class::Host => "host",
            Class::Nic => "nic",
            Class::Cable => "cable",
            Class::Tor => "tor",
            Class::Switch => "switch",
            Class::Software => "software",
        }
    }

    pub fn parse(s: &str) -> Option<Class> {
        CLASSES.into_iter().find(|c| c.name() == s)
    }

    pub fn effect(self) -> Effect {
        match self {
            Class::Gpu | Class::Host | Class::Nic => Effect::HostOut,
            Class::Cable => Effect::Cable,
            Class::Tor => Effect::Tor,
            Class::Switch => Effect::RoutedAround,
            Class::Software => Effect::JobRestart,
        }
    }

    /// What one unit of the class is.
    pub fn unit(self) -> &'static str {
        match self {
            Class::Gpu => "GPU",
            Class::Host => "host",
            Class::Nic => "NIC",
            Class::Cable => "NIC–ToR link",
            Class::Tor => "ToR switch",
            Class::Switch => "switch above the ToR",
            Class::Software => "GPU of a running job",
        }
    }
}

/// A class's rate per unit and hour, and its mean repair time in hours.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rate {
    pub per_hour: f64,
    pub repair_hours: f64,
}

/// Hours in the Llama 3 window: 54 days.
const LLAMA3_HOURS: f64 = 54.0 * 24.0;
/// HPN's month.
const MONTH_HOURS: f64 = 730.0;

/// The default model (see the module docs for each figure's source).
pub fn default_rate(c: Class) -> Rate {
    let (per_hour, repair_hours) = match c {
        Class::Gpu => (268.0 / (16_384.0 * LLAMA3_HOURS), 24.0),
        Class::Host => (46.0 / (2_048.0 * LLAMA3_HOURS), 24.0),
        Class::Nic => (7.0 / (16_384.0 * LLAMA3_HOURS), 24.0),
        Class::Software => (63.0 / (16_384.0 * LLAMA3_HOURS), 0.0),
        Class::Cable => (0.00057 / MONTH_HOURS, 4.0),
        Class::Tor | Class::Switch => (0.00051 / MONTH_HOURS, 6.0),
    };
    Rate {
        per_hour,
        repair_hours,
    }
}

/// Young's approximation of the best checkpoint interval (Young 1974, "A first order
/// approximation to the optimum checkpoint interval", CACM 17(9)): √(2 · C · M) for a write
/// time `C` and a mean time to interruption `M` (both in seconds).
pub fn young_daly(write_s: f64, mtti_s: f64) -> f64 {
    (2.0 * write_s * mtti_s).sqrt()
}
