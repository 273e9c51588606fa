//! The solver against its own paths (scan, heap, sorted, in place) and textbook cases.

use super::*;

fn solve(capacity: &[f64], demands: &[(&[(u32, f64)], f64)]) -> Vec<f64> {
    let d: Vec<Demand<'_>> = demands
        .iter()
        .map(|&(links, cap)| Demand { links, cap })
        .collect();
    let mut rates = Vec::new();
    Solver::default().solve(capacity, &d, &mut rates);
    rates
}

const INF: f64 = f64::INFINITY;

#[test]
fn one_link_is_shared_equally() {
    assert_eq!(
        solve(
            &[12.0],
            &[(&[(0, 1.0)], INF), (&[(0, 1.0)], INF), (&[(0, 1.0)], INF)]
        ),
        vec![4.0; 3]
    );
}

#[test]
fn the_textbook_parking_lot() {
    // Links 0 and 1 of capacity 1; flow A crosses both, B only 0, C only 1: all get 1/2.
    let r = solve(
        &[1.0, 1.0],
        &[
            (&[(0, 1.0), (1, 1.0)], INF),
            (&[(0, 1.0)], INF),
            (&[(1, 1.0)], INF),
        ],
    );
    assert_eq!(r, vec![0.5, 0.5, 0.5]);
}

#[test]
fn a_bottlenecked_flow_leaves_room_for_others() {
    // Link 0 (cap 10) has A and B; link 1 (cap 2) has B and C. B and C get 1 on link 1,
    // then A takes the 9 left on link 0.
    let r = solve(
        &[10.0, 2.0],
        &[
            (&[(0, 1.0)], INF),
            (&[(0, 1.0), (1, 1.0)], INF),
            (&[(1, 1.0)], INF),
        ],
    );
    assert_eq!(r, vec![9.0, 1.0, 1.0]);
}

#[test]
fn caps_are_respected_and_the_rest_redistributed() {
    let r = solve(
        &[10.0],
        &[(&[(0, 1.0)], 1.0), (&[(0, 1.0)], INF), (&[(0, 1.0)], INF)],
    );
    assert_eq!(r, vec![1.0, 4.5, 4.5]);
}

/// A problem that lists each link's flows itself (by a scan), as the flow engine's in
/// place does from its link lists.
struct Listed<'a>(Dense<'a>);

impl Problem for Listed<'_> {
    fn links(&self) -> usize {
        self.0.links()
    }
    fn flows(&self) -> usize {
        self.0.flows()
    }
    fn capacity(&self, k: usize) -> f64 {
        self.0.capacity(k)
    }
    fn id(&self, k: usize) -> u32 {
        self.0.id(k)
    }
    fn cap(&self, f: usize) -> f64 {
        self.0.cap(f)
    }
    fn each_link(&self, f: usize, visit: impl FnMut(u32, f64)) {
        self.0.each_link(f, visit);
    }
    const LISTS_FLOWS: bool = true;
    fn flows_on(&self, k: usize, out: &mut Vec<u32>) {
        out.clear();
        for f in 0..self.0.flows() {
            let on = self.0.flow_ids(f).iter().filter(|&&j| j as usize == k);
            out.extend(on.map(|_| f as u32));
        }
    }
}

fn bits(r: &[f64]) -> Vec<u64> {
    r.iter().map(|x| x.to_bits()).collect()
}

/// The tests' random numbers: a 64-bit linear congruential generator (Knuth's MMIX
/// constants).
struct Lcg(u64);

impl Lcg {
    fn step(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0
    }

    /// A number below `n`, from the generator's high bits.
    fn below(&mut self, n: u64) -> u64 {
        (self.step() >> 33) % n
    }
}

/// What random problems are made of: each link's capacity, each flow's cap and weight on
/// a link from a few values (full of ties), each flow crossing a link one time in `one_in`.
struct Shape {
    capacities: &'static [f64],
    one_in: u64,
    weights: &'static [f64],
    caps: &'static [f64],
    id: fn(u32) -> u32,
}

/// A problem's arrays, owned.
struct Owned {
    capacity: Vec<f64>,
    ids: Vec<u32>,
    start: Vec<u32>,
    links: Vec<u32>,
    weights: Vec<f64>,
    scale: Vec<f64>,
    caps: Vec<f64>,
}

impl Owned {
    /// `n` flows over `m` links drawn as `shape` says (no scale).
    fn random(rng: &mut Lcg, m: usize, n: usize, shape: &Shape) -> Owned {
        let pick = |rng: &mut Lcg, of: &[f64]| of[rng.below(of.len() as u64) as usize];
        let capacity = (0..m).map(|_| pick(rng, shape.capacities)).collect();
        let (mut start, mut links, mut weights, mut caps) =
            (vec![0u32], Vec::new(), Vec::new(), Vec::new());
        for _ in 0..n {
            for k in 0..m as u32 {
                if rng.below(shape.one_in) == 0 {
                    links.push(k);
                    weights.push(pick(rng, shape.weights));
                }
            }
            start.push(links.len() as u32);
            caps.push(pick(rng, shape.caps));
        }
        Owned {
            capacity,
            ids: (0..m as u32).map(shape.id).collect(),
            start,
            links,
            weights,
            scale: Vec::new(),
            caps,
        }
    }

    fn dense(&self) -> Dense<'_> {
        Dense {
            capacity: &self.capacity,
            ids: &self.ids,
            start: &self.start,
            links: &self.links,
            weights: &self.weights,
            scale: &self.scale,
            caps: &self.caps,
        }
    }
}

/// The scan for small problems must pick the same events as the heap, so give the same
/// rates to the last bit, and so must the heap where the problem lists links' flows
/// itself (which keys every link, where the indexed keys only each flow's first link of
/// its own): checked on random problems full of ties (capacities and caps from a few
/// values, weights of a third) and of links crossed by one flow.
#[test]
fn small_problems_solve_as_the_heap_does() {
    let mut rng = Lcg(7);
    let shape = Shape {
        capacities: &[0.0, 1.0, 3.0, 10.0],
        one_in: 3,
        weights: &[1.0, 1.0 / 3.0, 0.5],
        caps: &[f64::INFINITY, 1.0, 2.5],
        id: |k| (k * 7) % 11,
    };
    let (mut solver, mut small, mut heap, mut listed) =
        (Solver::default(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..20_000 {
        let m = 1 + rng.below(10) as usize;
        let n = 1 + rng.below(SMALL as u64) as usize;
        let mut q = Owned::random(&mut rng, m, n, &shape);
        // Cohorts of one to three flows.
        q.scale = (0..n)
            .map(|_| [1.0, 2.0, 3.0][rng.below(3) as usize])
            .collect();
        let p = q.dense();
        let Owned {
            capacity,
            start,
            links,
            weights,
            scale,
            caps,
            ..
        } = &q;
        solver.prepare(m, n, &mut small);
        solver.solve_small(p, &mut small);
        solver.prepare(m, n, &mut heap);
        solver.solve_heap(&p, &mut heap);
        // The same problem listing each link's flows itself, as the engine's in place.
        solver.prepare(m, n, &mut listed);
        solver.solve_heap(&Listed(p), &mut listed);
        assert_eq!(bits(&listed), bits(&heap));
        assert_eq!(
            bits(&small),
            bits(&heap),
            "{capacity:?} {start:?} {links:?} {weights:?} {scale:?} {caps:?}"
        );
    }
}

/// Sorted at the first pop (from none to thousands of events), events come out greatest
/// first, as a heap gives them.
#[test]
fn sorted_events_pop_in_heap_order() {
    let mut rng = Lcg(11);
    let mut sorted = Sorted::default();
    for n in [0usize, 1, 127, 128, 129, 1_000, 5_000] {
        sorted.clear();
        let mut all = Vec::new();
        for k in 0..n as u32 {
            let level = (rng.step() >> 40) as u32 % 50;
            let e = Event::new(f64::from(level), k % 7, k);
            sorted.push(e);
            all.push(e);
        }
        all.sort_unstable_by(|a, b| b.cmp(a));
        let popped: Vec<Event> = std::iter::from_fn(|| sorted.pop()).collect();
        assert!(popped == all, "{n} events");
    }
}

/// Problems of hundreds of links and tens of flows (hundreds of sorted events, many
/// links crossed by one flow) get the same rates to the last bit whether the solver keys
/// each flow's first own link and sorts, or keys every link into a heap (as in place).
#[test]
fn large_problems_solve_alike_sorted_or_in_a_heap() {
    let mut rng = Lcg(5);
    let shape = Shape {
        capacities: &[1.0, 3.0, 10.0, 40.0],
        one_in: 8,
        weights: &[1.0, 0.25, 0.5],
        caps: &[f64::INFINITY, 2.0, 7.5],
        id: |k| (k * 7919) % 7_001,
    };
    let (mut solver, mut sorted, mut heap) = (Solver::default(), Vec::new(), Vec::new());
    for _ in 0..200 {
        let m = 100 + rng.below(700) as usize;
        let n = 5 + rng.below(40) as usize;
        let q = Owned::random(&mut rng, m, n, &shape);
        let p = q.dense();
        solver.prepare(m, n, &mut sorted);
        solver.solve_heap(&p, &mut sorted);
        solver.prepare(m, n, &mut heap);
        solver.solve_heap(&Listed(p), &mut heap);
        assert_eq!(bits(&sorted), bits(&heap));
    }
}

#[test]
fn weights_count_a_spread_flow_in_part() {
    // A spread flow puts half its rate on each of two links of capacity 1; a single-path
    // flow shares link 0 with it. At common rate x, link 0 carries x/2 + x = 1, so both
    // freeze at x = 2/3 (link 1 then carries only 1/3).
    let r = solve(
        &[1.0, 1.0],
        &[(&[(0, 0.5), (1, 0.5)], INF), (&[(0, 1.0)], INF)],
    );
    assert!(
        (r[0] - 2.0 / 3.0).abs() < 1e-12 && (r[1] - 2.0 / 3.0).abs() < 1e-12,
        "{r:?}"
    );
}
