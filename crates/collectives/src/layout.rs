//! Ranks on GPUs: which GPU each rank runs on, and how ranks group into hosts (NVLink
//! domains). Algorithms read hosts and local indices from here to keep rings rail-aligned and
//! to chain GPUs inside a host.

use fabricsim_topology::{NodeId, NodeKind, Topology};

use crate::PlanError;

#[derive(Clone, Debug)]
pub struct Ranks {
    gpus: Vec<NodeId>,
    host: Vec<u32>,
    local: Vec<u32>,
    /// Per host (in order of first appearance in rank order), its ranks in rank order.
    hosts: Vec<Vec<u32>>,
}

impl Ranks {
    /// Rank `r` runs on `gpus[r]`. Every entry must be a distinct GPU.
    pub fn new(topo: &Topology, gpus: Vec<NodeId>) -> Result<Ranks, PlanError> {
        // Hashed, not a flag per node: a group of 8 GPUs on a 24K-GPU fabric is planned often.
        let mut seen =
            rustc_hash::FxHashSet::with_capacity_and_hasher(gpus.len(), Default::default());
        let mut host_index = std::collections::BTreeMap::new();
        let mut hosts: Vec<Vec<u32>> = Vec::new();
        let (mut host, mut local) = (Vec::new(), Vec::new());
        for (r, &g) in gpus.iter().enumerate() {
            if g.index() >= topo.node_count() || topo.kind(g) != NodeKind::Gpu {
                return Err(PlanError::NotAGpu { rank: r });
            }
            if !seen.insert(g) {
                return Err(PlanError::SharedGpu {
                    rank: r,
                    gpu: topo.node_name(g).to_string(),
                });
            }
            let h = topo.host_of(g).map_or(u32::MAX, |h| h.0);
            let next = hosts.len() as u32;
            let hi = *host_index.entry(h).or_insert(next);
            if hi == next {
                hosts.push(Vec::new());
            }
            local.push(hosts[hi as usize].len() as u32);
            hosts[hi as usize].push(r as u32);
            host.push(hi);
        }
        Ok(Ranks {
            gpus,
            host,
            local,
            hosts,
        })
    }

    pub fn len(&self) -> usize {
        self.gpus.len()
    }

    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }

    pub fn gpu(&self, rank: u32) -> NodeId {
        self.gpus[rank as usize]
    }

    pub fn gpus(&self) -> &[NodeId] {
        &self.gpus
    }

    /// The index (into [`Ranks::hosts`]) of the host `rank` runs on.
    pub fn host(&self, rank: u32) -> u32 {
        self.host[rank as usize]
    }

    /// `rank`'s position among its host's ranks.
    pub fn local(&self, rank: u32) -> u32 {
        self.local[rank as usize]
    }

    /// Hosts in order of first appearance, each with its ranks in rank order.
    pub fn hosts(&self) -> &[Vec<u32>] {
        &self.hosts
    }

    /// Whether `other` lays its ranks on its hosts as this does (every rank on the same host
    /// index, at the same position there): all that plans and the tuner read of the ranks
    /// besides their GPUs.
    pub fn same_layout(&self, other: &Ranks) -> bool {
        self.host == other.host && self.local == other.local
    }

    pub fn same_host(&self, a: u32, b: u32) -> bool {
        self.host(a) == self.host(b)
    }

    /// Ranks per host if every host has the same number, else `None`.
    pub fn uniform_per_host(&self) -> Option<usize> {
        let k = self.hosts.first()?.len();
        self.hosts.iter().all(|h| h.len() == k).then_some(k)
    }

    /// The rank on `rank`'s host that sits on `dst`'s rail (the same local index as `dst`), if
    /// there is one: the proxy PXN forwards through over NVLink.
    pub fn rail_proxy(&self, rank: u32, dst: u32) -> Option<u32> {
        self.hosts[self.host(rank) as usize]
            .get(self.local(dst) as usize)
            .copied()
    }
}
