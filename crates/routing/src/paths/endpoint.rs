//! Per node, what every route reads of its two ends, in one record: a GPU's place among the
//! GPUs, its host, the index of the distances toward it, and, for a GPU that reaches the
//! fabric through one NIC with one switch port (the common case), those two links. So a route
//! reads one record per end where it read the GPU table, the distance index and the out links
//! of the GPU and its NIC: a chain of six cache misses per end in a large fabric.

use fabricsim_topology::{LinkId, NodeId, NodeKind, Topology};

use super::graph::{Graph, NOT_A_SWITCH};

#[derive(Clone, Copy)]
#[repr(C, align(32))]
pub(super) struct Endpoint {
    /// Its position among the GPUs, or `u32::MAX` for a node that is not a GPU.
    pub ordinal: u32,
    pub host: u32,
    /// Where the distances toward it are in the path finder's cache, or `NO_DISTANCES`.
    pub dist: u32,
    /// The GPU's only way onto the fabric, `GPU -> NIC -> switch`, and the switch's index;
    /// `sw` is `NOT_A_SWITCH` where there is no single way (several NICs or NIC ports, a NIC
    /// shared with other GPUs, a latency over 32 bits). A cable's two directions have one
    /// latency (the topology builder lays both), so the way off the fabric to the GPU is the
    /// same two links reversed, at the same latencies.
    pub to_nic: LinkId,
    pub to_nic_latency: u32,
    pub port: LinkId,
    pub port_latency: u32,
    pub sw: u32,
}

const _: () = assert!(std::mem::size_of::<Endpoint>() == 32);

pub(super) const NO_DISTANCES: u32 = u32::MAX;

impl Endpoint {
    /// A node that is not a GPU.
    pub const NONE: Endpoint = Endpoint {
        ordinal: u32::MAX,
        host: u32::MAX,
        dist: NO_DISTANCES,
        to_nic: LinkId(u32::MAX),
        to_nic_latency: 0,
        port: LinkId(u32::MAX),
        port_latency: 0,
        sw: NOT_A_SWITCH,
    };

    pub fn is_gpu(&self) -> bool {
        self.ordinal != u32::MAX
    }

    /// Whether the GPU has a single way onto the fabric (see `sw`).
    pub fn single_homed(&self) -> bool {
        self.sw != NOT_A_SWITCH
    }

    /// GPU `gpu`, the `ordinal`-th.
    pub fn gpu(topo: &Topology, graph: &Graph, gpu: NodeId, ordinal: u32) -> Endpoint {
        let mut e = Endpoint {
            ordinal,
            host: topo.host_of(gpu).map_or(u32::MAX, |h| h.0),
            ..Endpoint::NONE
        };
        // The GPU's links that leave the host's NVLink: to NICs, or straight to a switch.
        let mut onward = graph
            .targets(gpu)
            .iter()
            .filter(|(_, t)| t.sw != NOT_A_SWITCH || topo.kind(t.node) == NodeKind::Nic);
        let (Some(&(to_nic, nic)), None) = (onward.next(), onward.next()) else {
            return e;
        };
        if nic.sw != NOT_A_SWITCH {
            return e;
        }
        // The NIC's links: back to this GPU and one switch port, nothing else.
        let out = graph.targets(nic.node);
        let mut ports = out.iter().filter(|(_, t)| t.node != gpu);
        let back = out.iter().filter(|(_, t)| t.node == gpu).count();
        let (Some(&(port, sw)), None, 1) = (ports.next(), ports.next(), back) else {
            return e;
        };
        if sw.sw == NOT_A_SWITCH || nic.latency == u32::MAX || sw.latency == u32::MAX {
            return e;
        }
        e.to_nic = to_nic;
        e.to_nic_latency = nic.latency;
        e.port = port;
        e.port_latency = sw.latency;
        e.sw = sw.sw;
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabricsim_topology::presets;

    fn single_homed(preset: &str, settings: &[(&str, &str)]) -> Vec<bool> {
        let settings: Vec<(String, String)> = settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let topo = presets::build(preset, &settings).unwrap();
        let graph = Graph::new(&topo);
        topo.gpus()
            .iter()
            .enumerate()
            .map(|(i, &g)| Endpoint::gpu(&topo, &graph, g, i as u32).single_homed())
            .collect()
    }

    #[test]
    fn one_nic_with_one_port_is_single_homed_and_dual_ports_are_not() {
        assert!(single_homed("meta-ai-zone", &[("racks", "2")])
            .iter()
            .all(|&s| s));
        assert!(
            single_homed("superpod", &[("sus", "1"), ("nodes_per_su", "2")])
                .iter()
                .all(|&s| s)
        );
        // HPN: each NIC has two ports, to two ToRs.
        assert!(!single_homed(
            "hpn",
            &[
                ("segments", "1"),
                ("hosts_per_segment", "2"),
                ("tor_uplinks", "2")
            ]
        )
        .iter()
        .any(|&s| s));
    }
}
