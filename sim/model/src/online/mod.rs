//! Online (streaming) training jobs, a job kind of the one world (issue #7, Kale; issue #19).
//!
//! An online job trains from a Kafka-like stream: samples arrive on partitions with uneven
//! rates and a daily cycle, its workers (pods placed on the shared cluster, one GPU each by
//! default) consume them, and throughput follows Kale's Eq. 4-6. A per-job autoscaler
//! (`policy::Autoscaler`: `hpa`, `kale`, `autopilot`, `madu`, `adequate` in the policies
//! crate) sets the worker count from observations only; every rescale costs container
//! start, image pull, model load and stream rebuild, and so does every pod lost with its
//! node. A run reports Kale's metrics per job: SLO violation rate, accumulated lag,
//! rescale downtime and GPU hours.
//!
//! Map: `scenario` (the `online` entries of a scenario, and the earlier online-only file),
//! `traffic` (hidden rates), `rates` (rate-series importer and reader), `throughput` (truth,
//! profile, NNLS fits), `stream` (fluid partition queues, lag, shuffling), `pods` (life
//! cycle and observations), `forecast`, `job` (one job's state and decisions), `metrics`.
//! The world's side (events, placement, node failures) is `world/online.rs`.

pub mod forecast;
pub mod job;
pub mod metrics;
pub mod pods;
pub mod rates;
pub mod scenario;
pub mod stream;
pub mod throughput;
pub mod traffic;

pub use job::{OnlineJob, OnlinePhase};
pub use metrics::OnlineSummary;
pub use scenario::OnlineJobFile;

/// One online job of a loaded scenario: its validated entry and the rate series its
/// traffic follows, read when the scenario loaded.
#[derive(Clone, Debug)]
pub struct OnlineInput {
    /// The job's id in `jobs.csv`: its `id`, or by default its index in the list.
    pub id: u64,
    pub file: OnlineJobFile,
    pub shape: Option<rates::RateSeries>,
}
