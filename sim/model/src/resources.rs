//! Integer resource vectors: CPU in milli-cores, memory in MB, whole GPUs.
//!
//! Allocation arithmetic is exact integers so the "no node over capacity" invariant can
//! be checked with `<=` and never drifts through floating-point rounding.

use serde::Serialize;
use std::ops::{Add, AddAssign, Sub, SubAssign};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Resources {
    pub cpu_milli: u64,
    pub mem_mb: u64,
    pub gpu: u32,
}

impl Resources {
    pub const ZERO: Resources = Resources {
        cpu_milli: 0,
        mem_mb: 0,
        gpu: 0,
    };

    pub fn new(cpu_cores: f64, mem_mb: u64, gpu: u32) -> Self {
        Resources {
            cpu_milli: cores_to_milli(cpu_cores),
            mem_mb,
            gpu,
        }
    }

    pub fn cpu_cores(&self) -> f64 {
        self.cpu_milli as f64 / 1000.0
    }

    /// Whether `self` is at most `other` in every dimension.
    pub fn fits_in(&self, other: &Resources) -> bool {
        self.cpu_milli <= other.cpu_milli && self.mem_mb <= other.mem_mb && self.gpu <= other.gpu
    }

    /// How many `req` fit side by side in `self` (as a capacity); 0 for an empty request.
    pub fn count_of(&self, req: &Resources) -> u64 {
        let dims = [
            (self.cpu_milli, req.cpu_milli),
            (self.mem_mb, req.mem_mb),
            (u64::from(self.gpu), u64::from(req.gpu)),
        ];
        dims.iter()
            .filter(|(_, r)| *r > 0)
            .map(|(c, r)| c / r)
            .min()
            .unwrap_or(0)
    }

    pub fn scaled(&self, n: u64) -> Resources {
        Resources {
            cpu_milli: self.cpu_milli * n,
            mem_mb: self.mem_mb * n,
            gpu: self.gpu * n as u32,
        }
    }
}

pub fn cores_to_milli(cores: f64) -> u64 {
    assert!(
        cores.is_finite() && cores >= 0.0,
        "cpu cores must be >= 0, got {cores}"
    );
    (cores * 1000.0).round() as u64
}

impl Add for Resources {
    type Output = Resources;
    fn add(self, o: Resources) -> Resources {
        Resources {
            cpu_milli: self.cpu_milli + o.cpu_milli,
            mem_mb: self.mem_mb + o.mem_mb,
            gpu: self.gpu + o.gpu,
        }
    }
}

impl AddAssign for Resources {
    fn add_assign(&mut self, o: Resources) {
        *self = *self + o;
    }
}

impl Sub for Resources {
    type Output = Resources;
    fn sub(self, o: Resources) -> Resources {
        assert!(o.fits_in(&self), "resource underflow: {self:?} - {o:?}");
        Resources {
            cpu_milli: self.cpu_milli - o.cpu_milli,
            mem_mb: self.mem_mb - o.mem_mb,
            gpu: self.gpu - o.gpu,
        }
    }
}

impl SubAssign for Resources {
    fn sub_assign(&mut self, o: Resources) {
        *self = *self - o;
    }
}
