//! Pipeline schedules: the order a stage runs its micro-batches' forward and backward passes.
//!
//! 1F1B: stage `p` of `PP` runs `min(PP − p − 1, M)` warm-up forwards, then alternates one
//! forward and one backward, then drains the backwards. Interleaved 1F1B (Megatron-LM, `V`
//! virtual stages per rank): the `k`-th forward is micro-batch `⌊k / (PP·V)⌋·PP + k mod PP` of
//! chunk `⌊k / PP⌋ mod V`; backwards visit chunks in reverse; warm-up is
//! `min((PP − p − 1)·2 + (V − 1)·PP, M·V)`. Bubble ratio `(PP − 1) / (V·M)`.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    Forward,
    Backward,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action {
    pub pass: Pass,
    pub micro_batch: u32,
    pub chunk: u32,
}

fn nth(k: u32, pp: u32, vpp: u32, pass: Pass) -> Action {
    let group = pp * vpp;
    let micro_batch = (k / group) * pp + k % pp;
    let c = (k / pp) % vpp;
    let chunk = match pass {
        Pass::Forward => c,
        Pass::Backward => vpp - 1 - c,
    };
    Action {
        pass,
        micro_batch,
        chunk,
    }
}

/// Stage `stage`'s actions, in order.
pub fn stage_actions(stage: u32, pp: u32, vpp: u32, micro_batches: u32) -> Vec<Action> {
    let total = micro_batches * vpp;
    let warmup = if vpp == 1 {
        (pp - stage - 1).min(total)
    } else {
        ((pp - stage - 1) * 2 + (vpp - 1) * pp).min(total)
    };
    let mut out = Vec::with_capacity(2 * total as usize);
    let (mut f, mut b) = (0, 0);
    while f < warmup {
        out.push(nth(f, pp, vpp, Pass::Forward));
        f += 1;
    }
    while f < total {
        out.push(nth(f, pp, vpp, Pass::Forward));
        f += 1;
        out.push(nth(b, pp, vpp, Pass::Backward));
        b += 1;
    }
    while b < total {
        out.push(nth(b, pp, vpp, Pass::Backward));
        b += 1;
    }
    out
}

/// The most layers' activations a stage holds at once: the largest sum, over the (micro-batch,
/// chunk) pairs whose forward has run and backward has not, of the chunk's layers
/// (`layers_of_chunk`).
pub fn in_flight_layers(
    stage: u32,
    pp: u32,
    vpp: u32,
    micro_batches: u32,
    layers_of_chunk: impl Fn(u32) -> u64,
) -> u64 {
    let mut live = 0u64;
    let mut most = 0;
    for a in stage_actions(stage, pp, vpp, micro_batches) {
        match a.pass {
            Pass::Forward => {
                live += layers_of_chunk(a.chunk);
                most = most.max(live);
            }
            Pass::Backward => live -= layers_of_chunk(a.chunk),
        }
    }
    most
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_f_one_b_order() {
        // 4 stages, 6 micro-batches: stage 0 warms up with 3 forwards.
        let a = stage_actions(0, 4, 1, 6);
        let s: Vec<String> = a
            .iter()
            .map(|x| {
                format!(
                    "{}{}",
                    if x.pass == Pass::Forward { 'F' } else { 'B' },
                    x.micro_batch
                )
            })
            .collect();
        assert_eq!(s.join(" "), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
        assert_eq!(in_flight_layers(0, 4, 1, 6, |_| 3), 12);
        assert_eq!(in_flight_layers(3, 4, 1, 6, |_| 3), 3);
    }

    #[test]
    fn interleaved_visits_every_chunk_of_every_micro_batch_once() {
        let a = stage_actions(1, 4, 2, 8);
        assert_eq!(a.len(), 32);
        for pass in [Pass::Forward, Pass::Backward] {
            let mut seen: Vec<(u32, u32)> = a
                .iter()
                .filter(|x| x.pass == pass)
                .map(|x| (x.micro_batch, x.chunk))
                .collect();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), 16);
        }
        // The first forward of chunk 1 follows PP forwards of chunk 0.
        assert_eq!(a[4].chunk, 1);
        assert_eq!(a[4].micro_batch, 0);
    }
}
