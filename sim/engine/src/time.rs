//! Simulated time as an integer number of milliseconds.
//!
//! Time is an integer so that event order never depends on floating-point rounding:
//! two runs of the same scenario see exactly the same sequence of timestamps on any
//! machine. Milliseconds are fine enough for pod start-up and flash checkpoints
//! (sub-second) and a `u64` still covers half a billion years.

use std::fmt;
use std::ops::{Add, Sub};

/// A point in (or span of) simulated time, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_ms(ms: u64) -> Self {
        SimTime(ms)
    }

    pub const fn from_secs(s: u64) -> Self {
        SimTime(s * 1000)
    }

    /// Converts a non-negative duration in seconds, rounding up to the next millisecond so
    /// that an event scheduled "after x seconds" never fires before the work is done.
    pub fn from_secs_f64_ceil(s: f64) -> Self {
        assert!(
            s >= 0.0 && s.is_finite(),
            "duration must be finite and >= 0, got {s}"
        );
        let ms = (s * 1000.0).ceil();
        if ms >= u64::MAX as f64 {
            SimTime::MAX
        } else {
            SimTime(ms as u64)
        }
    }

    pub const fn as_ms(self) -> u64 {
        self.0
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    pub fn saturating_add(self, other: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(other.0))
    }
}

impl Add for SimTime {
    type Output = SimTime;
    fn add(self, rhs: SimTime) -> SimTime {
        SimTime(self.0.checked_add(rhs.0).expect("simulated time overflow"))
    }
}

impl Sub for SimTime {
    type Output = SimTime;
    fn sub(self, rhs: SimTime) -> SimTime {
        SimTime(
            self.0
                .checked_sub(rhs.0)
                .expect("simulated time went backwards"),
        )
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.0 / 1000, self.0 % 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_round_up_to_the_next_millisecond() {
        assert_eq!(SimTime::from_secs_f64_ceil(1.0001), SimTime(1001));
        assert_eq!(SimTime::from_secs_f64_ceil(2.0), SimTime(2000));
        assert_eq!(SimTime::from_secs_f64_ceil(0.0), SimTime::ZERO);
    }

    #[test]
    #[should_panic(expected = "went backwards")]
    fn subtraction_below_zero_is_a_bug() {
        let _ = SimTime(1) - SimTime(2);
    }
}
