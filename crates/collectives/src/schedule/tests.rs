//! The schedule's transfers held and in closed form.

use super::*;
use crate::qp_window::NCCL_STEPS;

fn transfer(src: u32, dst: u32, bytes: u64, path: Path, group: u32) -> Transfer {
    Transfer {
        src,
        dst,
        bytes,
        channel: 3,
        path,
        group,
        step_start: src.is_multiple_of(2),
    }
}

#[test]
fn a_transfer_is_held_in_28_bytes_and_read_back_whole() {
    assert_eq!(std::mem::size_of::<Packed>(), 28);
    let mut s = Schedule::new();
    let g = s.add_group(Group::default(), []);
    let paths = [
        Path::Direct,
        Path::Via(RANK_MASK),
        Path::NvlsUp,
        Path::NvlsDown,
    ];
    let mut ids = Vec::new();
    for (i, &path) in paths.iter().enumerate() {
        let t = transfer(i as u32, 7, (5 << 40) + i as u64, path, g);
        let prev = ids.last().copied().unwrap_or(NONE);
        ids.push(s.push(t, prev, [NONE]));
        assert_eq!(s.transfer(ids[i]), t);
    }
    assert!(!s.has_prev(ids[0]) && s.has_prev(ids[3]));
    assert_eq!((s.next(ids[0]), s.next(ids[3])), (ids[1], NONE));
}

/// Groups before the first that waits for another hold no offsets of their own, and every
/// group reads back what it was added with.
#[test]
fn groups_read_back_what_they_wait_for() {
    let mut s = Schedule::new();
    let waits: [&[u32]; 6] = [&[], &[], &[0, 1], &[], &[2], &[]];
    for (g, after) in waits.iter().enumerate() {
        assert_eq!(
            s.add_group(Group::default(), after.iter().copied()),
            g as u32
        );
        assert_eq!(s.has_after(), g >= 2);
        assert_eq!(s.after_offsets.len(), if g < 2 { 1 } else { g + 2 });
    }
    for (g, after) in waits.iter().enumerate() {
        assert_eq!(s.after(g as u32), *after);
    }
    let mut none = Schedule::new();
    none.add_group(Group::default(), []);
    assert!(!none.has_after() && none.after(0).is_empty());
}

#[test]
fn finishing_turns_every_dependency_into_a_dependent() {
    // Transfer t depends on every earlier transfer that divides it (1-based).
    let mut s = Schedule::new();
    let g = s.add_group(Group::default(), []);
    let n = 40u32;
    let deps = |t: u32| (0..t).filter(move |&d| (t + 1).is_multiple_of(d + 1));
    for t in 0..n {
        s.push(transfer(t, t + 1, 1, Path::Direct, g), NONE, deps(t));
    }
    s.finish();
    for d in 0..n {
        let expected: Vec<u32> = (d + 1..n).filter(|&t| deps(t).any(|x| x == d)).collect();
        let got: Vec<u32> = s.dependents(d).collect();
        assert_eq!(got, expected, "dependents of {d}");
    }
}

/// A ring pass pushed as `push_ring_steps` does in closed form, one transfer at a time: the
/// oracle of the closed form.
fn held_ring(s: &mut Schedule, g: u32, ring: &RingCase, ranks: usize) -> Vec<u32> {
    let n = ring.order.len();
    let mut prev_step: Vec<u32> = Vec::new();
    for k in 0..ring.steps as usize {
        let this: Vec<u32> = (0..n)
            .map(|i| {
                let t = Transfer {
                    src: ring.order[i],
                    dst: ring.order[(i + 1) % n],
                    bytes: ring.pieces[(i + n * k - k) % n],
                    channel: 3,
                    path: ring.paths[i],
                    group: g,
                    step_start: true,
                };
                let (dep, prev) = if k == 0 {
                    (ring.entry.get(i).copied().unwrap_or(NONE), NONE)
                } else {
                    (prev_step[(i + n - 1) % n], prev_step[i])
                };
                s.push(t, prev, [dep])
            })
            .collect();
        prev_step = this;
    }
    let mut last = vec![NONE; ranks];
    for (i, &t) in prev_step.iter().enumerate() {
        last[ring.order[(i + 1) % n] as usize] = t;
    }
    last
}

#[derive(Clone)]
struct RingCase {
    order: Vec<u32>,
    paths: Vec<Path>,
    pieces: Vec<u64>,
    steps: u32,
    entry: Vec<u32>,
}

/// The same schedule twice, its rings in closed form and held: held transfers, a ring
/// waiting for them, held transfers waiting for the ring, and a last ring waiting for those.
fn both(ranks: u32) -> (Schedule, Schedule) {
    let mut out = [Schedule::new(), Schedule::new()];
    for (closed, s) in out.iter_mut().enumerate() {
        let closed = closed == 0;
        let g = s.add_group(Group::default(), []);
        let first: Vec<u32> = (0..ranks)
            .map(|r| {
                s.push(
                    transfer(r, (r + 1) % ranks, 10 + u64::from(r), Path::Direct, g),
                    NONE,
                    [NONE],
                )
            })
            .collect();
        let order: Vec<u32> = (0..ranks).rev().collect();
        let mut case = RingCase {
            order: order.clone(),
            paths: (0..ranks)
                .map(|r| {
                    if r % 3 == 0 {
                        Path::Via(r)
                    } else {
                        Path::Direct
                    }
                })
                .collect(),
            pieces: (0..ranks).map(|r| 100 + u64::from(r)).collect(),
            steps: 2 * (ranks - 1),
            entry: order
                .iter()
                .map(|&r| if r % 2 == 0 { first[r as usize] } else { NONE })
                .collect(),
        };
        let push = |s: &mut Schedule, case: &RingCase| {
            if closed {
                s.push_ring_steps(
                    g,
                    3,
                    case.steps,
                    case.order.clone(),
                    case.paths.clone(),
                    case.pieces.clone(),
                    case.entry.clone(),
                    ranks as usize,
                )
            } else {
                held_ring(s, g, case, ranks as usize)
            }
        };
        let last = push(s, &case);
        let after: Vec<u32> = (0..ranks)
            .map(|r| {
                s.push(
                    transfer(r, r, 7, Path::NvlsUp, g),
                    NONE,
                    [last[r as usize], first[0]],
                )
            })
            .collect();
        case.entry = case.order.iter().map(|&r| after[r as usize]).collect();
        case.steps = ranks - 1;
        push(s, &case);
        s.finish();
    }
    let [closed, held] = out;
    (closed, held)
}

/// `closed` and `held` are the same schedule, `closed` holding only `held_there` transfers one
/// by one: every transfer, what it waits for and releases, and the bytes per edge agree. The
/// closed forms keep receive slots besides, which held transfers do not: a transfer's start frees
/// the transfer `NCCL_STEPS` later on the connection of each transfer whose data it waits for;
/// the arrival of one that nothing waits for frees that connection's transfer `NCCL_STEPS` later.
fn same_schedule(closed: &Schedule, held: &Schedule, held_there: usize) {
    assert_eq!(closed.len(), held.len());
    assert_eq!(
        closed.held(),
        held_there,
        "only the transfers pushed one by one"
    );
    assert!(closed.transfers().eq(held.transfers()));
    let by_edge = |s: &Schedule, all: bool| {
        let mut bytes = std::collections::BTreeMap::new();
        let sends: Vec<Transfer> = if all {
            s.transfers().collect()
        } else {
            s.sends().collect()
        };
        for t in sends {
            *bytes.entry((t.src, t.dst, t.group)).or_insert(0) += t.bytes;
        }
        bytes
    };
    assert_eq!(
        by_edge(closed, false),
        by_edge(held, true),
        "bytes per edge"
    );
    assert!(closed.sends().count() <= held.transfers().count());
    assert_eq!(closed.starts(), held.starts());
    let n = held.len();
    let later = |mut x: u32| {
        for _ in 0..NCCL_STEPS {
            if x != NONE {
                x = held.next(x);
            }
        }
        x
    };
    let (mut freed_by_start, mut slots) = (vec![Vec::new(); n], vec![0; n]);
    for x in 0..n as u32 {
        let (waiting, freed): (Vec<u32>, u32) = (held.dependents(x).collect(), later(x));
        let by_arrival = if waiting.is_empty() { freed } else { NONE };
        assert_eq!(
            closed.freed_by_arrival(x),
            by_arrival,
            "freed by {x}'s arrival"
        );
        if freed != NONE {
            slots[freed as usize] += waiting.len().max(1) as u32;
            for a in waiting {
                freed_by_start[a as usize].push(freed);
            }
        }
    }
    for t in 0..held.len() as u32 {
        assert_eq!(closed.has_prev(t), held.has_prev(t), "{t}");
        assert_eq!(closed.next(t), held.next(t), "{t}");
        assert_eq!(closed.waits(t), held.waits(t) + slots[t as usize], "{t}");
        let mut freed: Vec<u32> = closed.freed_by_start(t).collect();
        freed.sort_unstable();
        freed_by_start[t as usize].sort_unstable();
        assert_eq!(freed, freed_by_start[t as usize], "freed by {t}'s start");
        let (a, b): (Vec<u32>, Vec<u32>) =
            (closed.dependents(t).collect(), held.dependents(t).collect());
        assert_eq!(a, b, "dependents of {t}");
    }
}

#[test]
fn a_ring_in_closed_form_is_the_ring_held_one_transfer_at_a_time() {
    for ranks in [2, 3, 8, 13] {
        let (closed, held) = both(ranks);
        same_schedule(&closed, &held, 2 * ranks as usize);
    }
}

/// A pipeline of `chunks` chunks over a little tree's edges (three leaves up into a root, then
/// down again), with a held transfer before it and one waiting for its last chunk's edges.
fn pipeline_both(chunks: u32) -> (Schedule, Schedule) {
    let edges = [
        (1, 0, Path::Direct),
        (2, 0, Path::Via(5)),
        (3, 1, Path::Direct),
        (0, 1, Path::Direct),
        (0, 2, Path::Direct),
        (1, 3, Path::Direct),
    ];
    let deps: Vec<Vec<u32>> = vec![
        vec![],
        vec![],
        vec![0],
        vec![0, 1, 2],
        vec![0, 1, 2],
        vec![3],
    ];
    let bytes = 1000 + u64::from(chunks);
    let mut out = [Schedule::new(), Schedule::new()];
    for (closed, s) in out.iter_mut().enumerate() {
        let g = s.add_group(Group::default(), []);
        let first = s.push(transfer(0, 4, 9, Path::Direct, g), NONE, [NONE]);
        let start = s.len() as u32;
        if closed == 0 {
            let mut pattern = Pattern::default();
            for (&(src, dst, path), d) in edges.iter().zip(&deps) {
                pattern.add(src, dst, path, d.clone());
            }
            s.push_pipeline(g, 3, chunks, bytes, pattern);
        } else {
            let p = edges.len() as u32;
            for j in 0..chunks {
                for (q, &(src, dst, path)) in edges.iter().enumerate() {
                    let t = Transfer {
                        src,
                        dst,
                        bytes: split_piece(bytes, chunks, j),
                        channel: 3,
                        path,
                        group: g,
                        step_start: j == 0,
                    };
                    let id = |q: u32| start + j * p + q;
                    let prev = if j == 0 { NONE } else { id(q as u32) - p };
                    s.push(t, prev, deps[q].iter().map(|&d| id(d)));
                }
            }
        }
        let last = s.len() as u32 - 1;
        s.push(
            transfer(4, 0, 9, Path::Direct, g),
            NONE,
            [last, last - 2, first],
        );
        s.finish();
    }
    let [closed, held] = out;
    (closed, held)
}

#[test]
fn a_pipeline_in_closed_form_is_the_pipeline_held_one_transfer_at_a_time() {
    for chunks in [1, 2, 7, 8, 9, 20] {
        let (closed, held) = pipeline_both(chunks);
        same_schedule(&closed, &held, 2);
    }
}

#[test]
fn a_ring_past_two_to_the_32_transfers_is_refused() {
    let mut s = Schedule::new();
    let g = s.add_group(Group::default(), []);
    let n = 1 << 16;
    let last = s.push_ring_steps(
        g,
        0,
        n,
        (0..n).collect(),
        vec![Path::Direct; n as usize],
        vec![1; n as usize],
        Vec::new(),
        n as usize,
    );
    assert!(s.too_large() && s.is_empty());
    assert!(last.iter().all(|&t| t == NONE));
}
