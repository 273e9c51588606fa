//! Link utilization over time: at every multiple of an interval, each link group's mean and
//! highest utilization (a gauge, as a switch's counters read at that instant). Rates hold
//! between the engine's events, so a sample due before the next event reads the rates now.

use fabricsim_netsim::{FlowEngine, Network};
use fabricsim_routing::balance::link_group;
use fabricsim_topology::{LinkId, Topology};

use crate::stats::TierSeries;

pub(super) struct Sampler {
    every: u64,
    next: u64,
    /// Per link, its group's index (`u16::MAX` inside a host).
    group: Vec<u16>,
    links: Vec<u32>,
    utilization: Vec<f64>,
    /// Record every link's utilization too, not only the groups'.
    per_link: bool,
    /// Link samples kept so far.
    kept: usize,
    pub(super) series: TierSeries,
}

impl Sampler {
    /// Samples every `every` ns from 0 (`every` > 0), each link too with `per_link`.
    pub(super) fn new(topo: &Topology, every: u64, per_link: bool) -> Sampler {
        let mut names: Vec<String> = Vec::new();
        let group = topo
            .link_ids()
            .map(|l| match link_group(topo, l) {
                None => u16::MAX,
                Some(g) => match names.iter().position(|n| *n == g) {
                    Some(i) => i as u16,
                    None => {
                        names.push(g);
                        names.len() as u16 - 1
                    }
                },
            })
            .collect::<Vec<_>>();
        let mut links = vec![0u32; names.len()];
        for &g in group.iter().filter(|&&g| g != u16::MAX) {
            links[g as usize] += 1;
        }
        Sampler {
            every,
            next: 0,
            group,
            links,
            utilization: Vec::new(),
            per_link,
            kept: 0,
            series: TierSeries {
                groups: names,
                ..TierSeries::default()
            },
        }
    }

    /// Records the samples due before `t`, the next event's time, from the rates now.
    pub(super) fn before(&mut self, net: &mut Network<'_, FlowEngine>, t: u64) {
        if self.next >= t {
            return;
        }
        net.utilization_now(&mut self.utilization);
        let n = self.series.groups.len();
        let mut stats = vec![(0.0f32, 0.0f32); n];
        for (l, &g) in self.group.iter().enumerate() {
            if g != u16::MAX {
                let u = self.utilization[l] as f32;
                let s = &mut stats[g as usize];
                s.0 += u;
                s.1 = s.1.max(u);
            }
        }
        for (s, &count) in stats.iter_mut().zip(&self.links) {
            s.0 /= count.max(1) as f32;
        }
        // One sample stands for every instant due before `t`: the rates do not change until
        // then (a counter holds its value until the next sample).
        if self.series.samples.last().map(|x| &x.1) != Some(&stats) {
            self.series.samples.push((self.next, stats));
        }
        if self.per_link && !self.series.truncated {
            let loaded: Vec<(LinkId, f32)> = self
                .utilization
                .iter()
                .enumerate()
                .filter(|&(l, &u)| u > 0.0 && self.group[l] != u16::MAX)
                .map(|(l, &u)| (LinkId(l as u32), u as f32))
                .collect();
            if self.series.links.last().map(|x| &x.1) != Some(&loaded) {
                self.kept += loaded.len();
                if self.kept > TierSeries::MAX_LINK_SAMPLES {
                    self.series.truncated = true;
                } else {
                    self.series.links.push((self.next, loaded));
                }
            }
        }
        self.next += (t - self.next).div_ceil(self.every) * self.every;
    }
}
