//! Link utilization per tier under a routing: what `fabricsim te solve` prints for ECMP,
//! E-ECMP and TE side by side.
//!
//! Utilization is a link's load (the rates of the demands routed over it) over its capacity
//! under the link state; 1 is a link exactly full, above 1 a link the demand oversubscribes.
//! Figures are over the links *in scope*, those on some candidate path of some demand, grouped
//! by direction between tiers (`rtsw->ctsw`); p99 is the nearest-rank 99th percentile.

use fabricsim_routing::balance::link_groups;
use fabricsim_routing::{FlowKey, HashConfig, LinkState, Policy, RouteError, Router};

use crate::instance::Instance;

/// Utilization of one group of links.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TierUtilization {
    /// `lower->upper` or `upper->lower` by tier name (`nic` for NICs).
    #[cfg_attr(feature = "openapi", schema(example = "rtsw->ctsw"))]
    pub group: String,
    /// Links in the group.
    pub links: usize,
    /// Utilization of the busiest link.
    pub max: f64,
    /// Mean utilization over the group's links.
    pub mean: f64,
    /// 99th percentile of the links' utilization.
    pub p99: f64,
}

/// Link loads when each demand is split evenly over `qps` QPs of its connection, each routed
/// by `policy` (ECMP hashes the 5-tuple, so its QPs share a path; E-ECMP spreads them).
pub fn hashed_loads(
    inst: &Instance<'_>,
    state: &LinkState,
    policy: Policy,
    hash: HashConfig,
    qps: u32,
) -> Result<Vec<f64>, RouteError> {
    let mut router = Router::new(inst.topo, policy, hash);
    let mut load = vec![0.0; inst.capacity.len()];
    let qps = qps.max(1);
    for d in &inst.demands {
        let share = d.rate / f64::from(qps);
        for qp in 0..qps {
            let key = FlowKey::connection(d.src, d.dst, qp, hash.seed);
            for (l, w) in router.route(state, &key)?.incidence() {
                load[l.index()] += share * w;
            }
        }
    }
    Ok(load)
}

/// Per-group utilization of `load` over the instance's links in scope.
pub fn tier_utilization(inst: &Instance<'_>, load: &[f64]) -> Vec<TierUtilization> {
    link_groups(inst.topo, &inst.scope())
        .into_iter()
        .map(|(group, links)| {
            let mut u: Vec<f64> = links
                .iter()
                .map(|l| {
                    let c = inst.capacity[l.index()];
                    if c > 0.0 {
                        load[l.index()] / c
                    } else {
                        0.0
                    }
                })
                .collect();
            u.sort_by(f64::total_cmp);
            let rank = ((0.99 * u.len() as f64).ceil() as usize).clamp(1, u.len());
            TierUtilization {
                group,
                links: u.len(),
                max: u.last().copied().unwrap_or(0.0),
                mean: u.iter().sum::<f64>() / u.len() as f64,
                p99: u[rank - 1],
            }
        })
        .collect()
}
