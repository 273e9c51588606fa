//! Which jobs loaded which links, and which jobs they met there: the fabric's counters tied to
//! jobs, as Meta's ROCET does for its RoCE fabric (Gangidi et al., "RDMA over Ethernet for
//! Distributed AI Training at Meta Scale", SIGCOMM 2024, §6). From a run made with
//! [`crate::RunOptions::attribute_links`].

use fabricsim_netsim::LinkUse;
use fabricsim_routing::balance::link_group;
use fabricsim_topology::{LinkId, Topology};

/// One link as one job saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct JobLink {
    pub link: LinkId,
    /// The link's group (`rtsw->ctsw`), `None` for a link inside a host.
    pub group: Option<String>,
    /// Bytes this job put on the link.
    pub bytes: f64,
    /// Bytes every job put on it.
    pub link_bytes: f64,
    /// The link's mean utilization over the run.
    pub utilization: f64,
    /// The other jobs on it (index into the run's jobs) with their bytes, most bytes first.
    pub others: Vec<(usize, f64)>,
}

/// A job and the jobs it shared fabric links with.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSharing {
    /// Every link the job's bytes crossed, in link order.
    pub links: Vec<JobLink>,
    /// Per other job (index) it met on a fabric link: how many links they shared and the
    /// other job's bytes there, most links first.
    pub neighbours: Vec<Neighbour>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Neighbour {
    pub job: usize,
    pub links: usize,
    pub bytes: f64,
}

impl JobSharing {
    /// The `n` fabric links (between switches, or a NIC and its switch) it loaded most, most
    /// bytes first (ties by link).
    pub fn busiest(&self, n: usize) -> Vec<&JobLink> {
        let mut fabric: Vec<&JobLink> = self.links.iter().filter(|l| l.group.is_some()).collect();
        fabric.sort_by(|a, b| b.bytes.total_cmp(&a.bytes).then(a.link.cmp(&b.link)));
        fabric.truncate(n);
        fabric
    }
}

/// Per job, its links and neighbours. `links` are the run's links ([`crate::RunOutput::links`]),
/// `job_links` its per-job bytes ([`crate::RunOutput::job_links`]).
pub fn sharing(
    topo: &Topology,
    links: &[LinkUse],
    job_links: &[Vec<(LinkId, f64)>],
) -> Vec<JobSharing> {
    let utilization = |l: LinkId| {
        links
            .binary_search_by_key(&l, |u| u.link)
            .map_or(0.0, |i| links[i].utilization)
    };
    // Per link, the jobs on it: (link, job, bytes) sorted by link then job.
    let mut on_link: Vec<(LinkId, usize, f64)> = job_links
        .iter()
        .enumerate()
        .flat_map(|(j, ls)| ls.iter().map(move |&(l, b)| (l, j, b)))
        .collect();
    on_link.sort_by_key(|&(l, j, _)| (l, j));
    let jobs_on = |l: LinkId| {
        let from = on_link.partition_point(|e| e.0 < l);
        let to = on_link.partition_point(|e| e.0 <= l);
        &on_link[from..to]
    };
    (0..job_links.len())
        .map(|j| {
            let mut met: Vec<Neighbour> = Vec::new();
            let links: Vec<JobLink> = job_links[j]
                .iter()
                .map(|&(l, bytes)| {
                    let all = jobs_on(l);
                    let mut others: Vec<(usize, f64)> = all
                        .iter()
                        .filter(|e| e.1 != j)
                        .map(|e| (e.1, e.2))
                        .collect();
                    others.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                    let group = link_group(topo, l);
                    if group.is_some() {
                        for &(o, b) in &others {
                            match met.iter_mut().find(|n| n.job == o) {
                                Some(n) => {
                                    n.links += 1;
                                    n.bytes += b;
                                }
                                None => met.push(Neighbour {
                                    job: o,
                                    links: 1,
                                    bytes: b,
                                }),
                            }
                        }
                    }
                    JobLink {
                        link: l,
                        group,
                        bytes,
                        link_bytes: all.iter().map(|e| e.2).sum(),
                        utilization: utilization(l),
                        others,
                    }
                })
                .collect();
            met.sort_by(|a, b| b.links.cmp(&a.links).then(a.job.cmp(&b.job)));
            JobSharing {
                links,
                neighbours: met,
            }
        })
        .collect()
}
