//! The orchestrator: owns simulated time and runs jobs' op DAGs on one shared fabric.
//!
//! Per rank there is a compute stream and a memory stream (one kernel at a time each, in the
//! order ops become ready) and any number of communication operations in flight. An op is ready
//! when the ops it depends on are done. A collective starts when every member of its group has
//! reached it — the `k`-th collective a rank issues on a communicator (in dependency order:
//! a topological order of its DAG, lowest op index first) meets the `k`-th of every other
//! member — and collectives on one communicator run one at a time, in
//! order, as on an NCCL stream. A send's bytes leave when it is posted (eager, as ASTRA-sim
//! sends); it is done when they arrive, and so is the receive with the same (source,
//! destination, tag), posted before or after (first come, first served).
//!
//! Collectives spanning hosts run as [`Execution`]s on the network, sharing it with every other
//! collective and transfer of every job; inside one host they run in closed form (see
//! [`crate::job::CommConfig::host_closed_form`]). The orchestrator merges its own event queue
//! (kernels finishing, executions' events, closed-form collectives finishing) with the engine's
//! next completion; events at one instant are handled in a fixed order, so runs are
//! deterministic.
//!
//! A job that cannot progress — a dependency cycle, a collective whose members never all
//! arrive, a receive without a send — stops the run with a diagnosis.

use std::sync::Arc;

use fabricsim_collectives::hardware::link_efficiency;
use fabricsim_collectives::{plan, Collective, ExecError, Execution, Ranks, Request, Transport};
use fabricsim_collectives::{Generation, Platform};
use fabricsim_netsim::{Engine, FlowEngine, FlowId, Fold, Network, NetworkError};
use fabricsim_routing::key::mix;
use fabricsim_routing::FlowKey;
use fabricsim_topology::{Nanos, Topology};
use fabricsim_workload::OpKind;

use crate::control::{LinkEvent, Recompute, ResolvedEvent, TeController, Trigger};
use crate::job::JobSpec;
use crate::p2p::Met;
use crate::stats::{CommScope, Detail, JobStats, Lane, Slice};
pub use crate::symmetry::SymmetryUse;

mod diagnose;
mod gang;
mod kernels;
mod launch;
mod queue;
mod sampling;
mod state;
mod transfers;

use queue::EventQueue;
pub(crate) use state::choice;
use state::*;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("job `{job}`: {error}")]
    Plan {
        job: String,
        error: fabricsim_collectives::PlanError,
    },
    #[error("job `{job}`: {error}")]
    Exec { job: String, error: ExecError },
    #[error("job `{job}`: {error}")]
    Network { job: String, error: NetworkError },
    #[error("job `{job}` stalled at {at} ns with {done} of {total} ops done: {diagnosis}")]
    Stalled {
        job: String,
        at: u64,
        done: u64,
        total: u64,
        diagnosis: String,
        /// What every job that did finish measured (the run goes on until nothing can move).
        finished: Vec<JobStats>,
    },
}

const COMPUTE_DONE: u8 = 0;
const MEMORY_DONE: u8 = 1;
const COLL_DONE: u8 = 2;
const EXEC_WAKE: u8 = 3;

/// What a run produced.
pub struct RunOutput {
    pub jobs: Vec<JobStats>,
    /// Simulated time at the end of the last job.
    pub end: Nanos,
    /// Engine variables submitted in all.
    pub flows: u64,
    pub events: u64,
    /// Link events applied before the end.
    pub link_events: Vec<LinkEvent>,
    /// Whether each simulated rank stood for an orbit of ranks, and if not, why not.
    pub symmetry: SymmetryUse,
    /// The TE controller's computations, with routing `te`.
    pub te: Vec<Recompute>,
    /// Per group of links (one direction between two tiers: `rtsw->ctsw`, `nic->rtsw`), the
    /// highest and the mean utilization over the run (payload over line rate), over the links
    /// that carried traffic.
    pub tiers: Vec<fabricsim_routing::balance::GroupLoad>,
    /// Every link that carried bytes, over the run.
    pub links: Vec<fabricsim_netsim::LinkUse>,
    /// Link groups' utilization over time, when sampled ([`RunOptions::sample_every`]).
    pub series: crate::stats::TierSeries,
    /// Per job, the links its flows crossed and the bytes it put on each, with
    /// [`RunOptions::attribute_links`] (empty otherwise); see [`crate::sharing`].
    pub job_links: Vec<Vec<(fabricsim_topology::LinkId, f64)>>,
}

/// Options of a run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Ranks whose slices are recorded for a trace, per job (empty: none).
    pub trace_ranks: u32,
    /// Called with (simulated ns, ops done, ops in all) now and then, for a progress bar.
    pub progress_every: u64,
    /// Simulate every rank, even where one representative per orbit would give the same
    /// result ([`crate::symmetry`]), and why (`--full-detail`, link events during the run).
    pub full_detail: Option<String>,
    /// Simulate each rank of a tensor-parallel gang alone (the orchestrator's `gang` module):
    /// the same results with more work, for tests.
    pub lone_ranks: bool,
    /// Sample the link groups' utilization every this many ns (0: never).
    pub sample_every: u64,
    /// With `sample_every`, record every link's utilization at each sample too.
    pub sample_links: bool,
    /// Charge each job's bytes to the links they crossed ([`RunOutput::job_links`]).
    pub attribute_links: bool,
    /// Per link, the fraction of its payload capacity taken all run long by traffic outside
    /// the simulation (the mean load of jobs simulated apart; below 1).
    pub background: Vec<(fabricsim_topology::LinkId, f64)>,
}

pub struct Orchestrator<'t> {
    net: Network<'t, FlowEngine>,
    topo: &'t Topology,
    jobs: Vec<JobState>,
    queue: EventQueue,
    instances: Vec<Instance>,
    /// Finished instances whose slots can be reused.
    free_instances: Vec<u32>,
    /// Transfers in flight, by id; a finished one's slot is reused (`free_transfers`).
    transfers: Vec<Transfer>,
    free_transfers: Vec<u32>,
    /// Who each flow in flight belongs to.
    flow_owner: Owners,
    /// Ready ops not yet dispatched: (job, rank, op).
    ready: Vec<(u32, u32, u32)>,
    /// Instances whose executions must act at the current instant.
    touched: Vec<u32>,
    submitted: Vec<(FlowId, u32)>,
    options: RunOptions,
    events: u64,
    flows: u64,
    /// Link events in time order, and how many have been applied.
    link_events: Vec<ResolvedEvent>,
    applied: usize,
    te: Option<TeController>,
    symmetry: SymmetryUse,
    sampler: Option<sampling::Sampler>,
}

impl<'t> Orchestrator<'t> {
    pub fn new(mut net: Network<'t, FlowEngine>, jobs: Vec<JobSpec>, options: RunOptions) -> Self {
        // A job's collectives and transfers reuse the same connections all iteration long.
        net.memoize_routes();
        // Links carry payload at their transports' efficiencies, those of the first job's GPUs
        // (jobs of different generations on one fabric share its NVLink figures).
        let gpu = jobs.first().map_or(Generation::H100, JobSpec::generation);
        let mut efficiency = link_efficiency(net.topology(), gpu);
        for &(l, taken) in &options.background {
            efficiency[l.index()] *= 1.0 - taken;
        }
        net.set_link_efficiency(efficiency);
        if options.attribute_links {
            net.attribute();
        }
        let topo = net.topology();
        let found = crate::symmetry::for_run(&net, &jobs, &options);
        let (jobs, symmetry) = match found {
            Ok(sym) => {
                let order = sym.rotation.order;
                let (first, size) = sym.rotation.link_orbits();
                net.set_fold(Fold::new(first, &size, order));
                let jobs = jobs
                    .into_iter()
                    .zip(&sym.jobs)
                    .map(|(spec, o)| JobState::new(spec, &options, Some((o, order))))
                    .collect();
                (jobs, SymmetryUse::Applied { order })
            }
            Err(why) => {
                let jobs = jobs
                    .into_iter()
                    .map(|spec| JobState::new(spec, &options, None))
                    .collect();
                (jobs, SymmetryUse::Off(why))
            }
        };
        let sampler = (options.sample_every > 0)
            .then(|| sampling::Sampler::new(topo, options.sample_every, options.sample_links));
        Orchestrator {
            net,
            topo,
            jobs,
            queue: EventQueue::default(),
            instances: Vec::new(),
            free_instances: Vec::new(),
            transfers: Vec::new(),
            free_transfers: Vec::new(),
            flow_owner: Owners::default(),
            ready: Vec::new(),
            touched: Vec::new(),
            submitted: Vec::new(),
            options,
            events: 0,
            flows: 0,
            link_events: Vec::new(),
            applied: 0,
            te: None,
            symmetry,
            sampler,
        }
    }

    /// Link events to apply during the run, and the TE controller (whose first table is
    /// programmed at time 0).
    pub fn with_fabric_control(
        mut self,
        mut events: Vec<ResolvedEvent>,
        te: Option<TeController>,
    ) -> Self {
        events.sort_by_key(|e| e.event.at);
        self.link_events = events;
        self.te = te;
        if let Some(te) = &mut self.te {
            te.program(&mut self.net, 0, Trigger::Start);
        }
        self
    }

    /// When the fabric next changes: a link event, or the TE controller acting.
    fn next_control(&self, busy: bool) -> Option<u64> {
        let event = self.link_events.get(self.applied).map(|e| e.event.at.0);
        let te = self.te.as_ref().and_then(|te| te.next(busy));
        match (event, te) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Applies the link events due at `t`, then lets the controller act.
    fn control(&mut self, t: u64) {
        while let Some(e) = self.link_events.get(self.applied) {
            if e.event.at.0 > t {
                break;
            }
            for &cable in &e.cables {
                self.net.set_cable(cable, e.condition);
            }
            if let Some(te) = &mut self.te {
                te.link_changed(t);
            }
            self.applied += 1;
        }
        if let Some(te) = &mut self.te {
            te.act(&mut self.net, t);
        }
    }

    /// Runs every job to its end.
    pub fn run(mut self, mut progress: impl FnMut(u64, u64, u64)) -> Result<RunOutput, RunError> {
        for j in 0..self.jobs.len() as u32 {
            let job = &self.jobs[j as usize];
            for r in (0..job.ranks.len() as u32).filter(|&r| job.active[r as usize]) {
                let p = job.spec.workload.program_of(r);
                for i in 0..p.len() as u32 {
                    if p.deps(i).is_empty() {
                        self.ready.push((j, r, i));
                    }
                }
            }
        }
        let mut now = 0u64;
        self.settle(now)?;
        // The start's ready ops (a pipeline's every receive among them: 4 million entries in
        // the Llama 3 405B) are dispatched; an instant's later ones are few.
        self.ready.shrink_to_fit();
        let mut done = Vec::new();
        let total: u64 = self.jobs.iter().map(|j| j.total).sum();
        let mut next_report = self.options.progress_every;
        loop {
            let own = self.queue.next_time();
            let engine = self.net.engine().next_event().map(|t| t.0);
            let busy = own.is_some() || engine.is_some();
            // With nothing moving, only a fabric change can unblock a job (a repair).
            let unfinished = busy || self.jobs.iter().any(|j| j.done < j.total);
            let control = self.next_control(busy).filter(|_| unfinished);
            let Some(t) = [own, engine, control].into_iter().flatten().min() else {
                break;
            };
            if let Some(s) = &mut self.sampler {
                s.before(&mut self.net, t);
            }
            now = t;
            done.clear();
            self.net.advance(Nanos(t), &mut done);
            if control == Some(t) {
                self.control(t);
            }
            for c in &done {
                self.events += 1;
                match self
                    .flow_owner
                    .remove(c.flow)
                    .expect("every flow has an owner")
                {
                    FlowOwner::Exec { instance, owner } => {
                        if let Some(x) = self.instances[instance as usize].exec.as_mut() {
                            x.flow_done(owner, Nanos(t));
                            self.touched.push(instance);
                        }
                    }
                    FlowOwner::Transfer(id) => self.transfer_done(id, t),
                }
            }
            while let Some(e) = self.queue.pop_at(t) {
                self.events += 1;
                match e.kind() {
                    COMPUTE_DONE => self.kernel_done(e.a(), e.b(), t, false),
                    MEMORY_DONE => self.kernel_done(e.a(), e.b(), t, true),
                    COLL_DONE => self.collective_done(e.b(), t)?,
                    _ => self.touched.push(e.b()),
                }
            }
            self.settle(t)?;
            if self.options.progress_every > 0 && self.events >= next_report {
                next_report = self.events + self.options.progress_every;
                let done: u64 = self.jobs.iter().map(|j| j.done).sum();
                progress(t, done, total);
            }
        }
        // Every rank's own figures, and the diagnosis of a stall, read each rank alone.
        self.split_all();
        for job in &mut self.jobs {
            // Each simulated rank stands for `order` ranks.
            let order = u64::from(job.order);
            job.stats.compute_ns = order * job.ranks.iter().map(|r| r.compute_ns).sum::<u64>();
            for (i, slot) in job.stats.exposed_by_scope.iter_mut().enumerate() {
                *slot = order * job.ranks.iter().map(|r| r.exposed_ns[i]).sum::<u64>();
            }
            job.stats.exposed_comm_ns = job.stats.exposed_by_scope.iter().sum();
            // Every kernel of a finished job ran once: its rank's program's flops, summed in
            // rank order whatever order the kernels finished in.
            job.stats.hardware_flops = order as f64
                * (job.spec.workload.ranks.iter().zip(&job.active))
                    .filter(|(_, &a)| a)
                    .map(|(b, _)| job.index[b.program as usize].flops)
                    .sum::<f64>();
            for (gs, group) in job.groups.iter().zip(&job.spec.workload.groups) {
                for m in &gs.memo {
                    if m.tally.count > 0 {
                        let ranks = group.ranks.len();
                        job.stats.add_collectives(
                            m.op,
                            &group.name,
                            ranks,
                            names(m.algorithm),
                            m.tally,
                        );
                    }
                }
            }
        }
        if let Some(j) = self.jobs.iter().position(|job| job.done < job.total) {
            let job = &self.jobs[j];
            return Err(RunError::Stalled {
                job: job.spec.name.clone(),
                at: now,
                done: job.done,
                total: job.total,
                diagnosis: self.diagnose(j as u32),
                finished: self
                    .jobs
                    .iter()
                    .filter(|job| job.done == job.total)
                    .map(|job| job.stats.clone())
                    .collect(),
            });
        }
        let end = self
            .jobs
            .iter()
            .map(|j| j.stats.iteration_ns)
            .max()
            .unwrap_or(0);
        let (tiers, links) = {
            let topo = self.topo;
            let stats = self.net.link_stats();
            let span = (stats.elapsed.0 as f64 * 1e-9).max(1e-12);
            let util: Vec<f64> = topo
                .links()
                .iter()
                .zip(&stats.bytes)
                .map(|(link, &b)| b / (link.capacity.0 as f64 * span))
                .collect();
            let used: Vec<bool> = stats.bytes.iter().map(|&b| b > 0.0).collect();
            (
                fabricsim_routing::balance::group_loads(topo, &util, &used),
                stats.uses(topo, stats.elapsed.0),
            )
        };
        let mut job_links = self.net.attributed().unwrap_or_default();
        if !job_links.is_empty() {
            job_links.resize_with(self.jobs.len(), Vec::new);
        }
        let (flows, events) = (self.flows, self.events);
        let link_events = self.link_events[..self.applied]
            .iter()
            .map(|e| e.event.clone())
            .collect();
        Ok(RunOutput {
            jobs: self.jobs.into_iter().map(|j| j.stats).collect(),
            end: Nanos(end),
            flows,
            events,
            link_events,
            te: self.te.map(|te| te.log).unwrap_or_default(),
            tiers,
            links,
            symmetry: self.symmetry,
            series: self.sampler.map(|s| s.series).unwrap_or_default(),
            job_links,
        })
    }

    /// Dispatches ready ops and lets touched executions act, until nothing more happens at `t`.
    fn settle(&mut self, t: u64) -> Result<(), RunError> {
        loop {
            while let Some((j, r, op)) = self.ready.pop() {
                if r & gang::GANG != 0 {
                    self.dispatch_gang(j, r, op, t)?;
                } else {
                    self.dispatch(j, r, op, t)?;
                }
            }
            if self.touched.is_empty() {
                return Ok(());
            }
            let mut touched = std::mem::take(&mut self.touched);
            touched.sort_unstable();
            touched.dedup();
            for &i in &touched {
                self.fire(i, t)?;
            }
            touched.clear();
            self.touched = touched;
        }
    }

    fn job_err(&self, j: u32) -> String {
        self.jobs[j as usize].spec.name.clone()
    }

    /// Lets instance `i`'s execution act at `t`.
    fn fire(&mut self, i: u32, t: u64) -> Result<(), RunError> {
        let inst = &mut self.instances[i as usize];
        let Some(x) = inst.exec.as_mut() else {
            return Ok(());
        };
        self.submitted.clear();
        let job = inst.job;
        self.net.set_tag(job);
        if let Err(error) = x.fire(&mut self.net, Nanos(t), &mut self.submitted) {
            return Err(RunError::Exec {
                job: self.job_err(job),
                error,
            });
        }
        for &(id, owner) in &self.submitted {
            self.flows += 1;
            self.flow_owner
                .insert(id, FlowOwner::Exec { instance: i, owner });
        }
        let inst = &mut self.instances[i as usize];
        let x = inst.exec.as_mut().expect("checked above");
        if x.is_done() {
            let end = inst.start + x.outcome().time.0;
            // Where its bundles went, for the group's next run of the plan.
            let memo = &mut self.jobs[job as usize].groups[inst.group as usize].memo;
            memo[inst.memo as usize].placements = x.take_placements();
            inst.exec = None;
            self.queue.push(Event::new(end.max(t), COLL_DONE, 0, i));
        } else if let Some(next) = x.next_event() {
            if next.0 != inst.wake {
                inst.wake = next.0;
                self.queue.push(Event::new(next.0.max(t), EXEC_WAKE, 0, i));
            }
        }
        Ok(())
    }

    fn dispatch(&mut self, j: u32, r: u32, op: u32, t: u64) -> Result<(), RunError> {
        let job = &mut self.jobs[j as usize];
        debug_assert!(
            job.gangs.merged(r).is_none(),
            "a merged gang's ranks go together"
        );
        let binding = &job.spec.workload.ranks[r as usize];
        let prog = &job.spec.workload.programs[binding.program as usize];
        match prog.ops[op as usize].kind {
            OpKind::Compute(_) => self.issue_kernel(j, r, op, t, false),
            OpKind::Memory { .. } => self.issue_kernel(j, r, op, t, true),
            OpKind::Nop => self.complete(j, r, op, t),
            OpKind::Collective {
                op: coll,
                bytes,
                group,
            } => {
                let g = binding.groups[group as usize];
                let seq = job.index[binding.program as usize].coll_seq[op as usize];
                let scope = job.scopes[g as usize];
                job.ranks[r as usize].comm_began(t, scope);
                let solo = job.members[g as usize] == 1;
                let gs = &mut job.groups[g as usize];
                if solo && !gs.busy && gs.next == seq {
                    if let Some((memo, choice)) = gs.closed_form(coll, bytes) {
                        // Its only simulated member is here and it was tuned before to a
                        // closed form: it starts now, as `try_start` would start it.
                        gs.pending.start(seq);
                        gs.busy = true;
                        let i = self.new_instance(j, g, coll, bytes);
                        let inst = &mut self.instances[i as usize];
                        inst.members.push((r, op, t));
                        (inst.start, inst.memo) = (t, memo);
                        self.start_chosen(i, choice, t);
                        return Ok(());
                    }
                }
                let inst = self.pending_instance(j, g, seq, coll, bytes);
                self.instances[inst as usize].members.push((r, op, t));
                self.try_start(j, g, t)?;
            }
            OpKind::Send { peer, tag, .. } => {
                let p = binding.peers[peer as usize];
                let mailbox = job.p2p.peer_mailbox(r, peer);
                self.start_transfer(j, (r, op), (r, p, tag), mailbox, t)?;
            }
            OpKind::Recv { peer, tag, .. } => {
                let m = job.p2p.mailbox(r, peer);
                match job.p2p.recv(m, tag, op, t) {
                    Met::Arrived => self.complete(j, r, op, t),
                    Met::Inflight(id) => {
                        self.transfers[id as usize].recv = Some((op, t));
                        job.ranks[r as usize].comm_began(t, CommScope::Pp);
                    }
                    Met::Posted => {}
                }
            }
        }
        Ok(())
    }

    /// The instance of group `g`'s collective `seq` that members are arriving at, made at the
    /// first arrival.
    fn pending_instance(&mut self, j: u32, g: u32, seq: u32, op: Collective, bytes: u64) -> u32 {
        if let Some(i) = self.jobs[j as usize].groups[g as usize].pending.get(seq) {
            return i;
        }
        let i = self.new_instance(j, g, op, bytes);
        self.jobs[j as usize].groups[g as usize]
            .pending
            .insert(seq, i);
        i
    }

    /// A collective instance of group `g` with no member yet, in a free slot if there is one.
    fn new_instance(&mut self, j: u32, g: u32, op: Collective, bytes: u64) -> u32 {
        let fresh = Instance {
            job: j,
            group: g,
            op,
            bytes,
            members: Vec::new(),
            start: 0,
            algorithm: None,
            exec: None,
            wake: u64::MAX,
            memo: 0,
        };
        match self.free_instances.pop() {
            Some(i) => {
                let slot = &mut self.instances[i as usize];
                let members = std::mem::take(&mut slot.members);
                *slot = Instance { members, ..fresh };
                i
            }
            None => {
                self.instances.push(fresh);
                self.instances.len() as u32 - 1
            }
        }
    }

    /// `op` of rank `r` is done at `t`: release its dependents.
    fn complete(&mut self, j: u32, r: u32, op: u32, t: u64) {
        let job = &mut self.jobs[j as usize];
        debug_assert!(
            job.gangs.merged(r).is_none(),
            "a merged gang's ranks go together"
        );
        job.done += 1;
        job.gangs.mark(r, op, t);
        job.stats.iteration_ns = job.stats.iteration_ns.max(t);
        let (offset, stride) = job.counters[r as usize];
        let index = &job.index[job.spec.workload.ranks[r as usize].program as usize];
        for &d in index.dependents(op) {
            let c = index.counted[d as usize];
            if c == UNCOUNTED || job.remaining.release(offset + c as usize * stride) {
                self.ready.push((j, r, d));
            }
        }
    }

    fn group_ranks(&mut self, j: u32, g: u32) -> Result<&Ranks, RunError> {
        let job = &mut self.jobs[j as usize];
        if job.groups[g as usize].ranks.is_none() {
            let gpus = job.spec.workload.groups[g as usize]
                .ranks
                .iter()
                .map(|&r| job.spec.gpus[r as usize])
                .collect();
            let ranks = Ranks::new(self.topo, gpus).map_err(|error| RunError::Plan {
                job: job.spec.name.clone(),
                error,
            })?;
            job.groups[g as usize].ranks = Some(ranks);
        }
        Ok(job.groups[g as usize].ranks.as_ref().expect("set above"))
    }

    /// Starts the group's next collective if every member has arrived and the group is free.
    fn try_start(&mut self, j: u32, g: u32, t: u64) -> Result<(), RunError> {
        let job = &self.jobs[j as usize];
        let gs = &job.groups[g as usize];
        if gs.busy {
            return Ok(());
        }
        let Some(i) = gs.pending.get(gs.next) else {
            return Ok(());
        };
        let size = job.members[g as usize] as usize;
        if self.instances[i as usize].members.len() < size {
            return Ok(());
        }
        let comm = job.spec.comm;
        let job = &mut self.jobs[j as usize];
        let members = &job.spec.workload.groups[g as usize].ranks;
        let gs = &mut job.groups[g as usize];
        // Connections' ports follow from the communicator's members, not from how groups are
        // numbered, so a workload and its Chakra export hash alike.
        let group_seed = *gs.seed.get_or_insert_with(|| {
            members
                .iter()
                .fold(mix(comm.seed ^ (u64::from(j) << 32)), |h, &r| {
                    mix(h ^ u64::from(r))
                })
        });
        gs.pending.start(gs.next);
        gs.busy = true;
        let (op, bytes) = (
            self.instances[i as usize].op,
            self.instances[i as usize].bytes,
        );
        self.instances[i as usize].start = t;
        let topo = self.topo;
        self.group_ranks(j, g)?;
        let gs = &mut self.jobs[j as usize].groups[g as usize];
        let memo = gs_memo_index(gs, op, bytes);
        self.instances[i as usize].memo = memo as u32;
        if let Some(choice @ (_, _, Some(_))) = gs.memo[memo].choice {
            // Chosen before, a closed form: no ranks or execution needed (see `launch`).
            self.start_chosen(i, choice, t);
            return Ok(());
        }
        // Lent to `launch` while it borrows the orchestrator mutably.
        let ranks = gs.ranks.take().expect("built above");
        let result = self.launch(j, i, memo, &ranks, t, group_seed, topo);
        self.jobs[j as usize].groups[g as usize].ranks = Some(ranks);
        result
    }

    fn collective_done(&mut self, i: u32, t: u64) -> Result<(), RunError> {
        let inst = &self.instances[i as usize];
        let j = inst.job;
        match self.jobs[j as usize].gangs.of_group(inst.group) {
            Some(g) => {
                if self.gang_collective_done(i, g, t)? {
                    return Ok(());
                }
            }
            None => {
                for m in 0..self.instances[i as usize].members.len() {
                    let r = self.instances[i as usize].members[m].0;
                    self.split_rank(j, r);
                }
            }
        }
        let (members, scope, algorithm) = self.end_instance(i, t);
        let job = &mut self.jobs[j as usize];
        for &(r, op_index, arrived) in &members {
            job.comm_ended(r, op_index, scope, arrived, t, algorithm);
        }
        for &(r, op_index, _) in &members {
            self.complete(j, r, op_index, t);
        }
        self.free_instance(i, members, t)
    }

    /// Collective instance `i` ends at `t`: counted in its group's tally, the group free for
    /// its next. Its members (taken out), its group's scope and what ran it.
    fn end_instance(&mut self, i: u32, t: u64) -> (Vec<(u32, u32, u64)>, CommScope, Option<Ran>) {
        let inst = &mut self.instances[i as usize];
        let (j, g) = (inst.job, inst.group);
        let members = std::mem::take(&mut inst.members);
        let (bytes, start, memo, algorithm) = (inst.bytes, inst.start, inst.memo, inst.algorithm);
        let job = &mut self.jobs[j as usize];
        let weight = job.weight[g as usize];
        let entry = &mut job.groups[g as usize].memo[memo as usize];
        entry.algorithm = algorithm;
        entry.tally.add(bytes, t - start, weight);
        let gs = &mut job.groups[g as usize];
        gs.busy = false;
        gs.next += 1;
        (members, job.scopes[g as usize], algorithm)
    }

    /// Frees ended instance `i`'s slot, keeping its members' vector, and starts its group's
    /// next collective if all its members wait.
    fn free_instance(
        &mut self,
        i: u32,
        mut members: Vec<(u32, u32, u64)>,
        t: u64,
    ) -> Result<(), RunError> {
        let (j, g) = (
            self.instances[i as usize].job,
            self.instances[i as usize].group,
        );
        members.clear();
        self.instances[i as usize].members = members;
        self.free_instances.push(i);
        let gs = &self.jobs[j as usize].groups[g as usize];
        if gs.pending.get(gs.next).is_some() {
            return self.try_start(j, g, t);
        }
        Ok(())
    }
}
