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

/// One group of identical embedding tables whose IDs follow a Zipf law, for
/// [`HitCurve`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TableStream {
    /// How many tables of this shape.
    pub tables: f64,
    /// Distinct IDs per table.
    pub vocab: f64,
    /// Zipf exponent: the rank-`r` ID is drawn with probability `r^-s / H(vocab, s)`.
    pub zipf_s: f64,
    /// IDs drawn from each table per batch (samples x IDs per sample).
    pub draws_per_batch: f64,
    /// Bytes a row of this table takes in the hot storage.
    pub row_bytes: f64,
}

/// Nodes and weights with `sum_i w_i f(r_i) ~ sum_{r=1}^{n} f(r)` for a smooth, monotone
/// `f`: every rank up to 512 exactly, then the integral of `f` over `[r - 1/2, r + 1/2]`
/// cells by Simpson's rule on a logarithmic grid (relative error far below 1e-4 for the
/// power laws here).
fn rank_nodes(n: f64) -> Vec<(f64, f64)> {
    const EXACT: f64 = 512.0;
    let exact_to = n.min(EXACT).floor();
    let mut nodes: Vec<(f64, f64)> = (1..=exact_to as u64).map(|r| (r as f64, 1.0)).collect();
    if n > exact_to {
        let (a, b) = ((exact_to + 0.5).ln(), (n + 0.5).ln());
        let steps = 2 * (((b - a) * 60.0).ceil() as usize).max(1);
        let h = (b - a) / steps as f64;
        for i in 0..=steps {
            let t = a + i as f64 * h;
            let simpson = match i {
                0 => 1.0,
                i if i == steps => 1.0,
                i if i % 2 == 1 => 4.0,
                _ => 2.0,
            };
            nodes.push((t.exp(), simpson * h / 3.0 * t.exp()));
        }
    }
    nodes
}

#[cfg(test)]
fn rank_sum(n: f64, f: impl Fn(f64) -> f64) -> f64 {
    rank_nodes(n).iter().map(|&(r, w)| w * f(r)).sum()
}

/// The Zipf exponent under which the most frequent `top` fraction of `vocab` IDs covers
/// `coverage` of the draws (PICASSO Sec. II-B: 20% of IDs cover 70% of the data on
/// average), by bisection on `s` in [0, 4].
pub fn zipf_exponent_for_coverage(vocab: f64, top: f64, coverage: f64) -> f64 {
    let (head, all) = (rank_nodes((top * vocab).max(1.0)), rank_nodes(vocab));
    let sum =
        |nodes: &[(f64, f64)], s: f64| nodes.iter().map(|&(r, w)| w * r.powf(-s)).sum::<f64>();
    let (mut lo, mut hi) = (0.0, 4.0);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if sum(&head, mid) / sum(&all, mid) < coverage {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// `P(K = k)` for `K ~ Binomial(n, u)`, `k = 0..=n`.
fn binomial_pmf(n: u32, u: f64) -> Vec<f64> {
    let u = u.clamp(0.0, 1.0);
    if u >= 1.0 {
        let mut v = vec![0.0; n as usize + 1];
        v[n as usize] = 1.0;
        return v;
    }
    let (lu, lq) = (u.ln(), (-u).ln_1p());
    let mut ln_choose = 0.0f64;
    (0..=n)
        .map(|k| {
            if k > 0 {
                ln_choose += f64::from(n - k + 1).ln() - f64::from(k).ln();
            }
            if u <= 0.0 {
                return if k == 0 { 1.0 } else { 0.0 };
            }
            (ln_choose + f64::from(k) * lu + f64::from(n - k) * lq).exp()
        })
        .collect()
}

/// The expected per-batch hit ratio of unique IDs (PICASSO Table VI's measure) of a hot
/// storage, as a function of its size, once HybridHash has counted `counted_batches`
/// batches (its warm-up and, as its Algorithm 1 keeps counting after it, every batch
/// since): the IDs it saw in the most counted batches are loaded until the storage is
/// full (the kernel's [`HotCache`] counts an ID once per batch it appears in, as here, and
/// never resets its counts).
///
/// An ID drawn `N p` times per batch on average is in a batch (after de-duplication) with
/// probability `u = 1 - exp(-N p)` (Poisson), so its count is Binomial(`counted_batches`,
/// `u`). The cache takes IDs by falling count across all tables; at the count where it
/// fills, a fraction of the tied IDs fits (taken at random, as ties carry no information;
/// an ID never seen is never loaded). The hit ratio is the expected presence of the cached
/// IDs over that of all IDs. If every row of every table fits, everything is cached
/// (HybridHash then places all rows on the hot storage). Simplification against
/// [`HotCache`]: expectations over the tie, and a refresh loses no row;
/// `tests::expected_matches_the_replayed_cache` bounds the difference on a stream both
/// can run.
#[derive(Clone, Debug, PartialEq)]
pub struct HitCurve {
    /// Per count `k` (index): expected bytes of the IDs seen `k` times, and their
    /// expected presence per batch.
    bytes: Vec<f64>,
    present: Vec<f64>,
    /// Expected unique IDs per batch over all tables, and every table's bytes.
    all: f64,
    total_bytes: f64,
}

impl HitCurve {
    pub fn new(tables: &[TableStream], counted_batches: u32) -> Self {
        let levels = counted_batches.max(1) as usize + 1;
        let mut c = HitCurve {
            bytes: vec![0.0; levels],
            present: vec![0.0; levels],
            all: 0.0,
            total_bytes: tables
                .iter()
                .map(|t| t.tables * t.vocab * t.row_bytes)
                .sum(),
        };
        for t in tables {
            let nodes = rank_nodes(t.vocab);
            let z: f64 = nodes.iter().map(|&(r, wt)| wt * r.powf(-t.zipf_s)).sum();
            for &(r, wt) in &nodes {
                let u = -(-(t.draws_per_batch * r.powf(-t.zipf_s) / z)).exp_m1();
                c.all += t.tables * wt * u;
                for (k, pk) in binomial_pmf(levels as u32 - 1, u).into_iter().enumerate() {
                    c.bytes[k] += t.tables * wt * pk * t.row_bytes;
                    c.present[k] += t.tables * wt * pk * u;
                }
            }
        }
        c
    }

    /// The hit ratio of a hot storage of `cache_bytes`.
    pub fn at(&self, cache_bytes: f64) -> f64 {
        if cache_bytes <= 0.0 || self.all <= 0.0 {
            return 0.0;
        }
        if cache_bytes >= self.total_bytes {
            return 1.0;
        }
        let mut room = cache_bytes;
        let mut hits = 0.0;
        for k in (1..self.bytes.len()).rev() {
            if self.bytes[k] <= room {
                room -= self.bytes[k];
                hits += self.present[k];
            } else {
                hits += self.present[k] * room / self.bytes[k];
                break;
            }
        }
        hits / self.all
    }
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
    fn zipf_exponent_meets_its_coverage() {
        for vocab in [1e3, 1e6, 1e9] {
            let s = zipf_exponent_for_coverage(vocab, 0.2, 0.7);
            let top = rank_sum(0.2 * vocab, |r| r.powf(-s));
            let all = rank_sum(vocab, |r| r.powf(-s));
            assert!((top / all - 0.7).abs() < 1e-6, "{vocab}: s = {s}");
            // For a large vocabulary s -> 1 - ln 0.7 / ln 0.2 = 0.778 (the power-law limit).
            if vocab >= 1e9 {
                assert!((s - 0.778).abs() < 0.02, "{s}");
            }
        }
        // The log-grid sum against the exact one where both are cheap.
        let exact: f64 = (1..=200_000u64).map(|r| (r as f64).powf(-0.8)).sum();
        let approx = rank_sum(200_000.0, |r| r.powf(-0.8));
        assert!((approx / exact - 1.0).abs() < 1e-6, "{approx} vs {exact}");
    }

    /// The analytic expectation against the replayed cache on the kernel's own Zipf
    /// stream (26 tables of 20k IDs, s = 0.9, batch 256, a 99-batch warm-up): they agree
    /// within 2 points.
    #[test]
    fn expected_matches_the_replayed_cache() {
        use crate::data::{Dataset, SyntheticData, NUM_SPARSE};
        let (vocab, s, batch, warm, measured) = (20_000u64, 0.9, 256u64, 100u64, 100u64);
        let d = SyntheticData::new(3, batch * (warm + measured), &[vocab; NUM_SPARSE], s);
        let batches: Vec<Vec<FeatureId>> = (0..warm + measured)
            .map(|b| {
                (0..batch)
                    .flat_map(|k| d.sample(b * batch + k).sparse)
                    .collect()
            })
            .collect();
        let stream = [TableStream {
            tables: NUM_SPARSE as f64,
            vocab: vocab as f64,
            zipf_s: s,
            draws_per_batch: batch as f64,
            row_bytes: 1.0,
        }];
        for rows in [2_600usize, 26_000, 104_000] {
            let mut c = HotCache::new(rows, warm);
            let mut after = (0, 0);
            for (i, b) in batches.iter().enumerate() {
                let u = crate::plan::unique_sorted(b);
                let before = c.counts();
                for k in c.split_into(&u, &mut [], 0) {
                    c.fill(u[k as usize], &[]);
                }
                // HybridHash loads the hot rows at the refresh (at the start of batch
                // `warm`, from the counts of the batches before); the kernel's cache fills
                // them on their next miss, so load them here, then count.
                if i as u64 == warm - 1 {
                    for row in c.hot.values_mut() {
                        *row = Some(Vec::new());
                    }
                }
                if i as u64 >= warm {
                    let now = c.counts();
                    after = (after.0 + now.0 - before.0, after.1 + now.1 - before.1);
                }
            }
            let replayed = after.0 as f64 / after.1 as f64;
            let expected = HitCurve::new(&stream, warm as u32 - 1).at(rows as f64);
            assert!(
                (replayed - expected).abs() < 0.02,
                "{rows} rows: replayed {replayed:.3}, expected {expected:.3}"
            );
        }
        // Monotone in the cache size, 0 without a cache, 1 when every row fits.
        let curve = HitCurve::new(&stream, 100);
        assert_eq!(curve.at(0.0), 0.0);
        assert_eq!(curve.at(26.0 * 20_000.0), 1.0);
        let r: Vec<f64> = [1e3, 1e4, 1e5, 4e5].iter().map(|&b| curve.at(b)).collect();
        assert!(r.windows(2).all(|w| w[1] > w[0]), "{r:?}");
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

    /// `TableStream::tables` counts identical tables: one stream of n tables is the curve
    /// of n separate ones (the reproduction groups PICASSO's equal tables this way).
    #[test]
    fn a_stream_of_n_tables_is_n_streams_of_one() {
        let one = TableStream {
            tables: 1.0,
            vocab: 5e6,
            zipf_s: 0.8,
            draws_per_batch: 4_096.0,
            row_bytes: 64.0,
        };
        let seq = TableStream {
            draws_per_batch: 50.0 * 4_096.0,
            ..one
        };
        let grouped = HitCurve::new(&[TableStream { tables: 3.0, ..one }, seq], 50);
        let apart = HitCurve::new(&[one, one, one, seq], 50);
        for mb in [1.0, 16.0, 256.0] {
            let (g, a) = (grouped.at(mb * 1e6), apart.at(mb * 1e6));
            assert!(g > 0.0 && (g - a).abs() < 1e-9 * a, "{mb} MB: {g} vs {a}");
        }
    }
}
