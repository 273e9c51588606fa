//! The exact LP: min-max-utilization multi-commodity flow over the candidate paths, solved
//! with Clarabel's interior point (pure Rust, `lp`), microlp's simplex (pure Rust, `microlp`)
//! or, in builds with the `highs` feature, HiGHS (`highs`). All solve the same model to
//! optimality (Clarabel to 1e-8); they may pick different optimal points (the simplexes a
//! vertex, the interior point the middle of the optimal face), so their rounded tables can
//! differ.
//!
//! One commodity per destination GPU (a fractional routing toward one destination can be
//! split among its sources freely, so this is exact and much smaller than one commodity per
//! demand): a flow variable per commodity and link of the union of its demands' shortest-path
//! DAGs, conservation at every node (each source supplies its rate), and for every link
//! `Σ_k f_k,e ≤ U · capacity_e`; minimize `U`. Every path through a union DAG toward `t` is a
//! shortest path to `t` (each link lowers the distance by one), so the LP routes only over
//! candidate paths. Rates and capacities are in units of the largest capacity, to keep the
//! simplex well conditioned.
//!
//! Each demand enters its commodity where its paths first branch: the links before (the
//! source's NVLink, PCIe and NIC links) carry it whatever the routing. Capacity constraints
//! are on the steerable links (see [`Instance`]).
//!
//! The single-path table comes from decomposing each commodity's flow into paths per demand
//! (following the links with the most flow left) and rounding (see `round`).

use fabricsim_topology::{LinkId, NodeId};

use super::{add_support, round, Solution, SolveError, Solver};
use crate::instance::Instance;

/// A node of a commodity's union DAG: its flow terms (out +1, in −1) and its supply.
type NodeRow = (NodeId, Vec<(usize, f64)>, f64);

/// The LP in a solver-neutral form: minimize `cost · x` over `x ≥ 0`, subject to `rows`.
#[derive(Default)]
struct Model {
    cost: Vec<f64>,
    rows: Vec<Row>,
}

struct Row {
    terms: Vec<(usize, f64)>,
    /// `=` if true, else `≤`.
    equal: bool,
    rhs: f64,
}

impl Model {
    fn var(&mut self, cost: f64) -> usize {
        self.cost.push(cost);
        self.cost.len() - 1
    }

    fn row(&mut self, terms: Vec<(usize, f64)>, equal: bool, rhs: f64) {
        self.rows.push(Row { terms, equal, rhs });
    }

    /// An optimal `x`, by microlp's simplex.
    fn solve_microlp(&self) -> Result<Vec<f64>, SolveError> {
        use microlp::{ComparisonOp, OptimizationDirection, Problem};
        let mut lp = Problem::new(OptimizationDirection::Minimize);
        let vars: Vec<microlp::Variable> = self
            .cost
            .iter()
            .map(|&c| lp.add_var(c, (0.0, f64::INFINITY)))
            .collect();
        for row in &self.rows {
            let terms: Vec<(microlp::Variable, f64)> =
                row.terms.iter().map(|&(v, a)| (vars[v], a)).collect();
            let op = if row.equal {
                ComparisonOp::Eq
            } else {
                ComparisonOp::Le
            };
            lp.add_constraint(terms.as_slice(), op, row.rhs);
        }
        let solution = lp
            .solve()
            .map_err(|e| SolveError::Lp(e.to_string()))?
            .into_solution()
            .map_err(|_| SolveError::Lp("the solve was interrupted".into()))?;
        Ok(vars.iter().map(|&v| solution.var_value(v)).collect())
    }

    /// An optimal `x`, by HiGHS (its dual simplex, one thread, quiet).
    #[cfg(feature = "highs")]
    fn solve_highs(&self) -> Result<Vec<f64>, SolveError> {
        use highs::{HighsModelStatus, RowProblem, Sense};
        let mut pb = RowProblem::default();
        let cols: Vec<highs::Col> = self.cost.iter().map(|&c| pb.add_column(c, 0.0..)).collect();
        for row in &self.rows {
            let terms = row.terms.iter().map(|&(v, a)| (cols[v], a));
            if row.equal {
                pb.add_row(row.rhs..=row.rhs, terms);
            } else {
                pb.add_row(..=row.rhs, terms);
            }
        }
        let mut model = pb.optimise(Sense::Minimise);
        model.make_quiet();
        model.set_option("threads", 1);
        let solved = model
            .try_solve()
            .map_err(|e| SolveError::Lp(format!("HiGHS: {e:?}")))?;
        match solved.status() {
            HighsModelStatus::Optimal => Ok(solved.get_solution().columns().to_vec()),
            status => Err(SolveError::Lp(format!("HiGHS ended with {status:?}"))),
        }
    }

    /// An optimal `x` (to Clarabel's default tolerances, 1e-8 relative), by its interior-point
    /// method: `x ≥ 0` and the `≤` rows as nonnegative slacks, the `=` rows as a zero cone.
    fn solve_clarabel(&self) -> Result<Vec<f64>, SolveError> {
        use clarabel::algebra::CscMatrix;
        use clarabel::solver::{
            DefaultSettings, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus, ZeroConeT,
        };
        let n = self.cost.len();
        // Rows: the equalities, then the inequalities, then -x ≤ 0.
        let (eq, le): (Vec<&Row>, Vec<&Row>) = self.rows.iter().partition(|r| r.equal);
        let m = eq.len() + le.len() + n;
        let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
        let mut b = Vec::with_capacity(m);
        for (i, row) in eq.iter().chain(le.iter()).enumerate() {
            for &(v, a) in &row.terms {
                rows.push(i);
                cols.push(v);
                vals.push(a);
            }
            b.push(row.rhs);
        }
        for v in 0..n {
            rows.push(eq.len() + le.len() + v);
            cols.push(v);
            vals.push(-1.0);
            b.push(0.0);
        }
        // Clarabel sorts the triplets and adds repeated ones.
        let a = CscMatrix::new_from_triplets(m, n, rows, cols, vals);
        let p = CscMatrix::zeros((n, n));
        let cones = [ZeroConeT(eq.len()), NonnegativeConeT(le.len() + n)];
        let settings = DefaultSettings {
            verbose: false,
            ..DefaultSettings::default()
        };
        let mut solver = DefaultSolver::new(&p, &self.cost, &a, &b, &cones, settings)
            .map_err(|e| SolveError::Lp(format!("Clarabel: {e:?}")))?;
        solver.solve();
        match solver.solution.status {
            SolverStatus::Solved | SolverStatus::AlmostSolved => Ok(solver.solution.x.clone()),
            status => Err(SolveError::Lp(format!("Clarabel ended with {status:?}"))),
        }
    }

    #[cfg(not(feature = "highs"))]
    fn solve_highs(&self) -> Result<Vec<f64>, SolveError> {
        Err(SolveError::Lp(
            "this build has no HiGHS; rebuild with `--features highs` (see docs/te.md)".into(),
        ))
    }
}

/// Solves the exact LP with `solver` (`Lp`: Clarabel, `Microlp`: microlp, `Highs`: HiGHS).
pub(super) fn solve(
    inst: &Instance<'_>,
    max_variables: usize,
    solver: Solver,
) -> Result<Solution, SolveError> {
    let topo = inst.topo;
    let unit = inst.capacity.iter().copied().fold(0.0, f64::max).max(1.0);
    // Commodities: demand indices grouped by destination.
    let mut by_dst: Vec<usize> = (0..inst.demands.len()).collect();
    by_dst.sort_by_key(|&d| (inst.demands[d].dst, d));
    let commodities: Vec<&[usize]> = by_dst
        .chunk_by(|&a, &b| inst.demands[a].dst == inst.demands[b].dst)
        .collect();
    // Each demand's forced first links, and the node its paths branch at.
    let prefixes: Vec<(Vec<LinkId>, NodeId)> = (0..inst.demands.len())
        .map(|d| {
            let links = inst.dag(d).prefix();
            let at = links
                .last()
                .map_or(inst.demands[d].src, |&l| topo.link(l).dst);
            (links, at)
        })
        .collect();
    let links: Vec<Vec<LinkId>> = commodities
        .iter()
        .map(|ds| {
            let mut ls: Vec<LinkId> = ds
                .iter()
                .flat_map(|&d| {
                    let prefix = &prefixes[d].0;
                    inst.dag(d).links().filter(move |l| !prefix.contains(l))
                })
                .collect();
            ls.sort_unstable();
            ls.dedup();
            ls
        })
        .collect();
    let variables: usize = links.iter().map(Vec::len).sum();
    if variables > max_variables {
        return Err(SolveError::TooLarge {
            variables,
            limit: max_variables,
        });
    }

    let mut lp = Model::default();
    let u = lp.var(1.0);
    let mut on_link: Vec<Vec<(usize, f64)>> = vec![Vec::new(); inst.capacity.len()];
    let mut flow_vars = Vec::with_capacity(commodities.len());
    for (k, ds) in commodities.iter().enumerate() {
        let vars: Vec<usize> = links[k]
            .iter()
            .map(|&l| {
                let v = lp.var(0.0);
                on_link[l.index()].push((v, 1.0));
                v
            })
            .collect();
        // Conservation at every node of the union DAG but the destination.
        let dst = inst.demands[ds[0]].dst;
        let mut nodes: Vec<NodeRow> = Vec::new();
        let at = |n: NodeId, nodes: &mut Vec<NodeRow>| match nodes.binary_search_by_key(&n, |e| e.0)
        {
            Ok(i) => i,
            Err(i) => {
                nodes.insert(i, (n, Vec::new(), 0.0));
                i
            }
        };
        for (&l, &v) in links[k].iter().zip(&vars) {
            let link = topo.link(l);
            let i = at(link.src, &mut nodes);
            nodes[i].1.push((v, 1.0));
            let i = at(link.dst, &mut nodes);
            nodes[i].1.push((v, -1.0));
        }
        for &d in ds.iter() {
            let i = at(prefixes[d].1, &mut nodes);
            nodes[i].2 += inst.demands[d].rate / unit;
        }
        for (n, terms, supply) in nodes {
            if n != dst {
                lp.row(terms, true, supply);
            }
        }
        flow_vars.push(vars);
    }
    for (l, mut terms) in on_link.into_iter().enumerate() {
        if !terms.is_empty() && inst.steerable(LinkId(l as u32)) {
            terms.push((u, -inst.capacity[l] / unit));
            lp.row(terms, false, 0.0);
        }
    }
    let x = match solver {
        Solver::Highs => lp.solve_highs()?,
        Solver::Microlp => lp.solve_microlp()?,
        _ => lp.solve_clarabel()?,
    };
    let optimum = x[u];

    // Decompose each commodity's flow into paths per demand.
    let mut support = vec![Vec::new(); inst.demands.len()];
    for (k, ds) in commodities.iter().enumerate() {
        let mut left: Vec<f64> = flow_vars[k].iter().map(|&v| x[v].max(0.0) * unit).collect();
        let dst = inst.demands[ds[0]].dst;
        for &d in ds.iter() {
            let mut rem = inst.demands[d].rate;
            // Each walk takes at least the flow of one link's bottleneck; a bounded number of
            // walks also guards against round-off leaving crumbs.
            for _ in 0..links[k].len() + 1 {
                if rem <= 1e-9 * inst.demands[d].rate {
                    break;
                }
                let (walked, idx) = heaviest_walk(inst, &links[k], &left, prefixes[d].1, dst);
                let path: Vec<LinkId> = prefixes[d].0.iter().copied().chain(walked).collect();
                let amount = idx
                    .iter()
                    .map(|&i| left[i])
                    .fold(f64::INFINITY, f64::min)
                    .min(rem);
                if amount.is_nan() || amount <= 0.0 {
                    // Round-off: no flow left where this demand should have some; give it the
                    // heaviest path anyway.
                    add_support(&mut support[d], &path, rem);
                    break;
                }
                for &i in &idx {
                    left[i] -= amount;
                }
                rem -= amount;
                add_support(&mut support[d], &path, amount);
            }
        }
    }
    Ok(Solution {
        solver,
        paths: round(inst, &support),
        max_utilization: 0.0,
        fractional: Some(optimum),
        lower_bound: Some(optimum),
        iterations: 1,
    })
}

/// From `src` to `dst` over `links` (sorted by id), at each node taking the out-link with the
/// most flow left (ties: lowest id). Returns the path and the links' positions in `links`.
fn heaviest_walk(
    inst: &Instance<'_>,
    links: &[LinkId],
    left: &[f64],
    src: NodeId,
    dst: NodeId,
) -> (Vec<LinkId>, Vec<usize>) {
    let topo = inst.topo;
    let mut path = Vec::new();
    let mut idx = Vec::new();
    let mut u = src;
    while u != dst {
        let mut best: Option<usize> = None;
        for &l in topo.out_links(u) {
            if let Ok(i) = links.binary_search(&l) {
                if best.is_none_or(|b| left[i] > left[b]) {
                    best = Some(i);
                }
            }
        }
        let Some(i) = best else { break };
        path.push(links[i]);
        idx.push(i);
        u = topo.link(links[i]).dst;
    }
    (path, idx)
}
