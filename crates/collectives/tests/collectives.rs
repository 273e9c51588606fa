//! Collectives against closed forms, conservation of bytes, step vs pipelined agreement, and
//! the routing story of Meta's RoCE fabric (Gangidi et al. 2024).

use fabricsim_collectives::bench::{run_size, Bench, Row};
use fabricsim_collectives::hardware::roce_efficiency;
use fabricsim_collectives::placement::{place, Placement};
use fabricsim_collectives::qp_window::NCCL_STEPS;
use fabricsim_collectives::schedule::Path;
use fabricsim_collectives::{
    plan, Algorithm, Collective, Fidelity, Generation, PlanError, Protocol, QpMode, Ranks, Request,
    Transport, DEFAULT_CHUNK,
};
use fabricsim_routing::{cables_named, HashConfig, Policy};
use fabricsim_te::{Routing, Solver};
use fabricsim_topology::{presets, Topology};

fn zone() -> Topology {
    presets::build("meta-ai-zone", &[("uplinks".into(), "1:1".into())]).unwrap()
}

fn ranks(topo: &Topology, n: usize, placement: Placement) -> Ranks {
    Ranks::new(topo, place(topo, n, placement).unwrap()).unwrap()
}

fn bench(
    op: Collective,
    algorithm: Algorithm,
    routing: Routing,
    qps: u32,
    fidelity: Fidelity,
) -> Bench {
    Bench {
        op,
        algorithm: Some(algorithm),
        protocol: Some(Protocol::Simple),
        channels: 8,
        chunk: DEFAULT_CHUNK,
        fidelity,
        transport: Transport {
            protocol: Protocol::Simple,
            qps,
            qp_mode: QpMode::Split,
            seed: 0,
            gpu: Generation::H100,
        },
        routing,
        hash: HashConfig::default(),
        down: Vec::new(),
        path_selection: Default::default(),
        dtype: ("float", 4),
        full_detail: false,
        keep_links: false,
        link_figures: true,
    }
}

fn run(topo: &Topology, r: &Ranks, b: &Bench, size: u64) -> Row {
    run_size(topo, r, b, size).unwrap()
}

const GIB: u64 = 1 << 30;

#[test]
fn uncongested_ring_all_reduce_matches_the_closed_form() {
    // 16 GPUs on two hosts under one RTSW, 8 channels: each channel leaves each host through
    // its own 400G NIC, after an NVLink hop from the host's last rank to the entry GPU (PXN),
    // so each GPU's NVLink port carries one edge of every channel.
    let topo = zone();
    let r = ranks(&topo, 16, Placement::Contiguous);
    let n = 16.0;
    let nvlink = 450e9 * Generation::H100.nvlink_efficiency();
    let nic = 50e9 * roce_efficiency();
    let edge_rate = (nvlink / 8.0).min(nic);
    // NCCL's latency model: 2(h − 1) = 2 network steps at 14 µs plus the longest edge's path
    // (NVLink to the entry GPU 2 × 25 ns, PCIe 100 ns, NIC–RTSW–NIC 2 × 500 ns, PCIe), the
    // other 28 steps at NVLink's 3.4 µs (above the 3 µs proxy overhead) plus 2 × 25 ns.
    let latency_us = 8.4 + 2.0 * (14.0 + 1.25) + 28.0 * (3.4 + 0.05);
    let drain_us = 2.0 * (n - 1.0) / n * GIB as f64 / (8.0 * edge_rate) * 1e6;
    let expected = latency_us + drain_us;
    let time = |fidelity| {
        run(
            &topo,
            &r,
            &bench(
                Collective::AllReduce,
                Algorithm::Ring,
                Routing::Hashed(Policy::Spray),
                1,
                fidelity,
            ),
            GIB,
        )
    };
    let pipelined = time(Fidelity::Pipelined);
    let err = (pipelined.time_us - expected).abs() / expected;
    assert!(err < 0.001, "{} µs vs {expected} µs", pipelined.time_us);
    // Step fidelity drains as fast and hides up to the latency (see the next test).
    let step = time(Fidelity::Step).time_us;
    assert!(
        step <= expected * 1.01 && step >= drain_us * 0.99,
        "step {step} µs vs {expected} µs"
    );
    // nccl-tests' bus bandwidth: the NVLink share of eight channels, 370.8 GB/s.
    assert!(
        (pipelined.busbw_gbps - 8.0 * edge_rate / 1e9).abs() < 10.0,
        "{pipelined:?}"
    );
}

#[test]
fn link_figures_left_out_change_nothing_else() {
    // Two hosts under different RTSWs, hashed: the busiest group is one between switches.
    let topo = zone();
    let r = ranks(&topo, 32, Placement::Contiguous);
    let with = bench(
        Collective::AllReduce,
        Algorithm::Ring,
        Routing::Hashed(Policy::Ecmp),
        1,
        Fidelity::Pipelined,
    );
    let without = Bench {
        link_figures: false,
        ..with.clone()
    };
    let (a, b) = (run(&topo, &r, &with, GIB), run(&topo, &r, &without, GIB));
    let busiest = a.busiest.clone().expect("asked for");
    assert!(busiest.max_link_utilization > 0.0, "{busiest:?}");
    assert!(b.busiest.is_none());
    assert_eq!(Row { busiest: None, ..a }, b);
}

#[test]
fn all_gather_and_reduce_scatter_take_half_the_all_reduce_steps() {
    let topo = zone();
    let r = ranks(&topo, 16, Placement::Contiguous);
    let n = 16;
    let size = 16 * 8 * 4096;
    for (op, steps) in [
        (Collective::AllReduce, 2 * (n - 1)),
        (Collective::AllGather, n - 1),
        (Collective::ReduceScatter, n - 1),
    ] {
        let s = plan(&request(&r, op, Algorithm::Ring, size, Fidelity::Step)).unwrap();
        // One transfer per rank per step per channel.
        assert_eq!(s.len(), steps * n * 8, "{op:?}");
    }
    // Halving-doubling: 2 log2 n exchange steps per channel; recursive doubling log2 n.
    let hd = plan(&request(
        &r,
        Collective::AllReduce,
        Algorithm::HalvingDoubling,
        size,
        Fidelity::Step,
    ))
    .unwrap();
    assert_eq!(hd.groups.len(), 2 * 4 * 8);
    let rd = plan(&request(
        &r,
        Collective::AllReduce,
        Algorithm::RecursiveDoubling,
        size,
        Fidelity::Step,
    ))
    .unwrap();
    assert_eq!(rd.groups.len(), 4 * 8);
}

fn request<'a>(
    r: &'a Ranks,
    op: Collective,
    algorithm: Algorithm,
    bytes: u64,
    fidelity: Fidelity,
) -> Request<'a> {
    Request {
        op,
        bytes,
        ranks: r,
        algorithm,
        channels: 8,
        chunk: DEFAULT_CHUNK,
        fidelity,
        sizes: None,
    }
}

#[test]
fn every_algorithm_moves_the_bytes_its_definition_implies() {
    let topo = zone();
    let r = ranks(&topo, 16, Placement::Contiguous);
    let n = 16u64;
    let s = n * 8 * 4096 * 3; // divisible by ranks × channels: pieces are equal
    let per_rank = |op, algo, fidelity| {
        let sched = plan(&request(&r, op, algo, s, fidelity)).unwrap();
        sched.volumes(&r)
    };
    for fidelity in [Fidelity::Step, Fidelity::Pipelined] {
        for (op, algo, sent) in [
            (Collective::AllReduce, Algorithm::Ring, 2 * (n - 1) * s / n),
            (
                Collective::AllReduce,
                Algorithm::HalvingDoubling,
                2 * (n - 1) * s / n,
            ),
            (
                Collective::AllReduce,
                Algorithm::Hierarchical,
                2 * (n - 1) * s / n,
            ),
            (Collective::AllReduce, Algorithm::RecursiveDoubling, 4 * s),
            (Collective::AllGather, Algorithm::Ring, (n - 1) * s / n),
            (
                Collective::AllGather,
                Algorithm::RecursiveDoubling,
                (n - 1) * s / n,
            ),
            (Collective::ReduceScatter, Algorithm::Ring, (n - 1) * s / n),
            (
                Collective::ReduceScatter,
                Algorithm::HalvingDoubling,
                (n - 1) * s / n,
            ),
            (Collective::AllToAll, Algorithm::Direct, (n - 1) * s / n),
            (Collective::AllToAll, Algorithm::Pxn, (n - 1) * s / n),
            (Collective::SendRecv, Algorithm::Direct, s),
        ] {
            let (out, inn) = per_rank(op, algo, fidelity);
            assert!(
                out.iter().all(|&b| b == sent),
                "{op:?} {algo:?} {fidelity:?}: {out:?} vs {sent}"
            );
            assert_eq!(out.iter().sum::<u64>(), inn.iter().sum::<u64>());
        }
        // Trees: every edge carries the buffer up and down; chains: once, n - 1 edges.
        let (out, _) = per_rank(Collective::AllReduce, Algorithm::Tree, fidelity);
        assert_eq!(out.iter().sum::<u64>(), 2 * (n - 1) * s);
        let (out, _) = per_rank(Collective::Broadcast, Algorithm::Ring, fidelity);
        assert_eq!(out.iter().sum::<u64>(), (n - 1) * s);
        assert_eq!(out[0], s, "the root sends the whole buffer");
        let (_, inn) = per_rank(Collective::Gather, Algorithm::Direct, fidelity);
        assert_eq!(inn[0], (n - 1) * s / n);
    }
    // NVLS inside one host: S + S/n through the switch each way per rank.
    let host = ranks(&topo, 8, Placement::Contiguous);
    let sched = plan(&request(
        &host,
        Collective::AllReduce,
        Algorithm::Nvls,
        s,
        Fidelity::Step,
    ))
    .unwrap();
    let (up, down) = sched.volumes(&host);
    assert!(
        up.iter().chain(&down).all(|&b| b == s + s / 8),
        "{up:?} {down:?}"
    );
}

#[test]
fn step_and_pipelined_agree_where_nothing_is_congested() {
    // Pipelined fidelity adds each step's latency to the drain, as NCCL's model does; step
    // fidelity pays it per chunk on the critical path while other channels' transfers go on,
    // so it may hide up to that latency (docs/collectives.md). They agree to within the
    // latency, which the time of a tiny collective measures, and the tolerance.
    let topo = zone();
    let r = ranks(&topo, 32, Placement::Contiguous);
    for (op, algo, tolerance) in [
        (Collective::AllReduce, Algorithm::Ring, 0.01),
        (Collective::AllGather, Algorithm::Ring, 0.01),
        (Collective::AllReduce, Algorithm::Hierarchical, 0.01),
        (Collective::AllReduce, Algorithm::HalvingDoubling, 0.01),
        (Collective::AllToAll, Algorithm::Pxn, 0.01),
        (Collective::Barrier, Algorithm::Direct, 0.01),
        // Streamed chunks: the pipelined fill is modelled at line rate, not at the share of a
        // GPU's NVLink that channels leave each other (see exec.rs).
        (Collective::AllReduce, Algorithm::Tree, 0.2),
        (Collective::Broadcast, Algorithm::Ring, 0.2),
        (Collective::AllReduce, Algorithm::NvlsTree, 0.2),
    ] {
        let t = |f, size| {
            run(
                &topo,
                &r,
                &bench(op, algo, Routing::Hashed(Policy::Spray), 1, f),
                size,
            )
            .time_us
        };
        let (p, s) = (
            t(Fidelity::Pipelined, 64 << 20),
            t(Fidelity::Step, 64 << 20),
        );
        let latency = t(Fidelity::Pipelined, 4096);
        assert!(
            p - s >= -tolerance * s && p - s <= latency + tolerance * s,
            "{op:?} {algo:?}: pipelined {p} µs, step {s} µs, latency {latency} µs"
        );
    }
}

#[test]
fn the_routing_story_shows_in_the_numbers() {
    // Gangidi et al. (2024) on a 1:1 AI Zone: ECMP with one QP loses bus bandwidth to collisions,
    // E-ECMP with 16 QPs recovers it, spraying is the no-collision bound, pinning suffers when
    // uplinks go down.
    let topo = zone();
    let r = ranks(&topo, 128, Placement::Contiguous);
    let size = 4 * GIB;
    let busbw = |policy, qps, down: &[&str]| {
        let mut b = bench(
            Collective::AllReduce,
            Algorithm::Ring,
            policy,
            qps,
            Fidelity::Pipelined,
        );
        b.channels = 16;
        b.down = down
            .iter()
            .flat_map(|d| cables_named(&topo, d).unwrap())
            .collect();
        run(&topo, &r, &b, size).busbw_gbps
    };
    let spray = busbw(Routing::Hashed(Policy::Spray), 1, &[]);
    let ecmp = busbw(Routing::Hashed(Policy::Ecmp), 1, &[]);
    let eecmp16 = busbw(Routing::Hashed(Policy::EEcmp), 16, &[]);
    assert!(ecmp < 0.8 * spray, "ecmp {ecmp} vs spray {spray}");
    assert!(
        eecmp16 > 0.95 * spray,
        "eecmp/16 {eecmp16} vs spray {spray}"
    );
    assert!(
        busbw(Routing::Hashed(Policy::EEcmp), 4, &[])
            > busbw(Routing::Hashed(Policy::EEcmp), 1, &[])
    );
    let down = [
        "zone0/rack1/rtsw--zone0/ctsw0",
        "zone0/rack1/rtsw--zone0/ctsw5",
    ];
    let pin = busbw(Routing::Hashed(Policy::Pin), 1, &[]);
    assert!(
        (pin - spray).abs() < 1e-6 * spray,
        "full racks, no failure: pinning is perfect"
    );
    assert!(busbw(Routing::Hashed(Policy::Pin), 1, &down) < 0.8 * pin);
    // Centralized TE places every ring edge on its own uplink: as good as spraying, and with
    // two uplinks down it routes around them from its global view.
    let te = busbw(Routing::Te(Solver::Cspf), 1, &[]);
    let te_down = busbw(Routing::Te(Solver::Cspf), 1, &down);
    assert!(
        (te - spray).abs() < 1e-6 * spray,
        "te {te} vs spray {spray}"
    );
    let spray_down = busbw(Routing::Hashed(Policy::Spray), 1, &down);
    assert!(
        te_down > 0.999 * spray_down,
        "te {te_down} vs spray {spray_down}, uplinks down"
    );
    assert!(te_down > busbw(Routing::Hashed(Policy::Pin), 1, &down) / 0.8);
    // Ranks scattered one per host: every ring edge crosses the fabric and pinning collides.
    let scattered = ranks(&topo, 128, Placement::Random { seed: 3 });
    let mut b = bench(
        Collective::AllReduce,
        Algorithm::Ring,
        Routing::Hashed(Policy::Pin),
        1,
        Fidelity::Pipelined,
    );
    let pinned = run(&topo, &scattered, &b, GIB).busbw_gbps;
    b.routing = Routing::Hashed(Policy::Spray);
    assert!(pinned < 0.8 * run(&topo, &scattered, &b, GIB).busbw_gbps);
}

#[test]
fn round_robin_and_dynamic_send_whole_messages_and_split_splits_them() {
    // A chain broadcast over two hosts, step fidelity, 4 QPs, one channel. Split, each chunk
    // is 4 flows; round-robin and dynamic send each whole (up to 4 in flight on a connection:
    // `qp_window`'s tests).
    let topo = zone();
    let r = ranks(&topo, 16, Placement::Contiguous);
    let row = |mode| {
        let mut b = bench(
            Collective::Broadcast,
            Algorithm::Ring,
            Routing::Hashed(Policy::EEcmp),
            4,
            Fidelity::Step,
        );
        b.channels = 1;
        b.transport.qp_mode = mode;
        run(&topo, &r, &b, 64 << 20)
    };
    let (split, rr, dynamic) = (
        row(QpMode::Split),
        row(QpMode::RoundRobin),
        row(QpMode::Dynamic),
    );
    // Every chunk crosses each of the 15 edges; the one network edge splits each in 4.
    let chunks = (64 << 20) / DEFAULT_CHUNK;
    assert_eq!(rr.flows, 15 * chunks);
    assert_eq!(dynamic.flows, rr.flows);
    assert_eq!(split.flows, 14 * chunks + 4 * chunks);
    // Equal chunks leave their QPs in the order they went: dynamic takes the QP round-robin
    // would, and the two agree.
    assert_eq!(dynamic.time_us, rr.time_us);
}

#[test]
fn same_inputs_give_the_same_results() {
    let topo = zone();
    let r = ranks(&topo, 32, Placement::Fragmented { seed: 7 });
    let b = bench(
        Collective::AllToAllV,
        Algorithm::Pxn,
        Routing::Hashed(Policy::Ecmp),
        2,
        Fidelity::Step,
    );
    assert_eq!(run(&topo, &r, &b, 8 << 20), run(&topo, &r, &b, 8 << 20));
}

/// An all-to-all in closed form is the all-to-allv of the same pieces held one transfer at a
/// time: the same transfers, groups, waits and successors, and nothing held.
#[test]
fn an_all_to_all_in_closed_form_is_its_pairs_held_one_by_one() {
    let topo = zone();
    for (n, placement) in [
        (24, Placement::Contiguous),
        (20, Placement::Fragmented { seed: 3 }),
    ] {
        let r = ranks(&topo, n, placement);
        // Pieces that differ by a byte, each split unevenly over two channels.
        let bytes = (1 << 20) + 7;
        let pieces = fabricsim_collectives::schedule::split(bytes, n as u32);
        let sizes: Vec<u64> = (0..n).flat_map(|_| pieces.iter().copied()).collect();
        for algorithm in [Algorithm::Direct, Algorithm::Pxn] {
            for channels in [1, 2, 5] {
                for fidelity in [Fidelity::Pipelined, Fidelity::Step] {
                    let uniform = Request {
                        channels,
                        ..request(&r, Collective::AllToAll, algorithm, bytes, fidelity)
                    };
                    let v = Request {
                        op: Collective::AllToAllV,
                        sizes: Some(&sizes),
                        ..uniform
                    };
                    let (closed, held) = (plan(&uniform).unwrap(), plan(&v).unwrap());
                    let lanes = channels.min(2) as usize;
                    assert_eq!(closed.len(), n * (n - 1) * lanes);
                    assert_eq!((closed.held(), held.held()), (0, held.len()));
                    assert!(closed.transfers().eq(held.transfers()));
                    assert!(closed.sends().eq(held.sends()));
                    assert_eq!(closed.groups, held.groups);
                    assert_eq!(closed.starts(), held.starts());
                    for t in 0..closed.len() as u32 {
                        assert_eq!(closed.transfer(t), held.transfer(t));
                        assert_eq!(closed.waits(t), held.waits(t));
                        assert_eq!(closed.next(t), held.next(t));
                        assert_eq!(closed.has_prev(t), held.has_prev(t));
                        assert!(closed.dependents(t).eq(held.dependents(t)));
                    }
                    for g in 0..closed.groups.len() as u32 {
                        assert!(closed.after(g).is_empty() && held.after(g).is_empty());
                    }
                    if algorithm == Algorithm::Pxn {
                        // Some messages go through a proxy: the test sees the paths differ.
                        assert!(closed.transfers().any(|t| t.path != Path::Direct));
                    }
                }
            }
        }
    }
}

#[test]
fn plans_that_cannot_work_are_refused_with_a_reason() {
    let topo = zone();
    let r = ranks(&topo, 24, Placement::Contiguous);
    let err = |op, algo| plan(&request(&r, op, algo, 1 << 20, Fidelity::Pipelined)).unwrap_err();
    assert!(matches!(
        err(Collective::AllReduce, Algorithm::HalvingDoubling),
        PlanError::NeedsPowerOfTwo { n: 24, .. }
    ));
    assert!(matches!(
        err(Collective::AllReduce, Algorithm::Nvls),
        PlanError::NvlsSpansHosts { hosts: 3 }
    ));
    assert!(matches!(
        err(Collective::AllToAll, Algorithm::Ring),
        PlanError::Unsupported { .. }
    ));
    let g = topo.gpus()[0];
    assert!(matches!(
        Ranks::new(&topo, vec![g, g]),
        Err(PlanError::SharedGpu { rank: 1, .. })
    ));
    // Fragmented placement uses half of each rack's hosts.
    let f = ranks(&topo, 64, Placement::Fragmented { seed: 1 });
    assert_eq!(f.hosts().len(), 8);
}

#[test]
fn the_tuner_picks_low_latency_protocols_for_small_messages() {
    let topo = zone();
    let r = ranks(&topo, 64, Placement::Contiguous);
    let mut b = bench(
        Collective::AllReduce,
        Algorithm::Ring,
        Routing::Hashed(Policy::Spray),
        1,
        Fidelity::Pipelined,
    );
    b.algorithm = None;
    b.protocol = None;
    let small = run(&topo, &r, &b, 64 << 10);
    let large = run(&topo, &r, &b, GIB);
    assert!(small.tuned && small.protocol == "LL", "{small:?}");
    assert_eq!(large.protocol, "Simple");
}

/// Groups whose ranks lie alike on their hosts get the same plan whatever their GPUs (the
/// cluster orchestrator tunes and plans one group per layout and shares it); a different order
/// of the same GPUs is another layout.
#[test]
fn groups_laid_out_alike_are_planned_alike() {
    let topo = zone();
    let gpus = |hosts: [u32; 2]| -> Vec<_> {
        hosts
            .iter()
            .flat_map(|h| (0..8).map(move |g| format!("host{h}/gpu{g}")))
            .map(|name| topo.node_by_name(&name).unwrap())
            .collect()
    };
    let a = Ranks::new(&topo, gpus([0, 1])).unwrap();
    let b = Ranks::new(&topo, gpus([6, 3])).unwrap();
    assert!(a.same_layout(&b) && a.gpus() != b.gpus());
    for (op, algorithm) in [
        (Collective::AllReduce, Algorithm::Ring),
        (Collective::AllReduce, Algorithm::Tree),
        (Collective::AllToAll, Algorithm::Pxn),
    ] {
        let [pa, pb] =
            [&a, &b].map(|r| plan(&request(r, op, algorithm, 1 << 24, Fidelity::Step)).unwrap());
        assert!(pa.transfers().eq(pb.transfers()), "{op:?} {algorithm:?}");
        assert_eq!(pa.groups, pb.groups);
    }
    // Interleaved: rank 1 on the second host.
    let mut mixed = gpus([0, 1]);
    mixed.swap(1, 8);
    assert!(!a.same_layout(&Ranks::new(&topo, mixed).unwrap()));
}

/// A step ring's run reports its transfers done on the way, never fewer than before, and all
/// of them at the end; reporting changes nothing in the result.
#[test]
fn a_run_reports_its_progress_up_to_every_transfer() {
    let topo = zone();
    let r = ranks(&topo, 64, Placement::Contiguous);
    let mut b = bench(
        Collective::AllReduce,
        Algorithm::Ring,
        Routing::Hashed(Policy::Ecmp),
        1,
        Fidelity::Step,
    );
    b.channels = 2;
    let mut reports = Vec::new();
    let row =
        fabricsim_collectives::bench::run_size_with_progress(&topo, &r, &b, 64 << 20, &mut |p| {
            reports.push(p)
        })
        .unwrap();
    assert_eq!(row, run(&topo, &r, &b, 64 << 20));
    assert!(reports.len() > 1, "reports on the way, not only at the end");
    for w in reports.windows(2) {
        assert!(w[0].done <= w[1].done && w[0].at <= w[1].at);
        assert_eq!(w[0].total, w[1].total);
    }
    let last = reports.last().unwrap();
    assert!(last.total > 0);
    assert_eq!(last.done, last.total);
    assert!(reports.iter().any(|p| p.done > 0 && p.done < p.total));
}

/// Step fidelity holds a ring's transfers as they run, not the schedule: the schedule keeps a
/// ring's positions (no transfer of its own), and the run holds at most `NCCL_STEPS` + 1
/// transfers per ring edge (its receiver's slots and the one it sends), however many steps the
/// ring makes (2(n − 1) per edge, so n times more as n grows).
#[test]
fn a_step_ring_holds_its_transfers_in_flight_not_its_schedule() {
    use fabricsim_netsim::{FlowEngine, Network};
    use fabricsim_routing::Router;
    use std::sync::Arc;
    let topo = zone();
    let channels = 2;
    for n in [16, 64, 256] {
        let r = ranks(&topo, n, Placement::Contiguous);
        let mut req = request(
            &r,
            Collective::AllReduce,
            Algorithm::Ring,
            64 << 20,
            Fidelity::Step,
        );
        req.channels = channels;
        let sched = plan(&req).unwrap();
        let edges = n * channels as usize;
        assert_eq!(sched.len(), 2 * (n - 1) * edges);
        assert_eq!(sched.held(), 0, "{n} ranks: every transfer in closed form");
        let router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
        let mut net = Network::new(&topo, router, FlowEngine::new(&topo));
        let transport = bench(
            req.op,
            req.algorithm,
            Routing::Hashed(Policy::Ecmp),
            1,
            req.fidelity,
        )
        .transport;
        let outcome =
            fabricsim_collectives::exec::run(&mut net, Arc::new(sched), &req, transport).unwrap();
        assert_eq!(outcome.flows, 2 * (n as u64 - 1) * edges as u64);
        assert!(
            outcome.most_held <= (NCCL_STEPS as usize + 1) * edges,
            "{n} ranks: held {} transfers at once on {edges} ring edges",
            outcome.most_held
        );
        assert!(
            outcome.most_held >= edges / 2,
            "{n} ranks: the ring's edges run at once"
        );
    }
}

/// The same of a step tree all-reduce, a chain broadcast and an NVLS tree: the schedule keeps the edges a
/// chunk crosses, not the chunks. The run holds the transfers with a dependency met and not yet
/// arrived. A connection runs at most `NCCL_STEPS` chunks ahead of what its receiver has
/// forwarded (its slots), so chunks that wait at a host's head behind its slower network edge
/// stay that few: at most `NCCL_STEPS` + 1 per edge, with 64 chunks an edge or 256.
#[test]
fn a_step_tree_and_chain_hold_their_chunks_in_flight_not_their_schedule() {
    use fabricsim_netsim::{FlowEngine, Network};
    use fabricsim_routing::Router;
    use std::sync::Arc;
    let topo = zone();
    // Edges per channel on n ranks: a tree's up and down, a chain's hops, an NVLS tree's sends
    // into and out of each switch (the ranks', the heads' reduced copy and multicast) and its
    // host tree's up and down.
    type EdgesPerChannel = fn(usize) -> usize;
    let cases: [(Collective, Algorithm, EdgesPerChannel); 3] = [
        (Collective::AllReduce, Algorithm::Tree, |n| 2 * (n - 1)),
        (Collective::Broadcast, Algorithm::Ring, |n| n - 1),
        (Collective::AllReduce, Algorithm::NvlsTree, |n| {
            2 * n + 4 * (n / 8) - 2
        }),
    ];
    for (op, algorithm, edges_per_channel) in cases {
        for n in [16, 64, 256] {
            for size in [64u64 << 20, 256 << 20] {
                let r = ranks(&topo, n, Placement::Contiguous);
                let mut req = request(&r, op, algorithm, size, Fidelity::Step);
                req.channels = 2;
                let sched = plan(&req).unwrap();
                let chunks = (size / 2 / DEFAULT_CHUNK) as usize;
                let edges = edges_per_channel(n) * 2;
                assert_eq!(sched.len(), chunks * edges, "{op:?} on {n} ranks");
                assert_eq!(sched.held(), 0, "{op:?} on {n} ranks: in closed form");
                let router = Router::new(&topo, Policy::Ecmp, HashConfig::default());
                let mut net = Network::new(&topo, router, FlowEngine::new(&topo));
                let transport = bench(
                    op,
                    algorithm,
                    Routing::Hashed(Policy::Ecmp),
                    1,
                    Fidelity::Step,
                )
                .transport;
                let outcome =
                    fabricsim_collectives::exec::run(&mut net, Arc::new(sched), &req, transport)
                        .unwrap();
                assert_eq!(outcome.flows, (chunks * edges) as u64);
                assert!(
                    outcome.most_held <= (NCCL_STEPS as usize + 1) * edges,
                    "{op:?} on {n} ranks, {chunks} chunks: held {} transfers at once on {edges} edges",
                    outcome.most_held,
                );
            }
        }
    }
}
