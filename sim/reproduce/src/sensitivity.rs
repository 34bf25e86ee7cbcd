//! `dlsim sensitivity`: how much each choice the papers leave open moves the reproduction.
//!
//! Where a paper is silent dlsim chooses, and a choice is honest only with its cost beside
//! it. A choices file (`scenarios/paper/choices.json`) lists the choices, each with what it
//! is, its value in the manifests, where that value comes from, and variants: other values
//! as `--set` overrides ([`crate::set`]). The reproduction runs once as the manifests set it
//! (the baseline) and once per variant; a variant re-runs only the experiments whose
//! [`crate::fingerprint`] it changes, and every other row keeps its baseline value, so a
//! variant's table is the whole reproduction under that one change. The result says, per
//! variant, how many rows stay within ±25% and agree in direction, and which rows cross
//! the band or flip. Nothing is tuned: the tool measures choices, it does not make them.

use crate::manifest::Paper;
use crate::render::{counts, Counts};
use crate::{set, Direction, Options, Report, RowResult};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The choices file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChoicesFile {
    pub choices: Vec<Choice>,
}

/// One open choice and the values to try instead.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    pub id: String,
    /// What is chosen, in a line.
    pub what: String,
    /// The value the manifests use.
    pub default: String,
    /// Where that value comes from (a paper's statement, a measurement, or "our choice").
    pub source: String,
    pub variants: Vec<Variant>,
}

/// Another value of a choice: `--set` overrides applied together.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    pub set: Vec<String>,
}

impl ChoicesFile {
    /// Reads and checks a choices file: unique ids, at least one variant each, every
    /// override well formed. Errors name the file, line and field.
    pub fn load(path: &Path) -> Result<ChoicesFile, dlsim_traces::error::InputError> {
        use dlsim_traces::error::InputError;
        let text = dlsim_fsio::read_to_string_limited(path, dlsim_fsio::MAX_INPUT_BYTES)
            .map_err(|e| InputError::new(path, format!("cannot read choices file: {e}")))?;
        let file: ChoicesFile = dlsim_traces::error::parse_json_document(path, &text, 0)?;
        let at = |field: String, msg: String| InputError::new(path, msg).field_in(&text, field);
        if file.choices.is_empty() {
            return Err(at("choices".into(), "lists no choice".into()));
        }
        let mut ids = BTreeSet::new();
        for (i, c) in file.choices.iter().enumerate() {
            if c.id.is_empty() || !ids.insert(c.id.as_str()) {
                return Err(at(
                    format!("choices[{i}].id"),
                    format!("`{}` is empty or used twice", c.id),
                ));
            }
            if c.variants.is_empty() {
                return Err(at(
                    format!("choices[{i}].variants"),
                    "needs a variant".into(),
                ));
            }
            for (j, v) in c.variants.iter().enumerate() {
                if v.set.is_empty() {
                    return Err(at(
                        format!("choices[{i}].variants[{j}].set"),
                        "needs at least one override".into(),
                    ));
                }
                for (k, s) in v.set.iter().enumerate() {
                    set::Override::parse(s)
                        .map_err(|why| at(format!("choices[{i}].variants[{j}].set[{k}]"), why))?;
                }
            }
        }
        Ok(file)
    }
}

/// A row whose standing a variant changed: it crossed the ±25% band or its direction.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Moved {
    pub id: String,
    pub paper_value: f64,
    /// The published range or bound the paper value stands for, as in the reproduction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_range: Option<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_bound: Option<crate::manifest::Bound>,
    pub baseline: Option<f64>,
    pub ours: Option<f64>,
    pub within_25: bool,
    pub baseline_within_25: bool,
    pub direction: Direction,
    pub baseline_direction: Direction,
}

/// What one variant did to the reproduction.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VariantOutcome {
    pub name: String,
    pub set: Vec<String>,
    /// The experiments it re-ran (`paper/experiment`).
    pub experiments: Vec<String>,
    /// Rows whose value changed at all.
    pub changed_rows: usize,
    pub within_25: usize,
    pub agrees: usize,
    pub with_direction: usize,
    /// Rows that entered the band, left it, or changed direction.
    pub moved: Vec<Moved>,
}

/// One choice's variants.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChoiceOutcome {
    pub choice: Choice,
    pub variants: Vec<VariantOutcome>,
}

/// The whole analysis.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sensitivity {
    pub format: String,
    pub quick: bool,
    pub papers: Vec<String>,
    pub rows: usize,
    pub within_25: usize,
    pub agrees: usize,
    pub with_direction: usize,
    pub choices: Vec<ChoiceOutcome>,
    /// `choice / variant` of the variants that apply only to papers outside the selection.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// The experiments of `variant` that run differently from the baseline, given as its
/// fingerprints per paper and experiment (same papers, same order): their rows' ids and their `paper/experiment` names.
fn changed_experiments(
    base: &[Vec<String>],
    variant: &[Paper],
    quick: bool,
) -> Result<(BTreeSet<String>, Vec<String>), String> {
    let mut rows = BTreeSet::new();
    let mut names = Vec::new();
    for (b, v) in base.iter().zip(variant) {
        for (ei, e) in v.file.experiments.iter().enumerate() {
            if b[ei] != crate::fingerprint(v, ei, quick)? {
                rows.extend(e.rows.iter().map(|r| r.id.clone()));
                names.push(format!("{}/{}", v.file.paper, e.id));
            }
        }
    }
    Ok((rows, names))
}

/// The baseline with the variant's rows put in: the whole reproduction under the variant.
fn merged(base: &Report, variant: &Report) -> Report {
    let by_id: BTreeMap<&str, &RowResult> =
        variant.rows.iter().map(|r| (r.id.as_str(), r)).collect();
    Report {
        rows: base
            .rows
            .iter()
            .map(|r| (*by_id.get(r.id.as_str()).unwrap_or(&r)).clone())
            .collect(),
        ..base.clone()
    }
}

fn outcome(v: &Variant, experiments: Vec<String>, base: &Report, run: &Report) -> VariantOutcome {
    let whole = merged(base, run);
    let c: Counts = counts(&whole);
    let mut moved = Vec::new();
    let mut changed_rows = 0;
    for (b, r) in base.rows.iter().zip(&whole.rows) {
        if b.ours != r.ours {
            changed_rows += 1;
        }
        if b.within_25 != r.within_25 || b.direction != r.direction {
            moved.push(Moved {
                id: r.id.clone(),
                paper_value: r.paper_value,
                paper_range: r.paper_range,
                paper_bound: r.paper_bound,
                baseline: b.ours,
                ours: r.ours,
                within_25: r.within_25,
                baseline_within_25: b.within_25,
                direction: r.direction,
                baseline_direction: b.direction,
            });
        }
    }
    VariantOutcome {
        name: v.name.clone(),
        set: v.set.clone(),
        experiments,
        changed_rows,
        within_25: c.within_25,
        agrees: c.agrees,
        with_direction: c.with_direction,
        moved,
    }
}

/// One variant, loaded and checked, ready to run: its manifests with the overrides
/// applied, the options selecting the experiments it changes, and their names.
pub struct Planned<'a> {
    pub choice: &'a Choice,
    pub variant: &'a Variant,
    papers: Vec<Paper>,
    opts: Options,
    pub experiments: Vec<String>,
}

/// The variants [`plan`] will run, and those it leaves out: a variant whose overrides
/// apply only to papers outside the selection (`--paper`) is skipped, not an error.
pub struct Plans<'a> {
    pub run: Vec<Planned<'a>>,
    /// `choice / variant` of each variant left out.
    pub skipped: Vec<String>,
}

/// Loads every variant of `choices` over the papers of `opts` (whose own overrides and row
/// selection must be empty) and checks it against `base` (the manifests as set): every
/// override must parse and apply, change at least one experiment, and leave every changed
/// experiment's scenarios and arms loadable. A variant that does not apply to the selected
/// papers but does to all of them is skipped. Nothing runs.
pub fn plan<'a>(
    opts: &Options,
    base: &[Paper],
    choices: &'a [Choice],
) -> Result<Plans<'a>, String> {
    assert!(opts.overrides.is_empty() && opts.rows.is_empty());
    let mut plans = Vec::new();
    let mut skipped = Vec::new();
    // The baseline's fingerprints, once for every variant.
    let base_prints = base
        .iter()
        .map(|p| {
            (0..p.file.experiments.len())
                .map(|ei| crate::fingerprint(p, ei, opts.quick))
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    for c in choices {
        for v in &c.variants {
            let err = |e: String| format!("choice `{}`, variant `{}`: {e}", c.id, v.name);
            let overrides = v
                .set
                .iter()
                .map(|s| set::Override::parse(s))
                .collect::<Result<Vec<_>, _>>()
                .map_err(err)?;
            let vopts = Options {
                overrides,
                ..opts.clone()
            };
            let papers = match crate::load(&vopts) {
                Ok(p) => p,
                Err(e) => {
                    let all = Options {
                        papers: crate::manifest::PAPERS
                            .iter()
                            .map(|s| s.to_string())
                            .collect(),
                        ..vopts.clone()
                    };
                    if all.papers != opts.papers && crate::load(&all).is_ok() {
                        skipped.push(format!("{} / {}", c.id, v.name));
                        continue;
                    }
                    return Err(err(e));
                }
            };
            let (rows, experiments) =
                changed_experiments(&base_prints, &papers, opts.quick).map_err(err)?;
            if rows.is_empty() {
                return Err(err(
                    "changes no experiment of the selected papers (is it the manifests' own value?)"
                        .into(),
                ));
            }
            let vopts = Options { rows, ..vopts };
            crate::validate(&papers, &vopts).map_err(err)?;
            plans.push(Planned {
                choice: c,
                variant: v,
                papers,
                opts: vopts,
                experiments,
            });
        }
    }
    Ok(Plans {
        run: plans,
        skipped,
    })
}

/// Runs the baseline and every variant of `choices` ([`plan`], so a bad override costs
/// nothing). `progress` gets (done, total) in reproductions, the baseline counting as one,
/// and what runs now.
pub fn run(
    opts: &Options,
    choices: &[Choice],
    progress: &(dyn Fn(usize, usize, &str) + Sync),
) -> Result<Sensitivity, String> {
    let base_papers = crate::load(opts)?;
    crate::validate(&base_papers, opts)?;
    let Plans {
        run: plans,
        skipped,
    } = plan(opts, &base_papers, choices)?;
    let total = plans.len() + 1;
    progress(0, total, "baseline");
    let base = crate::run(&base_papers, opts, &|_, _| {})?;
    let mut outcomes: Vec<ChoiceOutcome> = Vec::new();
    for (i, p) in plans.into_iter().enumerate() {
        progress(
            i + 1,
            total,
            &format!("{} / {}", p.choice.id, p.variant.name),
        );
        let report = crate::run(&p.papers, &p.opts, &|_, _| {})?;
        let o = outcome(p.variant, p.experiments, &base, &report);
        match outcomes.last_mut() {
            Some(last) if last.choice.id == p.choice.id => last.variants.push(o),
            _ => outcomes.push(ChoiceOutcome {
                choice: p.choice.clone(),
                variants: vec![o],
            }),
        }
    }
    progress(total, total, "done");
    let c = counts(&base);
    Ok(Sensitivity {
        format: "dlsim-sensitivity/1".into(),
        quick: opts.quick,
        papers: opts.papers.clone(),
        rows: c.rows,
        within_25: c.within_25,
        agrees: c.agrees,
        with_direction: c.with_direction,
        choices: outcomes,
        skipped,
    })
}

fn value(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.3}"),
    }
}

/// `sensitivity.md`: the summary table, then each choice with the rows its variants move.
pub fn markdown(s: &Sensitivity) -> String {
    use std::fmt::Write;
    let mut m = String::new();
    let mode = if s.quick { "quick" } else { "full" };
    let _ = writeln!(m, "# How much each open choice moves the reproduction\n");
    let _ = writeln!(
        m,
        "`dlsim sensitivity` ran the {mode} reproduction of {} once as the manifests set it and \
         once per variant below. A variant changes only what its `--set` overrides say, and \
         only the experiments it changes are re-run; every other row keeps its baseline value.\n",
        s.papers.join(", ")
    );
    let _ = writeln!(
        m,
        "Baseline: **{} of {} rows within ±25%**, {} of {} directions agree.\n",
        s.within_25, s.rows, s.agrees, s.with_direction
    );
    if !s.skipped.is_empty() {
        let _ = writeln!(
            m,
            "Left out (they change only papers outside this selection): {}.\n",
            s.skipped.join("; ")
        );
    }
    let _ = writeln!(
        m,
        "| # | choice | variant | within ±25% | change | directions agree | rows changed | into the band | out of the band | flipped |"
    );
    let _ = writeln!(m, "|---|---|---|---|---|---|---|---|---|---|");
    let numbered = s
        .choices
        .iter()
        .flat_map(|c| c.variants.iter().map(move |v| (c, v)))
        .enumerate();
    for (n, (c, v)) in numbered {
        let into: Vec<&str> = v
            .moved
            .iter()
            .filter(|r| r.within_25 && !r.baseline_within_25)
            .map(|r| r.id.as_str())
            .collect();
        let out: Vec<&str> = v
            .moved
            .iter()
            .filter(|r| !r.within_25 && r.baseline_within_25)
            .map(|r| r.id.as_str())
            .collect();
        let flipped: Vec<&str> = v
            .moved
            .iter()
            .filter(|r| r.direction != r.baseline_direction)
            .map(|r| r.id.as_str())
            .collect();
        let delta = v.within_25 as i64 - s.within_25 as i64;
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} | {:+} | {} of {} | {} | {} | {} | {} |",
            n + 1,
            c.choice.id,
            v.name,
            v.within_25,
            delta,
            v.agrees,
            v.with_direction,
            v.changed_rows,
            list(&into),
            list(&out),
            list(&flipped)
        );
    }
    for c in &s.choices {
        let _ = writeln!(m, "\n## `{}`: {}\n", c.choice.id, c.choice.what);
        let _ = writeln!(
            m,
            "As set: {}. Source: {}\n",
            c.choice.default, c.choice.source
        );
        for v in &c.variants {
            let sets: Vec<String> = v.set.iter().map(|x| format!("`--set '{x}'`")).collect();
            let _ = writeln!(
                m,
                "- **{}** ({}; re-ran {}): {} within ±25% ({:+}).",
                v.name,
                sets.join(" "),
                v.experiments.join(", "),
                v.within_25,
                v.within_25 as i64 - s.within_25 as i64
            );
            for r in &v.moved {
                let _ = writeln!(
                    m,
                    "  - `{}`: paper {}, baseline {} -> {} ({}{})",
                    r.id,
                    paper_of(r),
                    value(r.baseline),
                    value(r.ours),
                    match (r.baseline_within_25, r.within_25) {
                        (false, true) => "into the band",
                        (true, false) => "out of the band",
                        _ => "band unchanged",
                    },
                    if r.direction != r.baseline_direction {
                        format!(", direction {}", r.direction.as_str())
                    } else {
                        String::new()
                    }
                );
            }
        }
    }
    by_row(s, &mut m);
    m
}

/// The rows some variant moves across the band, each with the variants that move it: the
/// rows that are one choice away from the band (or from leaving it).
fn by_row(s: &Sensitivity, m: &mut String) {
    use std::fmt::Write;
    // Per row: its first mover (for the paper's value and the baseline) and every mover.
    let mut rows: BTreeMap<&str, (&Moved, Vec<String>)> = BTreeMap::new();
    for c in &s.choices {
        for v in &c.variants {
            for r in v
                .moved
                .iter()
                .filter(|r| r.within_25 != r.baseline_within_25)
            {
                let e = rows.entry(r.id.as_str()).or_insert((r, Vec::new()));
                e.1.push(format!("{} / {} ({})", c.choice.id, v.name, value(r.ours)));
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(m, "\n## By row\n");
    let _ = writeln!(
        m,
        "Every row some variant moves across the ±25% band, with the variants that move it \
         (and the value each gives).\n"
    );
    let _ = writeln!(
        m,
        "| row | paper | as set | within ±25% as set | moved by |"
    );
    let _ = writeln!(m, "|---|---|---|---|---|");
    for (id, (r, by)) in rows {
        let _ = writeln!(
            m,
            "| `{id}` | {} | {} | {} | {} |",
            paper_of(r),
            value(r.baseline),
            if r.baseline_within_25 { "yes" } else { "no" },
            by.join("; ")
        );
    }
}

/// The paper's value of a moved row, or the range or bound it stands for.
fn paper_of(r: &Moved) -> String {
    crate::manifest::paper_text(r.paper_value, r.paper_range, r.paper_bound, |x| {
        value(Some(x))
    })
}

fn list(ids: &[&str]) -> String {
    if ids.is_empty() {
        "-".into()
    } else {
        ids.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::{paper_of, Moved};
    use crate::manifest::Bound;
    use crate::Direction;

    /// A moved row shows the paper's number as the reproduction does: a point, a published
    /// range, or a published bound.
    #[test]
    fn a_moved_row_shows_the_papers_range_or_bound() {
        let row = |range, bound| Moved {
            id: "r".into(),
            paper_value: -10.0,
            paper_range: range,
            paper_bound: bound,
            baseline: None,
            ours: None,
            within_25: false,
            baseline_within_25: false,
            direction: Direction::Agrees,
            baseline_direction: Direction::Agrees,
        };
        assert_eq!(paper_of(&row(None, None)), "-10.000");
        assert_eq!(paper_of(&row(None, Some(Bound::AtMost))), "≤ -10.000");
        assert_eq!(paper_of(&row(None, Some(Bound::AtLeast))), "≥ -10.000");
        assert_eq!(paper_of(&row(Some([-20.0, -5.0]), None)), "-20.000–-5.000");
    }
}
