//! What a run measures per job, and the slices a trace shows.
//!
//! Time split (per rank, then averaged over ranks): *compute* is time with a kernel on the
//! compute stream (communication overlapped with it is hidden); *exposed communication* is time
//! with no kernel running while the rank has a communication op in flight (a collective from
//! the rank's arrival, so waiting for slower members counts; a transfer for the sender from
//! its send, for the receiver from when both sides are posted), attributed to the
//! [`CommScope`]s of the ops in flight (shared equally when several are); *idle* is the rest of
//! the iteration: the pipeline bubble (a pipeline rank with nothing to run), a rank that
//! finished before the iteration's last one, and waiting for inputs that are not
//! communication.

use std::collections::BTreeMap;

use fabricsim_collectives::Collective;

use crate::job::JobSpec;

/// What a communication op serves: a parallelism dimension (by its communicator's name: `tp3`
/// is TP), point-to-point transfers (pipeline sends and receives), or another communicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CommScope {
    Tp,
    Cp,
    Pp,
    Dp,
    Ep,
    Other,
}

impl CommScope {
    pub const ALL: [CommScope; 6] = [
        CommScope::Tp,
        CommScope::Cp,
        CommScope::Pp,
        CommScope::Dp,
        CommScope::Ep,
        CommScope::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CommScope::Tp => "tp",
            CommScope::Cp => "cp",
            CommScope::Pp => "pp",
            CommScope::Dp => "dp",
            CommScope::Ep => "ep",
            CommScope::Other => "other",
        }
    }

    /// The scope of a communicator named `group` (`dp`, `tp12`, …).
    pub fn of_group(group: &str) -> CommScope {
        match group.trim_end_matches(|c: char| c.is_ascii_digit()) {
            "tp" => CommScope::Tp,
            "cp" => CommScope::Cp,
            "pp" => CommScope::Pp,
            "dp" => CommScope::Dp,
            "ep" => CommScope::Ep,
            _ => CommScope::Other,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lane {
    Compute,
    Comm,
    Memory,
}

/// Link groups' utilization over a run: per sample time (ns), each group's mean and highest
/// link utilization at that instant; a value holds until the next sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TierSeries {
    /// `lower->upper` or `upper->lower` by tier name, in order of the first link of each.
    pub groups: Vec<String>,
    pub samples: Vec<(u64, Vec<(f32, f32)>)>,
    /// When asked for, every network link's utilization at each sample time (links with none
    /// left out).
    pub links: Vec<(u64, Vec<(fabricsim_topology::LinkId, f32)>)>,
    /// The per-link samples stopped at [`TierSeries::MAX_LINK_SAMPLES`] (a longer interval
    /// keeps them all).
    pub truncated: bool,
}

impl TierSeries {
    /// Link samples kept at most (8 bytes each: 128 MiB).
    pub const MAX_LINK_SAMPLES: usize = 1 << 24;
}

/// One op's span on a rank, for the trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slice {
    pub rank: u32,
    pub lane: Lane,
    pub label: u32,
    pub start: u64,
    pub end: u64,
    /// What the op moved or computed, for the trace's args.
    pub detail: Detail,
}

/// A point-to-point transfer between two traced ranks, for the trace's arrows: the sender's and
/// the receiver's communication slices, as (rank, start, end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrow {
    pub from: (u32, u64, u64),
    pub to: (u32, u64, u64),
}

/// An op's figures in a trace: bytes moved (a collective's nccl-tests size, a transfer's, a
/// memory op's), FLOPs of a kernel, the communicator (index into [`JobStats::groups`]) or the
/// peer rank, and the algorithm and protocol a collective ran.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Detail {
    pub bytes: u64,
    pub flops: f64,
    pub group: Option<u32>,
    pub peer: Option<u32>,
    pub algorithm: Option<(&'static str, &'static str)>,
}

/// Collectives are reported by operation and communicator kind (the group name without its
/// trailing number: `tp`, `dp`, `world`), size, and the algorithm and protocol that ran them
/// (`None` for a group of one rank, which moves nothing).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CollectiveKey {
    pub op: Collective,
    pub scope: String,
    pub ranks: usize,
    pub algorithm: Option<(&'static str, &'static str)>,
}

impl CollectiveKey {
    pub fn new(
        op: Collective,
        group: &str,
        ranks: usize,
        algorithm: Option<(&'static str, &'static str)>,
    ) -> CollectiveKey {
        CollectiveKey {
            op,
            scope: Self::scope_of(group).to_string(),
            ranks,
            algorithm,
        }
    }

    /// A group's name without its trailing number (the whole name if it is all digits).
    fn scope_of(group: &str) -> &str {
        match group.trim_end_matches(|c: char| c.is_ascii_digit()) {
            "" => group,
            scope => scope,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tally {
    pub count: u64,
    pub bytes: u64,
    /// Summed over instances, ns.
    pub time_ns: u64,
}

impl Tally {
    /// Counts `times` alike instances (one simulated for an orbit of them) of `bytes` each,
    /// taking `time_ns` each.
    pub fn add(&mut self, bytes: u64, time_ns: u64, times: u32) {
        let n = u64::from(times);
        self.count += n;
        self.bytes += n * bytes;
        self.time_ns += n * time_ns;
    }
}

#[derive(Clone, Debug)]
pub struct JobStats {
    pub name: String,
    pub ranks: u32,
    pub gpu: &'static str,
    pub peak_flops: f64,
    pub tokens: u64,
    pub model_flops: f64,
    /// FLOPs of every kernel run (recomputation included).
    pub hardware_flops: f64,
    /// The last op's end, ns from the run's start.
    pub iteration_ns: u64,
    /// Summed over ranks, ns.
    pub compute_ns: u64,
    pub exposed_comm_ns: u64,
    /// Exposed communication by [`CommScope`] (in `CommScope::ALL` order), summed over ranks.
    pub exposed_by_scope: [u64; 6],
    pub collectives: BTreeMap<CollectiveKey, Tally>,
    pub transfers: Tally,
    pub trace_ranks: u32,
    pub slices: Vec<Slice>,
    pub labels: Vec<String>,
    /// The workload's communicator names, when slices are recorded.
    pub groups: Vec<String>,
    /// Transfers between traced ranks.
    pub arrows: Vec<Arrow>,
}

impl JobStats {
    pub fn new(spec: &JobSpec, trace_ranks: u32) -> JobStats {
        JobStats {
            name: spec.name.clone(),
            ranks: spec.workload.ranks.len() as u32,
            gpu: spec.compute.gpu.name,
            peak_flops: spec.compute.gpu.peak_flops,
            tokens: spec.workload.accounting.tokens,
            model_flops: spec.workload.accounting.model_flops,
            hardware_flops: 0.0,
            iteration_ns: 0,
            compute_ns: 0,
            exposed_comm_ns: 0,
            exposed_by_scope: [0; 6],
            collectives: BTreeMap::new(),
            transfers: Tally::default(),
            trace_ranks,
            slices: Vec::new(),
            labels: if trace_ranks > 0 {
                spec.workload.labels.clone()
            } else {
                Vec::new()
            },
            arrows: Vec::new(),
            groups: if trace_ranks > 0 {
                spec.workload
                    .groups
                    .iter()
                    .map(|g| g.name.clone())
                    .collect()
            } else {
                Vec::new()
            },
        }
    }

    pub fn slice(&mut self, s: Slice) {
        if s.rank < self.trace_ranks {
            self.slices.push(s);
        }
    }

    /// Records `a` if both its ranks are traced.
    pub fn arrow(&mut self, a: Arrow) {
        if a.from.0 < self.trace_ranks && a.to.0 < self.trace_ranks {
            self.arrows.push(a);
        }
    }

    /// Adds `tally`, collectives `op` on `ranks` ranks of `group` under `algorithm` (see
    /// [`CollectiveKey`]), to the job's. The orchestrator tallies per group and (operation,
    /// size) while it runs and adds each group's tallies here once, at the end.
    pub fn add_collectives(
        &mut self,
        op: Collective,
        group: &str,
        ranks: usize,
        algorithm: Option<(&'static str, &'static str)>,
        tally: Tally,
    ) {
        let t = self
            .collectives
            .entry(CollectiveKey::new(op, group, ranks, algorithm))
            .or_default();
        t.count += tally.count;
        t.bytes += tally.bytes;
        t.time_ns += tally.time_ns;
    }

    /// `times` alike transfers (one simulated for an orbit of them) of `bytes` each.
    pub fn transfer(&mut self, bytes: u64, time_ns: u64, times: u32) {
        self.transfers.add(bytes, time_ns, times);
    }
}
