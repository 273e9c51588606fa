//! The units each failure class draws from, found once from the fabric: GPUs, NICs, NIC–switch
//! links (and whether their host keeps another port), ToRs with their single-homed hosts, and
//! the switches above them.

use std::collections::BTreeMap;

use fabricsim_topology::{NodeKind, Topology};

use crate::failures::Class;
use crate::hierarchy::Hierarchy;

/// The failure units of each class, found once from the fabric.
pub(crate) struct Units {
    pub gpu_host: Vec<u32>,
    pub nic_host: Vec<u32>,
    /// Per NIC–switch link: its host, and whether the host keeps another port.
    pub cable: Vec<(u32, bool)>,
    /// Per ToR: its single-homed hosts.
    pub tor: Vec<Vec<u32>>,
    pub upper_switches: usize,
}

impl Units {
    pub fn of(topo: &Topology, h: &Hierarchy) -> Units {
        let (mut gpu_host, mut nic_host, mut cable) = (Vec::new(), Vec::new(), Vec::new());
        let mut tor_index: BTreeMap<u32, usize> = BTreeMap::new();
        let mut upper_switches = 0;
        for n in topo.nodes() {
            if let NodeKind::Switch(role) = topo.kind(n) {
                if role.tier == 1 {
                    let k = tor_index.len();
                    tor_index.insert(n.0, k);
                } else {
                    upper_switches += 1;
                }
            }
        }
        let mut tor = vec![Vec::new(); tor_index.len()];
        for (x, host) in topo.hosts().iter().enumerate() {
            let x = x as u32;
            gpu_host.extend(std::iter::repeat_n(x, h.gpus[x as usize].len()));
            let mut switches = Vec::new();
            for &nic in &host.nics {
                nic_host.push(x);
                for &l in topo.out_links(nic) {
                    let s = topo.link(l).dst;
                    if topo.kind(s).is_switch() {
                        switches.push(s.0);
                    }
                }
            }
            switches.sort_unstable();
            switches.dedup();
            let dual = switches.len() > 1;
            for &nic in &host.nics {
                for &l in topo.out_links(nic) {
                    if topo.kind(topo.link(l).dst).is_switch() {
                        cable.push((x, dual));
                    }
                }
            }
            if let [only] = switches[..] {
                if let Some(&k) = tor_index.get(&only) {
                    tor[k].push(x);
                }
            }
        }
        Units {
            gpu_host,
            nic_host,
            cable,
            tor,
            upper_switches,
        }
    }

    pub fn count(&self, c: Class, hosts: usize) -> usize {
        match c {
            Class::Gpu | Class::Software => self.gpu_host.len(),
            Class::Host => hosts,
            Class::Nic => self.nic_host.len(),
            Class::Cable => self.cable.len(),
            Class::Tor => self.tor.len(),
            Class::Switch => self.upper_switches,
        }
    }
}
