//! Online (streaming) training on GPU nodes (issue #7, Kale, seed 003).
//!
//! One online job trains from a Kafka-like stream: samples arrive on partitions with uneven
//! rates and a daily cycle, workers (one GPU each) consume them, PS run on CPU nodes, and
//! throughput follows Kale's Eq. 4-6. A policy (`hpa`, `kale`, `autopilot`, `madu`,
//! `adequate`) sets the worker count from observations only; every rescale costs container
//! start, image pull, model load and stream rebuild. The run reports Kale's metrics: SLO
//! violation rate, accumulated lag, rescale downtime and GPU hours.
//!
//! Map: `scenario` (file and validation), `traffic` (hidden rates), `rates` (rate-series
//! importer and reader), `throughput` (truth, profile, NNLS fits), `stream` (fluid partition
//! queues, lag, shuffling), `pods` (life cycle and observations), `forecast`, `policy/*`,
//! `world` (events), `metrics`, `run` (one replay), `cli` (the `dlsim replay` hand-over).

pub mod cli;
pub mod forecast;
pub mod metrics;
pub mod pods;
pub mod policy;
pub mod rates;
pub mod run;
pub mod scenario;
pub mod stream;
pub mod throughput;
pub mod traffic;
pub mod world;

pub use cli::{is_online_scenario, replay, CliError};
pub use scenario::{load, OnlineScenario};
