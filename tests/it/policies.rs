//! Policies can be discovered: `dlsim policies` (and `dlsim replay --help`) list every
//! policy with its parameters, from registries that also bound what each spec accepts; the
//! documented defaults are the ones the code uses.

use crate::support::*;
use dlsim_policies::{PolicyDoc, SpecError};
use std::path::Path;

/// A registry's builder: its verdict on a spec string.
type Build = fn(&str) -> Result<(), SpecError>;

/// Every documented policy with its registry's builder.
fn registries() -> Vec<(&'static PolicyDoc, Build)> {
    let batch = |s: &str| dlsim_policies::build(s).map(|_| ());
    let online = |s: &str| dlsim_policies::autoscale::build(s).map(|_| ());
    let mut all: Vec<(&'static PolicyDoc, Build)> = Vec::new();
    all.extend(dlsim_policies::POLICY_DOCS.iter().map(|d| (*d, batch as _)));
    all.extend(
        dlsim_policies::autoscale::DOCS
            .iter()
            .map(|d| (*d, online as _)),
    );
    all
}

/// The spec with every documented default written out.
fn spelled_out(doc: &PolicyDoc) -> String {
    let kv: Vec<String> = doc
        .params
        .iter()
        .filter(|p| p.default != "-")
        .map(|p| format!("{}={}", p.name, p.default))
        .collect();
    format!("{}[{}]", doc.name, kv.join(","))
}

#[test]
fn the_registry_lists_exactly_the_keys_each_policy_accepts() {
    let names: Vec<&str> = dlsim_policies::POLICY_DOCS.iter().map(|d| d.name).collect();
    assert_eq!(names, dlsim_policies::POLICY_NAMES);
    let online: Vec<&str> = dlsim_policies::autoscale::DOCS
        .iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(online, dlsim_policies::AUTOSCALER_NAMES);
    for (doc, build) in registries() {
        build(doc.name).unwrap_or_else(|e| panic!("{}: {e}", doc.name));
        // Every documented default is a value the policy accepts.
        build(&spelled_out(doc)).unwrap_or_else(|e| panic!("{}: {e}", spelled_out(doc)));
        // An undocumented key is refused, and the refusal lists the documented keys.
        match build(&format!("{}[no_such_key=1]", doc.name)) {
            Err(SpecError::UnknownParam { known, .. }) => {
                let want = doc.param_names().join(", ");
                assert_eq!(known, if want.is_empty() { "none".into() } else { want });
            }
            other => panic!("{}: {other:?}", doc.name),
        }
        for p in doc.params {
            assert!(
                !p.kind.is_empty() && !p.meaning.is_empty(),
                "{}.{}",
                doc.name,
                p.name
            );
        }
    }
}

#[test]
fn policies_and_replay_help_list_every_policy_and_parameter() {
    let listing = stdout(&dlsim(&["policies"]));
    let help = dlsim(&["replay", "--help"]);
    assert!(help.status.success());
    assert!(
        stdout(&help).contains(listing.trim()),
        "replay --help ends with the listing"
    );
    for (doc, _) in registries() {
        assert!(listing.contains(&format!("\n{}: {}\n", doc.name, doc.summary)));
        for p in doc.params {
            assert!(
                listing.contains(&format!("  {}={}", p.name, p.kind)),
                "{}.{}",
                doc.name,
                p.name
            );
            assert!(listing.contains(p.meaning));
        }
    }
    let quiet = dlsim(&["policies", "--quiet"]);
    assert!(quiet.status.success());
}

/// `summary.json` without its `policy` line (the spec as given), and the other outputs.
fn outputs(dir: &Path) -> Vec<String> {
    let summary = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let summary: String = summary
        .lines()
        .filter(|l| !l.trim_start().starts_with("\"policy\""))
        .collect();
    let mut all = vec![summary];
    for f in ["jobs.csv", "timeline.csv"] {
        if let Ok(text) = std::fs::read_to_string(dir.join(f)) {
            all.push(text);
        }
    }
    all
}

/// A replay under `doc`'s bare name equals one with every documented default written out,
/// so `dlsim policies` states the defaults the code uses.
#[test]
fn the_documented_defaults_are_the_defaults() {
    let dir = scratch("policies-defaults");
    let batch = dir.join("batch.json");
    std::fs::write(
        &batch,
        r#"{ "name": "tiny", "generate": { "days": 0.05, "jobs_per_day": 400 },
  "faults": { "pod_failure_per_day": 0.5 },
  "cluster": { "groups": [ { "count": 12, "cores": 64, "mem_gb": 256 },
                           { "count": 1, "cores": 96, "mem_gb": 512, "gpus": 8 } ] } }"#,
    )
    .unwrap();
    let online = dir.join("online.json");
    std::fs::write(
        &online,
        r#"{ "kind": "online", "name": "o", "days": 1, "policy": "hpa",
  "traffic": { "partitions": 16 } }"#,
    )
    .unwrap();
    let batch_names = dlsim_policies::POLICY_NAMES;
    for (doc, _) in registries() {
        let scenario = if batch_names.contains(&doc.name) {
            &batch
        } else {
            &online
        };
        let mut runs = Vec::new();
        for (k, spec) in [doc.name.to_string(), spelled_out(doc)].iter().enumerate() {
            let out = dir.join(format!("{}-{k}", doc.name));
            let o = dlsim(&[
                "replay",
                path_str(scenario),
                "--policy",
                spec,
                "--out",
                path_str(&out),
                "--quiet",
            ]);
            assert!(o.status.success(), "{spec}: {}", stderr(&o));
            runs.push(outputs(&out));
        }
        assert!(
            runs[0] == runs[1],
            "{}: defaults differ from {}",
            doc.name,
            spelled_out(doc)
        );
    }
}

/// The README's table of policies is `dlsim policies --markdown`, from the registry, so a
/// new policy appears there by regenerating it, and a stale table fails here.
#[test]
fn the_readme_table_of_policies_is_the_registry() {
    let o = dlsim(&["policies", "--markdown"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    for d in dlsim_policies::POLICY_DOCS
        .iter()
        .chain(dlsim_policies::autoscale::DOCS)
    {
        assert!(table.contains(&format!("| `{}` |", d.name)), "{table}");
    }
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let begin = "<!-- dlsim policies --markdown: begin -->\n";
    let end = "<!-- dlsim policies --markdown: end -->";
    let start = readme.find(begin).expect("README marks the table") + begin.len();
    let stop = readme.find(end).expect("README marks the table's end");
    assert_eq!(
        &readme[start..stop],
        table,
        "README.md's table is stale: replace it with `dlsim policies --markdown`"
    );
    // The names listing scripts read is the registry's, kind by kind.
    let o = dlsim(&["policies", "--names", "batch"]);
    let names: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(names, dlsim_policies::POLICY_NAMES);
    let o = dlsim(&["policies", "--names", "online"]);
    let online: Vec<&str> = dlsim_policies::autoscale::DOCS
        .iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(stdout(&o).lines().collect::<Vec<_>>(), online);
}
