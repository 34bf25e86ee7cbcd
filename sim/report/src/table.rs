//! A small typed table and its renderings: Markdown and HTML for people, CSV and Parquet
//! (through polars) for tools.
//!
//! Columns have snake_case names with the unit last (`jct_median_s`), the same names in
//! every table and in `results.parquet`; a table may give people other labels, used only
//! in Markdown and HTML. The Parquet file's key-value metadata says where the numbers came
//! from and what they are measured in ([`Provenance`]): `dlsim_version`, `git_commit`,
//! `dlsim_table`, `dlsim_title`, and JSON values `dlsim_scenarios`, `dlsim_policies`,
//! `dlsim_seeds` and `dlsim_units` (column -> unit), so a notebook needs nothing else.
//! Polars' own Parquet writer cannot add key-value metadata, so the file is written
//! through `polars-parquet`'s writer (which polars uses inside) with the same settings.
//!
//! Numbers keep full precision in CSV and Parquet; only the Markdown and HTML views round
//! them. Every file is written atomically, so a report folder never holds half a table.

use polars::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The commit dlsim was built from (`build.rs`), or `unknown` outside a git checkout.
pub const GIT_COMMIT: &str = env!("DLSIM_GIT_COMMIT");

/// What a table's numbers come from, written into its Parquet metadata.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Provenance {
    pub scenarios: Vec<String>,
    pub policies: Vec<String>,
    pub seeds: Vec<u64>,
}

impl Provenance {
    /// Adds a run's scenario, policy and seed (each value once, in first-seen order).
    pub fn add(&mut self, scenario: &str, policy: &str, seed: u64) {
        if !self.scenarios.iter().any(|s| s == scenario) {
            self.scenarios.push(scenario.into());
        }
        if !self.policies.iter().any(|p| p == policy) {
            self.policies.push(policy.into());
        }
        if !self.seeds.contains(&seed) {
            self.seeds.push(seed);
        }
    }
}

/// The unit of a column, read from its name: `_s` seconds, `_min` minutes, `_hours` hours,
/// `_mb` megabytes, `_cpu` and `_cores` cores, `_gpu` GPUs, `_pct`
/// percent, `_pp` percentage points; utilisation, allocation and JCR are fractions
/// (0-1); counts are counts. `None` for labels (policy, ids).
pub fn unit(column: &str) -> Option<&'static str> {
    const COUNTS: &[&str] = &[
        "runs",
        "seeds",
        "count",
        "events",
        "oom_kills",
        "pod_failures",
        "relaunches",
        "evictions",
        "node_failures",
        "rescales",
    ];
    if column.ends_with("_s") {
        Some("s")
    } else if column.ends_with("_min") {
        Some("min")
    } else if column.ends_with("_hours") {
        Some("h")
    } else if column.ends_with("_mb") {
        Some("MB")
    } else if column.ends_with("_cpu") || column.ends_with("_cores") {
        Some("cores")
    } else if column.ends_with("_gpu") {
        Some("GPUs")
    } else if column.ends_with("_pct") {
        Some("%")
    } else if column.ends_with("_pp") {
        Some("percentage points")
    } else if column == "jcr" || column.contains("util") || column.contains("alloc") {
        Some("fraction (0-1)")
    } else if column.starts_with("jobs_") || COUNTS.contains(&column) {
        Some("count")
    } else {
        None
    }
}

/// One cell. `Num` may be NaN (shown as `n/a`, written as null).
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Str(String),
    Int(i64),
    Num(f64),
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::Str(s.to_string())
    }
}
impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell::Str(s)
    }
}
impl From<f64> for Cell {
    fn from(x: f64) -> Self {
        Cell::Num(x)
    }
}
impl From<i64> for Cell {
    fn from(x: i64) -> Self {
        Cell::Int(x)
    }
}

/// A named table whose columns each hold one kind of cell.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// File stem of the CSV and Parquet outputs, e.g. `summary`.
    pub name: String,
    pub title: String,
    /// snake_case names, unit last: what CSV and Parquet carry.
    pub columns: Vec<String>,
    /// What Markdown and HTML show; the column names unless set.
    pub labels: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    pub provenance: Provenance,
    /// Units of columns whose name does not say it (long tables: `delta` is in the unit of
    /// the row's `metric`); added to those [`unit()`] reads from the names.
    pub units: BTreeMap<String, String>,
}

impl Table {
    pub fn new(name: &str, title: &str, columns: &[&str]) -> Table {
        Table {
            name: name.into(),
            title: title.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            labels: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
            provenance: Provenance::default(),
            units: BTreeMap::new(),
        }
    }

    /// Labels for people, one per column, in Markdown and HTML only.
    pub fn with_labels(mut self, labels: &[&str]) -> Table {
        assert_eq!(
            labels.len(),
            self.columns.len(),
            "table {}: labels",
            self.name
        );
        self.labels = labels.iter().map(|l| l.to_string()).collect();
        self
    }

    /// The Parquet key-value metadata of this table.
    pub fn metadata(&self) -> Vec<(String, String)> {
        metadata(
            &self.name,
            &self.title,
            &self.columns,
            &self.provenance,
            &self.units,
        )
    }

    pub fn push(&mut self, row: Vec<Cell>) {
        assert_eq!(
            row.len(),
            self.columns.len(),
            "table {}: row width",
            self.name
        );
        self.rows.push(row);
    }

    /// The table as a polars frame; a column's type follows its first cell.
    pub fn to_frame(&self) -> PolarsResult<DataFrame> {
        let mut cols = Vec::with_capacity(self.columns.len());
        for (i, name) in self.columns.iter().enumerate() {
            let cells = self.rows.iter().map(|r| &r[i]);
            let name = PlSmallStr::from(name.as_str());
            let col = match self.rows.first().map(|r| &r[i]) {
                Some(Cell::Int(_)) => Column::new(
                    name,
                    cells
                        .map(|c| match c {
                            Cell::Int(x) => Some(*x),
                            _ => None,
                        })
                        .collect::<Vec<_>>(),
                ),
                Some(Cell::Num(_)) => Column::new(
                    name,
                    cells
                        .map(|c| match c {
                            Cell::Num(x) if x.is_finite() => Some(*x),
                            Cell::Int(x) => Some(*x as f64),
                            _ => None,
                        })
                        .collect::<Vec<_>>(),
                ),
                _ => Column::new(name, cells.map(plain).collect::<Vec<_>>()),
            };
            cols.push(col);
        }
        DataFrame::new(cols)
    }

    /// Writes `<dir>/<name>.csv` and `<dir>/<name>.parquet`; returns both paths.
    pub fn write(&self, dir: &Path) -> anyhow::Result<[PathBuf; 2]> {
        let mut df = self.to_frame()?;
        let csv = dir.join(format!("{}.csv", self.name));
        let parquet = dir.join(format!("{}.parquet", self.name));
        atomic(&csv, |f| {
            CsvWriter::new(f).include_header(true).finish(&mut df)?;
            Ok(())
        })?;
        let meta = self.metadata();
        atomic(&parquet, |f| write_parquet(f, &mut df, meta))?;
        Ok([csv, parquet])
    }

    /// A GitHub-flavoured Markdown table.
    pub fn markdown(&self) -> String {
        let mut out = format!("| {} |\n|", self.labels.join(" | "));
        for row in self.rows.first().into_iter().flatten() {
            out.push_str(if matches!(row, Cell::Str(_)) {
                "---|"
            } else {
                "---:|"
            });
        }
        if self.rows.is_empty() {
            out.push_str(&"---|".repeat(self.columns.len()));
        }
        out.push('\n');
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(|c| shown(c).replace('|', "\\|")).collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        out
    }

    /// An HTML `<table>`.
    pub fn html(&self) -> String {
        let mut out = String::from("<table>\n<thead><tr>");
        for c in &self.labels {
            out.push_str(&format!("<th>{}</th>", escape(c)));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for c in row {
                let class = if matches!(c, Cell::Str(_)) {
                    ""
                } else {
                    " class=\"n\""
                };
                out.push_str(&format!("<td{class}>{}</td>", escape(&shown(c))));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
        out
    }
}

/// The Parquet key-value metadata of a table: see the module comment.
pub fn metadata(
    name: &str,
    title: &str,
    columns: &[String],
    provenance: &Provenance,
    extra_units: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let mut units: BTreeMap<String, String> = columns
        .iter()
        .filter_map(|c| Some((c.clone(), unit(c)?.to_string())))
        .collect();
    units.extend(extra_units.clone());
    let json = |v: serde_json::Value| v.to_string();
    vec![
        ("dlsim_version".into(), env!("CARGO_PKG_VERSION").into()),
        ("git_commit".into(), GIT_COMMIT.into()),
        ("dlsim_table".into(), name.into()),
        ("dlsim_title".into(), title.into()),
        (
            "dlsim_scenarios".into(),
            json(serde_json::json!(provenance.scenarios)),
        ),
        (
            "dlsim_policies".into(),
            json(serde_json::json!(provenance.policies)),
        ),
        (
            "dlsim_seeds".into(),
            json(serde_json::json!(provenance.seeds)),
        ),
        ("dlsim_units".into(), json(serde_json::json!(units))),
    ]
}

/// Writes `df` as Parquet with key-value `metadata`, as polars' `ParquetWriter` would
/// (zstd, statistics, one row group per 512^2 rows) plus the metadata.
pub fn write_parquet(
    f: &mut impl std::io::Write,
    df: &mut DataFrame,
    metadata: Vec<(String, String)>,
) -> anyhow::Result<()> {
    use polars_parquet::write::{
        transverse, CompressionOptions, Encoding, FileWriter, KeyValue, RowGroupIterator,
        StatisticsOptions, Version, WriteOptions,
    };
    df.as_single_chunk_par();
    let schema = df.schema().to_arrow(CompatLevel::newest());
    let options = WriteOptions {
        statistics: StatisticsOptions::full(),
        version: Version::V1,
        compression: CompressionOptions::Zstd(None),
        data_page_size: None,
    };
    let encodings = schema
        .iter_values()
        .map(|field| transverse(&field.dtype, |_| Encoding::Plain))
        .collect();
    let batches = df.iter_chunks(CompatLevel::newest(), false).map(Ok);
    let groups = RowGroupIterator::try_new(batches, &schema, options, encodings)?;
    let mut writer = FileWriter::try_new(f, schema, options)?;
    for group in groups {
        writer.write(group?)?;
    }
    let kv = metadata
        .into_iter()
        .map(|(key, value)| KeyValue {
            key,
            value: Some(value),
        })
        .collect();
    writer.end(Some(kv))?;
    Ok(())
}

/// Full-precision text, for CSV.
fn plain(c: &Cell) -> String {
    match c {
        Cell::Str(s) => s.clone(),
        Cell::Int(x) => x.to_string(),
        Cell::Num(x) => x.to_string(),
    }
}

/// Rounded text for people: 4 significant figures, thousands kept whole.
pub fn shown(c: &Cell) -> String {
    match c {
        Cell::Str(s) => s.clone(),
        Cell::Int(x) => x.to_string(),
        Cell::Num(x) if !x.is_finite() => "n/a".into(),
        Cell::Num(x) if x.abs() >= 1000.0 => format!("{x:.0}"),
        Cell::Num(x) if x.abs() >= 10.0 => format!("{x:.1}"),
        Cell::Num(x) => format!("{x:.3}"),
    }
}

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Writes `path` atomically through `dlsim_fsio` (temporary sibling, rename; only over a
/// regular file or a missing path), `write` filling it.
pub fn atomic(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut failed = None;
    let result = dlsim_fsio::write_atomic_with(path, |out| {
        write(out).map_err(|e| {
            let io = std::io::Error::other(format!("{e:#}"));
            failed = Some(e);
            io
        })
    });
    match (result, failed) {
        (Ok(()), _) => Ok(()),
        (Err(_), Some(e)) => Err(e.context(format!("writing {}", path.display()))),
        (Err(e), None) => Err(e.into()),
    }
}

/// Writes text to `path` atomically.
pub fn write_text(path: &Path, text: &str) -> anyhow::Result<()> {
    dlsim_fsio::write_atomic(path, text.as_bytes()).map_err(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new("t", "T", &["policy", "n", "jct_s"]);
        t.push(vec!["static".into(), Cell::Int(3), Cell::Num(1234.5678)]);
        t.push(vec!["a|b".into(), Cell::Int(1), Cell::Num(f64::NAN)]);
        t
    }

    #[test]
    fn renders_markdown_and_html() {
        let t = sample();
        let md = t.markdown();
        assert!(
            md.starts_with("| policy | n | jct_s |\n|---|---:|---:|\n"),
            "{md}"
        );
        assert!(md.contains("| static | 3 | 1235 |"), "{md}");
        assert!(md.contains("a\\|b") && md.contains("n/a"), "{md}");
        assert!(t.html().contains("<td class=\"n\">1235</td>"));
    }

    #[test]
    fn writes_csv_and_parquet() {
        let dir = std::env::temp_dir().join(format!("dlsim-table-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let [csv, parquet] = sample().write(&dir).unwrap();
        let text = std::fs::read_to_string(csv).unwrap();
        assert_eq!(text, "policy,n,jct_s\nstatic,3,1234.5678\na|b,1,\n");
        let bytes = std::fs::read(&parquet).unwrap();
        assert_eq!(&bytes[..4], b"PAR1");
        // Polars reads it back whole: names, types and nulls.
        let df = ParquetReader::new(std::fs::File::open(&parquet).unwrap())
            .finish()
            .unwrap();
        assert_eq!(df.get_column_names(), ["policy", "n", "jct_s"]);
        assert_eq!(df.column("n").unwrap().dtype(), &DataType::Int64);
        assert_eq!(df.column("jct_s").unwrap().null_count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parquet_metadata_carries_provenance_and_units() {
        let dir = std::env::temp_dir().join(format!("dlsim-table-meta-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut t = sample();
        t.provenance.add("quickstart", "static", 7);
        t.provenance.add("quickstart", "dlrover", 7);
        let [_, parquet] = t.write(&dir).unwrap();
        let meta = polars_parquet::read::read_metadata(&mut std::fs::File::open(&parquet).unwrap())
            .unwrap();
        let kv: BTreeMap<String, String> = meta
            .key_value_metadata()
            .clone()
            .unwrap()
            .into_iter()
            .map(|kv| (kv.key, kv.value.unwrap_or_default()))
            .collect();
        assert_eq!(kv["dlsim_version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(kv["git_commit"], GIT_COMMIT);
        assert!(
            GIT_COMMIT == "unknown" || GIT_COMMIT.len() == 40,
            "{GIT_COMMIT}"
        );
        assert_eq!(kv["dlsim_table"], "t");
        assert_eq!(kv["dlsim_scenarios"], r#"["quickstart"]"#);
        assert_eq!(kv["dlsim_policies"], r#"["static","dlrover"]"#);
        assert_eq!(kv["dlsim_seeds"], "[7]");
        assert_eq!(kv["dlsim_units"], r#"{"jct_s":"s"}"#);
        // Arrow's schema is still there, for pyarrow and pandas.
        assert!(kv.contains_key("ARROW:schema"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn units_follow_the_column_names() {
        assert_eq!(unit("jct_median_s"), Some("s"));
        assert_eq!(unit("accumulated_lag_min"), Some("min"));
        assert_eq!(unit("gpu_hours"), Some("h"));
        assert_eq!(unit("worker_mem_mb"), Some("MB"));
        assert_eq!(unit("cluster_cpu_util"), Some("fraction (0-1)"));
        assert_eq!(unit("jcr"), Some("fraction (0-1)"));
        assert_eq!(unit("jobs_failed"), Some("count"));
        assert_eq!(unit("delta_pct"), Some("%"));
        assert_eq!(unit("policy"), None);
    }

    #[test]
    fn labels_are_for_people_only() {
        let t = sample().with_labels(&["policy", "count", "JCT (s)"]);
        assert!(t.markdown().starts_with("| policy | count | JCT (s) |"));
        assert!(t.html().contains("<th>JCT (s)</th>"));
        assert_eq!(
            t.to_frame().unwrap().get_column_names(),
            ["policy", "n", "jct_s"]
        );
    }
}
