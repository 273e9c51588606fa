//! Perfetto / Chrome trace JSON (the "Trace Event Format", opened by ui.perfetto.dev): one
//! process per job, per rank a compute, a communication and a memory thread, one complete event
//! (`"ph": "X"`, `ts` and `dur` in µs) per op, its `args` the rank and lane and what it moved or
//! computed: `bytes`, `flops`, the communicator `group` or the `peer` rank, and a collective's
//! `algorithm` and `protocol`.
//!
//! Each pipeline transfer between two traced ranks is an arrow (flow events `s` and `f`) from
//! the sender's slice to the receiver's.
//!
//! When the run sampled its links, a "fabric links" process has a counter track per link group
//! (`rtsw->ctsw utilization`, its `mean` and `max` over time).
//!
//! Complete events on one thread must nest, and ops of one lane overlap (a rank's FSDP
//! all-gather runs while its TP collectives do), so each lane is split into as many tracks as
//! it has ops at once: an op goes on the first track free when it starts (interval
//! partitioning, the fewest tracks). Track 0 of rank `R`'s lane `l` is thread `3·R + l`; track
//! `k` is thread `3·R + l + 3·N·k` for `N` ranks traced, named `rank R comm #k+1`.

use serde_json::{json, Value};

use crate::stats::{JobStats, Lane, TierSeries};

/// The trace of `jobs`, with `series` (when sampled) as counter tracks of a "fabric" process:
/// one per link group, its mean and highest link utilization over time.
pub fn trace_json(jobs: &[JobStats], series: &TierSeries) -> Value {
    let mut events = Vec::new();
    if !series.samples.is_empty() {
        let pid = jobs.len();
        events.push(
            json!({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": "fabric links"}}),
        );
        for (at, stats) in &series.samples {
            for (group, (mean, max)) in series.groups.iter().zip(stats) {
                events.push(json!({
                    "ph": "C",
                    "name": format!("{group} utilization"),
                    "pid": pid,
                    "ts": *at as f64 / 1e3,
                    "args": {"mean": mean, "max": max},
                }));
            }
        }
    }
    let mut next_id = 0u64;
    for (pid, job) in jobs.iter().enumerate() {
        events.push(
            json!({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": job.name}}),
        );
        let ranks = job.trace_ranks.min(job.ranks);
        let mut slices = job.slices.clone();
        slices.sort_by_key(|s| (s.rank, s.lane, s.start, s.end, s.label));
        // Per (rank, lane), the end of each track's last op.
        let mut tracks: Vec<u64> = Vec::new();
        let mut current = None;
        let mut named = std::collections::BTreeSet::new();
        // The thread of each communication slice, for the arrows.
        let mut comm_tid = std::collections::BTreeMap::new();
        for s in slices {
            if current != Some((s.rank, s.lane)) {
                current = Some((s.rank, s.lane));
                tracks.clear();
            }
            let k = match tracks.iter().position(|&end| end <= s.start) {
                Some(k) => k,
                None => {
                    tracks.push(0);
                    tracks.len() - 1
                }
            };
            tracks[k] = s.end;
            let tid = tid(s.rank, s.lane, k, ranks);
            if s.lane == Lane::Comm {
                comm_tid.insert((s.rank, s.start, s.end), tid);
            }
            if named.insert(tid) {
                let suffix = if k == 0 {
                    String::new()
                } else {
                    format!(" #{}", k + 1)
                };
                events.push(json!({
                    "ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": format!("rank {} {}{suffix}", s.rank, lane_name(s.lane))}
                }));
            }
            events.push(json!({
                "ph": "X",
                "name": job.labels.get(s.label as usize).map_or("", String::as_str),
                "pid": pid,
                "tid": tid,
                "ts": s.start as f64 / 1e3,
                "dur": (s.end - s.start) as f64 / 1e3,
                "args": args(job, &s),
            }));
        }
        arrows(&mut events, pid, job, &comm_tid, &mut next_id);
    }
    json!({"displayTimeUnit": "ms", "traceEvents": events})
}

/// Flow events (arrows) from each transfer's send slice to its receive slice, bound to the
/// slices that enclose their ends.
fn arrows(
    events: &mut Vec<Value>,
    pid: usize,
    job: &JobStats,
    comm_tid: &std::collections::BTreeMap<(u32, u64, u64), u64>,
    next_id: &mut u64,
) {
    for a in &job.arrows {
        let (Some(&from), Some(&to)) = (comm_tid.get(&a.from), comm_tid.get(&a.to)) else {
            continue;
        };
        let mid = |(_, start, end): (u32, u64, u64)| (start + end) as f64 / 2e3;
        events.push(json!({
            "ph": "s", "id": *next_id, "name": "send", "cat": "p2p", "pid": pid, "tid": from,
            "ts": mid(a.from),
        }));
        events.push(json!({
            "ph": "f", "bp": "e", "id": *next_id, "name": "send", "cat": "p2p", "pid": pid,
            "tid": to, "ts": mid(a.to),
        }));
        *next_id += 1;
    }
}

/// A slice's args: its rank and lane, and what it moved or computed.
fn args(job: &JobStats, s: &crate::stats::Slice) -> Value {
    let mut a = json!({"rank": s.rank, "lane": lane_name(s.lane)});
    let d = &s.detail;
    if d.bytes > 0 {
        a["bytes"] = json!(d.bytes);
    }
    if d.flops > 0.0 {
        a["flops"] = json!(d.flops);
    }
    if let Some(g) = d.group.and_then(|g| job.groups.get(g as usize)) {
        a["group"] = json!(g);
    }
    if let Some(p) = d.peer {
        a["peer"] = json!(p);
    }
    if let Some((algorithm, protocol)) = d.algorithm {
        a["algorithm"] = json!(algorithm);
        a["protocol"] = json!(protocol);
    }
    a
}

fn lane_name(lane: Lane) -> &'static str {
    match lane {
        Lane::Compute => "compute",
        Lane::Comm => "comm",
        Lane::Memory => "memory",
    }
}

fn tid(rank: u32, lane: Lane, track: usize, ranks: u32) -> u64 {
    let lane = match lane {
        Lane::Compute => 0,
        Lane::Comm => 1,
        Lane::Memory => 2,
    };
    3 * u64::from(rank) + lane + 3 * u64::from(ranks) * track as u64
}
