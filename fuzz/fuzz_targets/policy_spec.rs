//! Fuzz target: the policy spec parser and every policy's parameters, cluster policies and
//! autoscalers, alone or composed (`name[key=value,...]`, `a+b`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = dlsim_policies::build(&text);
    let _ = dlsim_policies::autoscale::build(&text);
});
