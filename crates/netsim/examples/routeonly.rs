use fabricsim_routing::key::mix;
use fabricsim_routing::{FlowKey, HashConfig, Policy, Router, LinkState};
use fabricsim_topology::presets;

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let topo = presets::build("meta-cluster", &[]).expect("the default cluster");
    let gpus = topo.gpus();
    let state = LinkState::new(&topo);
    let mut router = Router::new(&topo, Policy::Ecmp, HashConfig { seed: 1, polarized: false });
    let started = std::time::Instant::now();
    let mut rng = 42u64;
    let mut uniform = || { rng = mix(rng); (rng >> 11) as f64 / (1u64 << 53) as f64 };
    let mut total = 0usize;
    for _ in 0..n {
        let _ = uniform();
        let src = gpus[(uniform() * gpus.len() as f64) as usize];
        let mut dst = gpus[(uniform() * gpus.len() as f64) as usize];
        if dst == src { dst = gpus[(src.0 as usize + 8) % gpus.len()]; }
        let _ = uniform();
        let (src, dst) = match std::env::var("SAME").as_deref() { Ok("both") => (gpus[0], gpus[20000]), Ok("src") => (gpus[0], if dst == gpus[0] {gpus[9]} else {dst}), Ok("dst") => (if src == gpus[20000] {gpus[9]} else {src}, gpus[20000]), _ => (src, dst) }; let r = router.route(&state, &FlowKey::connection(src, dst, 0, 1)).unwrap();
        total += r.incidence().len();
    }
    println!("{n} routes, {total} links, {:.2} s, switches {}", started.elapsed().as_secs_f64(), topo.switches().count());
}
