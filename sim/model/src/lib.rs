//! The simulated world of a DLRM training cluster: nodes and placement, parameter-server
//! jobs with a hidden performance ground truth, the policy interface (observations in,
//! actions out), scenario loading, and run outputs.
//!
//! Invariants: no node's allocation ever exceeds its capacity (asserted on every
//! allocation); every random draw comes from a named stream of the scenario seed; policies
//! receive [`policy::ClusterView`]s, never a [`job::Job`].

pub mod cluster;
pub mod faults;
pub mod job;
pub mod metrics;
pub mod online;
pub mod perf;
pub mod policy;
pub mod resources;
pub mod run;
pub mod scenario;
pub mod settings;
pub mod shards;
pub mod slots;
pub mod vecmap;
pub mod world;

pub use cluster::{Cluster, Node, Placement};
pub use resources::Resources;
pub use run::{run, run_with_progress, write_files, Progress, RunOutput};
pub use scenario::Scenario;
