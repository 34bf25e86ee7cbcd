//! The study files that `dlsim sweep`, `merge` and `check` read, apart from the polars
//! tables and figures of `dlsim-report` that act on them, so the cargo-fuzz targets
//! (`fuzz/fuzz_targets/{sweep,baseline}.rs`) build them without polars.
//!
//! - [`sweep`]: sweep files and their grid of points (pure: same file, same points and seeds).
//! - [`baseline`]: `check`'s baseline file of golden metrics and tolerances, and the
//!   pooling of a sweep's runs over seeds.

pub mod baseline;
pub mod sweep;
