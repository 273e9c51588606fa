//! A bundle laid alike on every server, routed in one server. Under link classes by server
//! whose servers are wired alike ([`ServerPlaces`]), a strand that stays inside its server
//! (an NVLink edge of a ring channel) is routed on its NVLink path, a function of the server's
//! wiring alone: in every server, the strand between the GPUs at places `a` and `b` crosses
//! the links at the places the first server's crosses, and those links form classes. So where
//! every server's strands inside it are the first server's, place for place and weight for
//! weight, only the first server's are routed, each of their links standing for its whole
//! class ([`LinkClasses::fold_images`]). The bundle folds as it would with every strand
//! routed, bit for bit; where anything differs, every strand is routed. On 16,384 ranks,
//! 14,336 of a ring channel's 16,384 edges are not.
//!
//! [`LinkClasses::fold_images`]: crate::classes::LinkClasses::fold_images

use fabricsim_topology::{LinkId, Nanos};

use super::{Leg, Network, Strand};
use crate::classes::ServerPlaces;
use crate::engine::Engine;

const NONE: u32 = u32::MAX;
const EMPTY: u64 = u64::MAX;

/// The scratch of [`Network::fold_by_images`], kept from bundle to bundle.
#[derive(Default)]
pub(super) struct Images {
    /// Per strand of the bundle: its server and pair of places if it stays inside a server
    /// (`server · gpus² + a · gpus + b`), else `NONE`.
    inside: Vec<u32>,
    /// Per pair of places: the weight's bits of the first server's strand between them, or
    /// `EMPTY`.
    template: Vec<u64>,
    /// Per server and pair of places: a bit set once that server's strand is met.
    met: Vec<u64>,
    /// The strands to route: the first server's inside it, then those inside no server.
    order: Vec<u32>,
}

impl Images {
    /// Fills `self.order` with the strands to route and returns how many of them lead it,
    /// the first server's strands inside it; `None` where the bundle has no such strand, no
    /// other server's, or where some server's strands inside it are not the first server's
    /// place for place (a pair twice, a pair the first server lacks, another weight, or
    /// fewer or more of them).
    fn pick(&mut self, places: &ServerPlaces, strands: &[Strand]) -> Option<usize> {
        let g = places.gpus();
        let pairs = g * g;
        if u64::from(places.servers()) * u64::from(pairs) >= u64::from(NONE) {
            return None;
        }
        self.inside.clear();
        self.inside
            .extend(strands.iter().map(|s| inside(places, s)));
        self.template.resize(pairs as usize, EMPTY);
        let bits = (places.servers() as usize * pairs as usize).div_ceil(64);
        if self.met.len() < bits {
            self.met.resize(bits, 0);
        }
        self.order.clear();
        let (mut ok, mut others) = (true, 0usize);
        for (i, (&at, s)) in self.inside.iter().zip(strands).enumerate() {
            match at {
                NONE => {}
                p if p < pairs => {
                    let t = &mut self.template[p as usize];
                    ok &= *t == EMPTY;
                    *t = s.weight.to_bits();
                    self.order.push(i as u32);
                }
                _ => others += 1,
            }
        }
        let images = self.order.len();
        ok &= images > 0 && others > 0 && others == images * (places.servers() as usize - 1);
        if ok {
            // Every other server's, each a pair of the first server's met once: with as
            // many as the first server's times the other servers, each server has them all.
            for (&at, s) in self.inside.iter().zip(strands) {
                if at == NONE || at < pairs {
                    continue;
                }
                let (word, bit) = (at as usize / 64, 1u64 << (at % 64));
                ok &= self.template[(at % pairs) as usize] == s.weight.to_bits()
                    && self.met[word] & bit == 0;
                self.met[word] |= bit;
            }
        }
        for &at in &self.inside {
            if at != NONE {
                self.template[(at % pairs) as usize] = EMPTY;
                self.met[at as usize / 64] = 0;
            }
        }
        if !ok {
            self.order.clear();
            return None;
        }
        let rest = self
            .inside
            .iter()
            .enumerate()
            .filter(|&(_, &at)| at == NONE);
        self.order.extend(rest.map(|(i, _)| i as u32));
        Some(images)
    }
}

/// `strand`'s server and pair of places, if it is one routed leg between two GPUs of one
/// server.
fn inside(places: &ServerPlaces, strand: &Strand) -> u32 {
    let [Leg::Routed(key)] = &strand.legs[..] else {
        return NONE;
    };
    let (g, from, to) = (
        places.gpus(),
        places.packed(key.src),
        places.packed(key.dst),
    );
    let (a, b) = (from & 0xFF, to & 0xFF);
    let outside = ServerPlaces::NONE;
    if from == outside || to == outside || from >> 8 != to >> 8 || a >= g || b >= g {
        return NONE;
    }
    ((from >> 8) * g + a) * g + b
}

impl<E: Engine> Network<'_, E> {
    /// Folds the links of a bundle's strands into `links` by images (this module), routing
    /// them into `routed`, and returns the bundle's latency; `None`, with `links` as it was,
    /// where that does not hold and every strand must be routed (a route error too: the
    /// caller's routing of every strand finds it in the strands' order).
    pub(super) fn fold_by_images(
        &mut self,
        strands: &[Strand],
        routed: &mut Vec<(LinkId, f64)>,
        links: &mut Vec<(LinkId, f64)>,
    ) -> Option<Nanos> {
        let places = self.classes.as_ref()?.places()?;
        if !self.state.all_up() {
            return None;
        }
        let servers = places.servers();
        let images = self.images.pick(places, strands)?;
        let order = std::mem::take(&mut self.images.order);
        let (mut latency, mut image_links) = (Nanos(0), 0);
        let mut routes = Ok(());
        for (j, &i) in order.iter().enumerate() {
            match self.route_strand(&strands[i as usize], routed) {
                Ok(l) => latency = latency.max(l),
                Err(e) => {
                    routes = Err(e);
                    break;
                }
            }
            if j + 1 == images {
                image_links = routed.len();
            }
        }
        self.images.order = order;
        routes.ok()?;
        let topo = self.topo;
        let classes = self.classes.as_mut()?;
        let places = classes.places()?;
        // The first server's strands stayed inside it: their NVLink paths.
        let in_first = |n| matches!(places.at(n), Some((0, _)));
        let inside = routed[..image_links].iter().all(|&(l, _)| {
            let link = topo.link(l);
            in_first(link.src) && in_first(link.dst)
        });
        if !inside {
            return None;
        }
        let start = links.len();
        match classes.fold_images(routed, image_links, servers, links) {
            Ok(true) => Some(latency),
            _ => {
                links.truncate(start);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use fabricsim_routing::{FlowKey, HashConfig, Policy, Router};
    use fabricsim_topology::{presets, HostId, Topology};

    use super::*;
    use crate::classes::LinkClasses;
    use crate::FlowEngine;

    fn fabric() -> Topology {
        let set = [("zones", "2"), ("racks", "2"), ("hosts_per_rack", "2")];
        presets::build_with(
            "meta-cluster",
            &[&set[..], &[("gpus_per_host", "4")]].concat(),
        )
        .unwrap()
    }

    fn classed(topo: &Topology) -> Network<'_, FlowEngine> {
        let mut net = Network::new(
            topo,
            Router::new(topo, Policy::Ecmp, HashConfig::default()),
            FlowEngine::new(topo),
        );
        let hosts: Vec<HostId> = (0..topo.hosts().len() as u32).map(HostId).collect();
        let alike = |a: LinkId, b: LinkId| topo.link(a).capacity == topo.link(b).capacity;
        net.set_link_classes(LinkClasses::by_server(topo, &hosts, alike));
        net
    }

    fn strand(topo: &Topology, (h, a): (usize, usize), (i, b): (usize, usize), w: f64) -> Strand {
        let gpu = |h: usize, g: usize| topo.hosts()[h].gpus[g];
        Strand {
            legs: [Leg::Routed(FlowKey::connection(gpu(h, a), gpu(i, b), 0, 7))]
                .into_iter()
                .collect(),
            weight: w,
        }
    }

    /// A ring over the servers: inside each, GPU 0 → 1 → 2 → 3 over NVLink at half weight,
    /// and GPU 3 to the next server's GPU 0 over the network.
    fn ring(topo: &Topology) -> Vec<Strand> {
        let servers = topo.hosts().len();
        (0..servers)
            .flat_map(|h| {
                let mut edges: Vec<Strand> = (0..3)
                    .map(|g| strand(topo, (h, g), (h, g + 1), 0.5))
                    .collect();
                edges.push(strand(topo, (h, 3), ((h + 1) % servers, 0), 1.0));
                edges
            })
            .collect()
    }

    fn folds(net: &mut Network<'_, FlowEngine>, strands: &[Strand]) -> Option<Nanos> {
        let (mut routed, mut links) = (Vec::new(), Vec::new());
        net.fold_by_images(strands, &mut routed, &mut links)
    }

    /// Routed in the first server, a ring folds as with every strand routed, to the bit, and
    /// routes the first server's 3 edges inside it and the 8 between servers, not 32.
    #[test]
    fn a_ring_alike_on_every_server_folds_as_routed_in_full() {
        let topo = fabric();
        let mut net = classed(&topo);
        let strands = ring(&topo);
        assert_eq!(strands.len(), 32);
        let (mut routed, mut links) = (Vec::new(), Vec::new());
        let latency = net.fold_by_images(&strands, &mut routed, &mut links);
        assert_eq!(net.images.order.len(), 3 + 8);
        let (mut all, mut full) = (Vec::new(), Vec::new());
        let full_latency = net.merge_routes(&strands, &mut all, &mut full).unwrap();
        assert_eq!(latency, Some(full_latency));
        assert_eq!(links, full, "the same links at the same weights");
        // The other 7 servers' 3 edges inside them, two NVLink hops each, were not routed.
        assert_eq!(all.len() - routed.len(), 7 * 3 * 2);
    }

    /// A server whose strands inside it are not the first server's, in a pair, a weight or
    /// their number, is not folded by images; nor is a bundle with no strand of another
    /// server inside it.
    #[test]
    fn a_server_not_like_the_first_is_routed_in_full() {
        let topo = fabric();
        let mut net = classed(&topo);
        let ring = ring(&topo);
        let mut other_pair = ring.clone();
        other_pair[4] = strand(&topo, (1, 1), (1, 0), 0.5);
        let mut other_weight = ring.clone();
        other_weight[5].weight = 0.25;
        let mut twice = ring.clone();
        twice[6] = twice[5].clone();
        let mut one_more = ring.clone();
        one_more.push(strand(&topo, (2, 3), (2, 2), 0.5));
        let first_only: Vec<Strand> = ring[..4].to_vec();
        for strands in [other_pair, other_weight, twice, one_more, first_only] {
            assert_eq!(folds(&mut net, &strands), None);
            assert!(net.images.order.is_empty());
        }
        // The scratch is clean: the ring itself still folds.
        assert!(folds(&mut net, &ring).is_some());
    }
}
