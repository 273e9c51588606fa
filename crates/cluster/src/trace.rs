//! Perfetto / Chrome trace JSON (the "Trace Event Format", opened by ui.perfetto.dev): one
//! process per job, per rank a compute thread, a communication thread and a memory thread
//! (`tid = 3·rank + lane`), one complete event (`"ph": "X"`) per op with `ts` and `dur` in µs.

use serde_json::{json, Value};

use crate::stats::{JobStats, Lane};

pub fn trace_json(jobs: &[JobStats]) -> Value {
    let mut events = Vec::new();
    for (pid, job) in jobs.iter().enumerate() {
        events.push(
            json!({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": job.name}}),
        );
        let ranks = job.trace_ranks.min(job.ranks);
        for r in 0..ranks {
            for (lane, what) in [
                (Lane::Compute, "compute"),
                (Lane::Comm, "comm"),
                (Lane::Memory, "memory"),
            ] {
                events.push(json!({
                    "ph": "M", "name": "thread_name", "pid": pid, "tid": tid(r, lane),
                    "args": {"name": format!("rank {r} {what}")}
                }));
            }
        }
        let mut slices = job.slices.clone();
        slices.sort_by_key(|s| (s.rank, s.lane, s.start, s.end, s.label));
        for s in slices {
            events.push(json!({
                "ph": "X",
                "name": job.labels.get(s.label as usize).map_or("", String::as_str),
                "pid": pid,
                "tid": tid(s.rank, s.lane),
                "ts": s.start as f64 / 1e3,
                "dur": (s.end - s.start) as f64 / 1e3,
            }));
        }
    }
    json!({"displayTimeUnit": "ms", "traceEvents": events})
}

fn tid(rank: u32, lane: Lane) -> u64 {
    3 * u64::from(rank)
        + match lane {
            Lane::Compute => 0,
            Lane::Comm => 1,
            Lane::Memory => 2,
        }
}
