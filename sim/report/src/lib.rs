//! Sweeps, reports and regression checks over dlsim runs.
//!
//! - [`sweep`]: sweep files and their grid of points (pure: same file, same points and
//!   seeds); re-exported from `dlsim-study`, which holds the input files without polars.
//! - [`exec`]: running, resuming, merging and summarising a sweep folder.
//! - [`jobs`]: `jobs.parquet`, every job of every run of a sweep in one table.
//! - [`results`]: the per-run results table and the seed-paired ablation statistics.
//! - [`check`]: the regression diff against a baseline file of golden metrics and
//!   tolerances (the file itself: `dlsim_study::baseline`).
//! - [`aggregate`], [`figures`], [`render`]: `dlsim report`, from run folders to tables,
//!   figures, `report.md` and a self-contained `report.html`.
//! - [`online`], [`online_figures`]: the report's online section (Table 3 layout, lag,
//!   workers vs load, violation minutes), present when a run has online jobs.
//! - [`table`]: a typed table rendered as Markdown, HTML, CSV and Parquet (polars).
//!
//! Polars lives only in this crate, with its eager API (no `lazy`, which pulls in a cloud
//! stack), so the simulator's own crates build without it.

pub mod aggregate;
pub mod check;
pub mod exec;
pub mod figures;
pub mod jobs;
pub mod online;
pub mod online_figures;
pub mod render;
pub mod results;
pub mod table;

pub use dlsim_study::sweep;
