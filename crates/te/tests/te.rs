//! TE solvers against hand-computed optima, bounds between them, link state respected, the
//! path-table policy, the demand CSV, and TE against ECMP on a Meta AI Zone.

use fabricsim_routing::{
    cables_named, FlowKey, HashConfig, LinkCondition, LinkState, Policy, Route, Router,
};
use fabricsim_te::report::{hashed_loads, tier_utilization};
use fabricsim_te::solve::SolveOptions;
use fabricsim_te::{solve, Instance, PathTable, Solver, TePolicy, TrafficMatrix};
use fabricsim_topology::{presets, NodeId, Topology};

const GBPS: f64 = 1e9 / 8.0;

fn leaf_spine() -> Topology {
    presets::build("leaf-spine", &[("k".into(), "4".into())]).unwrap()
}

fn gpu(topo: &Topology, name: &str) -> NodeId {
    topo.node_by_name(name).unwrap()
}

/// On a 4-leaf, 2-spine fabric of 400G links: host0 -> host2 at 300G, host1 -> host3 at 100G
/// and host0 -> host4 at 100G. Leaf0's two uplinks carry 500G between them: split evenly,
/// 0.625 (the fractional optimum); unsplit, the best is 300G alone on one uplink, 0.75.
fn three_demands(topo: &Topology) -> TrafficMatrix {
    TrafficMatrix::from_rates([
        (
            gpu(topo, "host0/gpu0"),
            gpu(topo, "host2/gpu0"),
            300.0 * GBPS,
        ),
        (
            gpu(topo, "host1/gpu0"),
            gpu(topo, "host3/gpu0"),
            100.0 * GBPS,
        ),
        (
            gpu(topo, "host0/gpu0"),
            gpu(topo, "host4/gpu0"),
            100.0 * GBPS,
        ),
    ])
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

#[test]
fn solvers_meet_the_hand_computed_optima() {
    let topo = leaf_spine();
    let tm = three_demands(&topo);
    let inst = Instance::new(&topo, &LinkState::new(&topo), &tm).unwrap();
    let opts = SolveOptions::default();
    // The interior point (lp) and the simplex (microlp) reach the same optimum.
    for solver in [Solver::Lp, Solver::Microlp] {
        let lp = solve(&inst, solver, &opts).unwrap();
        assert!(
            close(lp.fractional.unwrap(), 0.625),
            "{solver:?}: {:?}",
            lp.fractional
        );
        assert!(close(lp.lower_bound.unwrap(), 0.625));
    }
    for solver in [Solver::Cspf, Solver::Lp, Solver::Microlp, Solver::Mwu] {
        let s = solve(&inst, solver, &opts).unwrap();
        assert!(
            close(s.max_utilization, 0.75),
            "{solver:?}: {}",
            s.max_utilization
        );
        assert_eq!(s.paths.len(), 3);
    }
    // The approximation stays within its stated bound of the LP optimum, and its lower bound
    // is a true one.
    let eps = opts.mwu.epsilon;
    let mwu = solve(&inst, Solver::Mwu, &opts).unwrap();
    let (frac, bound) = (mwu.fractional.unwrap(), mwu.lower_bound.unwrap());
    assert!(
        frac <= 0.625 * (1.0 + eps).powi(3) + 1e-9,
        "mwu fractional {frac}"
    );
    assert!(frac >= 0.625 - 1e-9, "a routing below the optimum: {frac}");
    assert!(
        bound <= 0.625 + 1e-9 && bound >= 0.625 / (1.0 + eps).powi(3),
        "bound {bound}"
    );
}

#[test]
fn te_never_routes_over_a_down_link() {
    let topo = leaf_spine();
    let mut state = LinkState::new(&topo);
    let down = cables_named(&topo, "leaf0--spine0").unwrap();
    for &l in &down {
        state.set_cable(l, LinkCondition::Down);
    }
    let inst = Instance::new(&topo, &state, &three_demands(&topo)).unwrap();
    for solver in [Solver::Cspf, Solver::Lp, Solver::Microlp, Solver::Mwu] {
        let s = solve(&inst, solver, &SolveOptions::default()).unwrap();
        for path in &s.paths {
            assert!(
                path.iter().all(|&l| state.is_up(l)),
                "{solver:?} crosses a down link"
            );
        }
        // All 500G now leave leaf0 through spine1.
        assert!(
            close(s.max_utilization, 1.25),
            "{solver:?}: {}",
            s.max_utilization
        );
    }
}

#[test]
fn the_table_pins_pairs_and_falls_back_to_ecmp_where_its_path_is_down() {
    let topo = leaf_spine();
    let state = LinkState::new(&topo);
    let inst = Instance::new(&topo, &state, &three_demands(&topo)).unwrap();
    let sol = solve(&inst, Solver::Cspf, &SolveOptions::default()).unwrap();
    let table = PathTable::new(&inst, &sol);
    assert_eq!(table.len(), 3);
    let (src, dst) = (gpu(&topo, "host0/gpu0"), gpu(&topo, "host2/gpu0"));
    let pinned = table.path(src, dst).unwrap().to_vec();
    let mut router =
        Router::with_policy(&topo, Box::new(TePolicy::new(table, HashConfig::default())));
    // Every QP of the connection takes the programmed path.
    for qp in 0..8 {
        let route = router
            .route(&state, &FlowKey::connection(src, dst, qp, 0))
            .unwrap();
        assert!(matches!(&route, Route::Path { links, .. } if *links == pinned));
    }
    // A pair the table does not know goes by ECMP.
    let (a, b) = (gpu(&topo, "host5/gpu0"), gpu(&topo, "host7/gpu0"));
    let key = FlowKey::connection(a, b, 0, 0);
    let ecmp = Router::new(&topo, Policy::Ecmp, HashConfig::default())
        .route(&state, &key)
        .unwrap();
    assert_eq!(router.route(&state, &key).unwrap(), ecmp);
    // The programmed path's uplink goes down: the underlay routes around it until TE
    // recomputes.
    let mut broken = state.clone();
    broken.set_cable(pinned[2], LinkCondition::Down);
    let route = router
        .route(&broken, &FlowKey::connection(src, dst, 0, 0))
        .unwrap();
    assert!(route.incidence().iter().all(|&(l, _)| broken.is_up(l)));
}

#[test]
fn te_flattens_a_ring_job_that_ecmp_piles_up() {
    // 128 GPUs on a Meta AI Zone with 1:1 uplinks, a rail-aligned ring job: 16 GPUs of a rack
    // send across the rack boundary at line rate. ECMP hashes several onto one uplink; TE
    // gives each its own.
    let topo = presets::build("meta-ai-zone", &[("uplinks".into(), "1:1".into())]).unwrap();
    let gpus = &topo.gpus()[..128];
    // Each GPU sends to its rail peer in the next rack (the inter-rack edges of 16 rings).
    let rows = (0..128).map(|i| (gpus[i], gpus[(i + 16) % 128], 1u64));
    let tm = TrafficMatrix::from_bytes(&topo, rows);
    let state = LinkState::new(&topo);
    let inst = Instance::new(&topo, &state, &tm).unwrap();
    let hash = HashConfig::default();
    let ecmp = inst.max_utilization(&hashed_loads(&inst, &state, Policy::Ecmp, hash, 1).unwrap());
    let eecmp =
        inst.max_utilization(&hashed_loads(&inst, &state, Policy::EEcmp, hash, 16).unwrap());
    let te = solve(&inst, Solver::Cspf, &SolveOptions::default()).unwrap();
    assert!(close(te.max_utilization, 1.0), "te {}", te.max_utilization);
    assert!(ecmp >= 2.0, "ecmp {ecmp}");
    assert!(eecmp > te.max_utilization, "eecmp {eecmp}");
    // Flatter: under TE every uplink of the job's racks carries exactly one GPU's traffic.
    let tiers = tier_utilization(&inst, &inst.loads(&te.paths));
    let up = tiers.iter().find(|t| t.group == "rtsw->ctsw").unwrap();
    assert!(close(up.max, 1.0) && close(up.mean, 1.0), "{up:?}");
}

#[test]
fn same_inputs_same_table() {
    let topo = presets::build("meta-ai-zone", &[]).unwrap();
    let gpus = topo.gpus();
    let rows: Vec<_> = (0..256)
        .map(|i| (gpus[i], gpus[(i * 37 + 101) % 512], 1u64 + i as u64))
        .collect();
    let tm = TrafficMatrix::from_bytes(&topo, rows);
    let state = LinkState::new(&topo);
    for solver in [Solver::Cspf, Solver::Mwu] {
        let a = solve(
            &Instance::new(&topo, &state, &tm).unwrap(),
            solver,
            &SolveOptions::default(),
        )
        .unwrap();
        let b = solve(
            &Instance::new(&topo, &state, &tm).unwrap(),
            solver,
            &SolveOptions::default(),
        )
        .unwrap();
        assert_eq!(a.paths, b.paths);
        assert_eq!(a.max_utilization.to_bits(), b.max_utilization.to_bits());
    }
}

#[test]
fn volumes_scale_to_the_busiest_gpu_at_line_rate() {
    let topo = leaf_spine();
    let (a, b, c) = (
        gpu(&topo, "host0/gpu0"),
        gpu(&topo, "host2/gpu0"),
        gpu(&topo, "host4/gpu0"),
    );
    // host0 sends 3 units, the most of any GPU: it gets its NIC's 400G.
    let tm = TrafficMatrix::from_bytes(&topo, [(a, b, 2), (a, c, 1), (b, c, 1)]);
    let rate = |s, d| {
        tm.demands
            .iter()
            .find(|x| (x.src, x.dst) == (s, d))
            .unwrap()
            .rate
    };
    assert!(close(rate(a, b), 400.0 * GBPS * 2.0 / 3.0));
    assert!(close(rate(a, c) + rate(b, c), 400.0 * GBPS * 2.0 / 3.0));
}

#[test]
fn the_demand_csv_says_what_is_wrong_and_where() {
    let topo = leaf_spine();
    let ok =
        "# a comment\nsrc,dst,rate\nhost0/gpu0,host2/gpu0,100Gbps\nhost0/gpu0,host2/gpu0,1.25e10\n";
    let tm = TrafficMatrix::read_csv(ok, &topo).unwrap();
    assert_eq!(tm.demands.len(), 1);
    assert!(close(tm.demands[0].rate, 2.5e10));
    let err = |text: &str| {
        TrafficMatrix::read_csv(text, &topo)
            .unwrap_err()
            .to_string()
    };
    assert!(err("src,dst\n").contains("line 1: expected the header src,dst,rate or src,dst,bytes"));
    assert!(err("src,dst,rate\nhost0/gpu0,host9/gpu0,1Gbps\n")
        .contains("line 2: dst: the fabric has no node `host9/gpu0`"));
    assert!(
        err("src,dst,rate\nhost0/gpu0,leaf0,1Gbps\n").contains("line 2: dst: `leaf0` is not a GPU")
    );
    assert!(err("src,dst,bytes\nhost0/gpu0,host2/gpu0,lots\n").contains("line 2: bytes:"));
    assert!(err("src,dst,rate\nhost0/gpu0,host2/gpu0\n").contains("line 2: expected 3 columns"));
    assert!(err("src,dst,rate\n").contains("empty"));
}

/// The exact LP through HiGHS: the same optimum as microlp's and Clarabel's on the
/// hand-computed instance and on a 128-GPU ring job across racks of a Meta AI Zone with two
/// CTSWs down.
#[cfg(feature = "highs")]
#[test]
fn highs_and_microlp_find_the_same_optimum() {
    let opts = SolveOptions::default();
    let topo = leaf_spine();
    let inst = Instance::new(&topo, &LinkState::new(&topo), &three_demands(&topo)).unwrap();
    let h = solve(&inst, Solver::Highs, &opts).unwrap();
    assert_eq!(h.solver, Solver::Highs);
    assert!(close(h.fractional.unwrap(), 0.625), "{:?}", h.fractional);
    assert!(close(h.max_utilization, 0.75), "{}", h.max_utilization);

    let topo = presets::build("meta-ai-zone", &[("uplinks".into(), "1:1".into())]).unwrap();
    let gpus = &topo.gpus()[..128];
    let rows = (0..128).map(|i| (gpus[i], gpus[(i + 16) % 128], 1u64 + (i % 5) as u64));
    let tm = TrafficMatrix::from_bytes(&topo, rows);
    let mut state = LinkState::new(&topo);
    for name in ["zone0/ctsw0", "zone0/ctsw1"] {
        let cables = cables_named(&topo, name).unwrap();
        for &l in &cables {
            state.set_cable(l, LinkCondition::Down);
        }
    }
    let inst = Instance::new(&topo, &state, &tm).unwrap();
    let h = solve(&inst, Solver::Highs, &opts).unwrap();
    for other in [Solver::Microlp, Solver::Lp] {
        let o = solve(&inst, other, &opts).unwrap();
        assert!(
            close(h.fractional.unwrap(), o.fractional.unwrap()),
            "highs {:?}, {other:?} {:?}",
            h.fractional,
            o.fractional
        );
    }
    for path in &h.paths {
        assert!(
            path.iter().all(|&l| state.is_up(l)),
            "a path over a down link"
        );
    }
    // Its single-path table is no better than the bound it reports.
    assert!(h.max_utilization >= h.lower_bound.unwrap() - 1e-9);
}

#[cfg(not(feature = "highs"))]
#[test]
fn highs_without_the_feature_says_how_to_get_it() {
    let topo = leaf_spine();
    let inst = Instance::new(&topo, &LinkState::new(&topo), &three_demands(&topo)).unwrap();
    assert!(!Solver::Highs.available());
    let err = solve(&inst, Solver::Highs, &SolveOptions::default()).unwrap_err();
    assert!(err.to_string().contains("--features highs"), "{err}");
}
