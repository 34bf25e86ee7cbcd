//! The import report: rows read, rows skipped by reason, odd rows repaired by reason, notes
//! on mapping rules applied, values derived from the trace itself, and what was produced. Printed by `dlsim trace import` and stored in the trace header.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Counts of one import. Maps are `BTreeMap`s so the printed order is stable.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportReport {
    pub format: String,
    /// Data rows read (header and comment lines excluded).
    pub rows_read: u64,
    /// Malformed rows skipped because of `--skip-bad`, by reason (`field: reason`).
    pub skipped_bad: BTreeMap<String, u64>,
    /// Well-formed rows left out by a documented mapping rule, by rule.
    pub skipped_by_rule: BTreeMap<String, u64>,
    /// Rows that were odd but repairable (e.g. openb `memory_mib = 0`, "no memory
    /// request"), by reason (`field: what was done`). `--strict` stops at the first instead.
    #[serde(default)]
    pub repaired: BTreeMap<String, u64>,
    /// How often a mapping rule changed or filled a value (e.g. a GPU share rounded up).
    pub notes: BTreeMap<String, u64>,
    /// Figures the importer derived from the trace itself for the replay (e.g. dlrm2025's
    /// pod failure rate per instance-day), by name; the module doc of the format says how.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub derived: BTreeMap<String, f64>,
    pub jobs: u64,
    pub pods: u64,
    /// Jobs with GPU workers.
    pub gpu_jobs: u64,
    /// Where the cluster came from and its size, when one was produced.
    pub cluster: Option<String>,
}

impl ImportReport {
    pub fn new(format: &str) -> Self {
        ImportReport {
            format: format.to_string(),
            ..ImportReport::default()
        }
    }

    pub fn note(&mut self, what: &str) {
        *self.notes.entry(what.to_string()).or_default() += 1;
    }

    /// Counts a repaired row under `reason`.
    pub fn repair(&mut self, reason: &str) {
        *self.repaired.entry(reason.to_string()).or_default() += 1;
    }

    pub fn skip_by_rule(&mut self, why: &str) {
        *self.skipped_by_rule.entry(why.to_string()).or_default() += 1;
    }

    pub fn skipped_total(&self) -> u64 {
        self.skipped_bad.values().sum::<u64>() + self.skipped_by_rule.values().sum::<u64>()
    }
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "import report ({})", self.format)?;
        writeln!(f, "  rows read          {}", self.rows_read)?;
        let sections = [
            ("  skipped (bad rows, --skip-bad)", &self.skipped_bad),
            ("  skipped by mapping rule", &self.skipped_by_rule),
            (
                "  repaired (odd rows; --strict stops instead)",
                &self.repaired,
            ),
            ("  notes", &self.notes),
        ];
        for (title, map) in sections {
            if map.is_empty() {
                continue;
            }
            writeln!(f, "{title}: {}", map.values().sum::<u64>())?;
            for (why, n) in map {
                writeln!(f, "    {n:>8}  {why}")?;
            }
        }
        if !self.derived.is_empty() {
            writeln!(f, "  derived from the trace:")?;
            for (name, v) in &self.derived {
                writeln!(f, "    {name} = {v}")?;
            }
        }
        writeln!(
            f,
            "  produced           {} jobs, {} pods ({} jobs with GPUs)",
            self.jobs, self.pods, self.gpu_jobs
        )?;
        if let Some(c) = &self.cluster {
            writeln!(f, "  cluster            {c}")?;
        }
        Ok(())
    }
}
