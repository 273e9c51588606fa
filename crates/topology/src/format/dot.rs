//! Graphviz DOT output, for drawing small fabrics (`dot -Tsvg fabric.dot > fabric.svg`).
//!
//! Hosts are boxed clusters; switches of one tier share a rank, the top tier drawn highest;
//! each cable is one undirected edge labelled with its capacity.

use std::io::Write;

use crate::model::{NodeKind, Topology};

/// Above this many nodes a drawing is unreadable and Graphviz slow; the CLI refuses.
pub const MAX_DOT_NODES: usize = 5_000;

pub fn write_dot(topo: &Topology, out: &mut (impl Write + ?Sized)) -> std::io::Result<()> {
    writeln!(out, "graph {:?} {{", topo.name())?;
    writeln!(out, "  rankdir=BT;")?;
    writeln!(out, "  node [shape=box, fontsize=10];")?;
    for host in topo.hosts() {
        writeln!(out, "  subgraph {:?} {{", format!("cluster_{}", host.name))?;
        writeln!(out, "    label={:?}; style=rounded;", host.name)?;
        for &n in host.nvswitches.iter().chain(&host.gpus).chain(&host.nics) {
            let shape = match topo.kind(n) {
                NodeKind::Gpu => "ellipse",
                NodeKind::Nic => "cds",
                _ => "hexagon",
            };
            writeln!(out, "    {:?} [shape={shape}];", topo.node_name(n))?;
        }
        writeln!(out, "  }}")?;
    }
    for tier in 1..=topo.tiers().len() as u8 {
        let members: Vec<String> = topo
            .switches()
            .filter(|(_, r)| r.tier == tier)
            .map(|(n, r)| {
                format!(
                    "{:?} [tooltip=\"tier {} plane {}\"];",
                    topo.node_name(n),
                    topo.tier_name(tier),
                    r.plane
                )
            })
            .collect();
        writeln!(out, "  {{ rank=same; {} }}", members.join(" "))?;
    }
    for link in topo.links().iter().step_by(2) {
        writeln!(
            out,
            "  {:?} -- {:?} [label={:?}];",
            topo.node_name(link.src),
            topo.node_name(link.dst),
            link.capacity.to_string()
        )?;
    }
    writeln!(out, "}}")
}
