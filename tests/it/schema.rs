//! `dlsim schema scenario|sweep`: every bundled scenario (batch and online, recursively under
//! `scenarios/`) and sweep file validates against the printed schema, and the schema refuses
//! what the loaders refuse (an unknown key, a wrong type, a missing required key).
//!
//! The validator below covers the JSON Schema keywords the schemas use (checked first), so
//! the tests need no validator crate (and `cargo test` builds no extra dependency).

use crate::support::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn schema(which: &str) -> Value {
    let o = dlsim(&["schema", which]);
    assert!(o.status.success(), "{}", stderr(&o));
    let quiet = dlsim(&["schema", which, "--quiet"]);
    assert_eq!(
        stdout(&quiet),
        stdout(&o),
        "the schema is the output, --quiet or not"
    );
    serde_json::from_str(&stdout(&o)).expect("the schema is JSON")
}

/// Keywords the validator implements, and those that only annotate.
const CHECKED: &[&str] = &[
    "$ref",
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "oneOf",
    "allOf",
];
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$defs",
    "title",
    "description",
    "default",
    "format",
];

fn keywords_are_known(s: &Value, at: &str) {
    let Value::Object(m) = s else { return };
    for (k, v) in m {
        assert!(
            CHECKED.contains(&k.as_str()) || ANNOTATIONS.contains(&k.as_str()),
            "{at}: keyword `{k}` is not implemented by the test's validator"
        );
        match k.as_str() {
            "properties" | "$defs" => {
                for (name, sub) in v.as_object().unwrap() {
                    keywords_are_known(sub, &format!("{at}/{k}/{name}"));
                }
            }
            "anyOf" | "oneOf" | "allOf" => {
                for sub in v.as_array().unwrap() {
                    keywords_are_known(sub, &format!("{at}/{k}"));
                }
            }
            "items" | "additionalProperties" => keywords_are_known(v, &format!("{at}/{k}")),
            _ => {}
        }
    }
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|x| x.fract() == 0.0),
        other => panic!("unknown type {other}"),
    }
}

/// Errors of `v` against `s` (a subschema of `root`), each as `path: why`.
fn check(root: &Value, s: &Value, v: &Value, at: &str, errs: &mut Vec<String>) {
    let m = match s {
        Value::Bool(true) => return,
        Value::Bool(false) => return errs.push(format!("{at}: not allowed")),
        Value::Object(m) => m,
        _ => panic!("bad schema at {at}"),
    };
    if let Some(r) = m.get("$ref").and_then(Value::as_str) {
        let target = root
            .pointer(r.trim_start_matches('#'))
            .expect("$ref resolves");
        check(root, target, v, at, errs);
    }
    if let Some(t) = m.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)),
            _ => panic!("bad type at {at}"),
        };
        if !ok {
            return errs.push(format!("{at}: expected {t}, got {v}"));
        }
    }
    if let Some(e) = m.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errs.push(format!("{at}: {v} is not one of {e:?}"));
        }
    }
    if let Some(c) = m.get("const") {
        if c != v {
            errs.push(format!("{at}: expected {c}, got {v}"));
        }
    }
    if let (Some(x), Some(min)) = (v.as_f64(), m.get("minimum").and_then(Value::as_f64)) {
        if x < min {
            errs.push(format!("{at}: {x} < minimum {min}"));
        }
    }
    if let (Some(x), Some(max)) = (v.as_f64(), m.get("maximum").and_then(Value::as_f64)) {
        if x > max {
            errs.push(format!("{at}: {x} > maximum {max}"));
        }
    }
    if let Value::Object(obj) = v {
        let props = m.get("properties").and_then(Value::as_object);
        for req in m
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !obj.contains_key(req.as_str().unwrap()) {
                errs.push(format!(
                    "{at}: missing required `{}`",
                    req.as_str().unwrap()
                ));
            }
        }
        for (k, x) in obj {
            let sub = format!("{at}.{k}");
            match (props.and_then(|p| p.get(k)), m.get("additionalProperties")) {
                (Some(ps), _) => check(root, ps, x, &sub, errs),
                (None, Some(extra)) => check(root, extra, x, &sub, errs),
                (None, None) => {}
            }
        }
    }
    if let Value::Array(items) = v {
        let n = items.len() as u64;
        if m.get("minItems")
            .and_then(Value::as_u64)
            .is_some_and(|min| n < min)
        {
            errs.push(format!("{at}: fewer than minItems"));
        }
        if m.get("maxItems")
            .and_then(Value::as_u64)
            .is_some_and(|max| n > max)
        {
            errs.push(format!("{at}: more than maxItems"));
        }
        if let Some(item) = m.get("items") {
            for (i, x) in items.iter().enumerate() {
                check(root, item, x, &format!("{at}[{i}]"), errs);
            }
        }
    }
    let passing = |subs: &Value| {
        subs.as_array()
            .unwrap()
            .iter()
            .map(|sub| {
                let mut e = Vec::new();
                check(root, sub, v, at, &mut e);
                e
            })
            .collect::<Vec<_>>()
    };
    if let Some(subs) = m.get("allOf") {
        for e in passing(subs) {
            errs.extend(e);
        }
    }
    for (key, want_one) in [("anyOf", false), ("oneOf", true)] {
        if let Some(subs) = m.get(key) {
            let results = passing(subs);
            let ok = results.iter().filter(|e| e.is_empty()).count();
            if ok == 0 || (want_one && ok > 1) {
                let all: Vec<String> = results.into_iter().flatten().collect();
                errs.push(format!("{at}: {key} matched {ok}: {}", all.join("; ")));
            }
        }
    }
}

fn errors(schema: &Value, v: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    check(schema, schema, v, "$", &mut errs);
    errs
}

/// Every `.json` file under `dir`, recursively, sorted.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(json_files(&p));
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn every_bundled_scenario_and_sweep_validates_against_its_schema() {
    let (scenario, sweep) = (schema("scenario"), schema("sweep"));
    keywords_are_known(&scenario, "scenario");
    keywords_are_known(&sweep, "sweep");
    let (mut scenarios, mut sweeps, mut online) = (0, 0, 0);
    for path in json_files(&repo().join("scenarios")) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "paper.json" || name == "choices.json" {
            continue; // a paper manifest (`dlsim reproduce`) or the open choices
                      // (`dlsim sensitivity`), not a scenario
        }
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let (which, s) = if name.starts_with("sweep") {
            sweeps += 1;
            ("sweep", &sweep)
        } else {
            scenarios += 1;
            online += usize::from(v["kind"] == "online");
            ("scenario", &scenario)
        };
        let errs = errors(s, &v);
        assert!(
            errs.is_empty(),
            "{} against the {which} schema: {errs:#?}",
            path.display()
        );
    }
    assert!(
        scenarios >= 30 && online >= 3 && sweeps >= 1,
        "{scenarios} {online} {sweeps}"
    );
}

/// The schemas refuse, as the loaders do, an unknown key (at any depth), a wrong type or
/// value of a closed set, a missing required key, and a batch file posing as online.
#[test]
fn the_schemas_refuse_unknown_keys_wrong_types_and_missing_keys() {
    let (scenario, sweep) = (schema("scenario"), schema("sweep"));
    let quickstart: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("scenarios/quickstart.json")).unwrap(),
    )
    .unwrap();
    let online: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("scenarios/online-7d.json")).unwrap(),
    )
    .unwrap();
    // `base` with `value` at `pointer`, objects on the way created as needed.
    let with = |base: &Value, pointer: &str, value: Value| {
        let mut v = base.clone();
        let mut at = &mut v;
        for key in pointer.trim_start_matches('/').split('/') {
            at = match key.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => &mut at[key],
            };
        }
        *at = value;
        v
    };
    for (label, bad) in [
        (
            "unknown fault key",
            with(&quickstart, "/faults/pod_failure_rate", json!(1)),
        ),
        (
            "cores as text",
            with(&quickstart, "/cluster/groups/0/cores", json!("64")),
        ),
        (
            "unknown placement",
            with(&quickstart, "/cluster/placement", json!("random")),
        ),
        (
            "online kind on a batch file",
            with(&quickstart, "/kind", json!("online")),
        ),
        (
            "unknown online key",
            with(&online, "/traffic/partition", json!(4)),
        ),
        (
            "online kind misspelt",
            with(&online, "/kind", json!("onlin")),
        ),
    ] {
        assert!(
            !errors(&scenario, &bad).is_empty(),
            "{label} passed the schema"
        );
    }
    let no_cluster = {
        let mut v = quickstart.clone();
        v.as_object_mut().unwrap().remove("cluster");
        v
    };
    assert!(
        !errors(&scenario, &no_cluster).is_empty(),
        "a batch scenario needs a cluster"
    );
    let good_sweep = json!({ "scenario": "quickstart.json", "policies": "all", "seeds": [1, 2] });
    assert_eq!(errors(&sweep, &good_sweep), Vec::<String>::new());
    for bad in [
        json!({ "scenario": "quickstart.json" }),
        json!({ "scenario": "quickstart.json", "policies": "all", "seeds": -1 }),
        json!({ "scenario": "quickstart.json", "policies": "all", "sweeds": 3 }),
    ] {
        assert!(!errors(&sweep, &bad).is_empty(), "{bad} passed the schema");
    }
}
