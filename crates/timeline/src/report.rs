//! What a cluster run reports: per job (queueing, running, iterations, lost work, ETTR, slowdown
//! against running alone) and for the cluster (utilization and fragmentation over time,
//! failures by class, GPU-hours lost by cause), as text, JSON and CSV.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::failures::Class;
use crate::plan::Plan;
use crate::sim::{Job, Phase};

#[derive(Clone, Debug, Serialize)]
pub struct JobRow {
    pub name: String,
    pub workload: String,
    pub gpus: u32,
    pub arrival_h: f64,
    pub start_h: Option<f64>,
    pub end_h: Option<f64>,
    /// `finished`, `running` or `waiting` at the end of the run.
    pub state: &'static str,
    /// Hours waiting for GPUs: before the first start and after interruptions.
    pub queue_h: f64,
    pub iterations: f64,
    pub iterations_wanted: f64,
    /// Mean seconds per iteration while computing.
    pub iteration_s: f64,
    /// Mean iteration time over its iteration time alone on the same GPUs (neighbours' cost).
    pub slowdown: f64,
    /// Seconds per iteration alone where the topology-aware policy puts it in an empty
    /// cluster: `hours` of work are that many hours at this time, so a worse placement takes
    /// longer.
    pub reference_s: f64,
    pub interruptions: u32,
    /// GPU-hours of computing lost to interruptions (work since the last checkpoint).
    pub lost_gpu_h: f64,
    pub restart_h: f64,
    pub checkpoint_h: f64,
    /// Effective training time ratio: computing whose work was kept, over the time from its
    /// first start to its end (or to the end of the run).
    pub ettr: f64,
    /// Where its last iteration's time went (with its neighbours then): the share computing,
    /// and the communication not hidden behind computing, by scope (`tp`, `pp`, `dp`, …).
    pub compute_share: f64,
    pub exposed_comm: BTreeMap<&'static str, f64>,
}

impl JobRow {
    pub(crate) fn of(j: &Job, workload: &str, now: f64) -> JobRow {
        let h = |s: f64| s / 3600.0;
        let state = match j.phase {
            Phase::Done => "finished",
            Phase::Waiting => "waiting",
            _ => "running",
        };
        let waiting_now = if j.phase == Phase::Waiting && j.req.arrival <= now {
            now - j.wait_since
        } else {
            0.0
        };
        let wall = j.first_start.map_or(0.0, |s| j.end.unwrap_or(now) - s);
        let useful = j.compute_s - j.lost_compute_s;
        JobRow {
            name: j.req.name.clone(),
            workload: workload.to_string(),
            gpus: j.gpus,
            arrival_h: h(j.req.arrival),
            start_h: j.first_start.map(h),
            end_h: j.end.map(h),
            state,
            queue_h: h(j.queued + waiting_now),
            iterations: j.done,
            iterations_wanted: j.target,
            iteration_s: if j.computed > 0.0 {
                j.compute_s / j.computed
            } else {
                0.0
            },
            slowdown: if j.alone_s > 0.0 {
                j.compute_s / j.alone_s
            } else {
                1.0
            },
            reference_s: j.reference,
            interruptions: j.interruptions,
            // (+ 0.0: an empty sum is -0.0, which prints as "-0".)
            lost_gpu_h: j.lost_by.values().sum::<f64>() + 0.0,
            restart_h: h(j.restart_s),
            checkpoint_h: h(j.write_s),
            ettr: if wall > 0.0 { useful / wall } else { 0.0 },
            compute_share: j.step.compute,
            exposed_comm: j
                .step
                .exposed
                .iter()
                .filter(|(_, &v)| v > 0.0)
                .map(|(&k, &v)| (k, v))
                .collect(),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Sample {
    pub hour: f64,
    /// GPUs held by running jobs.
    pub allocated: u64,
    /// GPUs of jobs computing (not restarting or writing a checkpoint).
    pub computing: u64,
    pub free: u64,
    /// GPUs of hosts out of service (failed, in repair).
    pub out: u64,
    pub waiting_jobs: u64,
    /// Free GPUs that no waiting job can be given (fragmentation).
    pub fragmented: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct FailureRow {
    pub class: Class,
    pub unit: &'static str,
    pub per_unit_hour: f64,
    pub repair_h: f64,
    pub failures: u64,
    /// Jobs it interrupted.
    pub interrupted: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub days: f64,
    pub seed: u64,
    pub scheduler: String,
    pub spares_per_zone: u32,
    pub gpus: u64,
    pub jobs_arrived: usize,
    pub jobs_finished: usize,
    /// Time-mean share of GPUs held by jobs, and computing.
    pub utilization: f64,
    pub computing: f64,
    /// Time-mean share of GPUs free while jobs waited.
    pub fragmentation: f64,
    /// GPU-weighted mean ETTR of the jobs that ran.
    pub ettr: f64,
    pub failures: Vec<FailureRow>,
    /// GPU-hours lost, by cause: `lost work (CLASS)`, `restarts`, `checkpoint writes`,
    /// `out of service`.
    pub lost_gpu_h: BTreeMap<String, f64>,
    /// Step-time simulations run, and reused for a placement of the same shape.
    pub simulations: u64,
    pub reused: u64,
    pub jobs: Vec<JobRow>,
    pub samples: Vec<Sample>,
}

impl Outcome {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        plan: &Plan,
        gpus: u64,
        jobs: Vec<JobRow>,
        samples: Vec<Sample>,
        failures: BTreeMap<Class, (u64, u64)>,
        out_gpu_s: f64,
        (simulations, reused): (u64, u64),
        seed: u64,
    ) -> Outcome {
        let mean = |f: &dyn Fn(&Sample) -> u64| {
            if samples.is_empty() || gpus == 0 {
                0.0
            } else {
                samples.iter().map(|s| f(s) as f64).sum::<f64>()
                    / (samples.len() as f64 * gpus as f64)
            }
        };
        let mut lost: BTreeMap<String, f64> = BTreeMap::new();
        for j in &jobs {
            *lost.entry("restarts".into()).or_default() += j.restart_h * f64::from(j.gpus);
            *lost.entry("checkpoint writes".into()).or_default() +=
                j.checkpoint_h * f64::from(j.gpus);
        }
        lost.insert("out of service".into(), out_gpu_s / 3600.0);
        let ran: Vec<&JobRow> = jobs.iter().filter(|j| j.start_h.is_some()).collect();
        let weight: f64 = ran.iter().map(|j| f64::from(j.gpus)).sum();
        Outcome {
            days: plan.duration / 86_400.0,
            seed,
            scheduler: plan.scheduler.clone(),
            spares_per_zone: plan.spares,
            gpus,
            jobs_arrived: jobs
                .iter()
                .filter(|j| j.arrival_h * 3600.0 <= plan.duration)
                .count(),
            jobs_finished: jobs.iter().filter(|j| j.state == "finished").count(),
            utilization: mean(&|s| s.allocated),
            computing: mean(&|s| s.computing),
            fragmentation: mean(&|s| s.fragmented),
            ettr: if weight > 0.0 {
                ran.iter().map(|j| j.ettr * f64::from(j.gpus)).sum::<f64>() / weight
            } else {
                0.0
            },
            failures: plan
                .rates
                .iter()
                .map(|(&class, r)| {
                    let (n, hit) = failures.get(&class).copied().unwrap_or_default();
                    FailureRow {
                        class,
                        unit: class.unit(),
                        per_unit_hour: r.per_hour,
                        repair_h: r.repair_hours,
                        failures: n,
                        interrupted: hit,
                    }
                })
                .collect(),
            lost_gpu_h: lost,
            simulations,
            reused,
            jobs,
            samples,
        }
    }

    pub fn text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{} days of {} GPUs, scheduler {}, {} spare hosts per zone, seed {}",
            self.days, self.gpus, self.scheduler, self.spares_per_zone, self.seed
        );
        let _ = writeln!(
            o,
            "jobs: {} arrived, {} finished; utilization {:.1} % held, {:.1} % computing; fragmentation {:.1} %; ETTR {:.3} (GPU-weighted)",
            self.jobs_arrived,
            self.jobs_finished,
            100.0 * self.utilization,
            100.0 * self.computing,
            100.0 * self.fragmentation,
            self.ettr
        );
        let _ = writeln!(
            o,
            "\nfailures        per unit-hour  repair h  count  jobs hit"
        );
        for f in &self.failures {
            let _ = writeln!(
                o,
                "  {:<12} {:>14.3e} {:>9.1} {:>6} {:>9}",
                f.class.name(),
                f.per_unit_hour,
                f.repair_h,
                f.failures,
                f.interrupted
            );
        }
        let _ = writeln!(o, "\nGPU-hours lost");
        for (cause, h) in &self.lost_gpu_h {
            let _ = writeln!(o, "  {cause:<28} {h:>12.0}");
        }
        let _ = writeln!(
            o,
            "  {:<28} {:>12.0}",
            "lost work (interruptions)",
            self.jobs.iter().map(|j| j.lost_gpu_h).sum::<f64>() + 0.0
        );
        let _ = writeln!(
            o,
            "\nlargest jobs                      GPUs  state     queue h  iterations  slowdown  vs ref  interrupts   ETTR  most exposed comm"
        );
        let mut big: Vec<&JobRow> = self.jobs.iter().filter(|j| j.start_h.is_some()).collect();
        big.sort_by(|a, b| {
            b.gpus
                .cmp(&a.gpus)
                .then(a.arrival_h.total_cmp(&b.arrival_h))
        });
        for j in big.iter().take(8) {
            let most = j
                .exposed_comm
                .iter()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map_or(String::from("-"), |(k, v)| {
                    format!("{k} {:.1} %", 100.0 * v)
                });
            let _ = writeln!(
                o,
                "  {:<30} {:>6}  {:<9} {:>7.1} {:>11.0} {:>9.3} {:>7.3} {:>11} {:>6.3}  {most}",
                j.name,
                j.gpus,
                j.state,
                j.queue_h,
                j.iterations,
                j.slowdown,
                if j.reference_s > 0.0 {
                    j.iteration_s / j.reference_s
                } else {
                    1.0
                },
                j.interruptions,
                j.ettr
            );
        }
        let _ = writeln!(
            o,
            "\nstep times: {} simulated, {} reused for placements of the same shape",
            self.simulations, self.reused
        );
        o
    }

    /// One row per job.
    pub fn jobs_csv(&self) -> String {
        let mut o = String::from("name,workload,gpus,arrival_h,start_h,end_h,state,queue_h,iterations,iterations_wanted,iteration_s,slowdown,reference_s,interruptions,lost_gpu_h,restart_h,checkpoint_h,ettr\n");
        let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.4}"));
        for j in &self.jobs {
            let _ = writeln!(
                o,
                "{},{},{},{:.4},{},{},{},{:.4},{:.1},{:.1},{:.4},{:.4},{:.4},{},{:.3},{:.4},{:.4},{:.4}",
                j.name,
                j.workload,
                j.gpus,
                j.arrival_h,
                opt(j.start_h),
                opt(j.end_h),
                j.state,
                j.queue_h,
                j.iterations,
                j.iterations_wanted,
                j.iteration_s,
                j.slowdown,
                j.reference_s,
                j.interruptions,
                j.lost_gpu_h,
                j.restart_h,
                j.checkpoint_h,
                j.ettr
            );
        }
        o
    }

    /// One row per sample.
    pub fn series_csv(&self) -> String {
        let mut o = String::from("hour,allocated,computing,free,out,waiting_jobs,fragmented\n");
        for s in &self.samples {
            let _ = writeln!(
                o,
                "{:.3},{},{},{},{},{},{}",
                s.hour, s.allocated, s.computing, s.free, s.out, s.waiting_jobs, s.fragmented
            );
        }
        o
    }
}
