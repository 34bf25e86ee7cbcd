//! A small typed table and its renderings: Markdown and HTML for people, CSV and Parquet
//! (through polars) for tools.
//!
//! Numbers keep full precision in CSV and Parquet; only the Markdown and HTML views round
//! them. Every file is written atomically, so a report folder never holds half a table.

use anyhow::Context;
use polars::prelude::*;
use std::path::{Path, PathBuf};

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
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(name: &str, title: &str, columns: &[&str]) -> Table {
        Table {
            name: name.into(),
            title: title.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
        }
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
        atomic(&parquet, |f| {
            ParquetWriter::new(f).finish(&mut df)?;
            Ok(())
        })?;
        Ok([csv, parquet])
    }

    /// A GitHub-flavoured Markdown table.
    pub fn markdown(&self) -> String {
        let mut out = format!("| {} |\n|", self.columns.join(" | "));
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
        for c in &self.columns {
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

/// Writes `path` through a temporary sibling and a rename.
pub fn atomic(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let mut f =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    write(&mut f).with_context(|| format!("writing {}", path.display()))?;
    f.sync_all().ok();
    drop(f);
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
}

/// Writes text to `path` atomically.
pub fn write_text(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    atomic(path, |f| Ok(f.write_all(text.as_bytes())?))
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
        let bytes = std::fs::read(parquet).unwrap();
        assert_eq!(&bytes[..4], b"PAR1");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
