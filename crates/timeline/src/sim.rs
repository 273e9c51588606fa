//! The cluster over days, as a discrete-event simulation in seconds: jobs arrive, wait, are
//! placed, run at the iteration time [`crate::steptime`] gives them with their neighbours,
//! checkpoint, fail, restart and finish; components fail and are repaired.
//!
//! A running job is in one of three phases: *restarting* (after an interruption, for the plan's
//! restart time), *computing* (iterations at its current iteration time; a checkpoint falls due
//! after each checkpoint interval of computing) and *writing* a checkpoint (for the write time;
//! the checkpoint holds the iterations done when the write began). An interruption loses the
//! iterations since the last completed checkpoint; the job gives its GPUs back and waits, ahead
//! of jobs that have not started, for a placement that may use the zones' spare hosts.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use fabricsim_topology::Topology;

use crate::failures::{young_daly, Class, Effect, CLASSES};
use crate::hierarchy::{Allocation, Hierarchy, Occupancy};
use crate::plan::{Checkpoint, JobRequest, Plan, Work};
use crate::report::{JobRow, Outcome, Sample};
use crate::rng::Rng;
use crate::scheduler::{self, Scheduler};
use crate::steptime::{Step, StepTimes};
use crate::trace;
use crate::units::Units;
use crate::TimelineError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Waiting,
    Restarting,
    Computing,
    Writing,
    Done,
}

pub(crate) struct Job {
    pub req: JobRequest,
    pub gpus: u32,
    pub phase: Phase,
    pub alloc: Allocation,
    epoch: u32,
    pub target: f64,
    pub done: f64,
    saved: f64,
    pending: f64,
    pub iter_time: f64,
    alone: f64,
    /// Where its latest iteration's time went, with its neighbours.
    pub step: Step,
    since: f64,
    ckpt_left: f64,
    interval: f64,
    pub interrupted: bool,
    /// The GPUs it had when last interrupted: a restart keeps what it can of them.
    prev: Allocation,
    /// Seconds per iteration alone on the topology-aware placement in an empty cluster.
    pub reference: f64,
    pub wait_since: f64,
    /// Iterations computed, kept or lost.
    pub computed: f64,
    pub first_start: Option<f64>,
    pub end: Option<f64>,
    pub queued: f64,
    pub compute_s: f64,
    pub lost_compute_s: f64,
    pub alone_s: f64,
    pub restart_s: f64,
    pub write_s: f64,
    pub interruptions: u32,
    pub lost_by: BTreeMap<Class, f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Arrival(u32),
    /// A job's phase ends or its work is done (ignored unless the epoch is the job's).
    Due(u32, u32),
    Failure(usize),
    /// Hosts back in service.
    Repair(u32),
    /// A planned or listed outage of the plan begins.
    Outage(u32),
    Sample,
}

pub(crate) struct Sim<'a> {
    plan: &'a Plan,
    h: &'a Hierarchy,
    times: StepTimes<'a>,
    scheduler: Box<dyn Scheduler>,
    occ: Occupancy,
    /// Per host: the jobs holding its GPUs.
    holders: Vec<Vec<u32>>,
    /// Per host: how many failures keep it out.
    out_causes: Vec<u32>,
    repairs: Vec<Vec<u32>>,
    units: Units,
    jobs: Vec<Job>,
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
    now: f64,
    rng: Rng,
    failures: BTreeMap<Class, (u64, u64)>,
    samples: Vec<Sample>,
    out_gpu_s: f64,
    out_since: f64,
    seed: u64,
    /// The plan's outages, their hosts found.
    outages: Vec<Vec<u32>>,
    /// Per template: its reference iteration time ([`Sim::reference`]).
    references: BTreeMap<u32, f64>,
}

impl<'a> Sim<'a> {
    pub fn new(
        plan: &'a Plan,
        topo: &'a Topology,
        h: &'a Hierarchy,
        seed: u64,
    ) -> Result<Sim<'a>, TimelineError> {
        let times = StepTimes::new(topo, &plan.scenario, h, plan.exact_group_gpus)?;
        let mut outages = Vec::new();
        for (i, o) in plan.outages.iter().enumerate() {
            let key = format!("[[cluster.outage]] {}", i + 1);
            let hosts: Vec<u32> = match &o.rack {
                Some(name) => {
                    let node = topo.node_by_name(name);
                    let r = h
                        .rack_switch
                        .iter()
                        .position(|&s| s.is_some() && s == node)
                        .ok_or_else(|| {
                            TimelineError::Plan(format!(
                                "{key}: rack = \"{name}\" is not a switch that hosts hang off"
                            ))
                        })?;
                    h.hosts_of_rack[r].clone()
                }
                None => o
                    .hosts
                    .iter()
                    .map(|name| {
                        h.names
                            .iter()
                            .position(|n| n == name)
                            .map(|x| x as u32)
                            .ok_or_else(|| {
                                TimelineError::Plan(format!(
                                    "{key}: `{name}` is not a host of the fabric"
                                ))
                            })
                    })
                    .collect::<Result<_, _>>()?,
            };
            outages.push(hosts);
        }
        let requests = trace::jobs(plan, seed);
        for (k, job) in requests.iter().enumerate() {
            let g = times.ranks[job.template as usize];
            if g > h.gpus_per_host && g % h.gpus_per_host != 0 {
                return Err(TimelineError::Plan(format!(
                    "job {} ({}): {g} GPUs is neither within a host nor whole hosts of {}",
                    k + 1,
                    job.name,
                    h.gpus_per_host
                )));
            }
        }
        let jobs = requests
            .into_iter()
            .map(|req| Job {
                gpus: times.ranks[req.template as usize],
                req,
                phase: Phase::Waiting,
                alloc: Vec::new(),
                epoch: 0,
                target: 0.0,
                done: 0.0,
                saved: 0.0,
                pending: 0.0,
                iter_time: 0.0,
                alone: 0.0,
                step: Step::default(),
                since: 0.0,
                ckpt_left: 0.0,
                interval: 0.0,
                interrupted: false,
                prev: Vec::new(),
                reference: 0.0,
                wait_since: 0.0,
                computed: 0.0,
                first_start: None,
                end: None,
                queued: 0.0,
                compute_s: 0.0,
                lost_compute_s: 0.0,
                alone_s: 0.0,
                restart_s: 0.0,
                write_s: 0.0,
                interruptions: 0,
                lost_by: BTreeMap::new(),
            })
            .collect();
        Ok(Sim {
            plan,
            h,
            times,
            scheduler: scheduler::by_name(&plan.scheduler, seed).expect("checked by the plan"),
            occ: Occupancy::new(h),
            holders: vec![Vec::new(); h.hosts()],
            out_causes: vec![0; h.hosts()],
            repairs: Vec::new(),
            units: Units::of(topo, h),
            jobs,
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0.0,
            rng: Rng::new(seed, 2),
            failures: BTreeMap::new(),
            samples: Vec::new(),
            out_gpu_s: 0.0,
            out_since: 0.0,
            seed,
            outages,
            references: BTreeMap::new(),
        })
    }

    fn push(&mut self, t: f64, e: Event) {
        self.seq += 1;
        self.heap.push(Reverse((t.max(0.0).to_bits(), self.seq, e)));
    }

    fn next_failure(&mut self, c: usize) {
        let rate = self.plan.rates[&CLASSES[c]].per_hour
            * self.units.count(CLASSES[c], self.h.hosts()) as f64;
        if rate > 0.0 {
            let t = self.now + self.rng.exponential(3600.0 / rate);
            self.push(t, Event::Failure(c));
        }
    }

    pub fn run(mut self, mut progress: impl FnMut(f64)) -> Result<Outcome, TimelineError> {
        for j in 0..self.jobs.len() as u32 {
            let t = self.jobs[j as usize].req.arrival;
            self.push(t, Event::Arrival(j));
        }
        for c in 0..CLASSES.len() {
            self.next_failure(c);
        }
        for (k, o) in self.plan.outages.iter().enumerate() {
            self.push(o.at, Event::Outage(k as u32));
        }
        self.push(0.0, Event::Sample);
        let end = self.plan.duration;
        while let Some(Reverse((bits, _, e))) = self.heap.pop() {
            let t = f64::from_bits(bits);
            if t > end {
                break;
            }
            self.now = t;
            let changed = match e {
                Event::Arrival(j) => {
                    self.jobs[j as usize].wait_since = t;
                    true
                }
                Event::Due(j, epoch) => self.due(j, epoch),
                Event::Failure(c) => {
                    self.next_failure(c);
                    self.fail(CLASSES[c])
                }
                Event::Repair(r) => {
                    let hosts = std::mem::take(&mut self.repairs[r as usize]);
                    self.account_out();
                    for x in hosts {
                        self.out_causes[x as usize] -= 1;
                        if self.out_causes[x as usize] == 0 {
                            self.occ.out[x as usize] = false;
                        }
                    }
                    true
                }
                Event::Outage(k) => {
                    let o = &self.plan.outages[k as usize];
                    let (class, planned, duration) = (o.class, o.planned, o.duration);
                    let hosts = self.outages[k as usize].clone();
                    if !planned {
                        self.failures.entry(class).or_default().0 += 1;
                    }
                    self.take_out(hosts, class, Some(duration), planned);
                    true
                }
                Event::Sample => {
                    progress(t / 3600.0);
                    self.sample();
                    self.push(t + self.plan.sample_every, Event::Sample);
                    false
                }
            };
            if changed {
                self.schedule()?;
            }
        }
        self.now = end;
        for j in 0..self.jobs.len() {
            self.settle(j);
        }
        self.account_out();
        Ok(self.outcome())
    }

    fn settle(&mut self, j: usize) {
        let job = &mut self.jobs[j];
        if job.phase == Phase::Computing {
            let dt = self.now - job.since;
            let it = (dt / job.iter_time).min(job.target - job.done);
            job.done += it;
            job.computed += it;
            job.compute_s += dt;
            job.alone_s += it * job.alone;
            job.ckpt_left -= dt;
        }
        job.since = self.now;
    }

    /// Sets the next event of computing job `j`: its checkpoint or its end, whichever first.
    fn plan_next(&mut self, j: usize) {
        let job = &mut self.jobs[j];
        job.epoch += 1;
        let finish = self.now + (job.target - job.done).max(0.0) * job.iter_time;
        let t = finish.min(self.now + job.ckpt_left.max(0.0));
        let (epoch, j) = (job.epoch, j as u32);
        self.push(t, Event::Due(j, epoch));
    }

    fn due(&mut self, j: u32, epoch: u32) -> bool {
        let ji = j as usize;
        if self.jobs[ji].epoch != epoch {
            return false;
        }
        self.settle(ji);
        let (w, r) = (self.plan.checkpoint_write, self.plan.restart);
        let job = &mut self.jobs[ji];
        match job.phase {
            Phase::Computing if job.done >= job.target * (1.0 - 1e-12) => {
                job.phase = Phase::Done;
                job.end = Some(self.now);
                let alloc = std::mem::take(&mut job.alloc);
                self.release(j, &alloc);
                return true;
            }
            Phase::Computing => {
                job.pending = job.done;
                job.phase = Phase::Writing;
                job.epoch += 1;
                let e = job.epoch;
                self.push(self.now + w, Event::Due(j, e));
            }
            Phase::Writing | Phase::Restarting => {
                if job.phase == Phase::Writing {
                    job.saved = job.pending;
                    job.write_s += w;
                } else {
                    job.restart_s += r;
                }
                job.phase = Phase::Computing;
                job.ckpt_left = job.interval;
                self.plan_next(ji);
            }
            Phase::Waiting | Phase::Done => {}
        }
        false
    }

    fn release(&mut self, j: u32, alloc: &Allocation) {
        self.occ.release(alloc);
        for &(x, _) in alloc {
            self.holders[x as usize].retain(|&k| k != j);
        }
    }

    /// Interrupts job `j` (a failure of `class`): it loses the work since its last checkpoint
    /// and waits for a new placement.
    fn interrupt(&mut self, j: u32, class: Class) {
        let ji = j as usize;
        self.settle(ji);
        let job = &mut self.jobs[ji];
        let lost = (job.done - job.saved) * job.iter_time;
        job.lost_compute_s += lost;
        *job.lost_by.entry(class).or_default() += lost * f64::from(job.gpus) / 3600.0;
        job.done = job.saved;
        job.phase = Phase::Waiting;
        job.interrupted = true;
        job.interruptions += 1;
        job.epoch += 1;
        job.wait_since = self.now;
        let alloc = std::mem::take(&mut job.alloc);
        job.prev = alloc.clone();
        self.release(j, &alloc);
        self.failures.entry(class).or_default().1 += 1;
    }

    fn running(&self, j: u32) -> bool {
        matches!(
            self.jobs[j as usize].phase,
            Phase::Restarting | Phase::Computing | Phase::Writing
        )
    }

    /// Takes `hosts` out of service for a repair of `class` (for `repair` seconds, or a time
    /// drawn from the class's); interrupts their jobs, which lose no work when `planned` (they
    /// checkpoint first).
    fn take_out(&mut self, hosts: Vec<u32>, class: Class, repair: Option<f64>, planned: bool) {
        self.account_out();
        let mut hit = Vec::new();
        for &x in &hosts {
            self.out_causes[x as usize] += 1;
            self.occ.out[x as usize] = true;
            hit.extend(self.holders[x as usize].iter().copied());
        }
        hit.sort_unstable();
        hit.dedup();
        for j in hit {
            if !self.running(j) {
                continue;
            }
            if planned {
                self.settle(j as usize);
                let w = self.plan.checkpoint_write;
                let job = &mut self.jobs[j as usize];
                if job.phase == Phase::Computing {
                    job.saved = job.done;
                    job.write_s += w;
                }
                let alloc = std::mem::take(&mut job.alloc);
                job.prev = alloc.clone();
                (job.phase, job.interrupted, job.wait_since) = (Phase::Waiting, true, self.now + w);
                job.epoch += 1;
                job.interruptions += 1;
                self.release(j, &alloc);
            } else {
                self.interrupt(j, class);
            }
        }
        let repair = repair.unwrap_or_else(|| {
            self.rng
                .exponential(self.plan.rates[&class].repair_hours * 3600.0)
        });
        self.repairs.push(hosts);
        let r = self.repairs.len() as u32 - 1;
        self.push(self.now + repair, Event::Repair(r));
    }

    fn fail(&mut self, class: Class) -> bool {
        let n = self.units.count(class, self.h.hosts()) as u64;
        let unit = self.rng.below(n) as usize;
        let host = match class {
            Class::Gpu | Class::Software => self.units.gpu_host[unit],
            Class::Host => unit as u32,
            Class::Nic => self.units.nic_host[unit],
            Class::Cable => self.units.cable[unit].0,
            Class::Tor => self.units.tor[unit].first().copied().unwrap_or(u32::MAX),
            Class::Switch => u32::MAX,
        };
        // A unit of a host already out cannot fail again until it is back.
        if host != u32::MAX && self.occ.out[host as usize] {
            return false;
        }
        if class != Class::Software {
            self.failures.entry(class).or_default().0 += 1;
        }
        match class.effect() {
            Effect::HostOut => self.take_out(vec![host], class, None, false),
            Effect::Cable if !self.units.cable[unit].1 => {
                self.take_out(vec![host], class, None, false)
            }
            Effect::Tor => {
                let hosts = self.units.tor[unit].clone();
                if !hosts.is_empty() {
                    self.take_out(hosts, class, None, false);
                }
            }
            Effect::JobRestart => {
                // The GPU's job, if it has one, restarts (a software failure happens in a job).
                let gpu = unit - self.units.gpu_host.partition_point(|&x| x < host);
                let holder = self.holders[host as usize].iter().copied().find(|&j| {
                    self.jobs[j as usize]
                        .alloc
                        .iter()
                        .any(|&(x, m)| x == host && m >> gpu & 1 == 1)
                });
                match holder {
                    Some(j) if self.running(j) => {
                        self.failures.entry(class).or_default().0 += 1;
                        self.interrupt(j, class);
                    }
                    _ => return false,
                }
            }
            Effect::Cable | Effect::RoutedAround => return false,
        }
        true
    }

    /// Places waiting jobs that fit (interrupted ones first, then by priority and arrival),
    /// then gives every running job its iteration time with its neighbours.
    fn schedule(&mut self) -> Result<(), TimelineError> {
        let mut waiting: Vec<u32> = (0..self.jobs.len() as u32)
            .filter(|&j| {
                let job = &self.jobs[j as usize];
                job.phase == Phase::Waiting && job.req.arrival <= self.now
            })
            .collect();
        waiting.sort_by_key(|&j| {
            let job = &self.jobs[j as usize];
            (Reverse(job.interrupted), Reverse(job.req.priority), j)
        });
        // Per kind of job (interrupted or not), the fewest GPUs that did not fit in this pass:
        // a larger job does not fit either.
        let mut no_fit = [u32::MAX; 2];
        let mut started = Vec::new();
        for j in waiting {
            let (gpus, interrupted) = (
                self.jobs[j as usize].gpus,
                self.jobs[j as usize].interrupted,
            );
            if gpus >= no_fit[usize::from(interrupted)] {
                continue;
            }
            let eligible = scheduler::eligible(self.h, &self.occ, self.plan.spares, interrupted);
            let again =
                scheduler::replace(self.h, &self.occ, &eligible, &self.jobs[j as usize].prev);
            match again.or_else(|| self.scheduler.place(self.h, &self.occ, &eligible, gpus)) {
                Some(alloc) => {
                    self.start(j, alloc);
                    started.push(j);
                }
                None => no_fit[usize::from(interrupted)] = gpus,
            }
        }
        // Every simulation this change needs, at once (in parallel): the new jobs alone, and
        // the groups of jobs sharing links.
        let running: Vec<u32> = (0..self.jobs.len() as u32)
            .filter(|&j| self.running(j) || started.contains(&j))
            .collect();
        self.times
            .prepare(&placed(&self.jobs, &started), &placed(&self.jobs, &running))?;
        for j in started {
            self.begin(j)?;
        }
        let times = self.times.running(&placed(&self.jobs, &running))?;
        for (&j, step) in running.iter().zip(times) {
            let ji = j as usize;
            let t = step.seconds;
            self.jobs[ji].step = step;
            if self.jobs[ji].iter_time != t {
                self.settle(ji);
                self.jobs[ji].iter_time = t;
                if self.jobs[ji].phase == Phase::Computing {
                    self.plan_next(ji);
                }
            }
        }
        Ok(())
    }

    /// Gives job `j` its GPUs; [`Sim::begin`] starts it once its step times are known.
    fn start(&mut self, j: u32, alloc: Allocation) {
        self.occ.take(&alloc);
        for &(x, _) in &alloc {
            self.holders[x as usize].push(j);
        }
        let job = &mut self.jobs[j as usize];
        job.queued += self.now - job.wait_since;
        job.first_start.get_or_insert(self.now);
        job.alloc = alloc;
        job.since = self.now;
        job.epoch += 1;
    }

    /// Starts job `j` (given its GPUs by [`Sim::start`]) at its iteration time alone.
    fn begin(&mut self, j: u32) -> Result<(), TimelineError> {
        let template = self.jobs[j as usize].req.template;
        let reference = self.reference(template)?;
        let job = &self.jobs[j as usize];
        let alone = self.times.alone(template, &job.alloc)?.seconds;
        let mtti = self.mtti(&job.alloc);
        let (now, plan) = (self.now, self.plan);
        let job = &mut self.jobs[j as usize];
        job.alone = alone;
        if job.target == 0.0 {
            job.target = match job.req.work {
                Work::Iterations(n) => n as f64,
                Work::Hours(hours) => (hours * 3600.0 / reference).ceil().max(1.0),
            };
        }
        job.interval = match plan.checkpoint {
            Checkpoint::Every(s) => s,
            Checkpoint::YoungDaly => young_daly(plan.checkpoint_write, mtti).max(60.0),
        };
        job.iter_time = alone;
        job.reference = reference;
        let epoch = job.epoch;
        if job.interrupted {
            job.phase = Phase::Restarting;
            self.push(now + plan.restart, Event::Due(j, epoch));
        } else {
            job.phase = Phase::Computing;
            job.ckpt_left = job.interval;
            self.plan_next(j as usize);
        }
        Ok(())
    }

    /// Seconds per iteration of `template` alone where the topology-aware policy puts it in an
    /// empty cluster: the yardstick of a job's work, whatever placement it gets.
    fn reference(&mut self, template: u32) -> Result<f64, TimelineError> {
        if let Some(&t) = self.references.get(&template) {
            return Ok(t);
        }
        let empty = Occupancy::new(self.h);
        let eligible = scheduler::eligible(self.h, &empty, 0, true);
        let gpus = self.times.ranks[template as usize];
        let alloc = scheduler::TopologyAware
            .place(self.h, &empty, &eligible, gpus)
            .ok_or_else(|| {
                TimelineError::Plan(format!(
                    "`{}` needs {gpus} GPUs, more than the fabric's {}",
                    self.plan.scenario.jobs[template as usize].name,
                    self.h.gpu_count()
                ))
            })?;
        self.times.prepare(&[(template, &alloc)], &[])?;
        let t = self.times.alone(template, &alloc)?.seconds;
        self.references.insert(template, t);
        Ok(t)
    }

    /// Mean seconds between interruptions of a job on `alloc`, from the failure model.
    fn mtti(&self, alloc: &Allocation) -> f64 {
        let gpus: f64 = alloc.iter().map(|&(_, m)| f64::from(m.count_ones())).sum();
        let hosts = alloc.len() as f64;
        let per = |c: Class| self.plan.rates[&c].per_hour;
        let nics_per_gpu =
            self.units.nic_host.len() as f64 / self.units.gpu_host.len().max(1) as f64;
        let per_hour = gpus * (per(Class::Gpu) + per(Class::Software))
            + hosts * per(Class::Host)
            + gpus * nics_per_gpu * per(Class::Nic);
        if per_hour > 0.0 {
            3600.0 / per_hour
        } else {
            f64::INFINITY
        }
    }

    fn account_out(&mut self) {
        let out: f64 = (0..self.h.hosts())
            .filter(|&x| self.occ.out[x])
            .map(|x| self.h.gpus[x].len() as f64)
            .sum();
        self.out_gpu_s += out * (self.now - self.out_since);
        self.out_since = self.now;
    }

    fn sample(&mut self) {
        let mut s = Sample {
            hour: self.now / 3600.0,
            ..Sample::default()
        };
        for job in &self.jobs {
            match job.phase {
                Phase::Computing => s.computing += u64::from(job.gpus),
                Phase::Restarting | Phase::Writing => {}
                Phase::Waiting if job.req.arrival <= self.now => s.waiting_jobs += 1,
                _ => {}
            }
            if matches!(
                job.phase,
                Phase::Restarting | Phase::Computing | Phase::Writing
            ) {
                s.allocated += u64::from(job.gpus);
            }
        }
        for x in 0..self.h.hosts() as u32 {
            if self.occ.out[x as usize] {
                s.out += self.h.gpus[x as usize].len() as u64;
            } else {
                s.free += u64::from(self.occ.free_gpus(x));
            }
        }
        // Free GPUs no waiting job could be given (every job that fits was placed).
        s.fragmented = if s.waiting_jobs > 0 { s.free } else { 0 };
        self.samples.push(s);
    }

    fn outcome(self) -> Outcome {
        let rows = self
            .jobs
            .iter()
            .map(|j| {
                JobRow::of(
                    j,
                    &self.plan.scenario.jobs[j.req.template as usize].name,
                    self.now,
                )
            })
            .collect();
        Outcome::new(
            self.plan,
            self.h.gpu_count(),
            rows,
            self.samples,
            self.failures,
            self.out_gpu_s,
            (self.times.simulated, self.times.reused),
            self.seed,
        )
    }
}

/// The workload and GPUs of each of `which`, as the step times take them.
fn placed<'j>(jobs: &'j [Job], which: &[u32]) -> Vec<(u32, &'j Allocation)> {
    which
        .iter()
        .map(|&j| (jobs[j as usize].req.template, &jobs[j as usize].alloc))
        .collect()
}
