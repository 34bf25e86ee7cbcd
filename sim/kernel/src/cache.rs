//! Worker-side hot-ID embedding cache (PICASSO's HybridHash, simplified).
//!
//! The cache counts how often each ID is looked up. Every `refresh_batches` batches it picks
//! the `capacity` most frequent IDs (ties broken by ID, so it is deterministic) as the hot set
//! and drops all cached rows; a hot ID's row is cached on its next miss. So a cached row is at
//! most `refresh_batches` batches stale — gradients still go to the PS, the cache is read-only
//! between refreshes. The hit ratio counts unique IDs per batch, i.e. rows not requested from
//! a PS over rows needed.

use rustc_hash::FxHashMap as HashMap;

use crate::plan::FeatureId;

/// A bounded hot-row cache with hit accounting.
#[derive(Debug, Clone)]
pub struct HotCache {
    capacity: usize,
    refresh_batches: u64,
    batches: u64,
    counts: HashMap<FeatureId, u64>,
    hot: HashMap<FeatureId, Option<Vec<f32>>>,
    hits: u64,
    lookups: u64,
}

impl HotCache {
    /// A cache of `capacity` rows refreshed every `refresh_batches` batches (0 rows = off).
    pub fn new(capacity: usize, refresh_batches: u64) -> Self {
        HotCache {
            capacity,
            refresh_batches: refresh_batches.max(1),
            batches: 0,
            counts: HashMap::default(),
            hot: HashMap::default(),
            hits: 0,
            lookups: 0,
        }
    }

    /// Copies the cached rows of a batch's unique IDs into `rows` (`row_len` floats per
    /// position of `ids`) and returns the positions to fetch from the PSes; also counts the
    /// batch for the hot set.
    pub fn split_into(&mut self, ids: &[FeatureId], rows: &mut [f32], row_len: usize) -> Vec<u32> {
        self.batches += 1;
        if self.capacity > 0 && self.batches.is_multiple_of(self.refresh_batches) {
            self.refresh();
        }
        let mut misses = Vec::with_capacity(ids.len());
        let mut hits = 0u64;
        for (k, &id) in ids.iter().enumerate() {
            if self.capacity > 0 {
                *self.counts.entry(id).or_default() += 1;
            }
            match self.hot.get(&id) {
                Some(Some(row)) => {
                    rows[k * row_len..(k + 1) * row_len].copy_from_slice(row);
                    hits += 1;
                }
                _ => misses.push(k as u32),
            }
        }
        self.hits += hits;
        self.lookups += ids.len() as u64;
        misses
    }

    /// Whether the cache holds no rows at all (capacity 0): lookups can skip it.
    pub fn is_off(&self) -> bool {
        self.capacity == 0
    }

    /// Offers a fetched row; kept only if `id` is in the hot set.
    pub fn fill(&mut self, id: FeatureId, row: &[f32]) {
        if let Some(slot) = self.hot.get_mut(&id) {
            *slot = Some(row.to_vec());
        }
    }

    fn refresh(&mut self) {
        let mut by_count: Vec<(u64, FeatureId)> =
            self.counts.iter().map(|(&id, &c)| (c, id)).collect();
        by_count.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        self.hot = by_count
            .into_iter()
            .take(self.capacity)
            .map(|(_, id)| (id, None))
            .collect();
    }

    /// Fraction of row lookups served by the cache so far.
    pub fn hit_ratio(&self) -> f64 {
        if self.lookups == 0 {
            0.0
        } else {
            self.hits as f64 / self.lookups as f64
        }
    }

    /// `(hits, lookups)` counted so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.hits, self.lookups)
    }
}

/// Replays `batches` (each a list of IDs) through a cache of `capacity` rows and returns the
/// hit ratio: the hit-ratio-vs-size curve of PICASSO Table VI without training anything.
pub fn replay_hit_ratio(batches: &[Vec<FeatureId>], capacity: usize, refresh_batches: u64) -> f64 {
    let mut c = HotCache::new(capacity, refresh_batches);
    for b in batches {
        let u = crate::plan::unique_sorted(b);
        let misses = c.split_into(&u, &mut [], 0);
        for k in misses {
            c.fill(u[k as usize], &[]);
        }
    }
    c.hit_ratio()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Dataset, SyntheticData};

    fn batches() -> Vec<Vec<FeatureId>> {
        let d = SyntheticData::standard(5, 12_800, 4);
        (0..100)
            .map(|b| {
                (0..128)
                    .flat_map(|k| d.sample(b * 128 + k).sparse)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn hit_ratio_rises_with_cache_size_then_saturates() {
        let b = batches();
        let sizes = [0, 256, 1024, 4096, 16_384, 65_536];
        let r: Vec<f64> = sizes.iter().map(|&s| replay_hit_ratio(&b, s, 10)).collect();
        eprintln!("hit ratio by cache rows {sizes:?}: {r:.3?}");
        assert_eq!(r[0], 0.0);
        for w in r.windows(2) {
            assert!(w[1] >= w[0] - 1e-12, "{r:?}");
        }
        assert!(r[2] > r[1] + 0.05, "must grow: {r:?}");
        // Saturation: the last quadrupling adds far less than the first ones did.
        assert!(r[5] - r[4] < 0.5 * (r[2] - r[1]), "must saturate: {r:?}");
    }

    #[test]
    fn cached_rows_are_returned_after_refresh() {
        let mut c = HotCache::new(1, 1);
        let mut rows = [0.0f32; 2];
        assert_eq!(c.split_into(&[7], &mut rows, 1), vec![0]);
        c.fill(7, &[1.0]);
        // The refresh at batch 2 makes 7 hot but empties the row; fill again, then hit.
        assert_eq!(c.split_into(&[7], &mut rows, 1), vec![0]);
        c.fill(7, &[1.0]);
        let mut c2 = HotCache::new(1, 100);
        c2.hot.insert(9, Some(vec![2.0]));
        let mut rows = [0.0f32; 2];
        assert_eq!(c2.split_into(&[9, 10], &mut rows, 1), vec![1]);
        assert_eq!(rows, [2.0, 0.0]);
        assert_eq!(c2.hit_ratio(), 0.5);
    }
}
