//! A PS shard's embedding table: rows created on first sight, gathered and updated in bulk.
//!
//! The table is split into lock stripes so that a PS's server threads rarely contend. Each
//! stripe is an open-addressing ID index ([`IdIndex`]) over two contiguous arenas, the rows'
//! values and their optimiser accumulators (`row_len` floats per slot each), so a gather
//! streams values only. A request takes each stripe's lock once: its IDs are grouped by
//! stripe (a counting sort on their hash, computed once), then each stripe's index entries
//! and rows are prefetched a few IDs ahead of use. Arenas and indexes are hinted for huge
//! pages (see [`crate::index::advise_huge`]): rows are read at random.

use std::sync::{Mutex, MutexGuard};

use crate::index::{grow_huge, prefetch_read, IdIndex};
use crate::plan::{stable_hash, FeatureId};
use crate::ps::Optimizer;

const STRIPES: usize = 16;

/// How many IDs ahead of the current one the table prefetches (index entry, then row).
const PREFETCH: usize = 24;

#[derive(Default)]
struct Stripe {
    index: IdIndex,
    values: Vec<f32>,
    accs: Vec<f32>,
}

/// An embedding table of rows of `row_len` floats with their optimiser state.
pub struct EmbeddingTable {
    row_len: usize,
    seed: u64,
    optimizer: Optimizer,
    stripes: Vec<Mutex<Stripe>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock means a PS thread panicked; the data is still usable for measurement.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn stripe_of_hash(hash: u64) -> usize {
    (hash >> 40) as usize % STRIPES
}

/// Positions `0..ids.len()` grouped by stripe (stable within a stripe), each stripe's range
/// in that order, and every ID's hash (computed once, for the stripe and the index probe).
fn by_stripe(ids: &[FeatureId]) -> (Vec<u32>, [std::ops::Range<usize>; STRIPES], Vec<u64>) {
    let hashes: Vec<u64> = ids.iter().map(|&id| stable_hash(id)).collect();
    let mut starts = [0usize; STRIPES + 1];
    for &h in &hashes {
        starts[stripe_of_hash(h) + 1] += 1;
    }
    for k in 0..STRIPES {
        starts[k + 1] += starts[k];
    }
    let ranges = std::array::from_fn(|k| starts[k]..starts[k + 1]);
    let mut order = vec![0u32; ids.len()];
    for (pos, &h) in hashes.iter().enumerate() {
        let s = stripe_of_hash(h);
        order[starts[s]] = pos as u32;
        starts[s] += 1;
    }
    (order, ranges, hashes)
}

/// `dst = src` for one short row, inlined (a `memmove` call per row costs more than the copy).
#[inline]
pub(crate) fn copy_row(dst: &mut [f32], src: &[f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
    }
}

impl EmbeddingTable {
    /// An empty table; rows of `row_len` floats are initialised from `seed` on first sight.
    pub fn new(row_len: usize, optimizer: Optimizer, seed: u64) -> Self {
        EmbeddingTable {
            row_len,
            seed,
            optimizer,
            stripes: (0..STRIPES)
                .map(|_| Mutex::new(Stripe::default()))
                .collect(),
        }
    }

    /// Floats per row.
    pub fn row_len(&self) -> usize {
        self.row_len
    }

    /// Rows created so far.
    pub fn len(&self) -> usize {
        self.stripes.iter().map(|s| lock(s).index.len()).sum()
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

    /// The slot of `id` (whose hash is `hash`) in `st`, creating its row on first sight.
    #[inline]
    fn slot(&self, st: &mut Stripe, id: FeatureId, hash: u64) -> usize {
        let (slot, new) = st.index.get_or_insert_hashed(id, hash);
        if new {
            let rl = self.row_len;
            let at = st.values.len();
            grow_huge(&mut st.values, rl);
            self.init_values(id, &mut st.values[at..]);
            grow_huge(&mut st.accs, rl);
            st.accs[at..].fill(self.optimizer.init_acc());
        }
        slot as usize
    }

    /// Runs `f(position, stripe, slot)` for every ID, one stripe lock at a time, with index
    /// entries and rows of upcoming IDs prefetched.
    #[inline]
    fn for_each_slot(&self, ids: &[FeatureId], mut f: impl FnMut(usize, &mut Stripe, usize)) {
        let (order, ranges, hashes) = by_stripe(ids);
        let mut slots = Vec::new();
        for (s, range) in ranges.into_iter().enumerate() {
            if range.is_empty() {
                continue;
            }
            let group = &order[range];
            let mut st = lock(&self.stripes[s]);
            // Software pipeline: the index entry of ID `j + 2P` is prefetched, ID `j + P` is
            // probed (its entry has arrived) and its row prefetched, and ID `j` is handed to
            // `f` (its row has arrived), so entry and row misses overlap.
            let n = group.len();
            let rl = self.row_len;
            slots.clear();
            slots.resize(n, 0usize);
            for j in 0..n + PREFETCH {
                if let Some(&ahead) = group.get(j + PREFETCH) {
                    st.index.prefetch_hashed(hashes[ahead as usize]);
                }
                if j < n {
                    let pos = group[j] as usize;
                    let slot = self.slot(&mut st, ids[pos], hashes[pos]);
                    slots[j] = slot;
                    prefetch_read(&st.values[slot * rl]);
                    prefetch_read(&st.values[slot * rl + rl - 1]);
                }
                if j >= PREFETCH {
                    let k = j - PREFETCH;
                    f(group[k] as usize, &mut st, slots[k]);
                }
            }
        }
    }

    /// Copies the rows of `ids` (created on first sight) into `out`, `row_len` floats each,
    /// in the order of `ids`.
    pub fn gather(&self, ids: &[FeatureId], out: &mut [f32]) {
        let rl = self.row_len;
        assert_eq!(out.len(), ids.len() * rl, "gather buffer length");
        self.for_each_slot(ids, |pos, st, slot| {
            copy_row(
                &mut out[pos * rl..(pos + 1) * rl],
                &st.values[slot * rl..(slot + 1) * rl],
            );
        });
    }

    /// Applies `grads` (`row_len` floats per ID) to the rows of `ids`.
    pub fn update(&self, ids: &[FeatureId], grads: &[f32]) {
        let rl = self.row_len;
        assert_eq!(grads.len(), ids.len() * rl, "gradient length");
        self.for_each_slot(ids, |pos, st, slot| {
            let Stripe { values, accs, .. } = st;
            self.optimizer.apply(
                &mut values[slot * rl..(slot + 1) * rl],
                &mut accs[slot * rl..(slot + 1) * rl],
                &grads[pos * rl..(pos + 1) * rl],
            );
        });
    }

    /// The current row of `id` without creating it (an unseen ID gets its initial row).
    pub fn peek(&self, id: FeatureId) -> Vec<f32> {
        let rl = self.row_len;
        let st = lock(&self.stripes[stripe_of_hash(stable_hash(id))]);
        match st.index.get(id) {
            Some(slot) => st.values[slot as usize * rl..(slot as usize + 1) * rl].to_vec(),
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
        // Reversed order, repeated: same rows, nothing new created.
        let rev: Vec<FeatureId> = ids.iter().rev().copied().collect();
        let mut b = vec![0.0; rev.len() * 3];
        t.gather(&rev, &mut b);
        assert_eq!(t.len(), ids.len());
        assert_eq!(&b[..3], &a[a.len() - 3..]);
        t.update(&ids[..1], &[1.0, 2.0, 3.0]);
        let row = t.peek(ids[0]);
        assert_eq!(row[2], -3.0);
        assert!((row[0] - (a[0] - 1.0)).abs() < 1e-6);
    }
}
