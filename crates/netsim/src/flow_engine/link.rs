//! A directed link's state in the flow engine, in one cache line, and the list of the flows
//! crossing it.

/// The engine's state of one directed link, in one cache line. A flow's arrival, its
/// departure and every solve read and write most of it for each link the flow crosses, at
/// scattered link ids: one cache miss per link, where a cell of counters and a separate list
/// of flows cost two (an array of structs on purpose). What only reports read stays out of
/// the event path: the bytes a link carried are summed from the flows when asked for (see
/// `FlowEngine::link_stats`), and busy time is one number that changes only when the link
/// turns busy or idle.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
pub(super) struct Link {
    pub capacity: f64,
    /// Load of the active flows (bytes/s); changed only by `set_load`, which keeps `busy`.
    load: f64,
    /// Total weight of the active flows crossing it.
    pub weight: f64,
    /// The highest load since the capacity last changed (utilization is figured from it when
    /// asked for: a division per report, not per load change).
    pub peak: f64,
    /// Busy time (ns, time with load): the lengths of the busy spells that ended, less the
    /// start of the one under way if the link is busy (see `busy_until`). Wrapping.
    busy: u64,
    pub flows: FlowList,
}

const _: () = assert!(std::mem::size_of::<Link>() == 64);

impl Link {
    pub fn new(capacity: f64) -> Link {
        Link {
            capacity,
            ..Link::default()
        }
    }

    /// A cell with this one's load, weight, peak and busy time, at `capacity`, listing
    /// `flows`: a shadow link taking its representative's state (`twins.rs`).
    pub fn twin(&self, capacity: f64, flows: FlowList) -> Link {
        Link {
            capacity,
            flows,
            ..*self
        }
    }

    pub fn load(&self) -> f64 {
        self.load
    }

    /// Sets the load at time `now` (ns), opening or closing a busy spell if it turns the link
    /// busy or idle.
    pub fn set_load(&mut self, now: u64, load: f64) {
        match (self.load > 0.0, load > 0.0) {
            (false, true) => self.busy = self.busy.wrapping_sub(now),
            (true, false) => self.busy = self.busy.wrapping_add(now),
            _ => {}
        }
        self.load = load;
    }

    /// Time with load up to `now`.
    pub fn busy_until(&self, now: u64) -> u64 {
        if self.load > 0.0 {
            self.busy.wrapping_add(now)
        } else {
            self.busy
        }
    }

    /// Raises the peak load to the load now.
    pub fn note_peak(&mut self) {
        self.peak = self.peak.max(self.load);
    }

    /// Whether the load is at capacity, up to a relative `slack`.
    pub fn saturated(&self, slack: f64) -> bool {
        saturates(self.load, self.capacity, slack)
    }
}

/// Whether `load` is at `capacity`, up to a relative `slack`: a link's test, for its cell or
/// a copy of its load and capacity.
pub(super) fn saturates(load: f64, capacity: f64, slack: f64) -> bool {
    load >= capacity * (1.0 - slack)
}

/// A cohort on a link's list, with its entry in the incidence arena for this link (the
/// link's place in the cohort's path, where the cohort's position in this list is kept): a
/// departure that moves the list's last cohort into the gap it leaves writes that cohort's
/// new position at once, without reading the cohort or searching its path.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(super) struct OnLink {
    pub cohort: u32,
    pub entry: u32,
}

impl OnLink {
    /// Cohort `cohort`, whose entry for the link is `entry` of the incidence arena.
    pub fn new(cohort: u32, entry: usize) -> OnLink {
        OnLink {
            cohort,
            entry: entry as u32,
        }
    }
}

/// The active flows crossing a link, in the order they came (a departure's place is taken
/// by the last): up to two inline, in the link's cache line; beyond that, up to sixteen in a
/// two-line chunk of the [`Spill`], and more in a vector of it. The chunk's or the vector's
/// index takes the first inline slot. Most links of a fabric carry one or two flows at a time;
/// a pipelined ring's NVLink ports carry one cohort per channel (16 on H100).
#[derive(Clone, Copy, Default)]
pub(super) struct FlowList {
    len: u32,
    items: [OnLink; INLINE],
}

const INLINE: usize = 2;
const CHUNK: usize = 16;

/// Sixteen cohorts on a link, two cache lines.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Chunk([OnLink; CHUNK]);

/// The flow lists that outgrew their link's cache line: those of up to [`CHUNK`] flows in one
/// array of chunks (one read each, no allocation per list), longer ones in vectors; the chunks
/// and vectors freed, for reuse.
#[derive(Default)]
pub(super) struct Spill {
    chunks: Vec<Chunk>,
    free_chunks: Vec<u32>,
    lists: Vec<Vec<OnLink>>,
    free: Vec<u32>,
}

impl Spill {
    /// A free chunk holding `items` first.
    fn chunk(&mut self, items: &[OnLink]) -> u32 {
        let at = self.free_chunks.pop().unwrap_or_else(|| {
            self.chunks.push(Chunk([OnLink::default(); CHUNK]));
            self.chunks.len() as u32 - 1
        });
        self.chunks[at as usize].0[..items.len()].copy_from_slice(items);
        at
    }

    /// A free vector holding `items` first.
    fn list(&mut self, items: &[OnLink]) -> u32 {
        let at = self.free.pop().unwrap_or_else(|| {
            self.lists.push(Vec::with_capacity(2 * CHUNK));
            self.lists.len() as u32 - 1
        });
        self.lists[at as usize].extend_from_slice(items);
        at
    }
}

impl FlowList {
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where a list of more than [`INLINE`] lies in the spill: its chunk or its vector.
    fn spilled(&self) -> usize {
        self.items[0].cohort as usize
    }

    /// Says that the list now lies in the spill's chunk or vector `at`.
    fn spill_to(&mut self, at: u32) {
        self.items[0].cohort = at;
    }

    pub fn as_slice<'a>(&'a self, spill: &'a Spill) -> &'a [OnLink] {
        let len = self.len();
        if len <= INLINE {
            &self.items[..len]
        } else if len <= CHUNK {
            &spill.chunks[self.spilled()].0[..len]
        } else {
            &spill.lists[self.spilled()]
        }
    }

    /// The cohorts on the list, in its order.
    pub fn cohorts<'a>(&'a self, spill: &'a Spill) -> impl Iterator<Item = u32> + 'a {
        self.as_slice(spill).iter().map(|o| o.cohort)
    }

    fn as_mut_slice<'a>(&'a mut self, spill: &'a mut Spill) -> &'a mut [OnLink] {
        let len = self.len();
        if len <= INLINE {
            &mut self.items[..len]
        } else if len <= CHUNK {
            &mut spill.chunks[self.spilled()].0[..len]
        } else {
            &mut spill.lists[self.spilled()]
        }
    }

    /// Says that the cohort at position `pos` has its entry for this link at `entry` now (its
    /// path moved in the arena).
    pub fn set_entry(&mut self, pos: u32, entry: u32, spill: &mut Spill) {
        self.as_mut_slice(spill)[pos as usize].entry = entry;
    }

    /// Appends `item`; returns its position.
    pub fn push(&mut self, item: OnLink, spill: &mut Spill) -> u32 {
        let at = self.len;
        let len = self.len();
        if len < INLINE {
            self.items[len] = item;
        } else if len == INLINE {
            let c = spill.chunk(&self.items);
            spill.chunks[c as usize].0[len] = item;
            self.spill_to(c);
        } else if len < CHUNK {
            spill.chunks[self.spilled()].0[len] = item;
        } else if len == CHUNK {
            let c = self.spilled() as u32;
            let chunk = spill.chunks[c as usize];
            spill.free_chunks.push(c);
            let v = spill.list(&chunk.0);
            spill.lists[v as usize].push(item);
            self.spill_to(v);
        } else {
            spill.lists[self.spilled()].push(item);
        }
        self.len += 1;
        at
    }

    /// Takes the flow at position `pos` off the list; the last flow takes its place, and is
    /// returned unless it was the one removed. Positions are the same wherever the list lies.
    pub fn remove_at(&mut self, pos: u32, spill: &mut Spill) -> Option<OnLink> {
        let (pos, last) = (pos as usize, self.len() - 1);
        let len = self.len();
        let moved = if len <= INLINE {
            self.items[pos] = self.items[last];
            self.items[pos]
        } else if len <= CHUNK {
            let c = self.spilled() as u32;
            let chunk = &mut spill.chunks[c as usize].0;
            chunk[pos] = chunk[last];
            let moved = chunk[pos];
            if last == INLINE {
                self.items.copy_from_slice(&chunk[..INLINE]);
                spill.free_chunks.push(c);
            }
            moved
        } else {
            let v = self.spilled() as u32;
            let list = &mut spill.lists[v as usize];
            list.swap_remove(pos);
            let moved = list.get(pos).copied().unwrap_or_default();
            if last == CHUNK {
                let mut items = [OnLink::default(); CHUNK];
                items.copy_from_slice(list);
                list.clear();
                let c = spill.chunk(&items);
                spill.free.push(v);
                self.spill_to(c);
            }
            moved
        };
        self.len -= 1;
        (pos != last).then_some(moved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a vector with the same pushes and swap-removes, across the inline/chunk and
    /// chunk/vector boundaries both ways, with two lists sharing the spill.
    #[test]
    fn a_flow_list_keeps_a_vectors_order() {
        let mut spill = Spill::default();
        let (mut lists, mut models) = ([FlowList::default(); 2], [Vec::new(), Vec::new()]);
        let mut seed = 3u64;
        let mut longest = 0;
        for step in 0..20_000u32 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let i = (seed >> 40) as usize % 2;
            let (list, model) = (&mut lists[i], &mut models[i]);
            if model.is_empty() || (model.len() < 24 && (seed >> 20).is_multiple_of(2)) {
                let item = OnLink {
                    cohort: step,
                    entry: step ^ 0x5555,
                };
                assert_eq!(list.push(item, &mut spill) as usize, model.len());
                model.push(item);
            } else {
                let pos = (seed >> 8) as usize % model.len();
                let last = model.len() - 1;
                let moved = list.remove_at(pos as u32, &mut spill);
                model.swap_remove(pos);
                assert_eq!(moved, (pos != last).then(|| model[pos]));
            }
            if !model.is_empty() && (seed >> 30).is_multiple_of(3) {
                let pos = (seed >> 12) as usize % model.len();
                model[pos].entry = step;
                list.set_entry(pos as u32, step, &mut spill);
            }
            assert_eq!(list.as_slice(&spill), &model[..]);
            assert_eq!(list.len(), model.len());
            longest = longest.max(model.len());
        }
        assert!(longest > CHUNK, "the walk reaches the vectors");
        assert!(spill.chunks.len() <= 2, "chunks are reused");
        assert!(spill.lists.len() <= 2, "spilled vectors are reused");
    }
}
