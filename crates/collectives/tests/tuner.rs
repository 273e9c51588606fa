//! The tuner predicts on the figures the simulation runs on: where nothing in the fabric is
//! congested, its predicted time and the simulated time agree within 2 % for every algorithm and
//! protocol, inside one host and across hosts, at latency- and bandwidth-bound sizes.

use fabricsim_collectives::bench::{round_size, run_size, Bench};
use fabricsim_collectives::hardware::link_efficiency;
use fabricsim_collectives::placement::{place, Placement};
use fabricsim_collectives::tuner::{predict, weigh};
use fabricsim_collectives::{
    Algorithm, Collective, Fidelity, Generation, Platform, Protocol, Ranks, Request,
};
use fabricsim_netsim::{FlowEngine, Network};
use fabricsim_routing::{HashConfig, Policy, Router};
use fabricsim_te::Routing;
use fabricsim_topology::{presets, Topology};

fn zone() -> Topology {
    presets::build("meta-ai-zone", &[("uplinks".into(), "1:1".into())]).unwrap()
}

/// The platform as `bench` sees it: routed under spray on an all-up network.
fn platform(topo: &Topology, ranks: &Ranks, gpu: Generation) -> Platform {
    let mut net = Network::new(
        topo,
        Router::new(topo, Policy::Spray, HashConfig::default()),
        FlowEngine::new(topo),
    );
    net.set_link_efficiency(link_efficiency(topo, gpu));
    Platform::of(topo, ranks, gpu)
        .with_network_path(&mut net, ranks)
        .unwrap()
}

fn cases(one_host: bool) -> Vec<(Collective, Algorithm)> {
    let mut c = vec![
        (Collective::AllReduce, Algorithm::Ring),
        (Collective::AllGather, Algorithm::Ring),
        (Collective::ReduceScatter, Algorithm::Ring),
        (Collective::Broadcast, Algorithm::Ring),
        (Collective::Reduce, Algorithm::Ring),
        (Collective::AllReduce, Algorithm::Tree),
        (Collective::AllReduce, Algorithm::HalvingDoubling),
        (Collective::AllReduce, Algorithm::RecursiveDoubling),
        (Collective::AllToAll, Algorithm::Direct),
        (Collective::SendRecv, Algorithm::Direct),
    ];
    if one_host {
        c.extend([
            (Collective::AllReduce, Algorithm::Nvls),
            (Collective::AllGather, Algorithm::Nvls),
            (Collective::ReduceScatter, Algorithm::Nvls),
        ]);
    } else {
        c.extend([
            (Collective::AllReduce, Algorithm::Hierarchical),
            (Collective::AllReduce, Algorithm::NvlsTree),
            (Collective::AllToAll, Algorithm::Pxn),
        ]);
    }
    c
}

#[test]
fn predicted_and_simulated_times_agree_where_nothing_is_congested() {
    let topo = zone();
    let mut worst = (0.0f64, String::new());
    let mut off = Vec::new();
    for gpus in [8, 16, 32] {
        let ranks = Ranks::new(&topo, place(&topo, gpus, Placement::Contiguous).unwrap()).unwrap();
        let p = platform(&topo, &ranks, Generation::H100);
        for (op, algorithm) in cases(gpus == 8) {
            for protocol in Protocol::ALL {
                if matches!(algorithm, Algorithm::Nvls | Algorithm::NvlsTree)
                    && protocol != Protocol::Simple
                {
                    continue;
                }
                for size in [1 << 20, 256 << 20] {
                    let mut bench = Bench::new(op);
                    bench.algorithm = Some(algorithm);
                    bench.protocol = Some(protocol);
                    bench.routing = Routing::Hashed(Policy::Spray);
                    let simulated = run_size(&topo, &ranks, &bench, size).unwrap().time_us;
                    let req = Request {
                        op,
                        bytes: round_size(op, size, ranks.len(), 4),
                        ranks: &ranks,
                        algorithm,
                        channels: bench.channels,
                        chunk: bench.chunk,
                        fidelity: Fidelity::Pipelined,
                        sizes: None,
                    };
                    let predicted = predict(&req, &p, protocol).unwrap();
                    let err = (predicted - simulated).abs() / simulated;
                    let case = format!(
                        "{gpus} GPUs {} {} {} {size} B: predicted {predicted:.1} µs, simulated {simulated:.1} µs",
                        op.name(),
                        algorithm.name(),
                        protocol.name()
                    );
                    if err > worst.0 {
                        worst = (err, case.clone());
                    }
                    if err >= 0.02 {
                        off.push(case);
                    }
                }
            }
        }
    }
    eprintln!("worst: {:.2} % ({})", worst.0 * 100.0, worst.1);
    assert!(off.is_empty(), "off by 2 % or more:\n{}", off.join("\n"));
}

#[test]
fn nvls_is_weighed_only_where_the_switch_has_it() {
    let topo = zone();
    let ranks = Ranks::new(&topo, place(&topo, 8, Placement::Contiguous).unwrap()).unwrap();
    let req = Request {
        op: Collective::AllReduce,
        bytes: 1 << 30,
        ranks: &ranks,
        algorithm: Algorithm::Nvls,
        channels: 16,
        chunk: fabricsim_collectives::DEFAULT_CHUNK,
        fidelity: Fidelity::Pipelined,
        sizes: None,
    };
    // NVLS runs Simple only.
    let h100 = weigh(&req, &platform(&topo, &ranks, Generation::H100));
    assert_eq!(h100.len(), 1);
    assert_eq!(h100[0].protocol, Protocol::Simple);
    // A100's NVSwitch has no NVLS: the tuner's candidates leave it out.
    let (best, all) =
        fabricsim_collectives::tuner::choose(&req, &platform(&topo, &ranks, Generation::A100));
    assert!(all.iter().all(|c| c.algorithm != Algorithm::Nvls));
    assert_ne!(best.algorithm, Algorithm::Nvls);
}
