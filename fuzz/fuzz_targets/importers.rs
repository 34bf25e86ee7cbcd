//! Fuzz target: every public-trace importer. The first byte picks the format (openb,
//! dlrm2025, pai2020, philly, swf) and strictness; the rest is the source file. Every job
//! an import returns must pass `JobSpec::validate`.
#![no_main]
use dlsim_importers::{import, ImportOptions, IMPORTERS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let format = IMPORTERS[usize::from(pick) % IMPORTERS.len()];
    let path = std::env::temp_dir().join(format!("dlsim-fuzz-import-{}.csv", std::process::id()));
    std::fs::write(&path, rest).expect("write the input");
    let opts = ImportOptions {
        skip_bad: pick & 0x10 != 0,
        strict: pick & 0x20 != 0,
        seed: 1,
        nodes: None,
    };
    if let Ok(imported) = import(format, &path, &opts) {
        for job in &imported.jobs {
            assert!(job.validate().is_ok(), "imported jobs are valid: {job:?}");
        }
    }
});
