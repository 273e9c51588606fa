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
//!
//! **Wide chains.** A group of more than the plan's `exact_group_gpus` GPUs is cut into its
//! jobs, each simulated by itself with the others' mean loads on the zones' edges they share
//! ([`crate::coupling`]).

use fabricsim_cluster::placement::Placement;
use fabricsim_cluster::scenario::Scenario;
use fabricsim_cluster::simulate::{build_workload, simulate, SimError};
use fabricsim_cluster::RunOptions;
use std::collections::BTreeMap;

use fabricsim_topology::Topology;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::coupling::{zones_of, EdgeLoad, Edges, Loads};
use crate::hierarchy::{Allocation, Hierarchy};

/// A job's GPUs with zones, racks and hosts renumbered: per host (zone, rack, host, GPU mask),
/// or, where racks are non-blocking, runs of hosts (zone, hosts in the run, GPU mask).
type Shape = Vec<(u32, u32, u32, u64)>;
/// A group's jobs (template, shape), and the loads of jobs simulated apart on its one job's
/// zones' edges, the zones numbered in the job's order ([`crate::coupling`]).
type Key = (Vec<(u32, Shape)>, Loads);

/// Jobs to simulate together (template, GPUs), with the loads on their links from others.
type Wanted<'j> = (Vec<(u32, &'j Allocation)>, Loads);

/// A group of jobs simulated together, and the loads that jobs simulated apart put on the
/// edges of the zones it leaves (only for a job by itself).
struct Group {
    members: Vec<usize>,
    loads: Loads,
}

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
    /// The bytes per second it sent out of and into each of its zones ([`crate::coupling`]).
    pub edge: EdgeLoad,
}

pub struct StepTimes<'a> {
    topo: &'a Topology,
    base: Scenario,
    h: &'a Hierarchy,
    edges: Edges,
    /// Groups of more GPUs than this are cut into their jobs.
    exact_gpus: u64,
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
        exact_gpus: u64,
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
            edges: Edges::of(topo, h),
            exact_gpus,
            ranks,
            cache: FxHashMap::default(),
            fresh: FxHashSet::default(),
            simulated: 0,
            reused: 0,
        })
    }

    /// The key of a group of `jobs` (template, GPUs) with `loads` from jobs simulated apart,
    /// and the order its jobs take in it: by workload and own shape, then their joint shape.
    fn key(&self, jobs: &[(u32, &Allocation)], loads: &[(u32, u8, u8)]) -> (Key, Vec<usize>) {
        let coarse = self.h.racks_non_blocking;
        let own: Vec<Shape> = jobs
            .iter()
            .map(|(_, a)| shapes(self.h, &[a], coarse).remove(0))
            .collect();
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_by(|&a, &b| (jobs[a].0, &own[a]).cmp(&(jobs[b].0, &own[b])));
        let allocs: Vec<&Allocation> = order.iter().map(|&i| jobs[i].1).collect();
        let joint = shapes(self.h, &allocs, coarse);
        // Loads come with a job by itself: its zones in its own order (most groups have none).
        let mut edge: Loads = Vec::new();
        if !loads.is_empty() {
            let zones = zones_of(self.h, jobs[0].1);
            let own = |z: u32| zones.iter().position(|&x| x == z).unwrap_or(0) as u32;
            edge = loads
                .iter()
                .filter(|l| (l.1, l.2) != (0, 0))
                .map(|&(z, out, into)| (own(z), out, into))
                .collect();
            edge.sort_unstable();
        }
        let members = order.iter().map(|&i| jobs[i].0).zip(joint).collect();
        ((members, edge), order)
    }

    /// Seconds per iteration of each of `jobs`, simulated together with `loads` from jobs
    /// simulated apart (or as kept).
    fn group(
        &mut self,
        jobs: &[(u32, &Allocation)],
        loads: &[(u32, u8, u8)],
    ) -> Result<Vec<Step>, SimError> {
        self.lookup(jobs, loads, true)
    }

    /// [`Self::group`]; a read that `counts` is a reuse when the result was kept (and not just
    /// simulated by `prepare`), one that does not (a neighbour's load) leaves the counts be.
    fn lookup(
        &mut self,
        jobs: &[(u32, &Allocation)],
        loads: &[(u32, u8, u8)],
        counts: bool,
    ) -> Result<Vec<Step>, SimError> {
        let (key, order) = self.key(jobs, loads);
        let times = match self.cache.get(&key) {
            Some(t) => {
                // A group simulated by `prepare` is not reused the first time it is read.
                if counts && !self.fresh.remove(&key) {
                    self.reused += 1;
                }
                t.clone()
            }
            None => {
                let ordered: Vec<_> = order.iter().map(|&i| jobs[i]).collect();
                let t = self.simulate(&ordered, loads)?;
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
    /// itself), then the groups of `running` that share links (which may need the loads of
    /// jobs alone). The results are the same as one by one: each group is its own simulation.
    pub fn prepare(
        &mut self,
        alone: &[(u32, &Allocation)],
        running: &[(u32, &Allocation)],
    ) -> Result<(), SimError> {
        let singles: Vec<Wanted> = alone.iter().map(|&j| (vec![j], Vec::new())).collect();
        self.simulate_missing(singles)?;
        let wanted = self
            .groups(running)?
            .into_iter()
            .map(|g| (g.members.iter().map(|&i| running[i]).collect(), g.loads))
            .collect();
        self.simulate_missing(wanted)
    }

    /// Simulates, in parallel, those of `wanted` (jobs, loads) that are not kept yet.
    fn simulate_missing(&mut self, wanted: Vec<Wanted>) -> Result<(), SimError> {
        let mut misses: Vec<(Key, Wanted)> = Vec::new();
        for (jobs, loads) in wanted {
            let (key, order) = self.key(&jobs, &loads);
            if !self.cache.contains_key(&key) && !misses.iter().any(|m| m.0 == key) {
                misses.push((key, (order.iter().map(|&i| jobs[i]).collect(), loads)));
            }
        }
        let results: Vec<Result<Vec<Step>, SimError>> = misses
            .par_iter()
            .map(|(_, (jobs, loads))| self.simulate(jobs, loads))
            .collect();
        for ((key, _), r) in misses.into_iter().zip(results) {
            self.cache.insert(key.clone(), r?);
            self.simulated += 1;
            self.fresh.insert(key);
        }
        Ok(())
    }

    fn simulate(
        &self,
        jobs: &[(u32, &Allocation)],
        loads: &[(u32, u8, u8)],
    ) -> Result<Vec<Step>, SimError> {
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
        let options = RunOptions {
            attribute_links: true,
            background: self.edges.background(loads),
            ..RunOptions::default()
        };
        let run = simulate(&s, self.topo, options, |_, _, _| {})?;
        Ok(run
            .reports
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let seconds = r.iteration_ms / 1e3;
                let links = run.output.job_links.get(k).map_or(&[][..], |l| &l[..]);
                Step {
                    seconds,
                    compute: r.compute_fraction,
                    exposed: r.exposed_comm_by_scope.clone(),
                    edge: self.edges.load(self.h, jobs[k].1, links, seconds),
                }
            })
            .collect())
    }

    /// Seconds per iteration of `template` alone on `alloc`.
    pub fn alone(&mut self, template: u32, alloc: &Allocation) -> Result<Step, SimError> {
        Ok(self.group(&[(template, alloc)], &[])?.remove(0))
    }

    /// Seconds per iteration of each running job (template, GPUs), with the jobs it shares
    /// links with.
    pub fn running(&mut self, jobs: &[(u32, &Allocation)]) -> Result<Vec<Step>, SimError> {
        let mut out = vec![Step::default(); jobs.len()];
        for g in self.groups(jobs)? {
            let members: Vec<_> = g.members.iter().map(|&i| jobs[i]).collect();
            let times = self.group(&members, &g.loads)?;
            for (k, &i) in g.members.iter().enumerate() {
                out[i] = times[k].clone();
            }
        }
        Ok(out)
    }

    /// The groups of `jobs` (template, GPUs) to simulate: those sharing links, where a chain of
    /// them is more than `exact_gpus`, cut into its jobs, each with the others' loads.
    fn groups(&mut self, jobs: &[(u32, &Allocation)]) -> Result<Vec<Group>, SimError> {
        let zones: Vec<Vec<u32>> = jobs.iter().map(|(_, a)| zones_of(self.h, a)).collect();
        let mut out = Vec::new();
        for chain in self.components(jobs, &zones) {
            let gpus: u64 = chain
                .iter()
                .map(|&i| {
                    jobs[i]
                        .1
                        .iter()
                        .map(|&(_, m)| u64::from(m.count_ones()))
                        .sum::<u64>()
                })
                .sum();
            if gpus <= self.exact_gpus || chain.len() == 1 {
                out.push(Group {
                    members: chain,
                    loads: Vec::new(),
                });
                continue;
            }
            // Each job that leaves its zone: its load on its zones' edges, from its simulation
            // alone.
            let mut edge: Vec<(usize, EdgeLoad)> = Vec::new();
            for &i in chain.iter().filter(|&&i| zones[i].len() > 1) {
                let alone = self.lookup(&[jobs[i]], &[], false)?.remove(0);
                edge.push((i, alone.edge));
            }
            for &j in &chain {
                let leaves = |z: u32| zones[j].len() > 1 && zones[j].contains(&z);
                // Per zone it leaves: what the others send out of it and into it.
                let mut rate: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
                for (k, load) in edge.iter().filter(|(k, _)| *k != j) {
                    for (&z, &(out, into)) in zones[*k].iter().zip(load) {
                        if leaves(z) {
                            let e = rate.entry(z).or_default();
                            (e.0, e.1) = (e.0 + out, e.1 + into);
                        }
                    }
                }
                let loads = rate
                    .into_iter()
                    .map(|(z, (out, into))| {
                        let level = |way, r| self.edges.level(z, way, r);
                        (z, level(true, out), level(false, into))
                    })
                    .filter(|l| (l.1, l.2) != (0, 0))
                    .collect();
                out.push(Group {
                    members: vec![j],
                    loads,
                });
            }
        }
        Ok(out)
    }

    /// Connected components of `jobs` sharing a rack they leave or both leaving a zone
    /// (`zones`: each job's).
    fn components(&self, jobs: &[(u32, &Allocation)], zones: &[Vec<u32>]) -> Vec<Vec<usize>> {
        let mut parent: Vec<usize> = (0..jobs.len()).collect();
        fn root(p: &mut [usize], mut i: usize) -> usize {
            while p[i] != i {
                p[i] = p[p[i]];
                i = p[i];
            }
            i
        }
        // Per rack and per zone, a job that leaves it.
        let mut first: FxHashMap<(bool, u32), usize> = FxHashMap::default();
        for (i, (_, a)) in jobs.iter().enumerate() {
            let mut racks: Vec<u32> = Vec::new();
            for &(x, _) in a.iter() {
                let rack = self.h.rack[x as usize];
                if !racks.contains(&rack) {
                    racks.push(rack);
                }
            }
            // Only a job that leaves its rack loads the rack's uplinks, and only one that
            // leaves its zone the zone's edge.
            let racks = racks
                .iter()
                .filter(|_| racks.len() > 1)
                .map(|&r| (false, r));
            let own = &zones[i];
            let zones = own.iter().filter(|_| own.len() > 1).map(|&z| (true, z));
            for d in racks.chain(zones) {
                let other = *first.entry(d).or_insert(i);
                let (ra, rb) = (root(&mut parent, i), root(&mut parent, other));
                parent[ra] = rb;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Plan;
    use std::path::Path;

    /// Two 16-GPU jobs, each on a host of either zone of a two-zone `meta-cluster`, on racks of
    /// their own: they share nothing but the zones' edges.
    #[test]
    fn a_chain_past_the_limit_is_cut_at_the_zones_edges_with_the_others_loads() {
        let text = "[fabric]\npreset = \"meta-cluster\"\nset = [\"zones=2\", \"racks=2\"]\n\
            [routing]\npolicy = \"ecmp\"\n[[job]]\nname = \"small\"\n[job.llm]\n\
            model = \"llama3-8b\"\nlayers = 4\ntp = 8\ndp = 2\nseq = 8192\nmicro_batch = 1\n\
            global_batch = 4\n[cluster]\ndays = 1\n";
        let plan = Plan::parse(text, Path::new("test.toml")).unwrap();
        let topo = plan.scenario.fabric.load().unwrap();
        let h = Hierarchy::of(&topo);
        // The first host of each rack: racks 0 and 1 in zone 0, racks 2 and 3 in zone 1.
        let first = |r: usize| h.hosts_of_rack[r][0];
        assert_eq!((h.zone[0], h.zone[1], h.zone[2], h.zone[3]), (0, 0, 1, 1));
        let a: Allocation = vec![(first(0), 0xff), (first(2), 0xff)];
        let b: Allocation = vec![(first(1), 0xff), (first(3), 0xff)];
        let jobs = [(0, &a), (0, &b)];

        let mut exact = StepTimes::new(&topo, &plan.scenario, &h, u64::MAX).unwrap();
        let groups = exact.groups(&jobs).unwrap();
        assert_eq!(groups.len(), 1);
        assert!(groups[0].loads.is_empty());
        let together = exact.running(&jobs).unwrap();

        let mut cut = StepTimes::new(&topo, &plan.scenario, &h, 16).unwrap();
        let alone = cut.alone(0, &a).unwrap();
        // The job sends out of and into both its zones.
        assert_eq!(alone.edge.len(), 2);
        assert!(alone
            .edge
            .iter()
            .all(|&(out, into)| out > 0.0 && into > 0.0));
        let groups = cut.groups(&jobs).unwrap();
        assert_eq!(groups.len(), 2);
        for (g, other) in groups.iter().zip([&b, &a]) {
            assert_eq!(g.members.len(), 1);
            // Each job carries the other's load on both zones' edges, in steps of an edge's
            // capacity.
            let load = cut.alone(0, other).unwrap().edge;
            let expected: Loads = zones_of(&h, other)
                .into_iter()
                .zip(load)
                .map(|(z, (out, into))| {
                    let level = |way, r| cut.edges.level(z, way, r);
                    (z, level(true, out), level(false, into))
                })
                .collect();
            assert_eq!(expected.len(), 2);
            assert!(expected.iter().all(|l| l.1 > 0 && l.2 > 0), "{expected:?}");
            assert_eq!(g.loads, expected);
        }
        let apart = cut.running(&jobs).unwrap();
        eprintln!(
            "DEBUG {:?} {:?} {:?} {:?}",
            groups.iter().map(|g| g.loads.clone()).collect::<Vec<_>>(),
            alone.seconds,
            apart,
            together
        );
        for k in 0..2 {
            assert!(apart[k].seconds >= alone.seconds, "{apart:?} {alone:?}");
            assert!(
                together[k].seconds >= alone.seconds,
                "{together:?} {alone:?}"
            );
        }
    }
}
