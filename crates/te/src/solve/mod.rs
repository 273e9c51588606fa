//! Solvers: each demand gets one path (what the switches are programmed with), chosen to keep
//! the maximum link utilization low.
//!
//! | solver | method | optimality |
//! |---|---|---|
//! | `cspf` | greedy, largest demand first, each on its least congested candidate path (Meta's CSPF) | none stated; compare with a bound |
//! | `lp` | the exact multi-commodity-flow LP (fractional, one commodity per destination), rounded | its fractional optimum is the exact lower bound |
//! | `highs` | the same LP solved by HiGHS (builds with the `highs` feature) | the same |
//! | `mwu` | Garg–Könemann multiplicative weights (fractional), rounded | fractional within (1 + ε) of its certified lower bound, or stopped at the phase limit |
//!
//! Every solution reports the max utilization of its single-path table and, where the solver
//! has one, the max utilization of its fractional routing and a lower bound no routing (even
//! one splitting every demand over all its paths) can beat. A single-path table can be above
//! the fractional optimum: a demand that fills a link cannot be split.

mod cspf;
mod lp;
mod mwu;

use fabricsim_topology::LinkId;

use crate::instance::Instance;

pub use mwu::MwuOptions;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Solver {
    Cspf,
    Lp,
    /// The exact LP solved by HiGHS; an error in builds without the `highs` feature.
    Highs,
    /// The exact LP solved by microlp's simplex (pure Rust; `lp` solves it by Clarabel's
    /// interior point, 25–40× faster on the all-to-all cases of docs/performance.md).
    Microlp,
    Mwu,
}

impl Solver {
    pub const NAMES: [&'static str; 5] = ["cspf", "lp", "microlp", "highs", "mwu"];

    pub fn parse(s: &str) -> Option<Solver> {
        match s {
            "cspf" => Some(Solver::Cspf),
            "lp" => Some(Solver::Lp),
            "highs" => Some(Solver::Highs),
            "microlp" => Some(Solver::Microlp),
            "mwu" => Some(Solver::Mwu),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Solver::Cspf => "cspf",
            Solver::Lp => "lp",
            Solver::Highs => "highs",
            Solver::Microlp => "microlp",
            Solver::Mwu => "mwu",
        }
    }

    /// Whether this build can run the solver (HiGHS needs the `highs` feature).
    pub fn available(self) -> bool {
        self != Solver::Highs || cfg!(feature = "highs")
    }

    /// What a user may name, for error messages: the solvers this build runs, and how to get
    /// the others.
    pub fn expected() -> String {
        if Solver::Highs.available() {
            "one of cspf, lp, microlp, highs, mwu".into()
        } else {
            "one of cspf, lp, microlp, mwu (highs needs a build with `--features highs`)".into()
        }
    }

    /// [`Self::parse`], refusing a solver this build cannot run.
    pub fn parse_available(s: &str) -> Option<Solver> {
        Solver::parse(s).filter(|s| s.available())
    }
}

/// Solver settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolveOptions {
    pub mwu: MwuOptions,
    /// The most flow variables the exact LP may have (one per commodity and link of its
    /// paths); larger instances are refused rather than left to run for hours.
    pub lp_max_variables: usize,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            mwu: MwuOptions::default(),
            lp_max_variables: 100_000,
        }
    }
}

/// One path per demand, and how good it is.
#[derive(Clone, Debug)]
pub struct Solution {
    pub solver: Solver,
    /// `paths[i]` carries `instance.demands[i]`.
    pub paths: Vec<Vec<LinkId>>,
    /// Of the single-path table.
    pub max_utilization: f64,
    /// Of the solver's fractional routing (lp, mwu).
    pub fractional: Option<f64>,
    /// No routing over the candidate paths has a lower max utilization.
    pub lower_bound: Option<f64>,
    /// MWU's phases (1 for cspf and lp).
    pub iterations: u32,
}

impl Solution {
    /// Max utilization over the lower bound (1 is optimal), where a bound is known.
    pub fn gap(&self) -> Option<f64> {
        self.lower_bound
            .filter(|&b| b > 0.0)
            .map(|b| self.max_utilization / b)
    }
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SolveError {
    #[error(
        "the exact LP would have {variables} flow variables, over the limit of {limit}; \
         use the mwu solver for instances this large"
    )]
    TooLarge { variables: usize, limit: usize },
    #[error("the LP solver failed: {0}")]
    Lp(String),
}

/// Solves `inst` with `solver`.
pub fn solve(
    inst: &Instance<'_>,
    solver: Solver,
    opts: &SolveOptions,
) -> Result<Solution, SolveError> {
    let mut sol = match solver {
        Solver::Cspf => cspf::solve(inst),
        Solver::Lp | Solver::Microlp | Solver::Highs => {
            lp::solve(inst, opts.lp_max_variables, solver)?
        }
        Solver::Mwu => mwu::solve(inst, &opts.mwu),
    };
    sol.max_utilization = inst.max_utilization(&inst.loads(&sol.paths));
    Ok(sol)
}

/// A fractional routing made whole: demands in order of decreasing rate, each on whichever of
/// its fractional paths is least congested given the demands already placed (ties: the path
/// that carried the most of it), then improved by [`reroute`]. Returns one path per demand.
fn round(inst: &Instance<'_>, support: &[Vec<(Vec<LinkId>, f64)>]) -> Vec<Vec<LinkId>> {
    let mut paths = round_support(inst, support);
    reroute(inst, &mut paths, REROUTE_PASSES);
    paths
}

/// At most this many rip-up-and-reroute passes after rounding.
const REROUTE_PASSES: usize = 4;

/// Rip-up and reroute: each demand in turn (by decreasing rate) is taken off its path and put
/// on its least congested candidate path given all the others (the CSPF rule), if that path's
/// (busiest link, total utilization) with the demand is strictly lower than its own path's.
/// Passes repeat until one moves nothing, at most `passes` of them. A move never raises the
/// table's max utilization (the new path's busiest link stays below the old path's), so the
/// result is never worse than the rounding it starts from; rounding alone places each demand
/// once, against the demands placed before it, and cannot undo an early choice.
fn reroute(inst: &Instance<'_>, paths: &mut [Vec<LinkId>], passes: usize) {
    let mut load = inst.loads(paths);
    let mut scratch = Vec::new();
    let order = by_decreasing_rate(inst);
    let cost = |load: &[f64], rate: f64, p: &[LinkId]| {
        p.iter().fold((0.0f64, 0.0f64), |(worst, sum), l| {
            let u = (load[l.index()] + rate) * inst.steer[l.index()];
            (worst.max(u), sum + u)
        })
    };
    for _ in 0..passes {
        let mut moved = false;
        for &d in &order {
            let rate = inst.demands[d].rate;
            for l in &paths[d] {
                load[l.index()] -= rate;
            }
            let candidate = inst
                .dag(d)
                .least_congested(&load, &inst.steer, rate, &mut scratch);
            let (old, new) = (cost(&load, rate, &paths[d]), cost(&load, rate, &candidate));
            // A relative margin, so round-off cannot move a demand back and forth.
            if new.0 < old.0 * (1.0 - 1e-9) || (new.0 <= old.0 && new.1 < old.1 * (1.0 - 1e-9)) {
                paths[d] = candidate;
                moved = true;
            }
            for l in &paths[d] {
                load[l.index()] += rate;
            }
        }
        if !moved {
            break;
        }
    }
}

/// The rounding proper (see [`round`]).
fn round_support(inst: &Instance<'_>, support: &[Vec<(Vec<LinkId>, f64)>]) -> Vec<Vec<LinkId>> {
    let mut load = vec![0.0; inst.capacity.len()];
    let mut paths = vec![Vec::new(); inst.demands.len()];
    for d in by_decreasing_rate(inst) {
        let rate = inst.demands[d].rate;
        let cost = |p: &[LinkId]| {
            let mut worst = 0.0f64;
            let mut sum = 0.0;
            for l in p {
                let u = (load[l.index()] + rate) * inst.steer[l.index()];
                worst = worst.max(u);
                sum += u;
            }
            (worst, sum)
        };
        let mut best: Option<((f64, f64), f64, &Vec<LinkId>)> = None;
        for (p, amount) in &support[d] {
            let c = cost(p);
            let better = match best {
                None => true,
                Some((bc, ba, _)) => c < bc || (c == bc && *amount > ba),
            };
            if better {
                best = Some((c, *amount, p));
            }
        }
        let path = best.map(|(_, _, p)| p.clone()).unwrap_or_default();
        for l in &path {
            load[l.index()] += rate;
        }
        paths[d] = path;
    }
    paths
}

/// Demand indices by decreasing rate (ties: in pair order).
fn by_decreasing_rate(inst: &Instance<'_>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..inst.demands.len()).collect();
    order.sort_by(|&a, &b| {
        inst.demands[b]
            .rate
            .total_cmp(&inst.demands[a].rate)
            .then(a.cmp(&b))
    });
    order
}

/// Adds `amount` on `path` to a demand's support, merging equal paths.
fn add_support(support: &mut Vec<(Vec<LinkId>, f64)>, path: &[LinkId], amount: f64) {
    match support.iter_mut().find(|(p, _)| p == path) {
        Some((_, a)) => *a += amount,
        None => support.push((path.to_vec(), amount)),
    }
}
