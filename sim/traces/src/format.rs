//! The native trace format, version 1: JSON Lines.
//!
//! Line 1 is a header object `{"format":"dlsim-trace","version":1,...}`; every further
//! non-empty line is one [`JobSpec`]. JSON Lines keeps line numbers meaningful in error
//! messages, streams record by record, and diffs well. Jobs must be sorted by `submit_s`
//! and ids must be unique, so a reader can stream without holding the whole file twice.

use crate::{InputError, JobSpec};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, Write};
use std::path::Path;

pub const FORMAT_NAME: &str = "dlsim-trace";
pub const FORMAT_VERSION: u32 = 1;

/// First line of a trace file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceHeader {
    pub format: String,
    pub version: u32,
    /// Where the jobs came from (generator settings, importer and source file).
    #[serde(default)]
    pub source: serde_json::Value,
}

impl TraceHeader {
    pub fn new(source: serde_json::Value) -> Self {
        TraceHeader {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            source,
        }
    }
}

/// A loaded trace: its header, its jobs, and the 1-based line each job came from (so later
/// checks, such as "this pod fits no node", can still name the line).
#[derive(Clone, Debug)]
pub struct Trace {
    pub header: TraceHeader,
    pub jobs: Vec<JobSpec>,
    pub lines: Vec<usize>,
    /// The trace's online-job records (`"kind": "online"`), with their lines: the model
    /// reads them as online jobs (`dlsim_model::online::scenario`).
    pub online: Vec<(usize, serde_json::Value)>,
}

/// Reads and validates a whole trace. Every problem is reported with file, line and field.
pub fn read_trace(path: &Path) -> Result<Trace, InputError> {
    let mut reader = TraceReader::open(path)?;
    let mut jobs = Vec::new();
    let mut lines = Vec::new();
    for record in &mut reader {
        let (line, job) = record?;
        jobs.push(job);
        lines.push(line);
    }
    Ok(Trace {
        header: reader.header,
        jobs,
        lines,
        online: reader.online,
    })
}

/// A trace read one record at a time, each validated as it is read (fields, unique id,
/// sorted by `submit_s`): memory holds one line, plus the ids seen so far (to refuse a
/// duplicate). Yields `(line number, job)`.
pub struct TraceReader {
    path: std::path::PathBuf,
    pub header: TraceHeader,
    lines: std::iter::Enumerate<dlsim_fsio::BoundedLines<BufReader<File>>>,
    ids: HashSet<u64>,
    last_submit: u64,
    failed: bool,
    /// Online-job records read so far (`"kind": "online"`), with their lines: not
    /// [`JobSpec`]s, so the iterator skips them; their id and `submit_s` are checked with
    /// the jobs' (unique, sorted), the rest by the model.
    pub online: Vec<(usize, serde_json::Value)>,
}

impl TraceReader {
    /// Opens `path` and reads and checks its header line.
    pub fn open(path: &Path) -> Result<TraceReader, InputError> {
        let file =
            File::open(path).map_err(|e| InputError::new(path, format!("cannot open: {e}")))?;
        let mut lines = dlsim_fsio::bounded_lines(BufReader::new(file)).enumerate();
        let header_line = match lines.next() {
            Some((_, Ok(l))) => l,
            Some((_, Err(e))) => {
                return Err(InputError::new(path, format!("cannot read: {e}")).at_line(1))
            }
            None => {
                return Err(
                    InputError::new(path, "empty file: expected a dlsim-trace header").at_line(1),
                )
            }
        };
        let header: TraceHeader = parse_json(path, &header_line, 1)?;
        if header.format != FORMAT_NAME {
            return Err(InputError::new(
                path,
                format!("not a dlsim trace (format `{}`)", header.format),
            )
            .at_line(1)
            .field("format"));
        }
        if header.version != FORMAT_VERSION {
            return Err(InputError::new(
                path,
                format!(
                    "unsupported version {} (this dlsim reads {FORMAT_VERSION})",
                    header.version
                ),
            )
            .at_line(1)
            .field("version"));
        }
        Ok(TraceReader {
            path: path.to_path_buf(),
            header,
            lines,
            ids: HashSet::new(),
            last_submit: 0,
            failed: false,
            online: Vec::new(),
        })
    }

    /// An online-job record (`"kind": "online"`), if `line` is one: kept for the model,
    /// its id and `submit_s` checked as a job's.
    fn online_record(&mut self, line_no: usize, line: &str) -> Result<bool, InputError> {
        if !line.contains("\"kind\"") {
            return Ok(false);
        }
        let path = self.path.clone();
        let v: serde_json::Value = parse_json(&path, line, line_no)?;
        if v.get("kind").and_then(serde_json::Value::as_str) != Some("online") {
            return Ok(false);
        }
        let Some(id) = v.get("id").and_then(serde_json::Value::as_u64) else {
            return Err(
                InputError::new(&path, "an online record needs its job `id`")
                    .at_line(line_no)
                    .field("id"),
            );
        };
        let submit_s = match v.get("submit_s") {
            None => 0,
            Some(s) => s.as_u64().ok_or_else(|| {
                InputError::new(&path, "must be a whole number of seconds")
                    .at_line(line_no)
                    .field("submit_s")
            })?,
        };
        self.check_order(line_no, id, submit_s)?;
        self.online.push((line_no, v));
        Ok(true)
    }

    /// The checks every record shares: within the job limit, a unique id, sorted by
    /// `submit_s`.
    fn check_order(&mut self, line_no: usize, id: u64, submit_s: u64) -> Result<(), InputError> {
        let path = self.path.as_path();
        if self.ids.len() as u64 >= crate::limits::MAX_JOBS {
            return Err(InputError::new(
                path,
                format!("more than {} jobs, the limit", crate::limits::MAX_JOBS),
            )
            .at_line(line_no));
        }
        if !self.ids.insert(id) {
            return Err(InputError::new(path, format!("duplicate job id {id}"))
                .at_line(line_no)
                .field("id"));
        }
        if submit_s < self.last_submit {
            return Err(InputError::new(path, "jobs must be sorted by submit_s")
                .at_line(line_no)
                .field("submit_s"));
        }
        self.last_submit = submit_s;
        Ok(())
    }

    fn record(&mut self, line_no: usize, line: &str) -> Result<JobSpec, InputError> {
        let path = self.path.as_path();
        let job: JobSpec = parse_json(path, line, line_no)?;
        if let Err((field, msg)) = job.validate() {
            return Err(InputError::new(path, msg).at_line(line_no).field(field));
        }
        self.check_order(line_no, job.id, job.submit_s)?;
        Ok(job)
    }
}

impl Iterator for TraceReader {
    type Item = Result<(usize, JobSpec), InputError>;

    /// The next job; after an error, nothing more.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        while let Some((idx, line)) = self.lines.next() {
            let line_no = idx + 1;
            let result = match line {
                Err(e) => {
                    Err(InputError::new(&self.path, format!("cannot read: {e}")).at_line(line_no))
                }
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => match self.online_record(line_no, &line) {
                    Ok(true) => continue,
                    Ok(false) => self.record(line_no, &line),
                    Err(e) => Err(e),
                },
            };
            self.failed = result.is_err();
            return Some(result.map(|job| (line_no, job)));
        }
        None
    }
}

fn parse_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
    line_no: usize,
) -> Result<T, InputError> {
    crate::error::parse_json_document(path, text, line_no - 1)
}

/// Writes a trace atomically, only over a regular file (`dlsim_fsio`).
pub fn write_trace(path: &Path, header: &TraceHeader, jobs: &[JobSpec]) -> std::io::Result<()> {
    dlsim_fsio::write_atomic_with(path, |out| {
        serde_json::to_writer(&mut *out, header)?;
        out.write_all(b"\n")?;
        for job in jobs {
            serde_json::to_writer(&mut *out, job)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{generate, GeneratorConfig};

    #[test]
    fn write_then_read_gives_identical_jobs() {
        let dir = std::env::temp_dir().join(format!("dlsim-trace-rt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.jsonl");
        let cfg = GeneratorConfig {
            days: 0.2,
            jobs_per_day: 500.0,
            ..GeneratorConfig::default()
        };
        let jobs = generate(&cfg, 3);
        write_trace(
            &path,
            &TraceHeader::new(serde_json::json!({"test": true})),
            &jobs,
        )
        .unwrap();
        let back = read_trace(&path).unwrap();
        assert_eq!(jobs, back.jobs);
        assert_eq!(back.lines[0], 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn errors_name_line_and_field() {
        let dir = std::env::temp_dir().join(format!("dlsim-trace-err-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.jsonl");
        let good = generate(
            &GeneratorConfig {
                days: 0.05,
                ..GeneratorConfig::default()
            },
            1,
        );
        let mut text =
            serde_json::to_string(&TraceHeader::new(serde_json::Value::Null)).unwrap() + "\n";
        text += &serde_json::to_string(&good[0]).unwrap();
        text += "\n";
        let mut bad = serde_json::to_value(&good[1]).unwrap();
        bad["ps_cpu"] = serde_json::json!(-2.0);
        text += &bad.to_string();
        std::fs::write(&path, text).unwrap();
        let err = read_trace(&path).unwrap_err();
        assert_eq!(err.line, Some(3));
        assert_eq!(err.field.as_deref(), Some("ps_cpu"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
