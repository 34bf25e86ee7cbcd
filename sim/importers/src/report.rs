//! The import report: rows read, rows skipped by reason, notes on mapping rules applied,
//! and what was produced. Printed by `dlsim trace import` and stored in the trace header.

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
    /// How often a mapping rule changed or filled a value (e.g. a GPU share rounded up).
    pub notes: BTreeMap<String, u64>,
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
