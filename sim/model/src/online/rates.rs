//! Rate series: the importer behind `dlsim trace import --format qps|dlrm2025-creations`, and
//! the reader of the series it writes.
//!
//! The output is a small CSV, `t_s,rate`, preceded by `#` provenance lines (source file,
//! format, method, rows read and skipped). Sources are read line by line, never whole.
//!
//! * `qps` (alibaba/clusterdata cluster-trace-v2026-GenAI `qps.csv`: `timestamp_anon, value,
//!   container_ip, request_type`, rows sorted by time): per bucket, each container's mean
//!   `value` (its reported request rate), summed over containers. Rows without a container
//!   count as one pseudo-container `""`. Time starts at the first row.
//! * `dlrm2025-creations` (`disaggregated_DLRM_trace.csv`): instance creations folded onto
//!   one day (`creation_time mod 86400`), per bucket, divided by the days covered: the
//!   daily creation pattern. Rows with an empty `creation_time` (outside the window) are
//!   skipped and counted.

use dlsim_traces::InputError;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufReader;
use std::path::Path;

/// Source formats of rate series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateFormat {
    Qps,
    Dlrm2025Creations,
}

impl RateFormat {
    pub const ALL: [RateFormat; 2] = [RateFormat::Qps, RateFormat::Dlrm2025Creations];

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RateFormat::Qps => "qps",
            RateFormat::Dlrm2025Creations => "dlrm2025-creations",
        }
    }
}

/// A rate series: `rate[i]` holds on `[t_s[i], t_s[i+1])`.
#[derive(Clone, Debug, PartialEq)]
pub struct RateSeries {
    pub t_s: Vec<f64>,
    pub rate: Vec<f64>,
    /// The `#` lines of the file (provenance), without the `#`.
    pub notes: Vec<String>,
}

/// What an import read.
#[derive(Clone, Debug, Default)]
pub struct ImportStats {
    pub rows: u64,
    pub skipped: u64,
}

/// Bucket width of imported series (s).
pub const BUCKET_S: f64 = 300.0;

/// Imports `input` and writes the series to `out`; returns a short report for the terminal.
pub fn import_cli(
    format: RateFormat,
    input: &Path,
    out: &Path,
    skip_bad: bool,
) -> Result<String, InputError> {
    let (series, stats) = import(format, input, skip_bad)?;
    if series.rate.is_empty() {
        return Err(InputError::new(input, "no usable row"));
    }
    let text = render(&series);
    dlsim_fsio::write_atomic(out, text.as_bytes())
        .map_err(|e| InputError::new(out, format!("cannot write: {e}")))?;
    let (lo, hi) = min_max(&series.rate);
    Ok(format!(
        "read {} rows ({} skipped); wrote {} buckets of {} s to {}; rate min {:.4}, max {:.4} (peak/trough {:.2})\n",
        stats.rows,
        stats.skipped,
        series.rate.len(),
        BUCKET_S,
        out.display(),
        lo,
        hi,
        if lo > 0.0 { hi / lo } else { f64::INFINITY }
    ))
}

pub fn min_max(xs: &[f64]) -> (f64, f64) {
    xs.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        })
}

/// Reads a source file into a series.
pub fn import(
    format: RateFormat,
    input: &Path,
    skip_bad: bool,
) -> Result<(RateSeries, ImportStats), InputError> {
    let file = std::fs::File::open(input)
        .map_err(|e| InputError::new(input, format!("cannot open: {e}")))?;
    // Lines are read with a limit, so a source without line breaks is an error (#21).
    let mut lines = dlsim_fsio::bounded_lines(BufReader::with_capacity(1 << 16, file));
    let header = match lines.next() {
        Some(Ok(h)) => h,
        Some(Err(e)) => return Err(InputError::new(input, format!("cannot read: {e}")).at_line(1)),
        None => return Err(InputError::new(input, "empty file: expected a CSV header").at_line(1)),
    };
    let cols: Vec<&str> = header.trim_end().split(',').collect();
    let find = |name: &str| {
        cols.iter().position(|c| *c == name).ok_or_else(|| {
            InputError::new(
                input,
                format!("missing column `{name}` in header `{header}`"),
            )
            .at_line(1)
        })
    };
    let mut rows = Rows {
        input,
        skip_bad,
        stats: ImportStats::default(),
    };
    let series = match format {
        RateFormat::Qps => {
            let (ti, vi, ci) = (
                find("timestamp_anon")?,
                find("value")?,
                find("container_ip")?,
            );
            qps(&mut lines, &mut rows, ti, vi, ci)?
        }
        RateFormat::Dlrm2025Creations => {
            let ci = find("creation_time")?;
            creations(&mut lines, &mut rows, ci)?
        }
    };
    let mut series = series;
    series.notes = vec![
        "dlsim rate series v1".into(),
        format!("source: {} (format {})", input.display(), format.as_str()),
        format!("method: {}", method(format)),
        format!(
            "rows read {}, skipped {}",
            rows.stats.rows, rows.stats.skipped
        ),
    ];
    Ok((series, rows.stats))
}

fn method(format: RateFormat) -> String {
    match format {
        RateFormat::Qps => format!(
            "per {BUCKET_S} s bucket, each container's mean `value` summed over containers; t from the first row"
        ),
        RateFormat::Dlrm2025Creations => format!(
            "instance creations folded onto one day (creation_time mod 86400), per {BUCKET_S} s bucket, per day covered"
        ),
    }
}

struct Rows<'a> {
    input: &'a Path,
    skip_bad: bool,
    stats: ImportStats,
}

impl Rows<'_> {
    /// Calls `row` with each non-blank data row's line number and comma-split cells (the
    /// header was line 1), counting rows; a read error names the line.
    fn each(
        &mut self,
        lines: &mut LineIter,
        mut row: impl FnMut(&mut Self, usize, &[&str]) -> Result<(), InputError>,
    ) -> Result<(), InputError> {
        for (i, line) in lines.enumerate() {
            let line_no = i + 2;
            let line = line.map_err(|e| {
                InputError::new(self.input, format!("read error: {e}")).at_line(line_no)
            })?;
            if line.trim().is_empty() {
                continue;
            }
            self.stats.rows += 1;
            let cells: Vec<&str> = line.split(',').collect();
            row(self, line_no, &cells)?;
        }
        Ok(())
    }

    /// A bad row: an error, or counted and skipped with `--skip-bad`.
    fn bad(&mut self, line: usize, field: &str, msg: String) -> Result<(), InputError> {
        if self.skip_bad {
            self.stats.skipped += 1;
            Ok(())
        } else {
            Err(InputError::new(self.input, msg).at_line(line).field(field))
        }
    }
}

fn field_f64(cells: &[&str], i: usize) -> Option<f64> {
    cells
        .get(i)?
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

type LineIter = dlsim_fsio::BoundedLines<BufReader<std::fs::File>>;

fn qps(
    lines: &mut LineIter,
    rows: &mut Rows,
    ti: usize,
    vi: usize,
    ci: usize,
) -> Result<RateSeries, InputError> {
    let mut t0: Option<f64> = None;
    let mut cur_bucket: i64 = -1;
    let mut acc: BTreeMap<String, (f64, u32)> = BTreeMap::new();
    let mut out = RateSeries {
        t_s: Vec::new(),
        rate: Vec::new(),
        notes: Vec::new(),
    };
    let flush = |out: &mut RateSeries, bucket: i64, acc: &mut BTreeMap<String, (f64, u32)>| {
        if bucket < 0 {
            return;
        }
        // Buckets with no row in between keep rate 0 (no container reported).
        while (out.t_s.len() as i64) < bucket {
            out.t_s.push(out.t_s.len() as f64 * BUCKET_S);
            out.rate.push(0.0);
        }
        let total: f64 = acc.values().map(|(s, n)| s / f64::from(*n)).sum();
        out.t_s.push(bucket as f64 * BUCKET_S);
        out.rate.push(total);
        acc.clear();
    };
    rows.each(lines, |rows, line_no, cells| {
        let Some(t) = field_f64(cells, ti) else {
            rows.bad(line_no, "timestamp_anon", "not a number".into())?;
            return Ok(());
        };
        let Some(v) = field_f64(cells, vi).filter(|v| *v >= 0.0) else {
            rows.bad(line_no, "value", "not a number >= 0".into())?;
            return Ok(());
        };
        let start = *t0.get_or_insert(t);
        if t < start {
            rows.bad(
                line_no,
                "timestamp_anon",
                format!("{t} is before the first row's {start} (rows must be sorted)"),
            )?;
            return Ok(());
        }
        let bucket = ((t - start) / BUCKET_S).floor() as i64;
        if bucket < cur_bucket {
            rows.bad(
                line_no,
                "timestamp_anon",
                "rows are not sorted by time".into(),
            )?;
            return Ok(());
        }
        if bucket != cur_bucket {
            flush(&mut out, cur_bucket, &mut acc);
            cur_bucket = bucket;
        }
        let key = cells.get(ci).map(|c| c.trim()).unwrap_or("").to_string();
        let e = acc.entry(key).or_insert((0.0, 0));
        e.0 += v;
        e.1 += 1;
        Ok(())
    })?;
    flush(&mut out, cur_bucket, &mut acc);
    Ok(out)
}

fn creations(lines: &mut LineIter, rows: &mut Rows, ci: usize) -> Result<RateSeries, InputError> {
    let n = (86_400.0 / BUCKET_S) as usize;
    let mut counts = vec![0u64; n];
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    rows.each(lines, |rows, line_no, cells| {
        if cells.get(ci).map(|c| c.trim().is_empty()).unwrap_or(true) {
            rows.stats.skipped += 1; // created outside the trace window
            return Ok(());
        }
        let Some(t) = field_f64(cells, ci).filter(|t| *t >= 0.0) else {
            rows.bad(line_no, "creation_time", "not a number >= 0".into())?;
            return Ok(());
        };
        lo = lo.min(t);
        hi = hi.max(t);
        counts[((t % 86_400.0) / BUCKET_S) as usize % n] += 1;
        Ok(())
    })?;
    // Whole days covered, rounded up.
    let days = if hi > lo {
        ((hi - lo) / 86_400.0).ceil().max(1.0)
    } else {
        1.0
    };
    Ok(RateSeries {
        t_s: (0..n).map(|i| i as f64 * BUCKET_S).collect(),
        rate: counts.iter().map(|&c| c as f64 / days / BUCKET_S).collect(),
        notes: Vec::new(),
    })
}

/// The CSV text of a series.
pub fn render(s: &RateSeries) -> String {
    let mut out = String::new();
    for n in &s.notes {
        let _ = writeln!(out, "# {n}");
    }
    out.push_str("t_s,rate\n");
    for (t, r) in s.t_s.iter().zip(&s.rate) {
        let _ = writeln!(out, "{t},{r}");
    }
    out
}

/// Reads a `t_s,rate` series (with optional `#` lines); times must increase strictly.
pub fn read_series(path: &Path) -> Result<RateSeries, InputError> {
    let text = dlsim_fsio::read_to_string_limited(path, dlsim_fsio::MAX_INPUT_BYTES)
        .map_err(|e| InputError::new(path, format!("cannot read: {e}")))?;
    let mut s = RateSeries {
        t_s: Vec::new(),
        rate: Vec::new(),
        notes: Vec::new(),
    };
    let mut header_seen = false;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if let Some(note) = line.strip_prefix('#') {
            s.notes.push(note.trim().to_string());
            continue;
        }
        if !header_seen {
            if line.trim() != "t_s,rate" {
                return Err(InputError::new(
                    path,
                    format!("expected header `t_s,rate`, found `{line}`"),
                )
                .at_line(line_no));
            }
            header_seen = true;
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split(',').collect();
        let t = field_f64(&cells, 0).filter(|t| *t >= 0.0);
        let r = field_f64(&cells, 1).filter(|r| *r >= 0.0);
        let (Some(t), Some(r)) = (t, r) else {
            let field = if t.is_none() { "t_s" } else { "rate" };
            return Err(InputError::new(path, "expected a number >= 0")
                .at_line(line_no)
                .field(field));
        };
        if s.t_s.last().is_some_and(|&last| t <= last) {
            return Err(InputError::new(path, "times must increase")
                .at_line(line_no)
                .field("t_s"));
        }
        s.t_s.push(t);
        s.rate.push(r);
    }
    if s.rate.is_empty() {
        return Err(InputError::new(path, "no data row"));
    }
    Ok(s)
}

impl RateSeries {
    /// The value holding at `t` within one period (times past the last point hold its value).
    pub fn at(&self, t: f64) -> f64 {
        match self.t_s.partition_point(|&x| x <= t) {
            0 => self.rate[0],
            i => self.rate[i - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join("dlsim-online-rates-tests");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn qps_sums_container_means_per_bucket() {
        let p = tmp(
            "q.csv",
            "timestamp_anon,value,container_ip,request_type\n\
             1000.0,1.0,a,G\n1010.0,3.0,a,G\n1020.0,0.5,b,G\n1400.0,2.0,a,G\n",
        );
        let (s, st) = import(RateFormat::Qps, &p, false).unwrap();
        assert_eq!(st.rows, 4);
        assert_eq!(s.t_s, vec![0.0, 300.0]);
        assert_eq!(s.rate, vec![2.5, 2.0]);
        let out = tmp("q-out.csv", "");
        import_cli(RateFormat::Qps, &p, &out, false).unwrap();
        let back = read_series(&out).unwrap();
        assert_eq!(back.rate, s.rate);
        assert!(back.notes.iter().any(|n| n.contains("format qps")));
    }

    #[test]
    fn bad_rows_name_line_and_field_or_are_skipped() {
        let p = tmp(
            "bad.csv",
            "timestamp_anon,value,container_ip,request_type\n1.0,1.0,a,G\n2.0,x,a,G\n",
        );
        let e = import(RateFormat::Qps, &p, false).unwrap_err().to_string();
        assert!(e.contains(":3: field `value`"), "{e}");
        let (_, st) = import(RateFormat::Qps, &p, true).unwrap();
        assert_eq!(st.skipped, 1);
    }

    #[test]
    fn creations_fold_onto_one_day() {
        let p = tmp(
            "c.csv",
            "instance_sn,role,creation_time\na,HN,\nb,HN,100\nc,HN,86500\nd,HN,172800\n",
        );
        let (s, st) = import(RateFormat::Dlrm2025Creations, &p, false).unwrap();
        assert_eq!(st.skipped, 1);
        assert_eq!(s.rate.len(), 288);
        // Three creations over two days, all in bucket 0 (t mod 1 day < 300 s).
        assert!((s.rate[0] - 3.0 / 2.0 / BUCKET_S).abs() < 1e-12);
    }
}
