//! A real embedding parameter-server/worker training kernel that calibrates the simulator.
//!
//! PS shards ([`ps`]) own embedding tables ([`table`]: an ID index ([`index`]) over
//! contiguous row arenas) that grow on first sight, and slices of the dense parameters;
//! workers ([`worker`]) are OS threads that take data shards from a TODO/DOING queue
//! ([`shard`]), deduplicate a batch's IDs, look up rows per PS as the pure partition plan
//! ([`plan`]) assigns them, optionally through a hot-ID cache ([`cache`]), run a Wide&Deep
//! model ([`model`]) batch-major on GEMMs over a persistent thread pool, and push gradients
//! asynchronously. [`train`] ties a run together and [`calibrate`] turns measured runs over
//! production shapes into the simulator's throughput parameters.
//!
//! Invariant: this is the only crate of the workspace that reads the clock or spawns threads
//! for real; the plan in [`plan`] is pure and shared with the simulator.

pub mod cache;
pub mod calibrate;
pub mod cputime;
pub mod criteo;
pub mod data;
pub mod index;
pub mod metrics;
pub mod model;
pub mod plan;
pub mod ps;
pub mod shard;
pub mod table;
pub mod train;
pub mod worker;
