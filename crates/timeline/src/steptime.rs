//! Iteration times from fabricsim's own simulation: each running job's iteration is simulated
//! on its placement together with the jobs it shares links with, and the result is kept for
//! every placement of the same shape.
//!
//! **Who shares links.** Jobs interact when both leave a rack they share (its ToR's uplinks)
//! or both leave a zone they share (its uplinks to the aggregation tier). A job inside one
//! rack uses only its own hosts' links, and one inside a host only NVLink. Jobs on disjoint racks of a zone
//! do not, because a zone's rack-to-spine links belong to their racks, and neither do jobs
//! that leave disjoint zones, because the aggregation tier's links belong to the zones they
//! join. (That is the meta-cluster's three-tier Clos and any leaf-spine; on other fabrics it
//! is an approximation.) Interacting jobs form groups (connected components), and each group
//! is simulated as one scenario, one iteration of each job at once.
//!
//! **Shapes.** A group's key lists its jobs' workloads and GPUs with zones, racks and hosts
//! renumbered in order of first appearance, so the same jobs on other racks of the same form
//! reuse the result. Where every rack is non-blocking (its ToR's uplinks carry what its hosts
//! send, as in Meta's AI Zones), racks drop out of the key: a job's shape is then how many of
//! its hosts sit in each zone, in rank order, since within a non-blocking zone their racks do
//! not change its bandwidth (only ECMP's collisions and a microsecond of path latency). This
//! assumes the racks of a zone, and the zones, are alike (true of every preset; an irregular
//! fabric file gets the result of the first placement of each shape), and ECMP's hash luck is
//! that of the first placement simulated.

use fabricsim_cluster::placement::Placement;
use fabricsim_cluster::scenario::Scenario;
use fabricsim_cluster::simulate::{build_workload, simulate, SimError};
use fabricsim_cluster::RunOptions;
use std::collections::BTreeMap;

use fabricsim_topology::Topology;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::hierarchy::{Allocation, Hierarchy};

/// A job's GPUs with zones, racks and hosts renumbered: per host (zone, rack, host, GPU mask),
/// or, where racks are non-blocking, runs of hosts (zone, hosts in the run, GPU mask).
type Shape = Vec<(u32, u32, u32, u64)>;
type Key = Vec<(u32, Shape)>;

/// Renumbers the zones, racks and hosts of `allocs`, in order, by first appearance. With
/// `coarse`, racks and hosts are left out: consecutive hosts of one zone with the same GPUs
/// become one run.
fn shapes(h: &Hierarchy, allocs: &[&Allocation], coarse: bool) -> Vec<Shape> {
    let (mut zones, mut racks, mut hosts) = (
        FxHashMap::default(),
        FxHashMap::default(),
        FxHashMap::default(),
    );
    let number = |map: &mut FxHashMap<u32, u32>, x: u32| {
        let n = map.len() as u32;
        *map.entry(x).or_insert(n)
    };
    allocs
        .iter()
        .map(|a| {
            let mut shape: Shape = Vec::new();
            for &(x, mask) in a.iter() {
                let rack = h.rack[x as usize];
                let zone = number(&mut zones, h.zone[rack as usize]);
                if coarse {
                    match shape.last_mut() {
                        Some(run) if run.0 == zone && run.3 == mask => run.1 += 1,
                        _ => shape.push((zone, 1, 0, mask)),
                    }
                } else {
                    shape.push((zone, number(&mut racks, rack), number(&mut hosts, x), mask));
                }
            }
            shape
        })
        .collect()
}

/// What a job's iteration took in a group's simulation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Step {
    pub seconds: f64,
    /// Shares of the iteration: computing, and communication not hidden behind it, by scope
    /// (`tp`, `pp`, `dp`, …), as `fabricsim run` reports them.
    pub compute: f64,
    pub exposed: BTreeMap<&'static str, f64>,
}

pub struct StepTimes<'a> {
    topo: &'a Topology,
    base: Scenario,
    h: &'a Hierarchy,
    /// Per template: its rank count.
    pub ranks: Vec<u32>,
    cache: FxHashMap<Key, Vec<Step>>,
    /// Groups `prepare` simulated and no one has read yet.
    fresh: FxHashSet<Key>,
    /// Groups simulated, and groups whose result was reused.
    pub simulated: u64,
    pub reused: u64,
}

impl<'a> StepTimes<'a> {
    pub fn new(
        topo: &'a Topology,
        scenario: &Scenario,
        h: &'a Hierarchy,
    ) -> Result<StepTimes<'a>, SimError> {
        let mut ranks = Vec::new();
        for j in &scenario.jobs {
            ranks.push(build_workload(&j.name, &j.workload)?.0.rank_count() as u32);
        }
        let mut base = scenario.clone();
        (base.json, base.trace) = (None, None);
        Ok(StepTimes {
            topo,
            base,
            h,
            ranks,
            cache: FxHashMap::default(),
            fresh: FxHashSet::default(),
            simulated: 0,
            reused: 0,
        })
    }

    /// The key of a group of `jobs` (template, GPUs), and the order its jobs take in it: by
    /// workload and own shape, then their joint shape.
    fn key(&self, jobs: &[(u32, &Allocation)]) -> (Key, Vec<usize>) {
        let coarse = self.h.racks_non_blocking;
        let own: Vec<Shape> = jobs
            .iter()
            .map(|(_, a)| shapes(self.h, &[a], coarse).remove(0))
            .collect();
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_by(|&a, &b| (jobs[a].0, &own[a]).cmp(&(jobs[b].0, &own[b])));
        let allocs: Vec<&Allocation> = order.iter().map(|&i| jobs[i].1).collect();
        let key = order
            .iter()
            .map(|&i| jobs[i].0)
            .zip(shapes(self.h, &allocs, coarse))
            .collect();
        (key, order)
    }

    /// Seconds per iteration of each of `jobs`, simulated together (or as kept).
    fn group(&mut self, jobs: &[(u32, &Allocation)]) -> Result<Vec<Step>, SimError> {
        let (key, order) = self.key(jobs);
        let times = match self.cache.get(&key) {
            Some(t) => {
                // A group simulated by `prepare` is not reused the first time it is read.
                if !self.fresh.remove(&key) {
                    self.reused += 1;
                }
                t.clone()
            }
            None => {
                let t = self.simulate(&order.iter().map(|&i| jobs[i]).collect::<Vec<_>>())?;
                self.simulated += 1;
                self.cache.insert(key, t.clone());
                t
            }
        };
        let mut out = vec![Step::default(); jobs.len()];
        for (k, &i) in order.iter().enumerate() {
            out[i] = times[k].clone();
        }
        Ok(out)
    }

    /// Simulates at once, on every core, each group not yet known of: `alone` (each job by
    /// itself) and the groups of `running` that share links. The results are the same as one
    /// by one: each group is its own simulation.
    pub fn prepare(
        &mut self,
        alone: &[(u32, &Allocation)],
        running: &[(u32, &Allocation)],
    ) -> Result<(), SimError> {
        let mut wanted: Vec<Vec<(u32, &Allocation)>> = alone.iter().map(|&j| vec![j]).collect();
        for members in self.groups(running) {
            wanted.push(members.iter().map(|&i| running[i]).collect());
        }
        let mut misses: Vec<(Key, Vec<(u32, &Allocation)>)> = Vec::new();
        for jobs in wanted {
            let (key, order) = self.key(&jobs);
            if !self.cache.contains_key(&key) && !misses.iter().any(|m| m.0 == key) {
                misses.push((key, order.iter().map(|&i| jobs[i]).collect()));
            }
        }
        let results: Vec<Result<Vec<Step>, SimError>> = misses
            .par_iter()
            .map(|(_, jobs)| self.simulate(jobs))
            .collect();
        for ((key, _), r) in misses.into_iter().zip(results) {
            self.cache.insert(key.clone(), r?);
            self.simulated += 1;
            self.fresh.insert(key);
        }
        Ok(())
    }

    fn simulate(&self, jobs: &[(u32, &Allocation)]) -> Result<Vec<Step>, SimError> {
        let mut s = self.base.clone();
        s.jobs = jobs
            .iter()
            .enumerate()
            .map(|(k, &(t, alloc))| {
                let mut entry = self.base.jobs[t as usize].clone();
                entry.name = format!("{}@{k}", entry.name);
                // The run seeds the k-th job's connection hashing with k (so that jobs alike
                // hash apart): undo it, so a job hashes as it does alone, and its slowdown in a
                // group is the contention's, not another draw of ECMP's.
                entry.comm.seed ^= (k as u64) << 32;
                let gpus = alloc
                    .iter()
                    .flat_map(|&(x, mask)| {
                        self.h.gpus[x as usize]
                            .iter()
                            .enumerate()
                            .filter(move |(g, _)| mask >> g & 1 == 1)
                            .map(|(_, &g)| self.topo.node_name(g).to_string())
                    })
                    .collect();
                entry.placement = Placement::Hosts(gpus);
                entry
            })
            .collect();
        let run = simulate(&s, self.topo, RunOptions::default(), |_, _, _| {})?;
        Ok(run
            .reports
            .iter()
            .map(|r| Step {
                seconds: r.iteration_ms / 1e3,
                compute: r.compute_fraction,
                exposed: r.exposed_comm_by_scope.clone(),
            })
            .collect())
    }

    /// Seconds per iteration of `template` alone on `alloc`.
    pub fn alone(&mut self, template: u32, alloc: &Allocation) -> Result<Step, SimError> {
        Ok(self.group(&[(template, alloc)])?.remove(0))
    }

    /// Seconds per iteration of each running job (template, GPUs), with the jobs it shares
    /// links with.
    pub fn running(&mut self, jobs: &[(u32, &Allocation)]) -> Result<Vec<Step>, SimError> {
        let mut out = vec![Step::default(); jobs.len()];
        for members in self.groups(jobs) {
            let times = self.group(&members.iter().map(|&i| jobs[i]).collect::<Vec<_>>())?;
            for (k, &i) in members.iter().enumerate() {
                out[i] = times[k].clone();
            }
        }
        Ok(out)
    }

    /// The groups of `jobs` (template, GPUs) that share links, as indices into `jobs`.
    fn groups(&self, jobs: &[(u32, &Allocation)]) -> Vec<Vec<usize>> {
        // Union-find over jobs sharing a rack, or both leaving their zones.
        let mut parent: Vec<usize> = (0..jobs.len()).collect();
        fn root(p: &mut [usize], mut i: usize) -> usize {
            while p[i] != i {
                p[i] = p[p[i]];
                i = p[i];
            }
            i
        }
        let mut by_rack: FxHashMap<u32, usize> = FxHashMap::default();
        // Per zone, a job that leaves it.
        let mut leaving: FxHashMap<u32, usize> = FxHashMap::default();
        for (i, (_, a)) in jobs.iter().enumerate() {
            let (mut zones, mut racks): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
            for &(x, _) in a.iter() {
                let rack = self.h.rack[x as usize];
                let z = self.h.zone[rack as usize];
                if !zones.contains(&z) {
                    zones.push(z);
                }
                if !racks.contains(&rack) {
                    racks.push(rack);
                }
            }
            // Only a job that leaves its rack loads the rack's uplinks.
            if racks.len() > 1 {
                for rack in racks {
                    let other = *by_rack.entry(rack).or_insert(i);
                    let (ra, rb) = (root(&mut parent, i), root(&mut parent, other));
                    parent[ra] = rb;
                }
            }
            if zones.len() > 1 {
                for z in zones {
                    let other = *leaving.entry(z).or_insert(i);
                    let (ra, rb) = (root(&mut parent, i), root(&mut parent, other));
                    parent[ra] = rb;
                }
            }
        }
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        for i in 0..jobs.len() {
            let r = root(&mut parent, i);
            match groups.iter_mut().find(|g| g.0 == r) {
                Some(g) => g.1.push(i),
                None => groups.push((r, vec![i])),
            }
        }
        groups.into_iter().map(|g| g.1).collect()
    }
}
