//! Fuzz target: `check`'s baseline file (`dlsim_study::baseline::Baseline::from_text`, its
//! tolerance limits). What it accepts, `--bless` writes back; that text must load again.
#![no_main]
use dlsim_study::baseline::Baseline;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let path = std::path::Path::new("fuzz-baseline/baseline.json");
    if let Ok(b) = Baseline::from_text(path, &text) {
        let again = Baseline::from_text(path, &b.to_json());
        assert!(again.is_ok(), "a loaded baseline must load again once written: {again:?}");
    }
});
