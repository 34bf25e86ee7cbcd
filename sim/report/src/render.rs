//! `dlsim report`: aggregate run folders and write `report.md`, a self-contained
//! `report.html` (figures inlined as SVG, so the one file opens anywhere), every table as
//! CSV and Parquet, and every figure as PNG and SVG.

use crate::aggregate::{
    deltas, deltas_table, deltas_view, failures_table, load_runs, policies, policy_stats,
    provenance, summary_table, Run,
};
use crate::figures::{draw_all, Figure};
use crate::table::{escape, write_text, Table};
use anyhow::{bail, Context};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Every file `dlsim report` may write into its folder (the tables of `aggregate`, the
/// figures of `figures::specs`, the documents). An earlier report is replaced whole; a
/// folder holding anything else is refused, not replaced. Checked on every report.
pub const REPORT_FILES: [&str; 23] = [
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
];

/// What `report` wrote.
pub struct Written {
    pub markdown: PathBuf,
    pub html: PathBuf,
    pub tables: Vec<PathBuf>,
    pub figures: Vec<PathBuf>,
    pub headlines: Vec<String>,
}

/// Builds the report of the runs under `inputs` into `out`. `baseline` is the policy
/// deltas are taken against [default: `static` when present, else the first policy].
pub fn report(inputs: &[PathBuf], baseline: Option<&str>, out: &Path) -> anyhow::Result<Written> {
    let runs = load_runs(inputs)?;
    let names = policies(&runs);
    let baseline = match baseline {
        Some(b) if names.iter().any(|n| n == b) => b.to_string(),
        Some(b) => bail!(
            "--baseline `{b}` is none of the runs' policies ({})",
            names.join(", ")
        ),
        None if names.iter().any(|n| n == "static") => "static".into(),
        None => names[0].clone(),
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
    let names = policies(runs);
    let stats = names
        .iter()
        .map(|p| policy_stats(runs, p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let deltas = deltas(runs, baseline)?;
    let (view, headlines) = deltas_view(&deltas, baseline);
    let provenance = provenance(runs);
    // Written as tidy CSV and Parquet; the deltas are shown as `view` in the documents.
    let mut data = vec![
        summary_table(&stats),
        deltas_table(&deltas, baseline),
        failures_table(runs)?,
    ];
    let mut table_files = Vec::new();
    for t in &mut data {
        t.provenance = provenance.clone();
        table_files.extend(t.write(out)?);
    }
    let [summary, _, failures] = <[Table; 3]>::try_from(data).expect("three tables");
    let tables = vec![summary, view, failures];
    let figures = draw_all(runs, baseline, out)?;
    let sources: Vec<String> = runs
        .iter()
        .map(|r| format!("{} ({}, seed {})", r.dir.display(), r.policy, r.seed))
        .collect();
    let doc = Doc {
        baseline,
        headlines: &headlines,
        tables: &tables,
        figures: &figures,
        sources: &sources,
    };
    let markdown = out.join("report.md");
    write_text(&markdown, &doc.markdown())?;
    let html = out.join("report.html");
    write_text(&html, &doc.html()?)?;
    Ok(Written {
        markdown,
        html,
        tables: table_files,
        figures: figures.iter().flat_map(|f| f.files.clone()).collect(),
        headlines,
    })
}

struct Doc<'a> {
    baseline: &'a str,
    headlines: &'a [String],
    tables: &'a [Table],
    figures: &'a [Figure],
    sources: &'a [String],
}

impl Doc<'_> {
    /// Why the throughput figure is absent, when it is.
    fn missing_throughput(&self) -> Option<&'static str> {
        (!self.figures.iter().any(|f| f.stem == "throughput")).then_some(
            "No throughput figure: no run traced what the profiler saw (replay with `--trace-observations`).",
        )
    }

    fn markdown(&self) -> String {
        let mut md = String::from("# dlsim report\n\n");
        writeln!(md, "Baseline policy: `{}`.\n", self.baseline).unwrap();
        for h in self.headlines {
            writeln!(md, "- {h}").unwrap();
        }
        for t in self.tables {
            writeln!(
                md,
                "\n## {}\n\n{}\nData: `{}.csv`, `{2}.parquet`",
                t.title,
                if t.rows.is_empty() {
                    "(none)\n".to_string()
                } else {
                    t.markdown()
                },
                t.name
            )
            .unwrap();
        }
        md.push_str("\n## Figures\n");
        for f in self.figures {
            writeln!(
                md,
                "\n### {}\n\n![{}]({}.png) ([SVG]({}.svg), [PDF]({}.pdf))",
                f.caption, f.stem, f.stem, f.stem, f.stem
            )
            .unwrap();
        }
        if let Some(note) = self.missing_throughput() {
            writeln!(md, "\n{note}").unwrap();
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
        writeln!(
            h,
            "<p>Baseline policy: <code>{}</code>.</p>",
            escape(self.baseline)
        )?;
        if !self.headlines.is_empty() {
            h.push_str("<ul>\n");
            for l in self.headlines {
                writeln!(h, "<li>{}</li>", escape(&l.replace('`', "")))?;
            }
            h.push_str("</ul>\n");
        }
        for t in self.tables {
            writeln!(
                h,
                "<h2>{}</h2>\n{}<p>Data: <code>{}.csv</code>, <code>{2}.parquet</code></p>",
                escape(&t.title.replace('`', "")),
                if t.rows.is_empty() {
                    "<p>(none)</p>\n".to_string()
                } else {
                    t.html()
                },
                escape(&t.name)
            )?;
        }
        h.push_str("<h2>Figures</h2>\n");
        for f in self.figures {
            let svg = std::fs::read_to_string(&f.files[1])
                .with_context(|| format!("reading {}", f.files[1].display()))?;
            let svg = svg.trim_start_matches(|c| c != '<');
            // The plot area, so a browser can check that no mark leaves it.
            let a = f.plot_area;
            let svg = svg.replacen(
                "<svg ",
                &format!(
                    "<svg data-plot-area=\"{} {} {} {}\" ",
                    a.x.0, a.y.0, a.x.1, a.y.1
                ),
                1,
            );
            writeln!(
                h,
                "<figure>\n{svg}\n<figcaption>{}</figcaption>\n</figure>",
                escape(&f.caption)
            )?;
        }
        if let Some(note) = self.missing_throughput() {
            writeln!(h, "<p>{}</p>", escape(&note.replace('`', "")))?;
        }
        h.push_str("<h2>Runs</h2>\n<ul>\n");
        for s in self.sources {
            writeln!(h, "<li>{}</li>", escape(s))?;
        }
        h.push_str("</ul>\n</body></html>\n");
        Ok(h)
    }
}
