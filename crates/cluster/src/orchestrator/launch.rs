//! Starting a collective instance: the tuner's choice (closed form inside a host) and the
//! plan, each found in the group's memo, then among the job's groups of the same layout
//! ([`Shared`]), and made only when new; then its execution.

use super::*;

impl<'t> Orchestrator<'t> {
    /// Starts instance `i` on `ranks`: closed form inside a host, else an execution.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn launch(
        &mut self,
        j: u32,
        i: u32,
        memo: usize,
        ranks: &Ranks,
        t: u64,
        seed: u64,
        topo: &'t Topology,
    ) -> Result<(), RunError> {
        let (op, bytes) = (
            self.instances[i as usize].op,
            self.instances[i as usize].bytes,
        );
        if ranks.len() <= 1 {
            self.queue.push(Event::new(t, COLL_DONE, 0, i));
            return Ok(());
        }
        let comm = self.jobs[j as usize].spec.comm;
        let g = self.instances[i as usize].group;
        let cached = self.jobs[j as usize].groups[g as usize].memo[memo].choice;
        let (algorithm, protocol, closed_ns) = match cached {
            Some(c) => c,
            None => {
                let gpu = self.jobs[j as usize].spec.generation();
                let platform = Platform::of(topo, ranks, gpu)
                    .with_network_path(&mut self.net, ranks)
                    .map_err(|e| RunError::Exec {
                        job: self.job_err(j),
                        error: e.into(),
                    })?;
                let job = &mut self.jobs[j as usize];
                let c = match job.shared.choice(op, bytes, &platform, ranks) {
                    Some(c) => c,
                    None => {
                        let c = choice(&platform, ranks, &comm, op, bytes);
                        job.shared.keep_choice(op, bytes, platform, ranks, c);
                        c
                    }
                };
                job.groups[g as usize].memo[memo].choice = Some(c);
                c
            }
        };
        if self.start_chosen(i, (algorithm, protocol, closed_ns), t) {
            return Ok(());
        }
        let req = Request {
            op,
            bytes,
            ranks,
            algorithm,
            channels: comm.channels,
            chunk: comm.chunk,
            fidelity: comm.fidelity,
            sizes: None,
        };
        let sched = match &self.jobs[j as usize].groups[g as usize].memo[memo].schedule {
            Some(s) => Arc::clone(s),
            None => {
                let shared = self.jobs[j as usize]
                    .shared
                    .schedule(op, bytes, algorithm, ranks);
                let s = match shared {
                    Some(s) => s,
                    None => {
                        let s = Arc::new(plan(&req).map_err(|error| RunError::Plan {
                            job: self.job_err(j),
                            error,
                        })?);
                        let job = &mut self.jobs[j as usize];
                        job.shared.keep_schedule(op, bytes, algorithm, ranks, &s);
                        s
                    }
                };
                self.jobs[j as usize].groups[g as usize].memo[memo].schedule = Some(Arc::clone(&s));
                s
            }
        };
        let transport = Transport {
            protocol,
            qps: comm.qps,
            qp_mode: comm.qp_mode,
            seed,
            gpu: self.jobs[j as usize].spec.generation(),
        };
        let placements =
            std::mem::take(&mut self.jobs[j as usize].groups[g as usize].memo[memo].placements);
        let x = Execution::new(topo, sched, &req, transport, Nanos(t)).placing(placements);
        self.instances[i as usize].exec = Some(Box::new(x));
        self.touched.push(i);
        Ok(())
    }

    /// Names what runs instance `i`, and if that is a closed form ends it that long after
    /// `t`. Whether it did.
    pub(super) fn start_chosen(&mut self, i: u32, choice: Choice, t: u64) -> bool {
        let (algorithm, protocol, closed_ns) = choice;
        self.instances[i as usize].algorithm = Some((algorithm, protocol));
        if let Some(ns) = closed_ns {
            self.queue.push(Event::new(t + ns, COLL_DONE, 0, i));
        }
        closed_ns.is_some()
    }
}
