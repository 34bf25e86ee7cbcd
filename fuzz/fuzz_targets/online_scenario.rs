//! Fuzz target: the online-only scenario loader (`"kind": "online"` files, loaded through
//! `dlsim_model::Scenario::from_text`: their limits and cross-field checks, then the
//! conversion to a scenario of one online job).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let path = std::path::Path::new("fuzz-online/online.json");
    if let Ok(sc) = dlsim_model::Scenario::from_text(path, &text) {
        // What the loader accepts, the run's sizing must handle.
        for job in &sc.online {
            let _ = job.file.max_workers();
            let _ = job.file.horizon_s();
        }
    }
});
