//! `GET /metrics`: the controller's figures in Prometheus' text exposition format (0.0.4).

use std::fmt::Write;
use std::sync::atomic::Ordering;

use crate::controller::Controller;

pub fn render(ctl: &Controller) -> String {
    let rv = ctl.routes();
    let (state_version, links_down, demand_sets, jobs) = ctl.read(|s| {
        let down = s.state.fabric.as_ref().map_or(0, |f| {
            f.topo.link_ids().filter(|&l| !f.links.is_up(l)).count()
        });
        (
            s.state.version,
            down,
            s.state.demands.len(),
            s.state.jobs.len(),
        )
    });
    let c = &ctl.counters;
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in samples {
            let _ = writeln!(out, "{name}{labels} {value}");
        }
    };
    let single: [(&str, &str, &str, f64); 12] = [
        (
            "fabricsim_state_version",
            "gauge",
            "Acknowledged changes to the controller's state.",
            state_version as f64,
        ),
        (
            "fabricsim_route_version",
            "gauge",
            "Route versions computed.",
            rv.summary.version as f64,
        ),
        (
            "fabricsim_route_state_version",
            "gauge",
            "The state version the current routes were computed for.",
            rv.summary.state_version as f64,
        ),
        (
            "fabricsim_recomputes_total",
            "counter",
            "Route recomputations that published a route version.",
            c.recomputes.load(Ordering::Relaxed) as f64,
        ),
        (
            "fabricsim_recompute_errors_total",
            "counter",
            "Route recomputations that failed (the previous routes stay).",
            c.recompute_errors.load(Ordering::Relaxed) as f64,
        ),
        (
            "fabricsim_last_recompute_seconds",
            "gauge",
            "Wall time of the last recomputation, solve and persistence included.",
            c.last_recompute_us.load(Ordering::Relaxed) as f64 * 1e-6,
        ),
        (
            "fabricsim_links_down",
            "gauge",
            "Directed links down.",
            links_down as f64,
        ),
        (
            "fabricsim_demand_sets",
            "gauge",
            "Registered demand sets.",
            demand_sets as f64,
        ),
        ("fabricsim_jobs", "gauge", "Registered jobs.", jobs as f64),
        (
            "fabricsim_route_demands",
            "gauge",
            "Demands the current routes place over the fabric.",
            rv.summary.demands as f64,
        ),
        (
            "fabricsim_route_conflicts",
            "gauge",
            "Demands that follow another demand's next-hop entry for part of their way.",
            rv.summary.conflicts as f64,
        ),
        (
            "fabricsim_max_link_utilization",
            "gauge",
            "Max utilization of the steerable links under the current routes.",
            rv.summary.max_utilization,
        ),
    ];
    for (name, kind, help, value) in single {
        metric(name, kind, help, &[(String::new(), value)]);
    }
    let tiers: Vec<(String, f64)> = rv
        .tiers
        .iter()
        .map(|t| (format!("{{group=\"{}\"}}", t.group), t.max))
        .collect();
    metric(
        "fabricsim_group_max_link_utilization",
        "gauge",
        "Max link utilization per link group (lower->upper tier) under the current routes.",
        &tiers,
    );
    let responses: Vec<(String, f64)> = c
        .responses
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(code, n)| (format!("{{code=\"{code}\"}}"), *n as f64))
        .collect();
    metric(
        "fabricsim_http_responses_total",
        "counter",
        "HTTP responses by status code.",
        &responses,
    );
    out
}
