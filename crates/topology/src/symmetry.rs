//! Rotations of the GPUs inside every server, and whether they are automorphisms of the fabric.
//!
//! An 8-GPU server whose GPUs each have their own NIC into the same rack switch looks the same
//! from the network whichever GPU one starts counting from: turning every server's GPUs by one
//! place (GPU k to GPU k+1, each NIC with its GPU, every switch fixed) maps the fabric onto
//! itself. On a rail-optimized fabric, where GPU k's NIC is cabled to rail switch k, the rail
//! switches turn with the GPUs, and the switches above stay. When a job and its routing are as symmetric (its ranks on a server run the same
//! program towards the same turned peers, and the routing spreads by the switch graph alone),
//! each orbit of ranks behaves alike, and simulating one representative per orbit gives every
//! rate of the full simulation. [`HostRotation::new`] builds the rotation by `step` places and
//! checks that it is an automorphism: every link has an image between the images of its ends,
//! with the same capacity and latency. Fabrics where it is not (rails cabled unlike each other
//! above the rail switches, NICs shared by GPUs, servers of different sizes) are refused with
//! the reason.

use crate::{LinkId, NodeId, NodeKind, Topology};

/// A rotation of every server's GPUs by `step` places, with its images of nodes and links.
#[derive(Clone, Debug)]
pub struct HostRotation {
    /// How many rotations make the identity: GPUs per server over `step`.
    pub order: u32,
    pub step: u32,
    node: Vec<NodeId>,
    link: Vec<LinkId>,
}

impl HostRotation {
    /// The rotation by `step` places, if it is an automorphism of `topo`.
    pub fn new(topo: &Topology, step: u32) -> Result<HostRotation, String> {
        let hosts = topo.hosts();
        let Some(first) = hosts.first() else {
            return Err("the fabric has no servers".into());
        };
        let n = first.gpus.len() as u32;
        if let Some(h) = hosts.iter().find(|h| h.gpus.len() as u32 != n) {
            return Err(format!(
                "servers differ in size ({} has {} GPUs, {} has {n})",
                h.name,
                h.gpus.len(),
                first.name
            ));
        }
        if step == 0 || !n.is_multiple_of(step) || n / step < 2 {
            return Err(format!(
                "a turn by {step} places is not a rotation of {n} GPUs"
            ));
        }
        let mut node: Vec<NodeId> = topo.nodes().collect();
        let mut moved = vec![false; topo.node_count()];
        for h in hosts {
            for (k, &gpu) in h.gpus.iter().enumerate() {
                let image = h.gpus[(k + step as usize) % n as usize];
                node[gpu.index()] = image;
                let (from, to): (Vec<NodeId>, Vec<NodeId>) = (
                    topo.nics_of_gpu(gpu).collect(),
                    topo.nics_of_gpu(image).collect(),
                );
                if from.len() != to.len() {
                    return Err(format!(
                        "{} and {} have different numbers of NICs",
                        topo.node_name(gpu),
                        topo.node_name(image)
                    ));
                }
                for (&nic, &nic_image) in from.iter().zip(&to) {
                    if moved[nic.index()] && node[nic.index()] != nic_image {
                        return Err(format!("{} serves several GPUs", topo.node_name(nic)));
                    }
                    moved[nic.index()] = true;
                    node[nic.index()] = nic_image;
                }
            }
        }
        // The switches NICs are cabled to follow the NICs: under a rail-optimized fabric, the
        // rail switch of GPU k goes to GPU k+1's; under one rack switch, it stays. Switches
        // above stay; the check below says whether that is an automorphism.
        let mut switch_moved = vec![false; topo.node_count()];
        for h in hosts {
            for &nic in &h.nics {
                let image = node[nic.index()];
                let up = |x: NodeId| {
                    topo.out_links(x)
                        .iter()
                        .map(|&l| topo.link(l).dst)
                        .filter(|&d| topo.kind(d).is_switch())
                        .collect::<Vec<_>>()
                };
                for (sw, sw_image) in up(nic).into_iter().zip(up(image)) {
                    if switch_moved[sw.index()] && node[sw.index()] != sw_image {
                        return Err(format!(
                            "{} serves GPUs of different places in their servers",
                            topo.node_name(sw)
                        ));
                    }
                    switch_moved[sw.index()] = true;
                    node[sw.index()] = sw_image;
                }
            }
        }
        // A bijection: no two nodes onto one.
        let mut hit = vec![false; topo.node_count()];
        for &m in &node {
            if std::mem::replace(&mut hit[m.index()], true) {
                return Err(format!(
                    "{} is the image of two nodes (NICs shared between GPUs)",
                    topo.node_name(m)
                ));
            }
        }
        let mut link = Vec::with_capacity(topo.link_count());
        for l in topo.link_ids() {
            let x = topo.link(l);
            let (a, b) = (node[x.src.index()], node[x.dst.index()]);
            if a == x.src && b == x.dst {
                link.push(l);
                continue;
            }
            // The k-th link from src to dst goes to the k-th from a to b (parallel cables).
            let k = topo
                .out_links(x.src)
                .iter()
                .take_while(|&&o| o != l)
                .filter(|&&o| topo.link(o).dst == x.dst)
                .count();
            let image = topo
                .out_links(a)
                .iter()
                .copied()
                .filter(|&o| topo.link(o).dst == b)
                .nth(k);
            match image {
                Some(i)
                    if topo.link(i).capacity == x.capacity && topo.link(i).latency == x.latency =>
                {
                    link.push(i)
                }
                _ => {
                    return Err(format!(
                        "{} -> {} has no like image {} -> {}",
                        topo.node_name(x.src),
                        topo.node_name(x.dst),
                        topo.node_name(a),
                        topo.node_name(b)
                    ))
                }
            }
        }
        debug_assert!(topo
            .nodes()
            .all(|v| topo.kind(v) == topo.kind(node[v.index()])));
        debug_assert!(topo
            .nodes()
            .filter(|v| topo.kind(*v) == NodeKind::Gpu)
            .all(|v| topo.host_of(v) == topo.host_of(node[v.index()])));
        Ok(HostRotation {
            order: n / step,
            step,
            node,
            link,
        })
    }

    /// The image of `node`.
    pub fn node(&self, node: NodeId) -> NodeId {
        self.node[node.index()]
    }

    /// The image of `link`.
    pub fn link(&self, link: LinkId) -> LinkId {
        self.link[link.index()]
    }

    /// Per link, the first link of its orbit (the lowest id) and the orbit's size.
    pub fn link_orbits(&self) -> (Vec<LinkId>, Vec<u32>) {
        let mut first: Vec<LinkId> = (0..self.link.len() as u32).map(LinkId).collect();
        let mut size = vec![1u32; self.link.len()];
        for l in 0..self.link.len() {
            if first[l].index() != l {
                continue; // already reached from a lower link of its orbit
            }
            let mut orbit = vec![LinkId(l as u32)];
            let mut next = self.link[l];
            while next.index() != l {
                orbit.push(next);
                next = self.link[next.index()];
            }
            for &o in &orbit {
                first[o.index()] = LinkId(l as u32);
                size[o.index()] = orbit.len() as u32;
            }
        }
        (first, size)
    }
}
