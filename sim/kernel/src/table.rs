//! A PS shard's embedding table: rows created on first sight, gathered and updated in bulk.
//!
//! One open-addressing ID index ([`IdIndex`]) over two contiguous arenas: the rows' values and
//! their optimiser accumulators (`row_len` floats per slot each), so a gather streams values
//! only. Arenas and index are hinted for huge pages (see [`crate::index::advise_huge`]): rows
//! are read at random, and 4 KiB pages would add a TLB miss to most of them.
//!
//! Concurrency: the table sits behind one reader-writer lock. Gathers of rows that exist take
//! it shared, so a PS's server threads serve lookups from different workers in parallel; a
//! gather that meets new IDs creates them under the exclusive lock afterwards, and updates
//! take it exclusively (one optimiser step at a time per shard, like TensorFlow's
//! `use_locking=True`; simplification: production PSes often apply sparse updates without a
//! lock, Hogwild-style). An earlier design split the table into 16 lock stripes and grouped
//! each request's IDs by stripe; the grouping scattered the output and cost a third of the
//! gather's speed (3.4 vs 5.4 GiB/s on 3M rows, `peer gather`).
//!
//! Speed: a request runs as a software pipeline in request order. The index entry of the ID
//! `P` ahead is prefetched, the current ID is probed (its entry has arrived) and its row
//! prefetched, and the ID `P` behind is copied out (its row has arrived), so entry and row
//! misses overlap and the output is written sequentially.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::index::{copy_row, grow_huge, prefetch_read, IdIndex};
use crate::plan::{stable_hash, FeatureId};
use crate::ps::Optimizer;

/// How many IDs ahead of the current one the table prefetches (index entry, then row).
const PREFETCH: usize = 32;
/// Ring of resolved slots between probe and copy: a power of two above `PREFETCH`.
const RING: usize = 64;
/// Marks an ID the shared pass found no row for (created under the exclusive lock).
const MISSING: usize = usize::MAX;

#[derive(Default)]
struct Rows {
    index: IdIndex,
    values: Vec<f32>,
    accs: Vec<f32>,
}

/// An embedding table of rows of `row_len` floats with their optimiser state.
pub struct EmbeddingTable {
    row_len: usize,
    seed: u64,
    optimizer: Optimizer,
    rows: RwLock<Rows>,
}

impl EmbeddingTable {
    /// An empty table; rows of `row_len` floats are initialised from `seed` on first sight.
    pub fn new(row_len: usize, optimizer: Optimizer, seed: u64) -> Self {
        EmbeddingTable {
            row_len,
            seed,
            optimizer,
            rows: RwLock::new(Rows::default()),
        }
    }

    // A poisoned lock means a PS thread panicked; the data is still usable for measurement.
    fn read(&self) -> RwLockReadGuard<'_, Rows> {
        self.rows.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Rows> {
        self.rows.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Floats per row.
    pub fn row_len(&self) -> usize {
        self.row_len
    }

    /// Rows created so far.
    pub fn len(&self) -> usize {
        self.read().index.len()
    }

    /// Whether no row exists yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Deterministic initial values of `id`'s row: small uniform deep part, zero wide weight.
    fn init_values(&self, id: FeatureId, out: &mut [f32]) {
        let rl = self.row_len;
        for (j, v) in out[..rl - 1].iter_mut().enumerate() {
            let h = stable_hash(id ^ stable_hash(self.seed.wrapping_add(j as u64)));
            *v = ((h >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1;
        }
        out[rl - 1] = 0.0;
    }

    /// The slot of `id` in `t`, creating its row on first sight.
    #[inline(always)]
    fn slot(&self, t: &mut Rows, id: FeatureId, hash: u64) -> usize {
        let (slot, new) = t.index.get_or_insert_hashed(id, hash);
        if new {
            self.create_row(t, id);
        }
        slot as usize
    }

    /// Appends `id`'s initial row (values and accumulators) to the arenas.
    #[cold]
    #[inline(never)]
    fn create_row(&self, t: &mut Rows, id: FeatureId) {
        let rl = self.row_len;
        let at = t.values.len();
        grow_huge(&mut t.values, rl);
        self.init_values(id, &mut t.values[at..]);
        grow_huge(&mut t.accs, rl);
        t.accs[at..].fill(self.optimizer.init_acc());
    }

    /// The pipeline over `ids` in order: `resolve(t, j, hash)` gives ID `j`'s slot (or
    /// [`MISSING`]), and `f(t, j, slot)` runs `PREFETCH` IDs later, once the row has arrived.
    #[inline(always)]
    fn pipeline<T: std::ops::Deref<Target = Rows>>(
        &self,
        t: &mut T,
        ids: &[FeatureId],
        mut resolve: impl FnMut(&mut T, usize, u64) -> usize,
        mut f: impl FnMut(&mut T, usize, usize),
    ) {
        let (n, rl) = (ids.len(), self.row_len);
        // Slots between probe and copy, hashes between prefetch and probe (each computed once).
        let mut ring = [0usize; RING];
        let mut hashes = [0u64; RING];
        for (j, &id) in ids.iter().take(PREFETCH).enumerate() {
            hashes[j] = stable_hash(id);
            t.index.prefetch_hashed(hashes[j]);
        }
        for j in 0..n + PREFETCH {
            if let Some(&ahead) = ids.get(j + PREFETCH) {
                let h = stable_hash(ahead);
                hashes[(j + PREFETCH) % RING] = h;
                t.index.prefetch_hashed(h);
            }
            if j < n {
                let slot = resolve(t, j, hashes[j % RING]);
                ring[j % RING] = slot;
                if slot != MISSING {
                    prefetch_read(&t.values[slot * rl]);
                    prefetch_read(&t.values[slot * rl + rl - 1]);
                }
            }
            if j >= PREFETCH {
                let k = j - PREFETCH;
                f(t, k, ring[k % RING]);
            }
        }
    }

    /// Copies the rows of `ids` (created on first sight) into `out`, `row_len` floats each,
    /// in the order of `ids`.
    pub fn gather(&self, ids: &[FeatureId], out: &mut [f32]) {
        let rl = self.row_len;
        assert_eq!(out.len(), ids.len() * rl, "gather buffer length");
        let mut missing = Vec::new();
        {
            let mut t = self.read();
            self.pipeline(
                &mut t,
                ids,
                |t, j, h| {
                    t.index
                        .get_hashed(ids[j], h)
                        .map_or(MISSING, |s| s as usize)
                },
                |t, k, slot| {
                    if slot == MISSING {
                        missing.push(k);
                    } else {
                        copy_row(
                            &mut out[k * rl..(k + 1) * rl],
                            &t.values[slot * rl..(slot + 1) * rl],
                        );
                    }
                },
            );
        }
        if !missing.is_empty() {
            let mut t = self.write();
            for k in missing {
                let slot = self.slot(&mut t, ids[k], stable_hash(ids[k]));
                copy_row(
                    &mut out[k * rl..(k + 1) * rl],
                    &t.values[slot * rl..(slot + 1) * rl],
                );
            }
        }
    }

    /// Applies `grads` (`row_len` floats per ID) to the rows of `ids` (created on first
    /// sight).
    pub fn update(&self, ids: &[FeatureId], grads: &[f32]) {
        let rl = self.row_len;
        assert_eq!(grads.len(), ids.len() * rl, "gradient length");
        let mut t = self.write();
        self.pipeline(
            &mut t,
            ids,
            |t, j, h| self.slot(t, ids[j], h),
            |t, k, slot| {
                let Rows { values, accs, .. } = &mut **t;
                self.optimizer.apply(
                    &mut values[slot * rl..(slot + 1) * rl],
                    &mut accs[slot * rl..(slot + 1) * rl],
                    &grads[k * rl..(k + 1) * rl],
                );
            },
        );
    }

    /// The current row of `id` without creating it (an unseen ID gets its initial row).
    pub fn peek(&self, id: FeatureId) -> Vec<f32> {
        let rl = self.row_len;
        let t = self.read();
        match t.index.get(id) {
            Some(slot) => t.values[slot as usize * rl..(slot as usize + 1) * rl].to_vec(),
            None => {
                let mut row = vec![0.0; rl];
                self.init_values(id, &mut row);
                row
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::feature_id;

    #[test]
    fn gather_creates_rows_once_and_returns_them_in_request_order() {
        let t = EmbeddingTable::new(3, Optimizer::Sgd { lr: 1.0 }, 9);
        let ids: Vec<FeatureId> = (0..500).map(|v| feature_id(v % 26, v as u64)).collect();
        let mut a = vec![0.0; ids.len() * 3];
        t.gather(&ids, &mut a);
        assert_eq!(t.len(), ids.len());
        for (k, &id) in ids.iter().enumerate() {
            assert_eq!(&a[k * 3..k * 3 + 3], t.peek(id).as_slice(), "id {id}");
            assert_eq!(a[k * 3 + 2], 0.0, "wide weight starts at 0");
        }
        // Reversed and repeated, with new IDs among them: the same rows, each new ID once.
        let mut rev: Vec<FeatureId> = ids.iter().rev().copied().collect();
        rev.extend([feature_id(3, 9_999), feature_id(3, 9_999), ids[7]]);
        let mut b = vec![0.0; rev.len() * 3];
        t.gather(&rev, &mut b);
        assert_eq!(t.len(), ids.len() + 1);
        assert_eq!(&b[..3], &a[a.len() - 3..]);
        assert_eq!(&b[b.len() - 3..], &a[7 * 3..8 * 3]);
        assert_eq!(b[500 * 3..501 * 3], b[501 * 3..502 * 3]);
        t.update(&ids[..1], &[1.0, 2.0, 3.0]);
        let row = t.peek(ids[0]);
        assert_eq!(row[2], -3.0);
        assert!((row[0] - (a[0] - 1.0)).abs() < 1e-6);
    }

    #[test]
    fn updates_apply_in_order_including_repeats() {
        let t = EmbeddingTable::new(2, Optimizer::Sgd { lr: 1.0 }, 1);
        let id = feature_id(0, 5);
        let before = t.peek(id);
        // 100 IDs so the pipeline runs past its prefetch distance; id appears 3 times.
        let mut ids: Vec<FeatureId> = (0..100).map(|v| feature_id(1, v)).collect();
        ids[10] = id;
        ids[50] = id;
        ids[99] = id;
        let grads: Vec<f32> = (0..200)
            .map(|k| if k % 2 == 0 { 1.0 } else { 0.5 })
            .collect();
        t.update(&ids, &grads);
        let after = t.peek(id);
        assert!(
            (after[0] - (before[0] - 3.0)).abs() < 1e-6,
            "{before:?} -> {after:?}"
        );
        assert!((after[1] - (before[1] - 1.5)).abs() < 1e-6);
    }
}
