//! The figures `fabricsim topo describe` reports, computed from any [`Topology`].
//!
//! Capacities are one direction of each cable. Per tier: *down* is the capacity arriving from
//! below (from NICs for tier 1, from lower tiers otherwise), *up* the capacity leaving toward
//! higher tiers; a tier's oversubscription is down / up.
//!
//! **Bisection bandwidth** is the tier-cut formula: half the smallest of the injection capacity
//! (NIC → switch) and each tier's up capacity. For the Clos presets this is the exact minimum
//! over balanced GPU bipartitions — split the top-level groups (zones, pods, segments) in
//! half and the cut is half of that tier's uplinks — and the test suite checks it against an
//! exhaustive max-flow on small instances. For a file it is exact when the file describes a
//! uniform multi-tier Clos with an even number of top-level groups, and an estimate otherwise.
//!
//! **Diameter** is the largest number of network switches a packet crosses between two GPUs
//! under the forwarding rule of [`crate::reach`] (5 for a fat-tree; 0 for a single host), and
//! **max_equal_cost_paths** counts the shortest paths (as sequences of links, so parallel
//! cables count apart, as ECMP's next-hop ports do) between the first pair of GPUs found at
//! that distance, which is named.

use std::fmt::Write as _;

use serde::ser::SerializeMap;
use serde::Serialize;

use crate::model::{NodeKind, Topology};
use crate::reach::{count_shortest_paths, farthest_classes, network_pair, GpuClasses, SwitchGraph};
use crate::units::Bandwidth;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FabricFigures {
    pub name: String,
    pub gpus: usize,
    pub hosts: usize,
    pub nics: usize,
    pub switches: usize,
    /// Tier name → switch count, lowest tier first.
    pub switches_by_tier: TierCounts,
    /// Distinct switch planes.
    pub planes: usize,
    /// Directed links (two per cable), host-internal PCIe and NVLink links included.
    pub links: usize,
    pub tiers: Vec<TierFigures>,
    pub oversubscription: Vec<Oversubscription>,
    /// Total NIC → switch capacity, Gbit/s.
    pub injection_bandwidth_gbps: f64,
    /// Gbit/s; see the module docs for the formula.
    pub bisection_bandwidth_gbps: f64,
    #[serde(skip)]
    pub injection_bandwidth: Bandwidth,
    #[serde(skip)]
    pub bisection_bandwidth: Bandwidth,
    pub diameter_hops: u32,
    /// The two GPUs `max_equal_cost_paths` was counted between (absent with a single GPU).
    pub farthest_pair: Option<[String; 2]>,
    pub max_equal_cost_paths: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TierFigures {
    pub name: String,
    /// 1 = the tier GPUs' NICs attach to.
    pub level: u8,
    pub switches: usize,
    pub down_capacity_gbps: f64,
    pub up_capacity_gbps: f64,
    /// The same capacities, exact, for printing.
    #[serde(skip)]
    pub down_capacity: Bandwidth,
    #[serde(skip)]
    pub up_capacity: Bandwidth,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Oversubscription {
    pub lower: String,
    pub upper: String,
    /// Down capacity / up capacity of the `lower` tier: 1 is non-blocking, 7 is "1:7".
    pub ratio: f64,
}

/// An ordered map of tier name to count (serialised as a JSON object in tier order).
#[derive(Clone, Debug, PartialEq)]
pub struct TierCounts(pub Vec<(String, usize)>);

impl Serialize for TierCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

fn gbps(bytes_per_sec: u128) -> f64 {
    bytes_per_sec as f64 * 8.0 / 1e9
}

fn bandwidth(bytes_per_sec: u128) -> Bandwidth {
    Bandwidth(u64::try_from(bytes_per_sec).unwrap_or(u64::MAX))
}

impl FabricFigures {
    pub fn of(topo: &Topology) -> FabricFigures {
        let t = topo.tiers().len();
        let mut switches = vec![0usize; t];
        let mut planes: Vec<u8> = Vec::new();
        for (_, role) in topo.switches() {
            switches[usize::from(role.tier) - 1] += 1;
            if !planes.contains(&role.plane) {
                planes.push(role.plane);
            }
        }
        let (mut down, mut up) = (vec![0u128; t], vec![0u128; t]);
        let mut injection = 0u128;
        for link in topo.links() {
            let cap = u128::from(link.capacity.0);
            match (topo.kind(link.src), topo.kind(link.dst)) {
                (NodeKind::Nic, NodeKind::Switch(d)) => {
                    injection += cap;
                    down[usize::from(d.tier) - 1] += cap;
                }
                (NodeKind::Switch(s), NodeKind::Switch(d)) if d.tier > s.tier => {
                    up[usize::from(s.tier) - 1] += cap;
                    down[usize::from(d.tier) - 1] += cap;
                }
                _ => {}
            }
        }
        let tiers: Vec<TierFigures> = (0..t)
            .map(|i| TierFigures {
                name: topo.tiers()[i].clone(),
                level: i as u8 + 1,
                switches: switches[i],
                down_capacity_gbps: gbps(down[i]),
                up_capacity_gbps: gbps(up[i]),
                down_capacity: bandwidth(down[i]),
                up_capacity: bandwidth(up[i]),
            })
            .collect();
        let oversubscription = (0..t.saturating_sub(1))
            .filter(|&i| up[i] > 0)
            .map(|i| Oversubscription {
                lower: topo.tiers()[i].clone(),
                upper: topo.tiers()[i + 1].clone(),
                ratio: down[i] as f64 / up[i] as f64,
            })
            .collect();
        let narrowest = std::iter::once(injection)
            .chain(up.iter().copied().filter(|&u| u > 0))
            .min()
            .unwrap_or(0);

        let sw = SwitchGraph::new(topo);
        let classes = GpuClasses::new(topo, &sw);
        let gpus = topo.gpus();
        let (diameter, pair) = match farthest_classes(&sw, &classes) {
            Some((d, a, b)) => (d, Some(network_pair(topo, &classes, a, b))),
            None if gpus.len() >= 2 => (0, Some((gpus[0], gpus[gpus.len() - 1]))),
            None => (0, None),
        };
        let paths = pair
            .and_then(|(a, b)| count_shortest_paths(topo, a, b))
            .map_or(0, |(_, n)| n);

        FabricFigures {
            name: topo.name().to_string(),
            gpus: gpus.len(),
            hosts: topo.hosts().len(),
            nics: topo
                .nodes()
                .filter(|&n| topo.kind(n) == NodeKind::Nic)
                .count(),
            switches: switches.iter().sum(),
            switches_by_tier: TierCounts(
                topo.tiers()
                    .iter()
                    .cloned()
                    .zip(switches.iter().copied())
                    .collect(),
            ),
            planes: planes.len(),
            links: topo.link_count(),
            tiers,
            oversubscription,
            injection_bandwidth_gbps: gbps(injection),
            bisection_bandwidth_gbps: gbps(narrowest / 2),
            injection_bandwidth: bandwidth(injection),
            bisection_bandwidth: bandwidth(narrowest / 2),
            diameter_hops: diameter,
            farthest_pair: pair
                .map(|(a, b)| [topo.node_name(a).to_string(), topo.node_name(b).to_string()]),
            max_equal_cost_paths: paths,
        }
    }

    /// The human-readable report.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let per_host = if self.hosts > 0 && self.gpus.is_multiple_of(self.hosts) {
            format!(" ({} per host)", self.gpus / self.hosts)
        } else {
            String::new()
        };
        let by_tier: Vec<String> = self
            .switches_by_tier
            .0
            .iter()
            .map(|(t, n)| format!("{} {t}", group(*n as u64)))
            .collect();
        let _ = writeln!(out, "fabric {}", self.name);
        let _ = writeln!(
            out,
            "  GPUs                {} in {} hosts{per_host}",
            group(self.gpus as u64),
            group(self.hosts as u64)
        );
        let _ = writeln!(
            out,
            "  switches            {} ({}), {} plane{}",
            group(self.switches as u64),
            by_tier.join(", "),
            self.planes,
            if self.planes == 1 { "" } else { "s" }
        );
        let _ = writeln!(
            out,
            "  links               {} directed ({} cables)",
            group(self.links as u64),
            group(self.links as u64 / 2)
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "  {:<8} {:>9} {:>15} {:>15} {:>9}",
            "tier", "switches", "down capacity", "up capacity", "down:up"
        );
        for tier in &self.tiers {
            let ratio = self
                .oversubscription
                .iter()
                .find(|o| o.lower == tier.name)
                .map_or("-".to_string(), |o| format!("{:.2}", o.ratio));
            let up = if tier.up_capacity.0 > 0 {
                tier.up_capacity.to_string()
            } else {
                "-".into()
            };
            let _ = writeln!(
                out,
                "  {:<8} {:>9} {:>15} {:>15} {:>9}",
                tier.name,
                group(tier.switches as u64),
                tier.down_capacity.to_string(),
                up,
                ratio
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "  injection bandwidth {} (NIC to switch, all GPUs)",
            self.injection_bandwidth
        );
        let _ = writeln!(out, "  bisection bandwidth {}", self.bisection_bandwidth);
        match &self.farthest_pair {
            Some([a, b]) => {
                let _ = writeln!(
                    out,
                    "  diameter            {} switch hops ({a} to {b})",
                    self.diameter_hops
                );
                let _ = writeln!(
                    out,
                    "  equal-cost paths    {} between them",
                    group(self.max_equal_cost_paths)
                );
            }
            None => {
                let _ = writeln!(out, "  diameter            0 switch hops (one GPU)");
            }
        }
        out
    }
}

/// `24576` → `24,576`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
