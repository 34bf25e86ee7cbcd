//! `dlsim schema scenario|sweep`: JSON Schemas (draft 2020-12) of the files dlsim reads,
//! derived with `schemars` from the same serde types the loaders deserialize, so the schema
//! follows the code. The scenario schema accepts a scenario (`ScenarioFile`, batch and
//! online jobs) or an online-only file (`OnlineFile`, `"kind": "online"`). A schema checks shapes and types only;
//! the loaders still check values (ranges, files, policy specs) with their own errors.

use crate::BadInput;
use clap::{Args, ValueEnum};
use schemars::generate::SchemaSettings;
use serde_json::{json, Value};
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Which {
    /// A scenario file, batch or online (`dlsim replay SCENARIO`).
    Scenario,
    /// A sweep file (`dlsim sweep SWEEP_FILE`).
    Sweep,
}

#[derive(Args)]
pub struct SchemaArgs {
    /// Which file's schema to print.
    pub which: Which,
    /// Accepted on every command; the schema is this command's output, so it still prints.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The schema of `which` as JSON.
pub fn schema(which: Which) -> Value {
    let mut gen = SchemaSettings::draft2020_12().into_generator();
    let (title, root) = match which {
        Which::Scenario => {
            let batch = gen.subschema_for::<dlsim_model::scenario::ScenarioFile>();
            let online = gen.subschema_for::<dlsim_model::online::scenario::OnlineFile>();
            let root = json!({ "anyOf": [batch, online] });
            (
                "dlsim scenario (batch, or online with \"kind\": \"online\")",
                root,
            )
        }
        Which::Sweep => {
            let sweep = gen.subschema_for::<dlsim_report::sweep::SweepFile>();
            ("dlsim sweep file", json!({ "allOf": [sweep] }))
        }
    };
    let mut defs = serde_json::Map::new();
    for (name, def) in gen.take_definitions(true) {
        defs.insert(name, def);
    }
    // `kind` is a free string in the online type (the loader checks it); the schema says
    // what it must be, so a batch file cannot pass as an online one.
    if let Some(kind) = defs
        .get_mut("OnlineFile")
        .and_then(|d| d.pointer_mut("/properties/kind"))
    {
        *kind = json!({ "const": "online" });
    }
    let mut out = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
    });
    let obj = out.as_object_mut().expect("an object");
    obj.extend(root.as_object().expect("an object").clone());
    obj.insert("$defs".into(), Value::Object(defs));
    out
}

pub fn run(args: &SchemaArgs) -> anyhow::Result<ExitCode> {
    let text = serde_json::to_string_pretty(&schema(args.which))
        .map_err(|e| BadInput(format!("schema: {e}")))?;
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}
