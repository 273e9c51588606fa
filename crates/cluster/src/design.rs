//! Fabric design search on the sweep: each point's fabric priced from its inventory
//! ([`fabricsim_topology::inventory`]), and the points on the Pareto front of cost against one
//! metric, per job.
//!
//! The default price is one unit per switch port and nothing else: the equipment of a fabric in
//! switch ports, the measure Singla et al. compare topologies at ("Jellyfish: Networking Data
//! Centers Randomly", NSDI 2012, §4: equal numbers of switches and ports). No market prices are
//! built in; a plan gives its own per port, optic and cable (`[design.prices]`).

use fabricsim_topology::inventory::Inventory;
use serde::Deserialize;

use crate::sweep::SweepRow;

/// Prices per unit, in any currency (default: a switch port costs 1).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    #[serde(default = "one")]
    pub switch_port: f64,
    #[serde(default)]
    pub nic_port: f64,
    /// Per transceiver of a cable between switches (two per cable).
    #[serde(default)]
    pub switch_optic: f64,
    /// Per transceiver of a NIC's cable (two per cable; 0 for copper).
    #[serde(default)]
    pub nic_optic: f64,
    /// Per cable, of either kind.
    #[serde(default)]
    pub cable: f64,
}

fn one() -> f64 {
    1.0
}

impl Default for Prices {
    fn default() -> Prices {
        Prices {
            switch_port: 1.0,
            nic_port: 0.0,
            switch_optic: 0.0,
            nic_optic: 0.0,
            cable: 0.0,
        }
    }
}

impl Prices {
    pub fn cost(&self, inv: &Inventory) -> f64 {
        self.switch_port * inv.switch_ports as f64
            + self.nic_port * inv.nic_ports as f64
            + self.switch_optic * 2.0 * inv.switch_cables as f64
            + self.nic_optic * 2.0 * inv.nic_cables as f64
            + self.cable * (inv.switch_cables + inv.nic_cables) as f64
    }
}

/// What a design search optimizes: a metric of the plan, lower or higher is better.
#[derive(Clone, Debug, PartialEq)]
pub struct Design {
    pub objective: String,
    pub maximize: bool,
    pub prices: Prices,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DesignFile {
    objective: String,
    #[serde(default = "min")]
    goal: String,
    #[serde(default)]
    prices: Prices,
}

fn min() -> String {
    "min".into()
}

impl DesignFile {
    /// Checked against the plan's `metrics`.
    pub(crate) fn check(self, metrics: &[String]) -> Result<Design, String> {
        if !metrics.contains(&self.objective) {
            return Err(format!(
                "design.objective = \"{}\": expected one of the plan's metrics ({})",
                self.objective,
                metrics.join(", ")
            ));
        }
        let maximize = match self.goal.as_str() {
            "min" => false,
            "max" => true,
            g => {
                return Err(format!(
                    "design.goal = \"{g}\": expected \"min\" or \"max\""
                ))
            }
        };
        let p = self.prices;
        for (name, v) in [
            ("switch_port", p.switch_port),
            ("nic_port", p.nic_port),
            ("switch_optic", p.switch_optic),
            ("nic_optic", p.nic_optic),
            ("cable", p.cable),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!(
                    "design.prices.{name} = {v}: expected a price of 0 or more"
                ));
            }
        }
        Ok(Design {
            objective: self.objective,
            maximize,
            prices: p,
        })
    }
}

/// Which of `points` (cost, objective) are on the Pareto front: no other point is at most as
/// costly and at least as good, and better in one of the two. A point without an objective (a
/// failed run) is not on it. Sorted by cost, a point is on the front when it is the best of its
/// cost and better than every cheaper point: O(n log n) for a plan's up to 100,000 points.
pub fn pareto(points: &[(f64, Option<f64>)], maximize: bool) -> Vec<bool> {
    let better = |a: f64, b: f64| if maximize { a > b } else { a < b };
    let mut order: Vec<(f64, f64, usize)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, &(cost, obj))| obj.map(|o| (cost, o, i)))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut front = vec![false; points.len()];
    // The best objective among points cheaper than the current cost.
    let mut cheaper: Option<f64> = None;
    for same_cost in order.chunk_by(|a, b| a.0 == b.0) {
        let best = same_cost
            .iter()
            .map(|p| p.1)
            .reduce(|a, b| if better(b, a) { b } else { a })
            .expect("a chunk is not empty");
        if cheaper.is_none_or(|c| better(best, c)) {
            for p in same_cost.iter().filter(|p| p.1 == best) {
                front[p.2] = true;
            }
            cheaper = Some(best);
        }
    }
    front
}

/// Marks each row with whether its point is on its job's Pareto front of cost against the
/// objective's median over seeds. A job's rows come in point order, a point's seeds together.
pub fn mark_fronts(design: &Design, metrics: &[String], rows: &mut [SweepRow]) {
    let m = metrics
        .iter()
        .position(|x| *x == design.objective)
        .expect("the objective is one of the metrics (checked with the plan)");
    let mut jobs: Vec<String> = Vec::new();
    for r in rows.iter() {
        if !jobs.contains(&r.job) {
            jobs.push(r.job.clone());
        }
    }
    for job in &jobs {
        // The job's rows, grouped by point: (first row of the group, rows, cost, objectives).
        let mine: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].job == *job).collect();
        let mut groups: Vec<(usize, Vec<usize>, f64, Vec<f64>)> = Vec::new();
        for &i in &mine {
            let r = &rows[i];
            match groups.last_mut() {
                Some(g) if rows[g.0].point == r.point => {
                    g.1.push(i);
                    g.3.extend(r.metrics[m]);
                }
                _ => groups.push((
                    i,
                    vec![i],
                    r.cost.unwrap_or(f64::INFINITY),
                    r.metrics[m].into_iter().collect(),
                )),
            }
        }
        let summary: Vec<(f64, Option<f64>)> =
            groups.iter().map(|g| (g.2, median(g.3.clone()))).collect();
        let front = pareto(&summary, design.maximize);
        for (g, on) in groups.iter().zip(front) {
            for &i in &g.1 {
                rows[i].pareto = Some(on);
            }
        }
    }
}

/// The median of `values` (the mean of the middle two for an even count); `None` if empty.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_front_keeps_what_nothing_dominates() {
        // (cost, time): b is dominated by a (as costly, slower); d failed.
        let points = [
            (10.0, Some(5.0)),
            (10.0, Some(6.0)),
            (20.0, Some(3.0)),
            (5.0, None),
            (30.0, Some(3.0)),
            (8.0, Some(9.0)),
        ];
        assert_eq!(
            pareto(&points, false),
            [true, false, true, false, false, true]
        );
        // Maximizing (say tokens/s): the cheapest point is also the best, and beats them all.
        let front = pareto(&points, true);
        assert_eq!(front, [false, false, false, false, false, true]);
    }

    #[test]
    fn the_sorted_front_is_the_definitions() {
        // Many points on a small grid (ties in cost and objective, failures), against the
        // definition checked pair by pair.
        let mut x = 12345u64;
        let mut next = |m: u64| {
            x = fabricsim_routing::key::mix(x);
            x % m
        };
        for maximize in [false, true] {
            let points: Vec<(f64, Option<f64>)> = (0..300)
                .map(|_| (next(20) as f64, (next(10) > 0).then(|| next(15) as f64)))
                .collect();
            let better = |a: f64, b: f64| if maximize { a > b } else { a < b };
            let by_definition: Vec<bool> = points
                .iter()
                .map(|&(cost, obj)| {
                    obj.is_some_and(|obj| {
                        !points.iter().any(|&(c, o)| {
                            o.is_some_and(|o| {
                                c <= cost && !better(obj, o) && (c < cost || better(o, obj))
                            })
                        })
                    })
                })
                .collect();
            assert_eq!(pareto(&points, maximize), by_definition);
        }
    }

    #[test]
    fn prices_cost_the_inventory() {
        let inv = Inventory {
            switches: 6,
            switch_ports: 24,
            nic_ports: 8,
            switch_cables: 8,
            nic_cables: 8,
        };
        assert_eq!(Prices::default().cost(&inv), 24.0);
        let p = Prices {
            switch_port: 2.0,
            nic_port: 1.0,
            switch_optic: 0.5,
            nic_optic: 0.0,
            cable: 0.25,
        };
        assert_eq!(p.cost(&inv), 48.0 + 8.0 + 8.0 + 0.0 + 4.0);
    }
}
