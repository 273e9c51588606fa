//! Classes of identical constraints: links that every flow crosses all of or none of, with one
//! weight, at one capacity, carry the same load at every instant and bind the same flows, so
//! the max-min problem keeps one of each class and loses nothing (a duplicated row of a linear
//! program). A collective laid the same way on every server is the case: channel `c`'s ring
//! leaves server `h` through NIC `k` for every `h`, so the NICs `k` of all its servers, their
//! PCIe links and NVLink ports, each form a class; only the links the flows hash onto differ.
//!
//! The classes are a claim about the flows to come, so each bundle is checked as it merges
//! (every class it touches crossed in full, at one weight) and the engine sees only each
//! class's first link. A bundle that breaks the claim is refused, and the caller runs again
//! without classes: the result is then the full problem's, bit for bit, either way.

use fabricsim_topology::{HostId, LinkId, Topology};

/// Links grouped into classes of identical constraints, with the scratch of the check.
#[derive(Clone, Debug)]
pub struct LinkClasses {
    /// Per link, the first link of its class (itself if it is alone).
    first: Vec<LinkId>,
    /// Per first link, how many links its class has (1 for a link alone).
    size: Vec<u32>,
    /// The check of one bundle: per first link, the links of its class crossed and their
    /// weight; the first links touched, to reset.
    seen: Vec<u32>,
    weight: Vec<f64>,
    touched: Vec<u32>,
    /// [`Self::fold_routes`]: per link, a bit set while a bundle's routes are read.
    met: Vec<u64>,
    /// Where the nodes of the servers lie, where every server is wired as the first
    /// ([`Self::by_server`]).
    places: Option<ServerPlaces>,
}

/// The nodes of servers wired alike, by server (in the order the classes were made from, the
/// first one the template) and by place in the server (its GPUs, NICs and NVSwitches in
/// order): every server's links at each place join the nodes at the same places, at the same
/// capacity, efficiency and latency, and no cable joins two servers. A route that stays
/// inside a server is its NVLink path, a function of that wiring alone: in every server it
/// crosses the links at the places the first server's crosses (`network/images.rs`).
#[derive(Clone, Debug)]
pub struct ServerPlaces {
    /// Per node: its server's index, shifted left 8 bits, and its place; `NONE` for a node
    /// of no server.
    at: Vec<u32>,
    servers: u32,
    gpus: u32,
}

const NONE: u32 = u32::MAX;

impl ServerPlaces {
    /// [`Self::packed`] of a node of no server.
    pub const NONE: u32 = NONE;

    /// How many servers.
    pub fn servers(&self) -> u32 {
        self.servers
    }

    /// GPUs per server.
    pub fn gpus(&self) -> u32 {
        self.gpus
    }

    /// The server and the place of `node`, if it lies in a server.
    pub fn at(&self, node: fabricsim_topology::NodeId) -> Option<(u32, u32)> {
        let at = self.packed(node);
        (at != NONE).then_some((at >> 8, at & 0xFF))
    }

    /// [`Self::at`] packed: the server shifted left 8 bits and the place; [`Self::NONE`] for
    /// none.
    pub fn packed(&self, node: fabricsim_topology::NodeId) -> u32 {
        self.at.get(node.index()).copied().unwrap_or(NONE)
    }
}

/// A bundle crossed part of a class, or its links at different weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a bundle crosses link class {first} in part or at unequal weights")]
pub struct ClassBroken {
    pub first: LinkId,
}

impl LinkClasses {
    /// From each link's class, named by its first link (a first link is its own first).
    /// Callers give links of one class the same capacity.
    pub fn new(first: Vec<LinkId>) -> LinkClasses {
        let mut size = vec![0u32; first.len()];
        for f in &first {
            debug_assert!(first[f.index()] == *f, "a class names its first link");
            size[f.index()] += 1;
        }
        LinkClasses {
            seen: vec![0; first.len()],
            weight: vec![0.0; first.len()],
            touched: Vec::new(),
            met: vec![0; first.len().div_ceil(64)],
            first,
            size,
            places: None,
        }
    }

    /// The links of `hosts` (distinct servers) by their place in their server: the `k`-th link
    /// of every server (its parts' links in the order of its GPUs, NICs and NVSwitches and of
    /// each part's links, each cable to a switch in both directions) in one class, the first
    /// server's, where it joins the nodes at the same places as the first server's and `alike`
    /// holds between them. Servers built alike list their links alike; any other link is
    /// alone. Where every place is alike, the classes keep the servers' [`ServerPlaces`].
    pub fn by_server(
        topo: &Topology,
        hosts: &[HostId],
        alike: impl Fn(LinkId, LinkId) -> bool,
    ) -> LinkClasses {
        let mut first: Vec<LinkId> = topo.link_ids().collect();
        let Some((&h0, rest)) = hosts.split_first() else {
            return LinkClasses::new(first);
        };
        let parts = |h: HostId| {
            let host = topo.host(h);
            host.gpus.iter().chain(&host.nics).chain(&host.nvswitches)
        };
        let counts = |h: HostId| {
            let host = topo.host(h);
            (host.gpus.len(), host.nics.len(), host.nvswitches.len())
        };
        // Every node of a server: its server and place.
        let mut at = vec![NONE; topo.node_count()];
        let mut placed = hosts.len() < 1 << 24;
        for (s, &h) in hosts.iter().enumerate() {
            for (p, &n) in parts(h).enumerate() {
                placed &= p < 0xFF;
                at[n.index()] = ((s as u32) << 8) | (p as u32 & 0xFF);
            }
        }
        // Where a link joins, in its server: each end's place, or outside it.
        let shape = |l: LinkId| {
            let link = topo.link(l);
            let place = |n: fabricsim_topology::NodeId| match at[n.index()] {
                NONE => NONE,
                a => a & 0xFF,
            };
            (place(link.src), place(link.dst), link.latency)
        };
        // A server's links in their places, into a buffer kept from server to server: those
        // inside it and those to a switch; a cable to another server is no one's own, and
        // leaves the servers unplaced.
        let local = |h: HostId, links: &mut Vec<LinkId>, placed: &mut bool| {
            links.clear();
            for &n in parts(h) {
                for &l in topo.out_links(n) {
                    match topo.host_of(topo.link(l).dst) {
                        Some(other) if other == h => links.push(l),
                        Some(_) => *placed = false,
                        None => links.extend([l, l.reverse()]),
                    }
                }
            }
        };
        let (mut firsts, mut links) = (Vec::new(), Vec::new());
        local(h0, &mut firsts, &mut placed);
        // The places where every server is alike, then their classes.
        let mut places = vec![true; firsts.len()];
        let shapes: Vec<_> = firsts.iter().map(|&l| shape(l)).collect();
        for &h in rest {
            local(h, &mut links, &mut placed);
            placed &= links.len() == firsts.len() && counts(h) == counts(h0);
            for (k, place) in places.iter_mut().enumerate() {
                *place &= links
                    .get(k)
                    .is_some_and(|&l| shape(l) == shapes[k] && alike(firsts[k], l));
            }
        }
        for &h in rest {
            local(h, &mut links, &mut placed);
            for (k, &l) in links.iter().enumerate().take(firsts.len()) {
                if places[k] {
                    first[l.index()] = firsts[k];
                }
            }
        }
        let mut classes = LinkClasses::new(first);
        if placed && places.iter().all(|&p| p) {
            classes.places = Some(ServerPlaces {
                at,
                servers: hosts.len() as u32,
                gpus: topo.host(h0).gpus.len() as u32,
            });
        }
        classes
    }

    /// The servers' places, where every server is wired as the first.
    pub fn places(&self) -> Option<&ServerPlaces> {
        self.places.as_ref()
    }

    /// How many links lie in a class with others.
    pub fn classed(&self) -> usize {
        self.size
            .iter()
            .filter(|&&s| s > 1)
            .map(|&s| s as usize)
            .sum()
    }

    /// Per link, the first link of its class.
    pub fn firsts(&self) -> &[LinkId] {
        &self.first
    }

    /// Checks a bundle's merged links (each once) against the classes and keeps only each
    /// class's first link, with the weight every link of the class carries.
    pub fn fold(&mut self, links: &mut Vec<(LinkId, f64)>) -> Result<(), ClassBroken> {
        let mut broken = None;
        for &(l, w) in links.iter() {
            self.meet(l, w, 1, &mut broken);
        }
        self.close(broken)?;
        links.retain(|&(l, _)| self.first[l.index()] == l);
        Ok(())
    }

    /// [`Self::fold`] of the merge of a bundle's routes (links with weights, in any order),
    /// appended to `out` in link order, in one pass and with no table of sums, where no link is
    /// on the routes twice: `Ok(true)`. `Ok(false)`, with nothing appended, where one is (its
    /// sum would decide): the caller merges and folds. A pipelined ring's edges cross distinct
    /// links, 43,000 a channel on 16,384 ranks, of which a class's first links and the links
    /// between switches are kept.
    pub fn fold_routes(
        &mut self,
        routes: &[(LinkId, f64)],
        out: &mut Vec<(LinkId, f64)>,
    ) -> Result<bool, ClassBroken> {
        self.fold_images(routes, 0, 1, out)
    }

    /// [`Self::fold_routes`] where each of the first `images` entries of `routes` stands for
    /// itself and its images in the other servers, `times` links of its class in all: the
    /// routes of the first server's strands that stay inside it, for every server's
    /// (`network/images.rs`). A class met so must be whole by them, and an entry's link
    /// alone in its class is refused.
    pub fn fold_images(
        &mut self,
        routes: &[(LinkId, f64)],
        images: usize,
        times: u32,
        out: &mut Vec<(LinkId, f64)>,
    ) -> Result<bool, ClassBroken> {
        let start = out.len();
        let (mut broken, mut read, mut twice) = (None, 0, false);
        for &(l, w) in routes {
            let i = l.index();
            let (word, bit) = (i / 64, 1u64 << (i % 64));
            if self.met[word] & bit != 0 {
                twice = true;
                break;
            }
            self.met[word] |= bit;
            let times = if read < images { times } else { 1 };
            read += 1;
            // A whole class at one weight is kept at its first link, at the weight of the
            // first of its links met.
            if let Some(kept) = self.meet(l, w, times, &mut broken) {
                out.push((kept, w));
            }
        }
        for &(l, _) in &routes[..read] {
            self.met[l.index() / 64] = 0;
        }
        let checked = self.close(broken);
        if twice || checked.is_err() {
            out.truncate(start);
        }
        if twice {
            return Ok(false);
        }
        checked?;
        out[start..].sort_unstable_by_key(|&(l, _)| l);
        Ok(true)
    }

    /// Link `l` of the bundle being checked, at weight `w`, standing for `times` links of its
    /// class: `l` itself if it is alone, its class's first link if it is the first of its
    /// class met, `None` for another; a weight unlike the class's marks the class `broken`,
    /// as does a link alone met for more than itself.
    fn meet(
        &mut self,
        l: LinkId,
        w: f64,
        times: u32,
        broken: &mut Option<usize>,
    ) -> Option<LinkId> {
        let f = self.first[l.index()].index();
        if self.size[f] == 1 {
            if times > 1 {
                broken.get_or_insert(f);
            }
            return Some(l);
        }
        let met = self.seen[f];
        if met == 0 {
            self.touched.push(f as u32);
            self.weight[f] = w;
        } else if self.weight[f] != w {
            broken.get_or_insert(f);
        }
        self.seen[f] = met + times;
        (met == 0).then_some(LinkId(f as u32))
    }

    /// Ends the check of a bundle, the scratch reset: refused if a class was met in part or
    /// `broken`.
    fn close(&mut self, mut broken: Option<usize>) -> Result<(), ClassBroken> {
        for &f in &self.touched {
            let f = f as usize;
            if self.seen[f] != self.size[f] {
                broken.get_or_insert(f);
            }
            self.seen[f] = 0;
        }
        self.touched.clear();
        broken.map_or(Ok(()), |f| {
            Err(ClassBroken {
                first: LinkId(f as u32),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes() -> LinkClasses {
        // Links 0, 2 and 4 are one class; 1 and 3 another; 5 is alone.
        LinkClasses::new([0, 1, 0, 1, 0, 5].map(LinkId).to_vec())
    }

    #[test]
    fn a_class_crossed_in_full_keeps_its_first_link() {
        let mut c = classes();
        assert_eq!(c.classed(), 5);
        let mut links = vec![(0, 0.5), (2, 0.5), (4, 0.5), (5, 2.0)]
            .into_iter()
            .map(|(l, w)| (LinkId(l), w))
            .collect::<Vec<_>>();
        c.fold(&mut links).unwrap();
        assert_eq!(links, vec![(LinkId(0), 0.5), (LinkId(5), 2.0)]);
        // The scratch is clean for the next bundle.
        let mut again = vec![(LinkId(1), 1.0), (LinkId(3), 1.0)];
        c.fold(&mut again).unwrap();
        assert_eq!(again, vec![(LinkId(1), 1.0)]);
    }

    #[test]
    fn a_class_crossed_in_part_or_unevenly_is_refused() {
        let mut c = classes();
        let mut part = vec![(LinkId(0), 1.0), (LinkId(4), 1.0)];
        assert_eq!(c.fold(&mut part), Err(ClassBroken { first: LinkId(0) }));
        let mut uneven = vec![(LinkId(1), 1.0), (LinkId(3), 0.5)];
        assert_eq!(c.fold(&mut uneven), Err(ClassBroken { first: LinkId(1) }));
        // A refusal leaves nothing behind: a bundle crossing class 0 in full still folds.
        let mut full = vec![(LinkId(0), 1.0), (LinkId(2), 1.0), (LinkId(4), 1.0)];
        c.fold(&mut full).unwrap();
        assert_eq!(full, vec![(LinkId(0), 1.0)]);
    }

    /// An entry standing for its class's every link makes the class whole by itself; one
    /// more of the class, or a link alone standing for several, is refused.
    #[test]
    fn an_image_stands_for_its_whole_class() {
        let mut c = classes();
        let routes = [(0, 0.5), (5, 2.0)].map(|(l, w)| (LinkId(l), w));
        let mut out = Vec::new();
        assert_eq!(c.fold_images(&routes, 1, 3, &mut out), Ok(true));
        assert_eq!(out, routes.to_vec());
        let more = [(0, 0.5), (2, 0.5)].map(|(l, w)| (LinkId(l), w));
        let mut none = Vec::new();
        let refused = c.fold_images(&more, 1, 3, &mut none);
        assert_eq!(refused, Err(ClassBroken { first: LinkId(0) }));
        let alone = [(5, 2.0)].map(|(l, w)| (LinkId(l), w));
        let refused = c.fold_images(&alone, 1, 3, &mut none);
        assert_eq!(refused, Err(ClassBroken { first: LinkId(5) }));
        assert!(none.is_empty());
        // Standing for itself alone, it is an ordinary route.
        assert_eq!(c.fold_images(&alone, 1, 1, &mut none), Ok(true));
    }

    /// Routes read in one pass fold as merging and folding them does: in link order, each
    /// class at its first link; a link met twice leaves the merge to the caller, and a class
    /// crossed in part is refused, with the scratch clean after each.
    #[test]
    fn routes_fold_in_one_pass_as_merged() {
        let mut c = classes();
        let routes = [(4, 0.5), (5, 2.0), (0, 0.5), (2, 0.5)].map(|(l, w)| (LinkId(l), w));
        let mut merged = routes.to_vec();
        merged.sort_unstable_by_key(|&(l, _)| l);
        c.fold(&mut merged).unwrap();
        let mut out = Vec::new();
        assert_eq!(c.fold_routes(&routes, &mut out), Ok(true));
        assert_eq!(out, merged);
        let twice = [(1, 1.0), (3, 0.5), (3, 0.5)].map(|(l, w)| (LinkId(l), w));
        let mut none = Vec::new();
        assert_eq!(c.fold_routes(&twice, &mut none), Ok(false));
        assert!(none.is_empty());
        // Merged, link 3 carries 1.0 as link 1 does: the class is whole.
        let mut summed = vec![(LinkId(1), 1.0), (LinkId(3), 1.0)];
        c.fold(&mut summed).unwrap();
        assert_eq!(summed, vec![(LinkId(1), 1.0)]);
        let part = [(0, 1.0), (4, 1.0)].map(|(l, w)| (LinkId(l), w));
        let refused = c.fold_routes(&part, &mut none);
        assert_eq!(refused, Err(ClassBroken { first: LinkId(0) }));
        assert!(none.is_empty());
        let mut again = Vec::new();
        assert_eq!(c.fold_routes(&routes, &mut again), Ok(true));
        assert_eq!(again, merged);
    }
}
