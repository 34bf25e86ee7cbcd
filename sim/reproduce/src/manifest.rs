//! The paper manifests `scenarios/paper/<paper>/paper.json`: each lists the paper's
//! experiments (a scenario, the arms it runs, seeds) and, per experiment, the published
//! numbers it reproduces as rows (the paper's value, the metric that measures it, how it
//! compares). Numbers a paper publishes that dlsim cannot express yet are listed too, with
//! the reason, so that the table is complete rather than flattering.
//!
//! Validation errors name the file, the line where known, and the field.

use crate::metric::Metric;
use dlsim_traces::InputError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The papers `dlsim reproduce` knows, in report order.
pub const PAPERS: &[&str] = &["dlrover-rm", "dlrover", "kale", "picasso"];

/// One paper's manifest.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperFile {
    pub paper: String,
    pub title: String,
    /// The source text in `../shared/seeds/` the numbers come from.
    pub source: String,
    pub experiments: Vec<ExperimentFile>,
    /// Published numbers dlsim cannot express yet, each with the reason.
    #[serde(default)]
    pub not_expressible: Vec<Unexpressed>,
}

/// How the experiment's runs are made (`scenario` or `picasso` in the manifest).
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A batch or online scenario file (relative to the manifest), run under each arm.
    Scenario(String),
    /// PICASSO's hot-ID cache replayed over the kernel's skewed synthetic IDs.
    Picasso(PicassoSetup),
}

/// The ID stream and hot storage of a PICASSO hit-ratio experiment, from the paper's
/// stated dataset (Table II) and batch (`dlsim_kernel::cache::HitCurve`).
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PicassoSetup {
    /// One-hot embedding tables (one ID per sample each).
    pub tables: u32,
    /// Sequence features: tables with `seq_len` IDs per sample each.
    #[serde(default)]
    pub seq_tables: u32,
    #[serde(default)]
    pub seq_len: u32,
    /// The model's parameters (its embedding rows hold almost all of them).
    pub params: f64,
    /// Embedding dimension; a hot-storage row holds `emb_dim` f32 values.
    pub emb_dim: f64,
    /// Samples per lookup: the batch the embedding layer and its hot storage see at a
    /// time (under PICASSO's D-interleaving, one micro-batch).
    pub batch: f64,
    /// How the parameters spread over the tables: `equal`, or `criteo`, the shape of the
    /// Criteo Kaggle dataset's 26 table sizes (3 to 10.1M IDs) stretched over the tables.
    pub table_sizes: TableSizes,
    /// Share of the draws that the most frequent 20% of a table's IDs cover.
    pub top20_coverage: f64,
    /// Batches whose IDs HybridHash has counted when the hit ratio is read: its warm-up
    /// and every batch since (Algorithm 1 keeps counting after the warm-up, line 20, and
    /// flushes the top-k counts into the hot storage every `flush_iters`).
    pub counted_batches: u32,
}

/// How a PICASSO model's parameters spread over its embedding tables.
#[derive(Clone, Copy, Debug, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TableSizes {
    Equal,
    Criteo,
}

impl PicassoSetup {
    /// Every field's range, as (field, message) on the first violation.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let positive = [
            ("params", self.params),
            ("emb_dim", self.emb_dim),
            ("batch", self.batch),
        ];
        for (k, v) in positive {
            if !(1.0..=1e15).contains(&v) {
                return Err((k, format!("must be in [1, 1e15], got {v}")));
            }
        }
        if self.tables + self.seq_tables == 0 || self.tables + self.seq_tables > 100_000 {
            return Err((
                "tables",
                "tables + seq_tables must be in [1, 100000]".into(),
            ));
        }
        if self.seq_tables > 0 && !(1..=10_000).contains(&self.seq_len) {
            return Err((
                "seq_len",
                "must be in [1, 10000] with sequence tables".into(),
            ));
        }
        if !(self.top20_coverage > 0.2 && self.top20_coverage < 1.0) {
            return Err((
                "top20_coverage",
                format!("must be in (0.2, 1), got {}", self.top20_coverage),
            ));
        }
        if !(1..=10_000).contains(&self.counted_batches) {
            return Err(("counted_batches", "must be in [1, 10000]".into()));
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    pub id: String,
    /// What the experiment is, in a line.
    pub what: String,
    /// A batch or online scenario file, relative to the manifest.
    #[serde(default)]
    pub scenario: Option<String>,
    /// Or a PICASSO cache experiment.
    #[serde(default)]
    pub picasso: Option<PicassoSetup>,
    /// Set from `scenario` / `picasso` on load.
    #[serde(skip, default = "no_source")]
    pub source: Source,
    /// Arm name -> policy spec (batch or online). PICASSO experiments have one arm.
    pub arms: BTreeMap<String, String>,
    /// Seeds of a full run (1..=seeds; every arm runs every seed, so comparisons pair).
    pub seeds: u32,
    /// Seeds under `--quick`.
    pub quick_seeds: u32,
    /// Dotted scenario overrides applied in every run.
    #[serde(default)]
    pub params: BTreeMap<String, Value>,
    /// Further dotted overrides under `--quick` (a shorter or smaller run of the same shape).
    #[serde(default)]
    pub quick: BTreeMap<String, Value>,
    pub rows: Vec<RowFile>,
    /// Scenario overrides from the command line (`--set`, [`crate::set`]), applied last.
    #[serde(skip)]
    pub overrides: Vec<(String, Value)>,
}

/// How dlsim's number is compared with the paper's.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Compare {
    /// The metric of `arm` itself (times `scale`).
    #[default]
    Value,
    /// `(arm - base) / base`, in percent, paired by seed.
    Change,
    /// `arm / base`, paired by seed (for levels whose absolute size depends on a horizon
    /// the paper does not state, such as Kale's GPU hours against Adequate's).
    Ratio,
}

/// A paper's number as the reports print it: the value, or the published range or bound it
/// stands for (`5–8`, `≤ -30`), each number through `num`.
pub fn paper_text(
    value: f64,
    range: Option<[f64; 2]>,
    bound: Option<Bound>,
    num: impl Fn(f64) -> String,
) -> String {
    match (range, bound) {
        (Some([lo, hi]), _) => format!("{}–{}", num(lo), num(hi)),
        (None, Some(Bound::AtMost)) => format!("≤ {}", num(value)),
        (None, Some(Bound::AtLeast)) => format!("≥ {}", num(value)),
        (None, None) => num(value),
    }
}

/// Which side of a published bound a row's value must lie on ([`RowFile::bound`]).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The value is at most the paper's ("reduces the JCT by more than 30%": a change of at
    /// most -30%).
    AtMost,
    /// The value is at least the paper's ("over 80% of jobs").
    AtLeast,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowFile {
    pub id: String,
    /// Where in the paper: "Fig. 7", "Table 4", "Sec. 6.4".
    #[serde(rename = "where")]
    pub at: String,
    pub claim: String,
    pub paper: f64,
    /// A published range ("5-8% of jobs"): `[low, high]`, with `paper` inside it (its
    /// middle, for the direction). The error is then the distance to the nearer end,
    /// relative to it (0 inside the range).
    #[serde(default)]
    pub range: Option<[f64; 2]>,
    /// A published bound ("more than 30%", "over 80%"): `paper` is the most (`at_most`) or
    /// the least (`at_least`) the value may be. The error is 0 on the stated side and the
    /// distance to `paper` beyond it, relative to it.
    #[serde(default)]
    pub bound: Option<Bound>,
    pub unit: String,
    pub metric: String,
    pub arm: String,
    #[serde(default)]
    pub compare: Compare,
    /// The arm compared against; `a|b` takes, seed by seed, the arm with the lower value
    /// (the better of two baselines when lower is better, as for JCT).
    #[serde(default)]
    pub base: Option<String>,
    /// Multiplies a `value` row's metric into the paper's unit (100 for a share in %).
    #[serde(default = "one")]
    pub scale: f64,
    /// The row holding the "before" of a before -> after pair: this row's direction is the
    /// sign of (after - before), in the paper and in dlsim.
    #[serde(default)]
    pub before: Option<String>,
    /// Keeps only the jobs whose row in the *base* arm's (else this arm's) `jobs.csv`
    /// passes this filter, in every arm the row reads (paired by job id).
    #[serde(default)]
    pub subset: Option<String>,
    /// Why the row is outside +-25% where it is (a diagnosis, not a correction).
    #[serde(default)]
    pub diagnosis: Option<String>,
}

fn no_source() -> Source {
    Source::Scenario(String::new())
}

fn one() -> f64 {
    1.0
}

#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Unexpressed {
    #[serde(rename = "where")]
    pub at: String,
    pub claim: String,
    pub paper: String,
    pub why: String,
}

/// A loaded, validated manifest.
#[derive(Clone, Debug)]
pub struct Paper {
    pub path: PathBuf,
    pub file: PaperFile,
    /// Per experiment, its rows' parsed metrics (same order as `file`).
    pub metrics: Vec<Vec<Metric>>,
    /// Per experiment, the scenario text (None for PICASSO).
    pub scenario_text: Vec<Option<String>>,
}

impl Paper {
    /// The manifest of `paper` under `root` (`scenarios/paper`).
    pub fn load(root: &Path, paper: &str) -> Result<Paper, InputError> {
        let path = root.join(paper).join("paper.json");
        let text = dlsim_fsio::read_to_string_limited(&path, dlsim_fsio::MAX_INPUT_BYTES)
            .map_err(|e| InputError::new(&path, format!("cannot read paper manifest: {e}")))?;
        let mut file: PaperFile = dlsim_traces::error::parse_json_document(&path, &text, 0)?;
        let at = |field: String, msg: String| InputError::new(&path, msg).field_in(&text, field);
        if file.paper != paper {
            return Err(at(
                "paper".into(),
                format!("is `{}` but the folder is `{paper}`", file.paper),
            ));
        }
        let mut metrics = Vec::new();
        let mut texts = Vec::new();
        let mut ids = std::collections::BTreeSet::new();
        for (i, e) in file.experiments.iter_mut().enumerate() {
            e.source = match (&e.scenario, &e.picasso) {
                (Some(s), None) => Source::Scenario(s.clone()),
                (None, Some(p)) => Source::Picasso(p.clone()),
                _ => {
                    return Err(at(
                        format!("experiments[{i}].scenario"),
                        "give exactly one of `scenario` and `picasso`".into(),
                    ))
                }
            };
        }
        for (i, e) in file.experiments.iter().enumerate() {
            let f = |k: &str| format!("experiments[{i}].{k}");
            if e.arms.is_empty() {
                return Err(at(f("arms"), "needs at least one arm".into()));
            }
            if e.seeds == 0 || e.quick_seeds == 0 || e.seeds > 64 || e.quick_seeds > e.seeds {
                return Err(at(
                    f("seeds"),
                    "need 1 <= quick_seeds <= seeds <= 64".into(),
                ));
            }
            let text = match &e.source {
                Source::Scenario(s) => {
                    let p = path.parent().unwrap_or(Path::new(".")).join(s);
                    Some(
                        dlsim_fsio::read_to_string_limited(&p, dlsim_fsio::MAX_INPUT_BYTES)
                            .map_err(|err| {
                                at(f("scenario"), format!("cannot read {}: {err}", p.display()))
                            })?,
                    )
                }
                Source::Picasso(setup) => {
                    if let Err((k, why)) = setup.check() {
                        return Err(at(f(&format!("picasso.{k}")), why));
                    }
                    if e.arms.len() != 1 {
                        return Err(at(f("arms"), "a PICASSO experiment has one arm".into()));
                    }
                    None
                }
            };
            texts.push(text);
            let mut ms = Vec::new();
            for (j, r) in e.rows.iter().enumerate() {
                let g = |k: &str| format!("experiments[{i}].rows[{j}].{k}");
                if !ids.insert(r.id.clone()) {
                    return Err(at(g("id"), format!("row id `{}` is used twice", r.id)));
                }
                if !e.arms.contains_key(&r.arm) {
                    return Err(at(
                        g("arm"),
                        format!("`{}` is not an arm of this experiment", r.arm),
                    ));
                }
                match (r.compare, &r.base) {
                    (Compare::Change | Compare::Ratio, None) => {
                        return Err(at(
                            g("base"),
                            "a `change` or `ratio` row needs a base arm".into(),
                        ))
                    }
                    (_, Some(b)) => {
                        if let Some(x) = b.split('|').find(|x| !e.arms.contains_key(*x)) {
                            return Err(at(
                                g("base"),
                                format!("`{x}` is not an arm of this experiment"),
                            ));
                        }
                        if b.contains('|') && r.compare != Compare::Change {
                            return Err(at(
                                g("base"),
                                "several bases (`a|b`) need a `change` row".into(),
                            ));
                        }
                    }
                    _ => {}
                }
                if let Some(b) = &r.before {
                    if !e.rows.iter().any(|o| &o.id == b) {
                        return Err(at(g("before"), format!("no row `{b}` in this experiment")));
                    }
                }
                if !r.paper.is_finite() || !r.scale.is_finite() {
                    return Err(at(g("paper"), "must be a finite number".into()));
                }
                if r.range.is_some() && r.bound.is_some() {
                    return Err(at(g("bound"), "give a range or a bound, not both".into()));
                }
                if let Some([lo, hi]) = r.range {
                    if !(lo.is_finite()
                        && hi.is_finite()
                        && lo < hi
                        && lo <= r.paper
                        && r.paper <= hi)
                    {
                        return Err(at(
                            g("range"),
                            format!(
                                "must be [low, high] with low < high and `paper` ({}) inside",
                                r.paper
                            ),
                        ));
                    }
                }
                let m = Metric::parse(&r.metric, r.subset.as_deref())
                    .map_err(|msg| at(g("metric"), msg))?;
                ms.push(m);
            }
            metrics.push(ms);
        }
        Ok(Paper {
            path,
            file,
            metrics,
            scenario_text: texts,
        })
    }

    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}
