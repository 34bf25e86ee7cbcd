//! Criteo-shaped samples and a synthetic data set drawn from a planted model.
//!
//! A sample has 13 dense and 26 categorical features, like Criteo. The synthetic generator
//! draws each categorical value from a per-field Zipf law (exponent ~1, so about 20% of a
//! field's IDs cover ~70% of its accesses, as PICASSO reports) and the label from a planted
//! logistic model whose weights are a hash of `(seed, feature)`. The planted logit is known,
//! so the Bayes-optimal AUC of a data set can be computed and compared with what training
//! reaches. Sample `i` is a pure function of `(seed, i)` (its own ChaCha8 stream), so any
//! worker can produce any sample, in any order, with identical bits.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal, Zipf};

use crate::plan::{feature_id, stable_hash, FeatureId};

/// Number of dense (integer in Criteo) features.
pub const NUM_DENSE: usize = 13;
/// Number of categorical features.
pub const NUM_SPARSE: usize = 26;

/// One training example.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Position in its data set; the unit of "trained exactly once" accounting.
    pub id: u64,
    /// Click label, 0 or 1.
    pub label: f32,
    /// Dense features (already transformed to a small range).
    pub dense: [f32; NUM_DENSE],
    /// Categorical features as global feature IDs.
    pub sparse: [FeatureId; NUM_SPARSE],
}

/// A random-access data set; `sample(i)` must be deterministic.
pub trait Dataset: Sync {
    /// Number of samples.
    fn len(&self) -> u64;
    /// Sample `i` (`i < len()`).
    fn sample(&self, i: u64) -> Sample;
    /// Whether the set is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Samples held in memory: parsed rows ([`crate::criteo`]), or a generator's samples
/// materialised before a timed run, so that no worker generates data while another's work is
/// being measured.
#[derive(Debug, Clone, Default)]
pub struct InMemory {
    pub samples: Vec<Sample>,
}

impl InMemory {
    /// The first `n` samples of `data`.
    pub fn materialise(data: &dyn Dataset, n: u64) -> Self {
        InMemory {
            samples: (0..n.min(data.len())).map(|i| data.sample(i)).collect(),
        }
    }
}

impl Dataset for InMemory {
    fn len(&self) -> u64 {
        self.samples.len() as u64
    }

    fn sample(&self, i: u64) -> Sample {
        self.samples[i as usize].clone()
    }
}

/// Compresses heavy-tailed counts: `sign(v) ln(1 + |v|)`.
pub fn dense_transform(v: f32) -> f32 {
    v.signum() * v.abs().ln_1p()
}

/// Synthetic Criteo-shaped data from a planted logistic model.
#[derive(Debug, Clone)]
pub struct SyntheticData {
    seed: u64,
    len: u64,
    zipf: Vec<Zipf<f64>>,
    /// Standard deviation of each planted categorical weight.
    weight_sd: f64,
    dense_w: [f64; NUM_DENSE],
    bias: f64,
}

impl SyntheticData {
    /// `len` samples; field `f` has `vocab[f]` distinct values, Zipf exponent `zipf_s`.
    ///
    /// # Panics
    /// If `zipf_s` is negative or NaN (a programming error: callers pass constants).
    pub fn new(seed: u64, len: u64, vocab: &[u64; NUM_SPARSE], zipf_s: f64) -> Self {
        let zipf = vocab
            .iter()
            .map(|&n| Zipf::new(n.max(1), zipf_s).expect("Zipf parameters are validated constants"))
            .collect();
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xD1CE);
        let dense_w = std::array::from_fn(|_| rng.gen_range(-0.4..0.4));
        SyntheticData {
            seed,
            len,
            zipf,
            weight_sd: 0.45,
            dense_w,
            bias: -0.3,
        }
    }

    /// A default shape: vocabularies from 20 to ~4000 values, Zipf exponent 1.05.
    pub fn standard(seed: u64, len: u64, vocab_scale: u64) -> Self {
        let vocab = std::array::from_fn(|f| (20 + (f as u64 * 37 % 200)) * vocab_scale.max(1));
        Self::new(seed, len, &vocab, 1.05)
    }

    /// The planted weight of a categorical feature.
    fn weight(&self, id: FeatureId) -> f64 {
        let h = stable_hash(id ^ stable_hash(self.seed));
        // Box-Muller from two 32-bit halves of the hash.
        let u1 = ((h >> 32) as f64 + 1.0) / 4_294_967_297.0;
        let u2 = (h & 0xFFFF_FFFF) as f64 / 4_294_967_296.0;
        self.weight_sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// The planted logit of a sample (the optimum a model can learn).
    pub fn planted_logit(&self, s: &Sample) -> f64 {
        let cat: f64 = s.sparse.iter().map(|&id| self.weight(id)).sum();
        let dense: f64 = s
            .dense
            .iter()
            .zip(&self.dense_w)
            .map(|(x, w)| f64::from(*x) * w)
            .sum();
        self.bias + cat + dense
    }
}

impl Dataset for SyntheticData {
    fn len(&self) -> u64 {
        self.len
    }

    fn sample(&self, i: u64) -> Sample {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(i);
        let dense = std::array::from_fn(|_| {
            let x: f64 = StandardNormal.sample(&mut rng);
            x as f32
        });
        let sparse = std::array::from_fn(|f| {
            let rank = self.zipf[f].sample(&mut rng) as u64;
            // Scramble ranks so popular values are not small integers.
            feature_id(f, stable_hash(rank ^ ((f as u64) << 40)) & 0xFFFF_FFFF)
        });
        let mut s = Sample {
            id: i,
            label: 0.0,
            dense,
            sparse,
        };
        let p = 1.0 / (1.0 + (-self.planted_logit(&s)).exp());
        s.label = if rng.gen::<f64>() < p { 1.0 } else { 0.0 };
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn samples_are_pure_functions_of_seed_and_index() {
        let d = SyntheticData::standard(3, 100, 1);
        assert_eq!(d.sample(42), d.sample(42));
        assert_ne!(d.sample(42).sparse, d.sample(43).sparse);
    }

    #[test]
    fn about_a_fifth_of_ids_cover_most_accesses() {
        let d = SyntheticData::standard(1, 20_000, 5);
        let mut counts: HashMap<FeatureId, u64> = HashMap::new();
        for i in 0..d.len() {
            *counts.entry(d.sample(i).sparse[7]).or_default() += 1;
        }
        let mut c: Vec<u64> = counts.into_values().collect();
        c.sort_unstable_by(|a, b| b.cmp(a));
        let top = c.len() / 5;
        let share = c[..top].iter().sum::<u64>() as f64 / c.iter().sum::<u64>() as f64;
        assert!((0.6..0.85).contains(&share), "top 20% of IDs cover {share}");
    }

    #[test]
    fn labels_follow_the_planted_model() {
        let d = SyntheticData::standard(2, 4000, 1);
        let samples: Vec<Sample> = (0..d.len()).map(|i| d.sample(i)).collect();
        let scores: Vec<f64> = samples.iter().map(|s| d.planted_logit(s)).collect();
        let labels: Vec<f32> = samples.iter().map(|s| s.label).collect();
        let auc = crate::metrics::auc(&scores, &labels);
        assert!(auc > 0.8, "Bayes AUC {auc}");
    }
}
