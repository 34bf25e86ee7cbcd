//! Least-squares fitting shared by the kernel's calibration and the simulator's policies.
//!
//! * [`nnls`]: Lawson–Hanson non-negative least squares (no external linear-algebra crate).
//! * [`fit_rmsle`]: non-negative coefficients of a linear-in-parameters model minimising the
//!   root mean squared log error (projected Gauss–Newton, each step an NNLS problem).
//! * [`ThroughputParams`]: the DLRover-RM throughput model (Section 4.1, Eq. 1-6) and its fitters.
//! * [`OptimusParams`]: the Optimus speed function `f(p, w)` fitted by NNLS.
//! * [`metrics`]: MAPE, MAE, RMSE, RMSLE.
//!
//! Everything here is pure and deterministic: same inputs, same bits out.

pub mod metrics;
mod nnls;
mod optimus;
#[cfg(test)]
mod reference;
mod rmsle;
mod throughput;

pub use nnls::{nnls, Nnls};
pub use optimus::{OptimusObs, OptimusParams};
pub use rmsle::{fit_rmsle, log_sq_error};
pub use throughput::{Config, PartTimes, ThroughputParams};

/// Why a fit could not be computed. Fitting never panics on user data.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    /// No rows were given.
    #[error("no observations to fit")]
    Empty,
    /// Rows have different lengths, or `y` and `x` disagree in length.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// A value is NaN/infinite, or a target that must be positive is not.
    #[error("invalid value at row {row}: {what}")]
    Invalid { row: usize, what: String },
}
