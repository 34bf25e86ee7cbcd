//! Named, independent, seeded random streams.
//!
//! Every random draw in a run comes from one scenario seed. Each consumer (arrivals,
//! failures, observation noise, a policy) asks for its own stream by name, and the
//! stream's seed is a pinned hash of `(seed, name)`. Adding draws to one stream therefore
//! never shifts the numbers another stream sees. The generator is ChaCha8, whose output is
//! fixed by its specification, so results do not change with a `rand` upgrade.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The random generator every stream uses.
pub type SimRng = ChaCha8Rng;

/// Factory of named streams derived from one root seed.
#[derive(Clone, Copy, Debug)]
pub struct RngStreams {
    seed: u64,
}

impl RngStreams {
    pub fn new(seed: u64) -> Self {
        RngStreams { seed }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The stream called `name`. Calling twice with the same name restarts the stream.
    pub fn stream(&self, name: &str) -> SimRng {
        SimRng::seed_from_u64(derive_seed(self.seed, name, 0))
    }

    /// A stream per entity, e.g. `("job-noise", job_id)`, independent of every other.
    pub fn substream(&self, name: &str, index: u64) -> SimRng {
        SimRng::seed_from_u64(derive_seed(self.seed, name, index.wrapping_add(1)))
    }
}

/// FNV-1a over the name, mixed with the seed and index through SplitMix64 finalisers.
/// Pinned here (not `std::hash`) because std's hasher may change between releases.
pub fn derive_seed(seed: u64, name: &str, index: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    splitmix(splitmix(seed ^ h) ^ index)
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn same_name_same_numbers_different_name_different_numbers() {
        let streams = RngStreams::new(42);
        let a: Vec<u32> = (0..4)
            .map(|_| 0)
            .scan(streams.stream("arrivals"), |r, _| Some(r.gen()))
            .collect();
        let b: Vec<u32> = (0..4)
            .map(|_| 0)
            .scan(streams.stream("arrivals"), |r, _| Some(r.gen()))
            .collect();
        let c: Vec<u32> = (0..4)
            .map(|_| 0)
            .scan(streams.stream("failures"), |r, _| Some(r.gen()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn derived_seeds_are_pinned() {
        // If this changes, every published result changes: treat it as a breaking change.
        assert_eq!(derive_seed(1, "arrivals", 0), derive_seed(1, "arrivals", 0));
        assert_ne!(derive_seed(1, "arrivals", 0), derive_seed(2, "arrivals", 0));
        assert_ne!(derive_seed(1, "x", 1), derive_seed(1, "x", 2));
    }
}
