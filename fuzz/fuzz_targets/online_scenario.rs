//! Fuzz target: the online scenario loader (`dlsim_online::scenario::from_text`, its
//! limits and cross-field checks).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let path = std::path::Path::new("fuzz-online/online.json");
    if let Ok(sc) = dlsim_online::scenario::from_text(path, &text) {
        // What the loader accepts, the run's sizing must handle.
        let _ = sc.max_workers();
        let _ = sc.horizon_s();
    }
});
