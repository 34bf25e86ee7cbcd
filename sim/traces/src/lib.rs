//! Job traces: dlsim's native format (versioned JSON Lines), its streaming reader and
//! atomic writer, and the AntGroup-style synthetic generator.
//!
//! A trace is pure data: what a user submitted and when. The hidden ground truth of how a
//! job performs lives in the model crate, never here.

pub mod error;
pub mod format;
pub mod generator;
pub mod job;
pub mod limits;
pub mod locate;

pub use error::InputError;
pub use format::{
    read_trace, write_trace, Trace, TraceHeader, TraceReader, FORMAT_NAME, FORMAT_VERSION,
};
pub use generator::{generate, GeneratorConfig};
pub use job::{JobSpec, ModelKind, Observed, Outcome, ScaleEvent};
