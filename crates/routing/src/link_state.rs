//! The link-state overlay: which directed links are up, down or derated. Changing it never
//! rebuilds the topology; routing and the engines read capacity through it.

use std::collections::BTreeMap;

use fabricsim_topology::{Bandwidth, LinkId, Topology};

/// The condition of one directed link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkCondition {
    Up,
    Down,
    /// Up, at this capacity instead of the cabled one (a flapping optic, a drained port group).
    Derated(Bandwidth),
}

/// Per-directed-link condition, plus a version that changes with every change so that caches
/// of routes can tell they are stale.
#[derive(Clone, Debug)]
pub struct LinkState {
    /// The links not simply up, by id: a fabric has hundreds of thousands of links and a run
    /// changes few of them, where a table of every link's condition was 16 bytes a link to
    /// copy and first-touch per network.
    conditions: BTreeMap<LinkId, LinkCondition>,
    /// Per link: not `Down`, packed for the routing hot loop.
    up: Vec<bool>,
    /// How many links are down (routing skips its per-link checks when none is).
    down: usize,
    version: u64,
}

impl LinkState {
    /// Every link up at its cabled capacity.
    pub fn new(topo: &Topology) -> Self {
        LinkState {
            conditions: BTreeMap::new(),
            up: vec![true; topo.link_count()],
            down: 0,
            version: 0,
        }
    }

    pub fn condition(&self, link: LinkId) -> LinkCondition {
        self.conditions
            .get(&link)
            .copied()
            .unwrap_or(LinkCondition::Up)
    }

    #[inline]
    pub fn is_up(&self, link: LinkId) -> bool {
        self.up[link.index()]
    }

    /// Whether no link is down.
    #[inline]
    pub fn all_up(&self) -> bool {
        self.down == 0
    }

    /// Usable capacity now: 0 when down.
    pub fn capacity(&self, topo: &Topology, link: LinkId) -> Bandwidth {
        match self.condition(link) {
            LinkCondition::Up => topo.link(link).capacity,
            LinkCondition::Down => Bandwidth(0),
            LinkCondition::Derated(c) => c,
        }
    }

    /// Sets one direction of a link.
    pub fn set(&mut self, link: LinkId, condition: LinkCondition) {
        if self.condition(link) != condition {
            let up = condition != LinkCondition::Down;
            match (self.up[link.index()], up) {
                (true, false) => self.down += 1,
                (false, true) => self.down -= 1,
                _ => {}
            }
            if condition == LinkCondition::Up {
                self.conditions.remove(&link);
            } else {
                self.conditions.insert(link, condition);
            }
            self.up[link.index()] = up;
            self.version += 1;
        }
    }

    /// Sets both directions of the cable `link` belongs to (a cable fails as a whole).
    pub fn set_cable(&mut self, link: LinkId, condition: LinkCondition) {
        self.set(link, condition);
        self.set(link.reverse(), condition);
    }

    /// Bumped on every change.
    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn down_links(&self) -> impl Iterator<Item = LinkId> + '_ {
        self.conditions
            .iter()
            .filter(|(_, c)| **c == LinkCondition::Down)
            .map(|(&l, _)| l)
    }
}

/// Why a `--down` name does not name something that can go down.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DownError {
    #[error("`{0}` names no node; expected a switch or NIC name, or a cable as `A--B`")]
    Unknown(String),
    #[error("`{0}` is a GPU; take down a NIC, a switch or a cable")]
    Gpu(String),
    #[error("no cable joins `{0}` and `{1}`")]
    NoCable(String, String),
}

/// The cables (one directed link of each) that `name` takes down: every cable of a switch or
/// NIC (a drain or a failure), or one cable `A--B` (the first, if several join A and B).
pub fn cables_named(topo: &Topology, name: &str) -> Result<Vec<LinkId>, DownError> {
    let node = |n: &str| {
        topo.node_by_name(n)
            .ok_or_else(|| DownError::Unknown(n.to_string()))
    };
    if let Some((a, b)) = name.split_once("--") {
        let (a, b) = (node(a)?, node(b)?);
        return topo
            .out_links(a)
            .iter()
            .copied()
            .find(|&l| topo.link(l).dst == b)
            .map(|l| vec![l])
            .ok_or_else(|| DownError::NoCable(a_name(topo, a), a_name(topo, b)));
    }
    let n = node(name)?;
    if topo.kind(n) == fabricsim_topology::NodeKind::Gpu {
        return Err(DownError::Gpu(name.to_string()));
    }
    Ok(topo.out_links(n).to_vec())
}

/// The condition a link event gives `links`: `down`, `up`, or `derate` to `gbps` Gbit/s, which
/// must be above zero and at most each link's cabled capacity.
pub fn event_condition(
    topo: &Topology,
    links: &[LinkId],
    state: &str,
    gbps: Option<f64>,
) -> Result<LinkCondition, String> {
    match (state, gbps) {
        ("down", None) => Ok(LinkCondition::Down),
        ("up", None) => Ok(LinkCondition::Up),
        ("derate", Some(g)) if g.is_finite() && g > 0.0 => {
            let rate = Bandwidth((g * 1e9 / 8.0) as u64);
            if let Some(&l) = links.iter().find(|&&l| rate > topo.link(l).capacity) {
                let cabled = topo.link(l).capacity.as_gbps();
                return Err(format!("gbps: {g} is above the {cabled} Gbit/s cabled"));
            }
            Ok(LinkCondition::Derated(rate))
        }
        ("derate", _) => Err("gbps: `derate` needs a capacity in Gbit/s above zero".into()),
        ("down" | "up", Some(_)) => Err("gbps: only a `derate` event has a capacity".into()),
        (s, _) => Err(format!("state: `{s}`, expected down, up or derate")),
    }
}

fn a_name(topo: &Topology, n: fabricsim_topology::NodeId) -> String {
    topo.node_name(n).to_string()
}
