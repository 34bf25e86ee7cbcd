//! Golden digests: the reference replays of `tests/golden/cases.json` must write
//! byte-identical outputs. Each case's files (all but `run.json`, which holds wall-clock
//! figures and the version) are hashed with SHA-256 and compared with
//! `tests/golden/<case>.sha256` (`sha256sum` format, so `sha256sum -c` checks a replay by
//! hand). "Outputs unchanged" in a commit message means these tests passed unchanged.
//! `UPDATE_GOLDEN=1` (what `scripts/bless-golden.sh` sets) rewrites the digests instead.

use crate::support::*;
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
struct Cases {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    scenario: String,
    policy: String,
    seed: u64,
    /// Import a public-trace slice first: the case's scenario is copied next to the
    /// imported `trace.jsonl` and `nodes.csv` and replayed from there.
    #[serde(default)]
    import: Option<Import>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Import {
    format: String,
    input: String,
    nodes: Option<String>,
}

/// The groups the cases are split into, one test each so that they run in parallel.
const GROUPS: [&str; 4] = ["quickstart-", "faults-", "online-", "import-"];

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(repo().join("tests/golden/cases.json")).unwrap();
    serde_json::from_str::<Cases>(&text).unwrap().cases
}

/// Runs one case into `dir` and returns its digests, one `sha256sum` line per file.
fn run_case(case: &Case, dir: &Path) -> String {
    let mut scenario = case.scenario.clone();
    if let Some(imp) = &case.import {
        let (trace, nodes) = (dir.join("trace.jsonl"), dir.join("nodes.csv"));
        let mut args = vec!["trace", "import", "--format", &imp.format, &imp.input];
        if let Some(n) = &imp.nodes {
            args.extend(["--nodes", n]);
        }
        args.extend(["--out", path_str(&trace), "--cluster-out", path_str(&nodes)]);
        let o = dlsim(&args);
        assert!(o.status.success(), "{}: import: {}", case.name, stderr(&o));
        let copy = dir.join("scenario.json");
        std::fs::copy(repo().join(&case.scenario), &copy).unwrap();
        scenario = path_str(&copy).to_string();
    }
    let out = dir.join("run");
    let seed = case.seed.to_string();
    let o = dlsim(&[
        "replay",
        &scenario,
        "--policy",
        &case.policy,
        "--seed",
        &seed,
        "--quiet",
        "--out",
        path_str(&out),
    ]);
    assert!(o.status.success(), "{}: replay: {}", case.name, stderr(&o));
    let mut files = Vec::new();
    list_files(dir, &mut files);
    files.sort();
    let mut lines = String::new();
    for f in files {
        let rel = f.strip_prefix(dir).unwrap();
        let rel = path_str(rel).replace('\\', "/");
        if rel == "scenario.json" || rel.ends_with("run.json") {
            continue;
        }
        let digest = hex(&sha256(&std::fs::read(&f).unwrap()));
        lines.push_str(&format!("{digest}  {rel}\n"));
    }
    lines
}

fn list_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            list_files(&path, files);
        } else {
            files.push(path);
        }
    }
}

/// Runs every case of a group (in parallel: each is one child process) and compares.
fn check_group(prefix: &str) {
    let cases: Vec<Case> = cases()
        .into_iter()
        .filter(|c| c.name.starts_with(prefix))
        .collect();
    assert!(!cases.is_empty(), "no golden case starts with {prefix}");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let results: Vec<(String, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .map(|c| {
                s.spawn(move || {
                    let dir = scratch(&format!("golden-{}", c.name));
                    (c.name.clone(), run_case(c, &dir))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut failures = Vec::new();
    for (name, got) in results {
        let file = repo().join("tests/golden").join(format!("{name}.sha256"));
        if update {
            std::fs::write(&file, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&file).unwrap_or_default();
        if want != got {
            failures.push(format!(
                "{name}: outputs changed\n--- tests/golden/{name}.sha256\n{want}+++ this build\n{got}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\nIf the change is intended, run scripts/bless-golden.sh and say why in the commit.",
        failures.join("\n")
    );
}

#[test]
fn quickstart_under_every_batch_policy_is_unchanged() {
    check_group("quickstart-");
}

#[test]
fn fault_scenarios_are_unchanged() {
    check_group("faults-");
}

#[test]
fn online_replay_is_unchanged() {
    check_group("online-");
}

#[test]
fn imported_trace_slice_and_its_replays_are_unchanged() {
    check_group("import-");
}

#[test]
fn every_case_is_in_a_group_and_every_digest_file_has_a_case() {
    let names: Vec<String> = cases().into_iter().map(|c| c.name).collect();
    for n in &names {
        assert!(
            GROUPS.iter().any(|g| n.starts_with(g)),
            "golden case {n} belongs to no group (prefixes {GROUPS:?}), so no test runs it"
        );
    }
    for entry in std::fs::read_dir(repo().join("tests/golden")).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        if let Some(n) = file.strip_suffix(".sha256") {
            assert!(
                names.iter().any(|x| x == n),
                "{file} has no case in cases.json"
            );
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 (FIPS 180-4), here to keep a hashing crate out of the build for one test.
fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7]
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [
                t1.wrapping_add(t2),
                v[0],
                v[1],
                v[2],
                v[3].wrapping_add(t1),
                v[4],
                v[5],
                v[6],
            ];
        }
        for (x, y) in h.iter_mut().zip(v) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 32];
    for (i, x) in h.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

#[test]
fn sha256_matches_the_standard_test_vectors() {
    // FIPS 180-4 examples, and a message whose padding spills into a second block.
    assert_eq!(
        hex(&sha256(b"")),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        hex(&sha256(b"abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        hex(&sha256(
            b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        )),
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    );
}
