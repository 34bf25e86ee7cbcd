//! Fuzz target: the native trace reader (`TraceReader`: header, records, limits, order,
//! unique ids), through a file as `dlsim replay` reads it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("dlsim-fuzz-trace-{}.jsonl", std::process::id()));
    std::fs::write(&path, data).expect("write the input");
    if let Ok(reader) = dlsim_traces::TraceReader::open(&path) {
        for record in reader {
            if let Ok((_, job)) = record {
                assert!(job.validate().is_ok(), "the reader yields only valid jobs");
            }
        }
    }
});
