//! Point-to-point transfers: a send's bytes leave at once as a flow, and the matching receive
//! completes when they have arrived.

use super::*;
use crate::stats::Arrow;

impl Orchestrator<'_> {
    /// Rank `src.0` sends (op `src.1`) at `t`: the data leaves now (sends are eager, as in
    /// ASTRA-sim); the receive, posted before or after, completes when it has arrived.
    pub(super) fn start_transfer(
        &mut self,
        j: u32,
        src: (u32, u32),
        key: P2pKey,
        mailbox: Option<usize>,
        t: u64,
    ) -> Result<(), RunError> {
        let id = self
            .free_transfers
            .pop()
            .unwrap_or(self.transfers.len() as u32);
        let job = &mut self.jobs[j as usize];
        let bytes = match job.spec.workload.program_of(src.0).ops[src.1 as usize].kind {
            OpKind::Send { bytes, .. } => bytes,
            _ => 0,
        };
        // A receiver that never receives from this sender has no mailbox for it: the data
        // arrives and nobody waits for it.
        let recv = mailbox.and_then(|m| job.p2p.send(m, key.2, id));
        let receiver = recv.map(|_| key.1);
        if let Some(r) = receiver {
            self.split_rank(j, r);
        }
        let job = &mut self.jobs[j as usize];
        for r in std::iter::once(src.0).chain(receiver) {
            job.ranks[r as usize].comm_began(t, CommScope::Pp);
        }
        let (a, b) = (job.spec.gpus[key.0 as usize], job.spec.gpus[key.1 as usize]);
        let seed = mix(job.spec.comm.seed ^ (u64::from(j) << 32) ^ 0x5e4d);
        let record = Transfer {
            job: j,
            src,
            key,
            mailbox,
            // Counted as communication from now, when both sides are posted.
            recv: recv.map(|(op, _)| (op, t)),
            start: t,
            bytes,
            ticket: None,
        };
        match self.transfers.get_mut(id as usize) {
            Some(slot) => *slot = record,
            None => self.transfers.push(record),
        }
        if bytes == 0 || a == b {
            self.transfer_done(id, t);
            return Ok(());
        }
        self.net.set_tag(j);
        let key = FlowKey::connection(a, b, 0, seed);
        // A pipeline's pair sends on one connection all iteration: each message goes where
        // the last one went, unrouted, while the fabric and its routing stay as they were.
        let sent = match mailbox {
            Some(m) => {
                let at = &mut self.jobs[j as usize].placements[m];
                self.net.submit_message_on(key, bytes, Nanos(t), at)
            }
            None => self.net.submit_message(key, bytes, Nanos(t)),
        };
        let (flow, ticket) = sent.map_err(|error| RunError::Network {
            job: self.jobs[j as usize].spec.name.clone(),
            error,
        })?;
        self.transfers[id as usize].ticket = ticket;
        self.flows += 1;
        self.flow_owner.insert(flow, FlowOwner::Transfer(id));
        Ok(())
    }

    pub(super) fn transfer_done(&mut self, id: u32, t: u64) {
        if let Some(ticket) = self.transfers[id as usize].ticket.take() {
            self.net.message_done(ticket, Nanos(t));
        }
        let tr = &self.transfers[id as usize];
        let (j, src, key, mailbox, recv, start, bytes) = (
            tr.job, tr.src, tr.key, tr.mailbox, tr.recv, tr.start, tr.bytes,
        );
        self.split_rank(j, src.0);
        if recv.is_some() {
            self.split_rank(j, key.1);
        }
        let job = &mut self.jobs[j as usize];
        job.stats.transfer(bytes, t - start, job.order);
        job.comm_ended(src.0, src.1, CommScope::Pp, start, t, None);
        self.complete(j, src.0, src.1, t);
        let job = &mut self.jobs[j as usize];
        match recv {
            Some((op, since)) => {
                job.comm_ended(key.1, op, CommScope::Pp, since, t, None);
                job.stats.arrow(Arrow {
                    from: (src.0, start, t),
                    to: (key.1, since, t),
                });
                self.complete(j, key.1, op, t);
            }
            None => {
                if let Some(m) = mailbox {
                    job.p2p.arrived(m, id);
                }
            }
        }
        // Nothing names the transfer any more: its record is reused by the next.
        self.free_transfers.push(id);
    }
}
