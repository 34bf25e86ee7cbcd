//! Streaming line input shared by the importers: plain or gzip files read line by line
//! (never the whole file at once), comma splitting, typed field parsing, and the one place
//! that decides whether a bad row stops the import or is skipped and counted.

use crate::cluster::NodeRow;
use crate::report::ImportReport;
use dlsim_traces::InputError;
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Lines of a text file, gzip-compressed or not (detected by the gzip magic bytes).
pub struct Lines {
    reader: Box<dyn BufRead>,
    path: PathBuf,
    line_no: usize,
    buf: String,
}

impl Lines {
    pub fn open(path: &Path) -> Result<Self, InputError> {
        let open_err = |e: std::io::Error| InputError::new(path, format!("cannot open: {e}"));
        let mut probe = File::open(path).map_err(open_err)?;
        let mut magic = [0u8; 2];
        let gz = probe.read_exact(&mut magic).is_ok() && magic == [0x1f, 0x8b];
        let file = File::open(path).map_err(open_err)?;
        let reader: Box<dyn BufRead> = if gz {
            Box::new(BufReader::with_capacity(
                1 << 16,
                MultiGzDecoder::new(BufReader::new(file)),
            ))
        } else {
            Box::new(BufReader::with_capacity(1 << 16, file))
        };
        Ok(Lines {
            reader,
            path: path.to_path_buf(),
            line_no: 0,
            buf: String::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads line 1 and checks it is the header `expected`; `what` names the file kind
    /// for the empty-file message.
    pub fn header(&mut self, expected: &[&str], what: &str) -> Result<(), InputError> {
        let path = self.path.clone();
        match self.next_line()? {
            Some((_, h)) => expect_header(&path, h, expected),
            None => Err(InputError::new(&path, format!("empty file: expected {what}")).at_line(1)),
        }
    }

    /// Hands every non-empty line to `row` with its number, counting it as read; a row's
    /// error goes to [`reject`] (stop the import, or skip and count with `skip_bad`).
    pub fn each_row(
        &mut self,
        skip_bad: bool,
        report: &mut ImportReport,
        mut row: impl FnMut(usize, &str, &mut ImportReport) -> Result<(), RowError>,
    ) -> Result<(), InputError> {
        while let Some((line_no, text)) = self.next_line()? {
            if text.trim().is_empty() {
                continue;
            }
            report.rows_read += 1;
            if let Err(e) = row(line_no, text, report) {
                reject(&self.path, line_no, e, skip_bad, report)?;
            }
        }
        Ok(())
    }

    /// Reads a node list, one node per non-empty line; any error stops the import.
    /// `empty` is the message for a list without nodes.
    pub fn node_rows(
        &mut self,
        empty: &str,
        mut node: impl FnMut(&str) -> Result<NodeRow, RowError>,
    ) -> Result<Vec<NodeRow>, InputError> {
        let mut nodes = Vec::new();
        while let Some((line_no, text)) = self.next_line()? {
            if text.trim().is_empty() {
                continue;
            }
            match node(text) {
                Ok(n) => nodes.push(n),
                Err(e) => return Err(e.at(&self.path, line_no)),
            }
        }
        if nodes.is_empty() {
            return Err(InputError::new(&self.path, empty));
        }
        Ok(nodes)
    }

    /// The next line without its line ending, with its 1-based number; `None` at the end.
    /// A line is read with a limit (`dlsim_fsio::MAX_LINE_BYTES`): a source without line
    /// breaks (`/dev/zero`) is an error, not an unbounded read (issue #21).
    pub fn next_line(&mut self) -> Result<Option<(usize, &str)>, InputError> {
        self.buf.clear();
        self.line_no += 1;
        let limit = dlsim_fsio::MAX_LINE_BYTES;
        match (&mut self.reader).take(limit + 1).read_line(&mut self.buf) {
            Ok(0) => Ok(None),
            Ok(n) if n as u64 > limit => Err(InputError::new(
                &self.path,
                format!("a line longer than the input limit of {limit} bytes"),
            )
            .at_line(self.line_no)),
            Ok(_) => {
                let text = self.buf.trim_end_matches(['\n', '\r']);
                Ok(Some((self.line_no, text)))
            }
            Err(e) => {
                Err(InputError::new(&self.path, format!("cannot read: {e}")).at_line(self.line_no))
            }
        }
    }
}

/// Why one row cannot be imported: the field, a short reason (the key rows are counted
/// under with `--skip-bad`) and a message for the error line.
#[derive(Debug)]
pub struct RowError {
    pub field: String,
    pub reason: String,
    pub message: String,
}

impl RowError {
    pub fn new(field: &str, reason: &str, message: impl Into<String>) -> Self {
        RowError {
            field: field.to_string(),
            reason: format!("{field}: {reason}"),
            message: message.into(),
        }
    }

    /// The error as the import reports it: file, line and field.
    pub fn at(self, path: &Path, line: usize) -> InputError {
        InputError::new(path, self.message)
            .at_line(line)
            .field(self.field)
    }
}

/// Decides what a bad row does: stop with an error naming file, line and field, or (with
/// `--skip-bad`) be skipped and counted under its reason.
pub fn reject(
    path: &Path,
    line: usize,
    err: RowError,
    skip_bad: bool,
    report: &mut ImportReport,
) -> Result<(), InputError> {
    if skip_bad {
        *report.skipped_bad.entry(err.reason).or_default() += 1;
        Ok(())
    } else {
        Err(err.at(path, line))
    }
}

/// Decides what an odd but repairable row does: by default it is repaired (the caller
/// applies the repair) and counted under `field: what`; with `--strict` it is an error
/// naming the field, so the import stops at the first such row.
pub fn repair(
    strict: bool,
    report: &mut ImportReport,
    field: &str,
    what: &str,
    why: impl Into<String>,
) -> Result<(), RowError> {
    if strict {
        let why = why.into();
        return Err(RowError::new(
            field,
            what,
            format!("{why} (repaired by default: {what}; --strict stops here)"),
        ));
    }
    report.repair(&format!("{field}: {what}"));
    Ok(())
}

/// The largest number any source field may hold (issue #21): Unix times in seconds and
/// memory in KiB stay far below it, while `1e20` is refused naming its column. What the
/// numbers become is then held to the trace limits (`JobSpec::validate`).
pub const MAX_SOURCE_NUMBER: f64 = 1e12;

/// The fields of one delimited row, named by a schema for error messages.
pub struct Row<'a> {
    cols: Vec<&'a str>,
    names: &'static [&'static str],
}

impl<'a> Row<'a> {
    /// Splits a comma-separated row and checks it has exactly the schema's columns.
    /// Quoted fields are not supported (none of the supported sources uses them).
    pub fn csv(text: &'a str, names: &'static [&'static str]) -> Result<Self, RowError> {
        Self::checked(text.split(',').map(str::trim).collect(), names)
    }

    /// Splits a whitespace-separated row (SWF).
    pub fn whitespace(text: &'a str, names: &'static [&'static str]) -> Result<Self, RowError> {
        Self::checked(text.split_whitespace().collect(), names)
    }

    fn checked(cols: Vec<&'a str>, names: &'static [&'static str]) -> Result<Self, RowError> {
        if cols.len() != names.len() {
            return Err(RowError::new(
                "row",
                "wrong number of columns",
                format!(
                    "expected {} columns ({}), got {}",
                    names.len(),
                    names.join(","),
                    cols.len()
                ),
            ));
        }
        Ok(Row { cols, names })
    }

    pub fn str(&self, i: usize) -> &'a str {
        self.cols[i]
    }

    pub fn name(&self, i: usize) -> &'static str {
        self.names[i]
    }

    /// A number, or `None` when the field is empty.
    pub fn opt_f64(&self, i: usize) -> Result<Option<f64>, RowError> {
        let raw = self.cols[i];
        if raw.is_empty() {
            return Ok(None);
        }
        match raw.parse::<f64>() {
            Ok(v) if v.is_finite() && v.abs() <= MAX_SOURCE_NUMBER => Ok(Some(v)),
            Ok(v) if v.is_finite() => Err(RowError::new(
                self.names[i],
                "too large",
                format!("{v:e} is over the limit of {MAX_SOURCE_NUMBER:e} on any source number"),
            )),
            _ => Err(RowError::new(
                self.names[i],
                "not a number",
                format!("expected a number, got `{raw}`"),
            )),
        }
    }

    /// A finite number that must be present and >= 0.
    pub fn non_negative(&self, i: usize) -> Result<f64, RowError> {
        match self.opt_f64(i)? {
            None => Err(RowError::new(
                self.names[i],
                "missing",
                "the field is empty",
            )),
            Some(v) if v < 0.0 => Err(RowError::new(
                self.names[i],
                "negative",
                format!("must be >= 0, got {v}"),
            )),
            Some(v) => Ok(v),
        }
    }

    /// A present number > 0.
    pub fn positive(&self, i: usize) -> Result<f64, RowError> {
        let v = self.non_negative(i)?;
        if v == 0.0 {
            return Err(RowError::new(self.names[i], "zero", "must be > 0, got 0"));
        }
        Ok(v)
    }

    /// An optional time in seconds: empty = not known, else >= 0.
    pub fn opt_time_s(&self, i: usize) -> Result<Option<f64>, RowError> {
        match self.opt_f64(i)? {
            Some(v) if v < 0.0 => Err(RowError::new(
                self.names[i],
                "negative",
                format!("a time must be >= 0, got {v}"),
            )),
            other => Ok(other),
        }
    }
}

/// Sources without a node list reject `--nodes`, saying where the cluster comes from.
pub fn reject_nodes(
    path: &Path,
    nodes: Option<&Path>,
    format: &str,
    cluster_from: &str,
) -> Result<(), InputError> {
    match nodes {
        Some(_) => Err(InputError::new(
            path,
            format!("{format} has no node list: drop --nodes ({cluster_from})"),
        )),
        None => Ok(()),
    }
}

/// Checks that a header row is the expected one, for a clear error on the wrong file.
pub fn expect_header(path: &Path, line: &str, expected: &[&str]) -> Result<(), InputError> {
    let got: Vec<&str> = line.split(',').map(str::trim).collect();
    if got.len() < expected.len() || got[..expected.len()] != *expected {
        return Err(InputError::new(
            path,
            format!("expected the header `{}`, got `{line}`", expected.join(",")),
        )
        .at_line(1));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_plain_and_gzip_lines_with_numbers() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("dlsim-imp-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = dir.join("a.txt");
        std::fs::write(&plain, "x\r\ny\n").unwrap();
        let gz = dir.join("a.gz");
        let mut enc = flate2::write::GzEncoder::new(
            File::create(&gz).unwrap(),
            flate2::Compression::default(),
        );
        enc.write_all(b"x\ny").unwrap();
        enc.finish().unwrap();
        for p in [plain, gz] {
            let mut l = Lines::open(&p).unwrap();
            assert_eq!(l.next_line().unwrap(), Some((1, "x")));
            assert_eq!(l.next_line().unwrap(), Some((2, "y")));
            assert_eq!(l.next_line().unwrap(), None);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn row_errors_name_the_field() {
        const NAMES: &[&str] = &["a", "b"];
        let r = Row::csv("1,x", NAMES).unwrap();
        let e = r.positive(1).unwrap_err();
        assert_eq!(e.field, "b");
        assert_eq!(e.reason, "b: not a number");
        assert!(Row::csv("1", NAMES).is_err());
    }
}
