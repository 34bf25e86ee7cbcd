//! `dlsim report`: aggregate run folders and write `report.md`, a self-contained
//! `report.html` (figures inlined as SVG, so the one file opens anywhere), every table as
//! CSV and Parquet, and every figure as PNG, SVG and PDF.
//!
//! The document has a batch part (summary, deltas and failures tables; JCT, utilisation,
//! throughput and failure figures) and, when a run has online jobs, an online section (the
//! Table 3 table of `online`, the figures of `online_figures`). What the runs hold no data
//! for is left out with a one-line note, not drawn empty: an online-only run has no batch
//! tables nor JCT, throughput and failure figures.

use crate::aggregate::{
    deltas, deltas_table, deltas_view, failures_table, load_runs, policies, policy_stats,
    provenance, summary_table, Run,
};
use crate::figures::{batch_jobs, draw_all, Figure};
use crate::online::{has_online, table3_table, table3_view};
use crate::table::{escape, write_text, Table};
use anyhow::{bail, Context};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Every file `dlsim report` may write into its folder (the tables of `aggregate` and
/// `online`, the figures of `figures::specs` and `online_figures::specs`, the documents). An earlier report is replaced whole; a
/// folder holding anything else is refused, not replaced. Checked on every report.
pub const REPORT_FILES: [&str; 34] = [
    "report.md",
    "report.html",
    "summary.csv",
    "summary.parquet",
    "deltas.csv",
    "deltas.parquet",
    "failures.csv",
    "failures.parquet",
    "jct_cdf.png",
    "jct_cdf.svg",
    "jct_cdf.pdf",
    "utilisation.png",
    "utilisation.svg",
    "utilisation.pdf",
    "allocation.png",
    "allocation.svg",
    "allocation.pdf",
    "throughput.png",
    "throughput.svg",
    "throughput.pdf",
    "failures.png",
    "failures.svg",
    "failures.pdf",
    "table3.csv",
    "table3.parquet",
    "online_lag.png",
    "online_lag.svg",
    "online_lag.pdf",
    "online_workers.png",
    "online_workers.svg",
    "online_workers.pdf",
    "online_violations.png",
    "online_violations.svg",
    "online_violations.pdf",
];

/// What `report` wrote.
pub struct Written {
    pub markdown: PathBuf,
    pub html: PathBuf,
    pub tables: Vec<PathBuf>,
    pub figures: Vec<PathBuf>,
    pub headlines: Vec<String>,
}

/// The policy deltas are taken against by default: `static`; else the first composed spec
/// whose cluster policy is `static` (`static+hpa`); else the first policy.
fn default_baseline(names: &[String]) -> String {
    names
        .iter()
        .find(|n| *n == "static")
        .or_else(|| names.iter().find(|n| n.starts_with("static+")))
        .unwrap_or(&names[0])
        .clone()
}

/// Builds the report of the runs under `inputs` into `out`. `baseline` is the policy
/// deltas are taken against (by default the one `default_baseline` picks).
pub fn report(inputs: &[PathBuf], baseline: Option<&str>, out: &Path) -> anyhow::Result<Written> {
    let runs = load_runs(inputs)?;
    let names = policies(&runs);
    let baseline = match baseline {
        Some(b) if names.iter().any(|n| n == b) => b.to_string(),
        Some(b) => bail!(
            "--baseline `{b}` is none of the runs' policies ({})",
            names.join(", ")
        ),
        None => default_baseline(&names),
    };
    // Written into a staging folder beside `out` and renamed into place at the end, so a
    // failure halfway (a malformed run file) leaves no half report (`dlsim_fsio`).
    let staged = dlsim_fsio::stage_dir(out, &REPORT_FILES)?;
    let written = write_report(&runs, &baseline, &staged);
    let written = match written {
        Ok(w) => w,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staged);
            return Err(e);
        }
    };
    for f in std::fs::read_dir(&staged)? {
        let name = f?.file_name();
        let name = name.to_string_lossy();
        assert!(
            REPORT_FILES.contains(&name.as_ref()),
            "{name} is missing from REPORT_FILES"
        );
    }
    dlsim_fsio::commit_dir(&staged, out)?;
    let moved = |p: &PathBuf| out.join(p.strip_prefix(&staged).unwrap_or(p));
    Ok(Written {
        markdown: moved(&written.markdown),
        html: moved(&written.html),
        tables: written.tables.iter().map(moved).collect(),
        figures: written.figures.iter().map(moved).collect(),
        headlines: written.headlines,
    })
}

/// Writes every file of the report of `runs` into `out`.
fn write_report(runs: &[Run], baseline: &str, out: &Path) -> anyhow::Result<Written> {
    let provenance = provenance(runs);
    // Written as tidy CSV and Parquet; shown as `tables` (the deltas as `view`).
    let mut data = Vec::new();
    let mut tables = Vec::new();
    let mut notes = Vec::new();
    let mut headlines = Vec::new();
    if batch_jobs(runs)? {
        let stats = policies(runs)
            .iter()
            .map(|p| policy_stats(runs, p))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let deltas = deltas(runs, baseline)?;
        let (view, lines) = deltas_view(&deltas, baseline);
        headlines = lines;
        let summary = summary_table(&stats);
        let failures = failures_table(runs)?;
        data.extend([
            summary.clone(),
            deltas_table(&deltas, baseline),
            failures.clone(),
        ]);
        tables.extend([summary, view, failures]);
    } else {
        notes
            .push("No summary, deltas or failures table: the runs have no batch jobs.".to_string());
    }
    let online = if has_online(runs) {
        data.push(table3_table(runs));
        let figures = draw_all(crate::online_figures::specs(runs)?, out)?;
        Some(Online {
            table: table3_view(runs),
            figures,
        })
    } else {
        None
    };
    let mut table_files = Vec::new();
    for t in &mut data {
        t.provenance = provenance.clone();
        table_files.extend(t.write(out)?);
    }
    let (specs, figure_notes) = crate::figures::specs(runs, baseline)?;
    notes.extend(figure_notes);
    let figures = draw_all(specs, out)?;
    let sources: Vec<String> = runs
        .iter()
        .map(|r| format!("{} ({}, seed {})", r.dir.display(), r.policy, r.seed))
        .collect();
    let doc = Doc {
        baseline,
        headlines: &headlines,
        tables: &tables,
        figures: &figures,
        notes: &notes,
        online: online.as_ref(),
        sources: &sources,
    };
    let markdown = out.join("report.md");
    write_text(&markdown, &doc.markdown())?;
    let html = out.join("report.html");
    write_text(&html, &doc.html()?)?;
    let online_files = online.iter().flat_map(|o| o.figures.iter());
    Ok(Written {
        markdown,
        html,
        tables: table_files,
        figures: figures
            .iter()
            .chain(online_files)
            .flat_map(|f| f.files.clone())
            .collect(),
        headlines,
    })
}

/// The online section: the Table 3 table as shown, and its figures.
struct Online {
    table: Table,
    figures: Vec<Figure>,
}

struct Doc<'a> {
    baseline: &'a str,
    headlines: &'a [String],
    tables: &'a [Table],
    figures: &'a [Figure],
    /// One line per table or figure left out, and why.
    notes: &'a [String],
    online: Option<&'a Online>,
    sources: &'a [String],
}

impl Doc<'_> {
    fn markdown(&self) -> String {
        let mut md = String::from("# dlsim report\n\n");
        // Deltas are taken against the baseline; without batch tables there are none.
        if !self.tables.is_empty() {
            writeln!(md, "Baseline policy: `{}`.\n", self.baseline).unwrap();
        }
        for h in self.headlines {
            writeln!(md, "- {h}").unwrap();
        }
        for t in self.tables {
            md.push_str(&table_markdown(t, "##"));
        }
        md.push_str("\n## Figures\n");
        for f in self.figures {
            md.push_str(&figure_markdown(f));
        }
        for note in self.notes {
            writeln!(md, "\n{note}").unwrap();
        }
        if let Some(online) = self.online {
            md.push_str("\n## Online jobs\n");
            md.push_str(&table_markdown(&online.table, "###"));
            for f in &online.figures {
                md.push_str(&figure_markdown(f));
            }
        }
        md.push_str("\n## Runs\n\n");
        for s in self.sources {
            writeln!(md, "- {s}").unwrap();
        }
        md
    }

    fn html(&self) -> anyhow::Result<String> {
        let mut h = String::from(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>dlsim report</title>\n<style>\
             body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}\
             table{border-collapse:collapse;margin:1em 0;font-size:0.9em}\
             th,td{border:1px solid #ccc;padding:3px 8px}th{background:#f3f3f3}\
             td.n{text-align:right;font-variant-numeric:tabular-nums}\
             figure{margin:1.5em 0}figure svg{max-width:100%;height:auto}\
             </style></head><body>\n<h1>dlsim report</h1>\n",
        );
        if !self.tables.is_empty() {
            writeln!(
                h,
                "<p>Baseline policy: <code>{}</code>.</p>",
                escape(self.baseline)
            )?;
        }
        if !self.headlines.is_empty() {
            h.push_str("<ul>\n");
            for l in self.headlines {
                writeln!(h, "<li>{}</li>", escape(&l.replace('`', "")))?;
            }
            h.push_str("</ul>\n");
        }
        for t in self.tables {
            h.push_str(&table_html(t, "h2"));
        }
        h.push_str("<h2>Figures</h2>\n");
        for f in self.figures {
            h.push_str(&figure_html(f)?);
        }
        for note in self.notes {
            writeln!(h, "<p>{}</p>", escape(&note.replace('`', "")))?;
        }
        if let Some(online) = self.online {
            h.push_str("<h2>Online jobs</h2>\n");
            h.push_str(&table_html(&online.table, "h3"));
            for f in &online.figures {
                h.push_str(&figure_html(f)?);
            }
        }
        h.push_str("<h2>Runs</h2>\n<ul>\n");
        for s in self.sources {
            writeln!(h, "<li>{}</li>", escape(s))?;
        }
        h.push_str("</ul>\n</body></html>\n");
        Ok(h)
    }
}

/// A table under a heading of `level` (`##`), with its data files.
fn table_markdown(t: &Table, level: &str) -> String {
    format!(
        "\n{level} {}\n\n{}\nData: `{}.csv`, `{2}.parquet`\n",
        t.title,
        if t.rows.is_empty() {
            "(none)\n".to_string()
        } else {
            t.markdown()
        },
        t.name
    )
}

fn figure_markdown(f: &Figure) -> String {
    format!(
        "\n### {}\n\n![{}]({}.png) ([SVG]({}.svg), [PDF]({}.pdf))\n",
        f.caption, f.stem, f.stem, f.stem, f.stem
    )
}

/// A table under a heading `tag` (`h2`), with its data files.
fn table_html(t: &Table, tag: &str) -> String {
    format!(
        "<{tag}>{}</{tag}>\n{}<p>Data: <code>{}.csv</code>, <code>{2}.parquet</code></p>\n",
        escape(&t.title.replace('`', "")),
        if t.rows.is_empty() {
            "<p>(none)</p>\n".to_string()
        } else {
            t.html()
        },
        escape(&t.name)
    )
}

/// A figure inlined as its SVG, marked with its plot area so a browser can check that no
/// mark leaves it.
fn figure_html(f: &Figure) -> anyhow::Result<String> {
    let svg = std::fs::read_to_string(&f.files[1])
        .with_context(|| format!("reading {}", f.files[1].display()))?;
    let svg = svg.trim_start_matches(|c| c != '<');
    let a = f.plot_area;
    let svg = svg.replacen(
        "<svg ",
        &format!(
            "<svg data-plot-area=\"{} {} {} {}\" ",
            a.x.0, a.y.0, a.x.1, a.y.1
        ),
        1,
    );
    Ok(format!(
        "<figure>\n{svg}\n<figcaption>{}</figcaption>\n</figure>\n",
        escape(&f.caption)
    ))
}
