//! A pipeline's chunks in closed form: a pattern of edges (a tree's sends up and down, a
//! chain's hops) that every chunk crosses, each edge waiting for some edges before it in the
//! same chunk (the data it forwards or reduces) and for its own previous chunk to have left.
//! A step-fidelity tree or chain of `C` chunks over `P` edges is `C · P` transfers; it holds
//! the `P` edges.
//!
//! Transfer `(j, q)` is chunk `j` on edge `q`, numbered `start + j·P + q`: the order in which
//! pushing the chunks one after another, each edge in pattern order, would have numbered them.
//!
//! An edge's receiver keeps [`NCCL_STEPS`] slots for it (NCCL's buffer slots per connection,
//! `src/include/device.h`), so chunk `j` also waits for the slot of chunk `j − NCCL_STEPS` to
//! be free: for every edge that forwards or reduces that chunk onwards to have started (its
//! data has left the slot), or, at a receiver that forwards nothing, for the chunk to have
//! arrived.

use super::formula::{Formula, Released};
use super::{split_piece, Csr, Path, Pattern, Schedule, Transfer, NONE};
use crate::qp_window::NCCL_STEPS;

#[derive(Clone, Debug)]
pub(super) struct Pipeline {
    pub start: u32,
    pub chunks: u32,
    /// An edge's bytes over all chunks, split as [`super::split`] splits them.
    pub bytes: u64,
    pub group: u32,
    /// Per edge: source, destination, path.
    pub edges: Vec<(u32, u32, Path)>,
    /// Per edge, the edges of its chunk it waits for (each before it), and the reverse.
    pub deps: Csr,
    pub dependents: Csr,
}

impl Pipeline {
    fn p(&self) -> u32 {
        self.edges.len() as u32
    }

    /// How many transfers the pipeline holds: `chunks · P`.
    pub fn len(&self) -> u64 {
        u64::from(self.chunks) * u64::from(self.p())
    }

    /// Chunk and edge of transfer `id`.
    pub fn at(&self, id: u32) -> (u32, u32) {
        let local = id - self.start;
        (local / self.p(), local % self.p())
    }

    pub fn transfer(&self, id: u32, channel: u32) -> Transfer {
        let (j, q) = self.at(id);
        let (src, dst, path) = self.edges[q as usize];
        Transfer {
            src,
            dst,
            bytes: split_piece(self.bytes, self.chunks, j),
            channel,
            path,
            group: self.group,
            step_start: j == 0,
        }
    }

    pub fn waits(&self, id: u32) -> u32 {
        let (j, q) = self.at(id);
        let slot = if j >= NCCL_STEPS {
            self.dependents.get(q).len().max(1) as u32
        } else {
            0
        };
        self.deps.get(q).len() as u32 + u32::from(j > 0) + slot
    }

    /// The chunks whose receive slot `id` frees as it starts: chunk `j + NCCL_STEPS` on each
    /// edge whose data it forwards (module docs).
    pub fn freed_by_start(&self, id: u32) -> Released<'_> {
        let (j, q) = self.at(id);
        let later = j.saturating_add(NCCL_STEPS);
        if later >= self.chunks {
            return Released::one(NONE);
        }
        Released {
            listed: self.deps.get(q),
            offset: self.start + later * self.p(),
            forward: NONE,
        }
    }

    /// The chunk whose receive slot `id` frees as it arrives, where nothing forwards it: the
    /// same edge's chunk `j + NCCL_STEPS`, or [`NONE`].
    pub fn freed_by_arrival(&self, id: u32) -> u32 {
        let (j, q) = self.at(id);
        if self.dependents.get(q).is_empty() && j.saturating_add(NCCL_STEPS) < self.chunks {
            id + NCCL_STEPS * self.p()
        } else {
            NONE
        }
    }

    /// The same edge's next chunk, or [`NONE`] after the last.
    pub fn next(&self, id: u32) -> u32 {
        let (j, _) = self.at(id);
        if j + 1 < self.chunks {
            id + self.p()
        } else {
            NONE
        }
    }

    /// The edges of `id`'s chunk that wait for it, and the id of that chunk's first edge.
    pub fn dependents(&self, id: u32) -> (&[u32], u32) {
        let (j, q) = self.at(id);
        (self.dependents.get(q), self.start + j * self.p())
    }

    /// The first chunk's edges that wait for nothing, in order.
    pub fn starts(&self) -> impl Iterator<Item = u32> + '_ {
        let p = if self.chunks == 0 { 0 } else { self.p() };
        (0..p)
            .filter(|&q| self.deps.get(q).is_empty())
            .map(|q| self.start + q)
    }

    /// Per edge, its first chunk with the bytes of all its chunks.
    pub fn edges(&self, channel: u32) -> impl Iterator<Item = Transfer> + '_ {
        (0..self.p()).map(move |q| Transfer {
            bytes: self.bytes,
            ..self.transfer(self.start + q, channel)
        })
    }
}

impl Schedule {
    /// Adds a pipeline in closed form on `group`'s `channel` (this module): `bytes` in
    /// `chunks` chunks, each crossing the pattern's edges in order, each edge waiting for its
    /// dependencies in the pattern (edges before it, in the same chunk) and for its previous
    /// chunk to have left.
    pub fn push_pipeline(
        &mut self,
        group: u32,
        channel: u32,
        chunks: u32,
        bytes: u64,
        pattern: Pattern,
    ) {
        let Pattern { edges, deps } = pattern;
        let pairs = deps
            .iter()
            .enumerate()
            .flat_map(|(q, d)| d.iter().map(move |&x| (q as u32, x)));
        let reverse = deps
            .iter()
            .enumerate()
            .flat_map(|(q, d)| d.iter().map(move |&x| (x, q as u32)));
        let pipeline = Pipeline {
            start: self.len,
            chunks,
            bytes,
            group,
            deps: Csr::new(edges.len(), pairs),
            dependents: Csr::new(edges.len(), reverse),
            edges,
        };
        self.push_formula(Formula::Pipeline(pipeline), channel);
    }
}
