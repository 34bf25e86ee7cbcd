//! `dlsim reproduce --set EXPERIMENT:KEY=VALUE`: runs the papers' experiments with one of
//! their choices changed, so that "show how much the choice moves the result" is a command,
//! not an edited file. `EXPERIMENT` is an experiment id of the selected papers (`table3`,
//! `production-day`: every paper's experiment of that id), one paper's experiment
//! (`dlrover/production-day`) or `*` for every experiment the key applies to; `KEY` is
//!
//! * `arms.NAME`: the arm's policy spec (`table3:arms.madu=madu[drain_min=20]`);
//! * `picasso.FIELD`: a field of a PICASSO setup (`*:picasso.counted_batches=100`);
//! * anything else: a dotted path into the experiment's scenario, applied after the
//!   manifest's own overrides (`production-day:cluster.groups.0.count=300`); a numeric part
//!   indexes an array, and a key the scenario lacks is added (the scenario's loader then
//!   rejects what it does not know). With `*` it goes to the scenarios whose kind (batch,
//!   or online) has its first part as a field: `*:elasticity.storage_mb_s=14` changes the
//!   batch experiments and leaves Kale's online one alone.
//!
//! `VALUE` is read as JSON when it parses as JSON (`300`, `true`, `"equal"`), else as the
//! string itself (a policy spec needs no quotes). Every override is checked when the
//! manifests load, before anything runs; the report lists them, and each row's command
//! carries them, so a run with overrides is never mistaken for the committed one.

use crate::manifest::{Paper, PicassoSetup, Source};
use serde_json::Value;

/// One `--set`, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    /// The text as given (for messages, the report and row commands).
    pub text: String,
    pub experiment: String,
    pub key: String,
    pub value: Value,
}

impl Override {
    /// Parses `EXPERIMENT:KEY=VALUE`.
    pub fn parse(text: &str) -> Result<Override, String> {
        let bad = |why: &str| format!("--set `{text}`: {why} (expected EXPERIMENT:KEY=VALUE)");
        let (experiment, rest) = text.split_once(':').ok_or_else(|| bad("no `:`"))?;
        let (key, raw) = rest.split_once('=').ok_or_else(|| bad("no `=`"))?;
        if experiment.is_empty() || key.is_empty() || key.split('.').any(str::is_empty) {
            return Err(bad("empty experiment or key part"));
        }
        let value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.into()));
        Ok(Override {
            text: text.to_string(),
            experiment: experiment.to_string(),
            key: key.to_string(),
            value,
        })
    }

    /// The override as a shell argument of a row's command.
    pub fn shell_arg(&self) -> String {
        format!(" --set '{}'", self.text.replace('\'', r"'\''"))
    }
}

/// Sets `key` in `root`: dots separate the parts, a part that is a number indexes an
/// existing array element, any other part is an object key (added when missing).
pub fn set_path(root: &mut Value, key: &str, value: Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    let mut cur = root;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        cur = match cur {
            Value::Array(items) => {
                let n = items.len();
                let slot = part
                    .parse::<usize>()
                    .ok()
                    .and_then(|k| items.get_mut(k))
                    .ok_or_else(|| {
                        format!("`{part}` is not an index of the {n}-element array there")
                    })?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            Value::Object(map) => {
                if last {
                    map.insert(part.to_string(), value);
                    return Ok(());
                }
                map.entry(part.to_string())
                    .or_insert_with(|| Value::Object(Default::default()))
            }
            _ => return Err(format!("`{part}` is below a value that is not an object")),
        };
    }
    unreachable!("the last part returns")
}

/// Applies every override to the loaded manifests. Each must change at least one
/// experiment; an experiment named outright must hold what its key sets.
pub fn apply(papers: &mut [Paper], overrides: &[Override]) -> Result<(), String> {
    for o in overrides {
        let err = |why: String| format!("--set `{}`: {why}", o.text);
        let mut changed = 0;
        for p in papers.iter_mut() {
            let paper = &p.file.paper;
            for (ei, e) in p.file.experiments.iter_mut().enumerate() {
                let named = o.experiment == e.id
                    || o.experiment.split_once('/') == Some((paper.as_str(), e.id.as_str()));
                if !named && o.experiment != "*" {
                    continue;
                }
                if let Some(arm) = o.key.strip_prefix("arms.") {
                    let Some(spec) = e.arms.get_mut(arm) else {
                        if named {
                            let known: Vec<&str> = e.arms.keys().map(String::as_str).collect();
                            return Err(err(format!(
                                "experiment `{}` has no arm `{arm}` (arms: {})",
                                e.id,
                                known.join(", ")
                            )));
                        }
                        continue;
                    };
                    let Value::String(s) = &o.value else {
                        return Err(err("an arm is a policy spec, a string".into()));
                    };
                    *spec = s.clone();
                } else if let Some(field) = o.key.strip_prefix("picasso.") {
                    let Source::Picasso(setup) = &mut e.source else {
                        if named {
                            return Err(err(format!(
                                "experiment `{}` is not a PICASSO experiment",
                                e.id
                            )));
                        }
                        continue;
                    };
                    let mut v = serde_json::to_value(&*setup).expect("setups serialise");
                    set_path(&mut v, field, o.value.clone()).map_err(err)?;
                    let new: PicassoSetup =
                        serde_json::from_value(v).map_err(|e| err(e.to_string()))?;
                    new.check()
                        .map_err(|(k, why)| err(format!("picasso.{k}: {why}")))?;
                    *setup = new.clone();
                    e.picasso = Some(new);
                } else {
                    if !matches!(e.source, Source::Scenario(_)) {
                        if named {
                            return Err(err(format!(
                                "experiment `{}` has no scenario (a PICASSO experiment takes `picasso.` keys)",
                                e.id
                            )));
                        }
                        continue;
                    }
                    let text = p.scenario_text[ei].as_deref().unwrap_or("{}");
                    let mut v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
                    let field = o.key.split('.').next().unwrap_or_default();
                    if !named && !dlsim_model::scenario::has_top_level_field(&v, field) {
                        continue; // `*` sets a batch key in batch scenarios only, and so on.
                    }
                    set_path(&mut v, &o.key, o.value.clone()).map_err(|why| {
                        err(format!("in experiment `{}`'s scenario: {why}", e.id))
                    })?;
                    e.overrides.push((o.key.clone(), o.value.clone()));
                }
                changed += 1;
            }
        }
        if changed == 0 {
            let known: Vec<String> = papers
                .iter()
                .flat_map(|p| {
                    p.file
                        .experiments
                        .iter()
                        .map(|e| format!("{}/{}", p.file.paper, e.id))
                })
                .collect();
            return Err(err(format!(
                "changes no experiment of the selected papers (experiments: {})",
                known.join(", ")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_experiment_key_and_json_or_plain_values() {
        let o = Override::parse("table3:arms.madu=madu[drain_min=20,cooldown_min=9]").unwrap();
        assert_eq!(
            (o.experiment.as_str(), o.key.as_str()),
            ("table3", "arms.madu")
        );
        assert_eq!(o.value, json!("madu[drain_min=20,cooldown_min=9]"));
        assert_eq!(Override::parse("*:a.b=300").unwrap().value, json!(300));
        assert_eq!(Override::parse("*:a=\"x\"").unwrap().value, json!("x"));
        assert_eq!(Override::parse("*:a=").unwrap().value, json!(""));
        for bad in ["no-colon=1", "x:no-equals", ":k=1", "x:=1", "x:a..b=1"] {
            assert!(Override::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Override::parse("e:k=it's").unwrap().shell_arg(),
            r" --set 'e:k=it'\''s'"
        );
    }

    /// The committed manifests of `names`.
    fn committed<const N: usize>(names: [&str; N]) -> [crate::manifest::Paper; N] {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/paper");
        names.map(|p| crate::manifest::Paper::load(&root, p).expect("a committed manifest"))
    }

    /// `PAPER/ID` of every experiment an override changed.
    fn touched(papers: &[crate::manifest::Paper]) -> Vec<String> {
        papers
            .iter()
            .flat_map(|p| {
                p.file
                    .experiments
                    .iter()
                    .filter(|e| !e.overrides.is_empty())
                    .map(|e| format!("{}/{}", p.file.paper, e.id))
            })
            .collect()
    }

    /// `*` with a batch scenario key changes the batch experiments and skips the online
    /// one (whose loader would refuse the key); named outright, the online experiment
    /// takes it, and its loader then names the unknown field.
    #[test]
    fn a_wildcard_scenario_key_goes_to_the_scenarios_that_have_it() {
        let load = || committed(["dlrover-rm", "kale"]);
        let mut papers = load();
        let set = Override::parse("*:elasticity.storage_mb_s=14").unwrap();
        apply(&mut papers, std::slice::from_ref(&set)).unwrap();
        let got = touched(&papers);
        assert!(
            got.contains(&"dlrover-rm/production-day".to_string()),
            "{got:?}"
        );
        assert!(!got.contains(&"kale/table3".to_string()), "{got:?}");
        let mut papers = load();
        let named = Override::parse("table3:elasticity.storage_mb_s=14").unwrap();
        apply(&mut papers, &[named]).unwrap();
        assert_eq!(touched(&papers), ["kale/table3"]);
        let mut kale = [load().into_iter().nth(1).unwrap()];
        let err = apply(&mut kale, &[set]).unwrap_err();
        assert!(err.contains("changes no experiment"), "{err}");
    }

    /// Both papers have a `production-day`: the bare id changes both, `PAPER/ID` one, and a
    /// paper the selection lacks changes nothing (an error, as for an unknown id).
    #[test]
    fn a_paper_qualified_experiment_changes_only_that_papers_experiment() {
        let load = || committed(["dlrover-rm", "dlrover"]);
        let mut papers = load();
        let both = Override::parse("production-day:recovery.pending_timeout_s=900").unwrap();
        apply(&mut papers, &[both]).unwrap();
        assert_eq!(
            touched(&papers),
            ["dlrover-rm/production-day", "dlrover/production-day"]
        );
        let mut papers = load();
        let one = Override::parse("dlrover/production-day:recovery.pending_timeout_s=900").unwrap();
        apply(&mut papers, &[one]).unwrap();
        assert_eq!(touched(&papers), ["dlrover/production-day"]);
        let mut papers = load();
        let other = Override::parse("kale/production-day:recovery.pending_timeout_s=900").unwrap();
        let err = apply(&mut papers, &[other]).unwrap_err();
        assert!(err.contains("changes no experiment"), "{err}");
    }

    #[test]
    fn paths_index_arrays_and_add_object_keys_but_never_grow_arrays() {
        let mut v = json!({"cluster": {"groups": [{"count": 280}]}});
        set_path(&mut v, "cluster.groups.0.count", json!(300)).unwrap();
        set_path(&mut v, "pods.start_per_core_s", json!(0)).unwrap();
        assert_eq!(
            v,
            json!({"cluster": {"groups": [{"count": 300}]}, "pods": {"start_per_core_s": 0}})
        );
        assert!(set_path(&mut v, "cluster.groups.1.count", json!(1)).is_err());
        assert!(set_path(&mut v, "cluster.groups.x", json!(1)).is_err());
        assert!(set_path(&mut v, "cluster.groups.0.count.deeper", json!(1)).is_err());
    }
}
