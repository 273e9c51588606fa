//! What a fabric is built from, for its cost: switches and their ports, NIC ports, and cables
//! by kind (between switches, or from a NIC to its switch). Links inside a host (NVLink, PCIe)
//! are not counted: they come with the server whatever the fabric.

use serde::Serialize;

use crate::{NodeKind, Topology};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Inventory {
    pub switches: usize,
    /// Switch ports in use: two per cable between switches, one per NIC cable.
    pub switch_ports: usize,
    /// NIC ports cabled to a switch.
    pub nic_ports: usize,
    pub switch_cables: usize,
    pub nic_cables: usize,
}

/// Counts `topo`'s switches, ports and cables (a cable is its two directed links).
pub fn inventory(topo: &Topology) -> Inventory {
    let (mut switch_links, mut nic_links) = (0, 0);
    for link in topo.links() {
        match (topo.kind(link.src), topo.kind(link.dst)) {
            (a, b) if a.is_switch() && b.is_switch() => switch_links += 1,
            (NodeKind::Nic, b) if b.is_switch() => nic_links += 1,
            _ => {}
        }
    }
    let (switch_cables, nic_cables) = (switch_links / 2, nic_links);
    Inventory {
        switches: topo.switches().count(),
        switch_ports: 2 * switch_cables + nic_cables,
        nic_ports: nic_cables,
        switch_cables,
        nic_cables,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets;

    #[test]
    fn a_leaf_spine_is_counted_by_hand() {
        // k = 4: 4 leaves and 2 spines, each leaf with 2 hosts (1 GPU, 1 NIC) and 2 uplinks.
        let topo = presets::build("leaf-spine", &[("k".into(), "4".into())]).unwrap();
        assert_eq!(
            inventory(&topo),
            Inventory {
                switches: 6,
                switch_ports: 2 * 8 + 8,
                nic_ports: 8,
                switch_cables: 8,
                nic_cables: 8,
            }
        );
    }
}
