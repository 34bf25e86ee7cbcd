//! `reproduce.md`, `reproduce.html` and `reproduce.json`, the headline counts, and the check
//! of a run against a committed reproduction (`dlsim reproduce --check`).
//!
//! The check's band: a row's value may move from the committed one by at most
//! `max(15% of |committed|, 2 x committed CI half-width, 0.05 in the row's unit)`, and a row
//! whose committed direction agrees with the paper must still agree. A committed row that
//! can no longer be computed fails too.

use crate::{Direction, Report, RowResult};
use std::fmt::Write as _;

/// Rows, rows with a value, direction agreeing (of those with a direction), within +-25%.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    pub rows: usize,
    pub computed: usize,
    pub with_direction: usize,
    pub agrees: usize,
    pub within_25: usize,
    pub not_expressible: usize,
}

pub fn counts(r: &Report) -> Counts {
    let computed = r.rows.iter().filter(|x| x.ours.is_some()).count();
    let with_direction = r
        .rows
        .iter()
        .filter(|x| x.ours.is_some() && x.direction != Direction::NotApplicable)
        .count();
    Counts {
        rows: r.rows.len(),
        computed,
        with_direction,
        agrees: r
            .rows
            .iter()
            .filter(|x| x.direction == Direction::Agrees)
            .count(),
        within_25: r.rows.iter().filter(|x| x.within_25).count(),
        not_expressible: r.not_expressible.len(),
    }
}

/// The headline, one line.
pub fn headline(r: &Report) -> String {
    let c = counts(r);
    format!(
        "{} published numbers with a row ({} computed): direction agrees on {} of {} with a direction; magnitude within ±25% on {} of {}; {} more not expressible yet",
        c.rows, c.computed, c.agrees, c.with_direction, c.within_25, c.rows, c.not_expressible
    )
}

fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The paper's value, or its published range or bound.
fn paper_text(row: &RowResult) -> String {
    crate::manifest::paper_text(row.paper_value, row.paper_range, row.paper_bound, num)
}

fn ours(row: &RowResult) -> String {
    match (row.ours, row.ci95) {
        (Some(o), Some(h)) => format!("{} ± {}", num(o), num(h)),
        (Some(o), None) => num(o),
        (None, _) => format!("— ({})", row.error.as_deref().unwrap_or("not computed")),
    }
}

fn dir(row: &RowResult) -> &'static str {
    match row.direction {
        Direction::Agrees => "yes",
        Direction::Flips => "**no**",
        Direction::NotApplicable => "—",
    }
}

fn err(row: &RowResult) -> String {
    match row.rel_error {
        Some(e) => format!("{:+.0}%", 100.0 * e),
        None if row.ours.is_some() => "(paper 0)".into(),
        None => "—".into(),
    }
}

/// `reproduce.md`.
pub fn markdown(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# dlsim reproduce{}\n\n{}.\n",
        if r.quick { " --quick" } else { "" },
        headline(r)
    );
    if !r.overrides.is_empty() {
        let _ = writeln!(
            s,
            "**Run with overrides (not the manifests' choices):** {}.\n",
            r.overrides
                .iter()
                .map(|o| format!("`--set {o}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !r.experiments.is_empty() {
        let _ = writeln!(
            s,
            "**Only the experiments `--row` selected:** {}.\n",
            r.experiments.join(", ")
        );
    }
    s.push_str(
        "Each row is one number a paper publishes. *dlsim* is the mean over seeds with its 95% \
         Student t half-width; *dir* says whether dlsim moves the same way as the paper; *error* \
         is (dlsim − paper) / |paper|. Rows outside ±25% carry a diagnosis. Reproduce a row with \
         its command.\n",
    );
    let mut paper = "";
    for row in &r.rows {
        if row.paper != paper {
            paper = &row.paper;
            let _ = writeln!(
                s,
                "\n## {paper}\n\n| row | where | claim | unit | paper | dlsim | dir | error | ±25% |\n|---|---|---|---|---:|---:|---|---:|---|"
            );
        }
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.id,
            row.at,
            row.claim,
            row.unit,
            paper_text(row),
            ours(row),
            dir(row),
            err(row),
            if row.within_25 { "yes" } else { "no" }
        );
    }
    let outside: Vec<&RowResult> = r.rows.iter().filter(|x| !x.within_25).collect();
    if !outside.is_empty() {
        s.push_str("\n## Diagnoses of rows outside ±25%\n\n");
        for row in outside {
            let _ = writeln!(
                s,
                "- `{}` ({} {}): {}",
                row.id,
                row.paper,
                row.at,
                row.diagnosis
                    .as_deref()
                    .unwrap_or("no diagnosis written yet")
            );
        }
    }
    if !r.not_expressible.is_empty() {
        s.push_str(
            "\n## Published numbers dlsim cannot express yet\n\n| paper | where | claim | paper's value | why |\n|---|---|---|---|---|\n",
        );
        for u in &r.not_expressible {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                u.paper, u.item.at, u.item.claim, u.item.paper, u.item.why
            );
        }
    }
    if !r.figures.is_empty() {
        s.push_str("\n## Figures (seed 1 of each arm)\n\n");
        for f in &r.figures {
            let _ = writeln!(s, "![{}]({}.svg)", f.title, f.name);
        }
    }
    s.push_str("\n## Commands\n\n| row | command |\n|---|---|\n");
    for row in &r.rows {
        let _ = writeln!(s, "| `{}` | `{}` |", row.id, row.command);
    }
    s
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `reproduce.html`: one self-contained page.
pub fn html(r: &Report) -> String {
    let mut s = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>dlsim reproduce</title><style>\
         body{font-family:sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse;margin:1em 0}\
         td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}\
         td.n{text-align:right;font-variant-numeric:tabular-nums}tr.in td{background:#eefbea}\
         tr.out td{background:#fff4e5}tr.flip td{background:#fde8e8}code{font-size:90%}\
         </style></head><body>",
    );
    let _ = write!(
        s,
        "<h1>dlsim reproduce{}</h1><p>{}.</p><p>Green: within ±25% of the paper; orange: outside, with its diagnosis; red: direction flips. \
         dlsim's value is the mean over seeds ± the 95% Student t half-width.</p>",
        if r.quick { " --quick" } else { "" },
        esc(&headline(r))
    );
    if !r.overrides.is_empty() {
        let _ = write!(
            s,
            "<p><strong>Run with overrides (not the manifests' choices):</strong> {}.</p>",
            r.overrides
                .iter()
                .map(|o| format!("<code>--set {}</code>", esc(o)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !r.experiments.is_empty() {
        let _ = write!(
            s,
            "<p><strong>Only the experiments <code>--row</code> selected:</strong> {}.</p>",
            esc(&r.experiments.join(", "))
        );
    }
    let mut paper = "";
    for row in &r.rows {
        if row.paper != paper {
            if !paper.is_empty() {
                s.push_str("</table>");
            }
            paper = &row.paper;
            let _ = write!(
                s,
                "<h2>{}</h2><table><tr><th>row</th><th>where</th><th>claim</th><th>unit</th><th>paper</th><th>dlsim</th><th>direction</th><th>error</th><th>diagnosis / command</th></tr>",
                esc(paper)
            );
        }
        let class = match (row.direction, row.within_25) {
            (Direction::Flips, _) => "flip",
            (_, true) => "in",
            _ => "out",
        };
        let _ = write!(
            s,
            "<tr class=\"{class}\"><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td>{}<br><code>{}</code></td></tr>",
            esc(&row.id),
            esc(&row.at),
            esc(&row.claim),
            esc(&row.unit),
            paper_text(row),
            esc(&ours(row)),
            dir(row).replace("**", ""),
            err(row),
            esc(if row.within_25 { "" } else { row.diagnosis.as_deref().unwrap_or("no diagnosis written yet") }),
            esc(&row.command)
        );
    }
    if !paper.is_empty() {
        s.push_str("</table>");
    }
    if !r.figures.is_empty() {
        s.push_str("<h2>Figures</h2><p>Seed 1 of each arm; the paper's figure is named in the rows above.</p>");
        for f in &r.figures {
            let _ = write!(
                s,
                "<figure><img src=\"{}.svg\" alt=\"{}\" width=\"900\"><figcaption>{}</figcaption></figure>",
                esc(&f.name),
                esc(&f.title),
                esc(&f.title)
            );
        }
    }
    if !r.not_expressible.is_empty() {
        s.push_str("<h2>Not expressible yet</h2><table><tr><th>paper</th><th>where</th><th>claim</th><th>paper's value</th><th>why</th></tr>");
        for u in &r.not_expressible {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&u.paper),
                esc(&u.item.at),
                esc(&u.item.claim),
                esc(&u.item.paper),
                esc(&u.item.why)
            );
        }
        s.push_str("</table>");
    }
    s.push_str("</body></html>\n");
    s
}

/// What moved between the committed reproduction and `now`, for the one making a change:
/// the counts within ±25% and agreeing in direction before and after (over the rows both
/// runs computed, so a run of one paper compares with that paper's committed rows), then
/// one line per row that crossed the ±25% band or changed direction. Informational: the
/// pass or fail of `--check` is [`check`]'s.
pub fn movement(now: &Report, committed: &Report) -> Vec<String> {
    let pairs: Vec<(&RowResult, &RowResult)> = committed
        .rows
        .iter()
        .filter_map(|c| Some((c, now.rows.iter().find(|n| n.id == c.id)?)))
        .filter(|(c, n)| c.ours.is_some() && n.ours.is_some())
        .collect();
    let within = |now: bool| {
        pairs
            .iter()
            .filter(|(c, n)| if now { n.within_25 } else { c.within_25 })
            .count()
    };
    let agree = |now: bool| {
        pairs
            .iter()
            .filter(|(c, n)| if now { n.direction } else { c.direction } == Direction::Agrees)
            .count()
    };
    let with_direction = pairs
        .iter()
        .filter(|(c, _)| c.direction != Direction::NotApplicable)
        .count();
    let mut out = vec![format!(
        "within ±25%: {} -> {} of {}; direction agrees: {} -> {} of {}",
        within(false),
        within(true),
        pairs.len(),
        agree(false),
        agree(true),
        with_direction
    )];
    for (c, n) in &pairs {
        let (cv, nv) = (c.ours.expect("filtered"), n.ours.expect("filtered"));
        let value = format!("{} -> {}, paper {}", num(cv), num(nv), paper_text(c));
        if c.within_25 != n.within_25 {
            let way = if n.within_25 { "into" } else { "out of" };
            out.push(format!("{}: {way} the ±25% band ({value})", c.id));
        }
        if c.direction != n.direction {
            out.push(format!(
                "{}: direction {} -> {} ({value})",
                c.id,
                c.direction.as_str(),
                n.direction.as_str()
            ));
        }
    }
    out
}

/// The rows of `now` that left the committed reproduction's band or flipped direction, one
/// message each (empty = the check passes).
pub fn check(now: &Report, committed: &Report) -> Vec<String> {
    let mut out = Vec::new();
    if now.quick != committed.quick {
        out.push(format!(
            "the committed reproduction is {} but this run is {}",
            if committed.quick { "--quick" } else { "full" },
            if now.quick { "--quick" } else { "full" }
        ));
    }
    for c in &committed.rows {
        let Some(cv) = c.ours else { continue };
        let Some(n) = now.rows.iter().find(|r| r.id == c.id) else {
            if now.covers(&c.paper, &c.experiment) {
                out.push(format!("{}: row is gone", c.id));
            }
            continue;
        };
        let Some(nv) = n.ours else {
            out.push(format!(
                "{}: no longer computed ({})",
                c.id,
                n.error.as_deref().unwrap_or("?")
            ));
            continue;
        };
        let band = (0.15 * cv.abs()).max(2.0 * c.ci95.unwrap_or(0.0)).max(0.05);
        if (nv - cv).abs() > band {
            out.push(format!(
                "{}: {} left its band {} ± {} (paper {})",
                c.id,
                num(nv),
                num(cv),
                num(band),
                paper_text(c)
            ));
        }
        if c.direction == Direction::Agrees && n.direction != Direction::Agrees {
            out.push(format!(
                "{}: direction flipped ({} vs paper {})",
                c.id,
                num(nv),
                paper_text(c)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, ours: Option<f64>, direction: Direction) -> RowResult {
        RowResult {
            paper: "p".into(),
            experiment: "e".into(),
            id: id.into(),
            at: "Fig. 1".into(),
            claim: "c".into(),
            unit: "%".into(),
            paper_value: -30.0,
            paper_range: None,
            paper_bound: None,
            ours,
            ci95: Some(1.0),
            seeds: 3,
            direction,
            rel_error: ours.map(|o| (o + 30.0) / 30.0),
            within_25: ours.is_some_and(|o| ((o + 30.0) / 30.0).abs() <= 0.25),
            error: None,
            diagnosis: None,
            command: "dlsim reproduce --row x".into(),
        }
    }

    fn report(rows: Vec<RowResult>) -> Report {
        Report {
            format: "dlsim-reproduce/1".into(),
            quick: true,
            papers: vec!["p".into()],
            rows,
            not_expressible: vec![],
            figures: vec![],
            overrides: vec![],
            experiments: vec![],
            runs: vec![],
        }
    }

    #[test]
    fn check_fails_on_a_flip_a_band_exit_or_a_lost_row() {
        let committed = report(vec![
            row("a", Some(-30.0), Direction::Agrees),
            row("b", Some(-20.0), Direction::Agrees),
            row("c", Some(-10.0), Direction::Agrees),
        ]);
        let same = committed.clone();
        assert!(check(&same, &committed).is_empty());
        let moved = report(vec![
            row("a", Some(-31.0), Direction::Agrees),
            row("b", Some(5.0), Direction::Flips),
            row("c", None, Direction::NotApplicable),
        ]);
        let msgs = check(&moved, &committed);
        assert!(msgs
            .iter()
            .any(|m| m.starts_with("b:") && m.contains("band")));
        assert!(msgs
            .iter()
            .any(|m| m.starts_with("b:") && m.contains("flipped")));
        assert!(msgs.iter().any(|m| m.starts_with("c:")));
        assert!(!msgs.iter().any(|m| m.starts_with("a:")), "{msgs:?}");
    }

    #[test]
    fn a_row_run_looks_for_lost_rows_only_in_the_experiments_it_ran() {
        let mut other = row("z", Some(-30.0), Direction::Agrees);
        other.experiment = "f".into();
        let committed = report(vec![row("a", Some(-30.0), Direction::Agrees), other]);
        // `--row a` ran experiment e alone: z (experiment f) was not selected, not lost.
        let mut now = report(vec![row("a", Some(-30.0), Direction::Agrees)]);
        now.experiments = vec!["p/e".into()];
        assert!(
            check(&now, &committed).is_empty(),
            "{:?}",
            check(&now, &committed)
        );
        // A run of the whole paper that lacks z has lost it.
        now.experiments.clear();
        assert_eq!(check(&now, &committed), vec!["z: row is gone".to_string()]);
        // So has a `--row` run of experiment f.
        now.experiments = vec!["p/f".into()];
        assert_eq!(check(&now, &committed), vec!["z: row is gone".to_string()]);
    }

    #[test]
    fn movement_counts_both_runs_and_names_the_rows_that_crossed() {
        let committed = report(vec![
            row("a", Some(-31.0), Direction::Agrees),
            row("b", Some(-50.0), Direction::Agrees),
            row("c", Some(10.0), Direction::Flips),
            row("d", None, Direction::NotApplicable),
        ]);
        let now = report(vec![
            row("a", Some(-32.0), Direction::Agrees),
            row("b", Some(-28.0), Direction::Agrees),
            row("c", Some(-60.0), Direction::Agrees),
            row("d", Some(-30.0), Direction::Agrees),
        ]);
        let m = movement(&now, &committed);
        // d was not computed before, so it is compared in neither run.
        assert_eq!(
            m[0],
            "within ±25%: 1 -> 2 of 3; direction agrees: 2 -> 3 of 3"
        );
        assert!(m.iter().any(|l| l.starts_with("b: into the ±25% band")));
        assert!(m
            .iter()
            .any(|l| l.starts_with("c: direction flips -> agrees")));
        assert!(
            !m.iter().any(|l| l.starts_with("a:") || l.starts_with("d:")),
            "{m:?}"
        );
        assert_eq!(movement(&committed, &committed).len(), 1, "nothing moved");
    }

    #[test]
    fn a_report_reads_back_as_written() {
        let mut r = report(vec![row("a", Some(-29.0), Direction::Agrees)]);
        r.not_expressible.push(crate::Unexpressed {
            paper: "p".into(),
            item: crate::manifest::Unexpressed {
                at: "Fig. 2".into(),
                claim: "c".into(),
                paper: "-3%".into(),
                why: "w".into(),
            },
        });
        let text = serde_json::to_string_pretty(&r).unwrap();
        let back: Report = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string_pretty(&back).unwrap(), text);
    }

    #[test]
    fn counts_and_tables_cover_every_row() {
        let r = report(vec![
            row("a", Some(-29.0), Direction::Agrees),
            row("b", Some(10.0), Direction::Flips),
            row("c", None, Direction::NotApplicable),
        ]);
        let c = counts(&r);
        assert_eq!((c.rows, c.computed, c.agrees, c.within_25), (3, 2, 1, 1));
        let md = markdown(&r);
        for id in ["`a`", "`b`", "`c`"] {
            assert!(md.contains(id));
        }
        assert!(md.contains("no diagnosis written yet"));
        assert!(html(&r).contains("class=\"flip\""));
    }
}
