//! Fuzz target: the sweep file (`dlsim_study::sweep::Sweep::from_text`: every check of
//! `Sweep::load`, the bounded grid, the policy specs) and what `dlsim sweep` derives from
//! a loaded sweep before running it: the plan and each group's scenario text. Any input
//! must give a sweep or an `InputError`, never a panic.
#![no_main]
use dlsim_study::sweep::Sweep;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // As if the file sat beside the bundled scenarios, which its `scenario` names.
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/fuzz.json"));
    if let Ok(sweep) = Sweep::from_text(path, &text) {
        let _ = sweep.plan().to_json();
        let mut seen = std::collections::BTreeSet::new();
        for p in sweep.points() {
            if seen.insert(p.group()) {
                let _ = sweep.scenario_text(p);
            }
        }
    }
});
