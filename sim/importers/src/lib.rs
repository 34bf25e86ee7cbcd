//! Importers of public cluster traces into dlsim's native trace format, plus a node-list
//! CSV for the cluster, and `inspect` (statistics and plots of any native trace).
//!
//! Formats (one module each, with its mapping documented there): [`openb`] (Alibaba GPU
//! trace v2023), [`dlrm2025`] (Alibaba disaggregated DLRM trace), [`pai2020`] (Alibaba PAI
//! 2020 task table), [`philly`] (the Pollux extract of Microsoft Philly), [`swf`] (Standard
//! Workload Format, plain or gzip).
//!
//! Every importer streams its input line by line (gzip through flate2) and keeps one small
//! record per job, never the file; the output must be sorted by submission, so the jobs
//! themselves are held until written. A malformed row stops the import with an error
//! naming file, line and field, unless `skip_bad` is set, in which case it is skipped and
//! counted under its reason in the [`ImportReport`]. A row that is well formed but odd in a
//! way with one sensible reading (openb `memory_mib = 0`: no memory request; SWF run time 0)
//! is repaired and counted under `repaired` by reason; `strict` makes it a bad row instead
//! (an error naming file, line and field, or skipped and counted with `skip_bad`). Rows
//! left out by a mapping rule (e.g. never-scheduled pods) are counted separately. Fields the source lacks are filled by the
//! seeded rules in [`synth`] and named in each job's `synthesized`; what the source did
//! record about the real run (outcome, duration, wait, scale events) goes to `observed`.
//!
//! After parsing, every pod is checked against the cluster: a pod that fits no node is a
//! bad row (the replay would reject the whole trace). Jobs are then sorted by submission
//! (stable, so ties keep input order) and numbered from 0.

pub mod cluster;
pub mod input;
pub mod inspect;
pub mod report;
pub mod synth;

pub use cluster::{write_node_list, NodeRow};
pub use report::ImportReport;

use cluster::NodeShape;
use dlsim_traces::{InputError, JobSpec, TraceHeader};
use input::{reject, Lines, RowError};
use std::path::{Path, PathBuf};
use synth::{Draft, Synth};

/// One importer of a public job trace: its `--format` name, what it reads, and the
/// functions that read it. Each format module defines its own `pub const IMPORTER`.
pub struct Importer {
    /// The `--format` name; also the name of the module that documents the mapping.
    pub name: &'static str,
    /// What the source is, in a few words (for `--help` and error messages).
    pub source: &'static str,
    read: fn(Lines, &ImportOptions, &mut ImportReport) -> Result<Parsed, InputError>,
    /// The CPU and GPU node shapes of the peak-demand cluster, for a source that does
    /// not describe its nodes.
    node_shapes: fn() -> (NodeShape, NodeShape),
}

impl std::fmt::Debug for Importer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Importer({})", self.name)
    }
}

impl PartialEq for Importer {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Importer {}

/// A supported source format: an entry of [`IMPORTERS`].
pub type Format = &'static Importer;

/// The registry: declares each format module and lists its `IMPORTER`, in this order
/// (the order of `--help` and of error messages). Adding a format is its module file plus
/// its name here.
macro_rules! importers {
    ($($module:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every importer, in the order of `--help`.
        pub static IMPORTERS: &[Format] = &[$(&$module::IMPORTER),*];
    };
}

importers!(openb, dlrm2025, pai2020, philly, swf);

/// The importer named `name`, if any.
pub fn format(name: &str) -> Option<Format> {
    IMPORTERS.iter().copied().find(|f| f.name == name)
}

/// Every format name, in registry order.
pub fn format_names() -> Vec<&'static str> {
    IMPORTERS.iter().map(|f| f.name).collect()
}

/// What the user chose on the command line.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Skip malformed rows (counting each reason) instead of stopping at the first.
    pub skip_bad: bool,
    /// Stop at the first odd but repairable row (a bad row naming file, line and field)
    /// instead of repairing it and counting the repair.
    pub strict: bool,
    /// Seed of the `import-<format>` stream used to synthesise missing fields.
    pub seed: u64,
    /// The source's own node list (openb node list, PAI machine spec).
    pub nodes: Option<PathBuf>,
}

/// What one format module hands back: jobs in input order and, when the source describes
/// one, the cluster with a one-line description.
pub(crate) struct Parsed {
    pub drafts: Vec<Draft>,
    pub nodes: Option<(Vec<NodeRow>, String)>,
}

/// The result of an import.
#[derive(Clone, Debug)]
pub struct Imported {
    pub jobs: Vec<JobSpec>,
    pub nodes: Vec<NodeRow>,
    pub report: ImportReport,
}

/// Imports `input` in `format`. Errors name the file, line and field.
pub fn import(format: Format, input: &Path, opts: &ImportOptions) -> Result<Imported, InputError> {
    let mut report = ImportReport::new(format.name);
    let lines = Lines::open(input)?;
    let parsed = (format.read)(lines, opts, &mut report)?;
    // Synthesis first (it may raise memory requests), then the cluster and the fit check.
    let mut synth = Synth::new(opts.seed, format.name);
    let mut synthesized = Vec::with_capacity(parsed.drafts.len());
    let mut lines = Vec::with_capacity(parsed.drafts.len());
    for d in parsed.drafts {
        let line = d.line;
        let job = synth.job(d, &mut report);
        // The one boundary of a trace record (`JobSpec::validate`, with the limits of
        // `dlsim_traces::limits`): an imported job is held to it like a native one.
        if let Err((field, msg)) = job.validate() {
            let err = RowError::new(
                field,
                "out of range",
                format!("out of range in the imported job: {msg}"),
            );
            reject(input, line, err, opts.skip_bad, &mut report)?;
            continue;
        }
        lines.push(line);
        synthesized.push(job);
    }
    let (nodes, desc) = match parsed.nodes {
        Some(n) => n,
        None => {
            let (cpu, gpu) = (format.node_shapes)();
            cluster::size_cluster(&synthesized, &cpu, &gpu)
        }
    };
    let mut jobs = Vec::with_capacity(synthesized.len());
    for (job, line) in synthesized.into_iter().zip(lines) {
        if let Err(field) = cluster::check_fits(&nodes, &job) {
            let msg = format!(
                "a pod of this job fits no node of the cluster ({field} too large); \
                 use --skip-bad to leave such jobs out"
            );
            let err = RowError::new(field, "pod fits no node", msg);
            reject(input, line, err, opts.skip_bad, &mut report)?;
            continue;
        }
        jobs.push(job);
    }
    jobs.sort_by_key(|j| j.submit_s);
    for (i, j) in jobs.iter_mut().enumerate() {
        j.id = i as u64;
    }
    report.jobs = jobs.len() as u64;
    report.pods = jobs
        .iter()
        .map(|j| u64::from(j.ps) + u64::from(j.workers))
        .sum();
    report.gpu_jobs = jobs.iter().filter(|j| j.worker_gpu > 0).count() as u64;
    report.cluster = Some(desc);
    Ok(Imported {
        jobs,
        nodes,
        report,
    })
}

/// The trace header of an import: importer, format, input file name (not its full path,
/// so the output does not depend on where the input lay), seed and report.
pub fn header(
    format: Format,
    input: &Path,
    opts: &ImportOptions,
    report: &ImportReport,
) -> TraceHeader {
    let name = |p: &Path| p.file_name().map(|s| s.to_string_lossy().into_owned());
    TraceHeader::new(serde_json::json!({
        "importer": "dlsim trace import",
        "format": format.name,
        "input": name(input),
        "nodes": opts.nodes.as_deref().and_then(name),
        "seed": opts.seed,
        "strict": opts.strict,
        "mapping": format!("sim/importers/src/{}.rs", format.name),
        "report": report,
        // The truth the steps were synthesised under (`synth`): a replay under another
        // warns (`dlsim_model::scenario::TruthSettings::fingerprint`).
        "truth": dlsim_model::scenario::TruthSettings::default().fingerprint(),
    }))
}

/// Seconds as an integer, rounding to the nearest second (source times are whole or
/// float seconds).
pub(crate) fn secs(v: f64) -> u64 {
    v.round().max(0.0) as u64
}

#[cfg(test)]
mod tests;
