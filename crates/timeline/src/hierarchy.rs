//! The cluster as a scheduler sees it: hosts in racks (the switch a host's first NIC hangs
//! off) and racks in zones (racks whose switches share their uplink switches: Meta's AI Zone,
//! a pod), and which GPUs of each host are taken.

use fabricsim_cluster::placement::rack_of;
use fabricsim_topology::{NodeId, NodeKind, Topology};

/// Hosts, racks and zones, in fabric order.
#[derive(Clone, Debug)]
pub struct Hierarchy {
    /// Per host: its rack.
    pub rack: Vec<u32>,
    /// Per rack: its zone.
    pub zone: Vec<u32>,
    /// Per rack: its hosts.
    pub hosts_of_rack: Vec<Vec<u32>>,
    /// Per rack: its switch (none for hosts without a NIC).
    pub rack_switch: Vec<Option<NodeId>>,
    /// Per zone: its racks.
    pub racks_of_zone: Vec<Vec<u32>>,
    /// Per host: its GPUs, in order.
    pub gpus: Vec<Vec<NodeId>>,
    /// GPUs per host (the most any host has).
    pub gpus_per_host: u32,
    /// Per host: its name.
    pub names: Vec<String>,
    /// Whether every rack switch's uplinks carry at least what its hosts' NICs can send into
    /// it (a non-blocking rack, as in Meta's AI Zones): then where in a zone a job's hosts sit
    /// does not change its bandwidth.
    pub racks_non_blocking: bool,
}

impl Hierarchy {
    pub fn of(topo: &Topology) -> Hierarchy {
        let hosts = topo.hosts();
        let mut rack_ids: Vec<Option<NodeId>> = Vec::new();
        let mut rack = Vec::with_capacity(hosts.len());
        for h in 0..hosts.len() {
            let r = rack_of(topo, h);
            let i = match rack_ids.iter().position(|&x| x == r) {
                Some(i) => i,
                None => {
                    rack_ids.push(r);
                    rack_ids.len() - 1
                }
            };
            rack.push(i as u32);
        }
        // A rack's zone: the lowest-numbered switch above its rack switch (racks under the
        // same uplink switches share it).
        let mut zone_keys: Vec<Option<NodeId>> = Vec::new();
        let mut zone = Vec::with_capacity(rack_ids.len());
        for r in rack_ids.iter().copied() {
            let key = r.and_then(|s| {
                topo.out_links(s)
                    .iter()
                    .map(|&l| topo.link(l).dst)
                    .filter(|&n| matches!(topo.kind(n), NodeKind::Switch(_)))
                    .min()
            });
            let i = match zone_keys.iter().position(|&x| x == key) {
                Some(i) => i,
                None => {
                    zone_keys.push(key);
                    zone_keys.len() - 1
                }
            };
            zone.push(i as u32);
        }
        let mut hosts_of_rack = vec![Vec::new(); rack_ids.len()];
        for (h, &r) in rack.iter().enumerate() {
            hosts_of_rack[r as usize].push(h as u32);
        }
        let mut racks_of_zone = vec![Vec::new(); zone_keys.len()];
        for (r, &z) in zone.iter().enumerate() {
            racks_of_zone[z as usize].push(r as u32);
        }
        let racks_non_blocking = rack_ids.iter().flatten().all(|&s| {
            let (mut up, mut down) = (0u128, 0u128);
            for &l in topo.out_links(s) {
                let link = topo.link(l);
                match topo.kind(link.dst) {
                    NodeKind::Switch(_) => up += u128::from(link.capacity.0),
                    NodeKind::Nic => down += u128::from(link.capacity.0),
                    _ => {}
                }
            }
            up >= down
        });
        Hierarchy {
            racks_non_blocking,
            rack,
            zone,
            hosts_of_rack,
            rack_switch: rack_ids,
            racks_of_zone,
            gpus: hosts.iter().map(|h| h.gpus.clone()).collect(),
            gpus_per_host: hosts.iter().map(|h| h.gpus.len() as u32).max().unwrap_or(0),
            names: hosts.iter().map(|h| h.name.clone()).collect(),
        }
    }

    pub fn hosts(&self) -> usize {
        self.rack.len()
    }

    pub fn zone_of_host(&self, h: u32) -> u32 {
        self.zone[self.rack[h as usize] as usize]
    }

    pub fn gpu_count(&self) -> u64 {
        self.gpus.iter().map(|g| g.len() as u64).sum()
    }
}

/// A job's GPUs: per host, a mask of the host's GPUs it holds; ranks go on them in this order.
pub type Allocation = Vec<(u32, u64)>;

/// Which GPUs are taken, and which hosts are out (failed, in repair, drained).
#[derive(Clone, Debug)]
pub struct Occupancy {
    /// Per host: the mask of taken GPUs.
    pub taken: Vec<u64>,
    /// Per host: out of service.
    pub out: Vec<bool>,
    full: Vec<u64>,
}

impl Occupancy {
    pub fn new(h: &Hierarchy) -> Occupancy {
        Occupancy {
            taken: vec![0; h.hosts()],
            out: vec![false; h.hosts()],
            full: h
                .gpus
                .iter()
                .map(|g| {
                    if g.len() >= 64 {
                        u64::MAX
                    } else {
                        (1u64 << g.len()) - 1
                    }
                })
                .collect(),
        }
    }

    /// Free GPUs of host `h` (none while it is out).
    pub fn free_mask(&self, h: u32) -> u64 {
        if self.out[h as usize] {
            0
        } else {
            self.full[h as usize] & !self.taken[h as usize]
        }
    }

    pub fn free_gpus(&self, h: u32) -> u32 {
        self.free_mask(h).count_ones()
    }

    /// Whether host `h` is in service with every GPU free.
    pub fn whole(&self, h: u32) -> bool {
        !self.out[h as usize] && self.taken[h as usize] == 0 && self.full[h as usize] != 0
    }

    pub fn take(&mut self, a: &Allocation) {
        for &(h, m) in a {
            debug_assert_eq!(self.taken[h as usize] & m, 0, "a GPU taken twice");
            self.taken[h as usize] |= m;
        }
    }

    pub fn release(&mut self, a: &Allocation) {
        for &(h, m) in a {
            self.taken[h as usize] &= !m;
        }
    }
}
