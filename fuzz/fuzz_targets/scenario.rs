//! Fuzz target: the batch scenario loader (`Scenario::from_text`, every check of
//! `Scenario::load`). Any input must give a scenario or an `InputError`, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Relative paths resolve against the corpus folder, which holds no trace: a scenario
    // that names one fails on load like any missing file.
    let path = std::path::Path::new("fuzz-scenario/scenario.json");
    let _ = dlsim_model::Scenario::from_text(path, &text);
});
