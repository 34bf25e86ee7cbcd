//! A mutation campaign (issue #21): bundled scenarios, trace lines, sweep files, baselines
//! and importer rows, each mutated at random (numbers to extremes, `NaN`-like strings,
//! deleted and duplicated keys, wrong types, truncation, trailing garbage), fed to the real
//! `dlsim` binary under a time limit. Every run must end without a panic (exit 101), an
//! abort or a signal, within 20 s of CPU time (wall time would call a valid but heavy
//! debug run a hang whenever the machine is shared; a run that waits without computing is
//! stopped after 120 s of wall time); a run that exits 0 must write no NaN, null or infinite
//! metric; an exit 2 must name the input file (or the command-line flag) it is about.
//!
//! `cargo test` runs a small campaign (`CI_CASES`, about half a minute in debug on 2 cores);
//! `DLSIM_MUTATIONS=N` runs `N` cases (and `DLSIM_MUTATION_SEED=S` starts elsewhere). The
//! summary line gives the outcome counts; a failure lists every bad case with the
//! command that reproduces it.

use crate::support::*;
use dlsim_engine::RngStreams;
use rand::seq::SliceRandom;
use rand::Rng;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Cases `cargo test` runs.
const CI_CASES: usize = 1_000;
/// A run using more CPU time than this (seconds) is a hang.
const HANG_CPU_S: u64 = 20;
/// A run lasting longer than this, computing or not, is a hang.
const HANG_WALL: Duration = Duration::from_secs(120);
/// Address-space cap of every run, KiB: an unbounded allocation aborts instead of
/// swapping the machine.
const MEMORY_KIB: u64 = 4 << 20;

type R = dlsim_engine::SimRng;

/// What a mutated case feeds to `dlsim`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Target {
    Scenario,
    TraceLine,
    Online,
    Sweep,
    Baseline,
    Import,
}

const TARGETS: [(Target, u32); 6] = [
    (Target::Scenario, 30),
    (Target::TraceLine, 25),
    (Target::Online, 10),
    (Target::Sweep, 8),
    (Target::Baseline, 10),
    (Target::Import, 17),
];

/// One case: the files written, the command, and the names an error may cite.
struct Case {
    args: Vec<String>,
    /// File names an exit-2 message may name (the mutated file, or files it points to).
    names: Vec<String>,
    /// Folder whose `summary.json` files an exit-0 run wrote.
    out: PathBuf,
    /// Exit 1 is a legitimate answer (`check` finding a regression).
    exit1_ok: bool,
}

#[derive(Default, Debug)]
struct Tally {
    cases: usize,
    exit0: usize,
    exit1: usize,
    exit2: usize,
    bad: Vec<String>,
}

#[test]
fn mutated_inputs_never_panic_hang_or_poison_a_result() {
    let cases = std::env::var("DLSIM_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CI_CASES);
    let seed: u64 = std::env::var("DLSIM_MUTATION_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(21);
    let dir = scratch("mutation");
    let fixed = Fixed::new(&dir);
    // `DLSIM_MUTATION_CASE=i` runs case `i` alone and leaves its files in place.
    let only: Option<usize> = std::env::var("DLSIM_MUTATION_CASE")
        .ok()
        .and_then(|v| v.parse().ok());
    let threads = if cases > CI_CASES && only.is_none() {
        2
    } else {
        1
    };
    let started = Instant::now();
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let fixed = &fixed;
                let dir = &dir;
                s.spawn(move || {
                    let mut tally = Tally::default();
                    let range = match only {
                        Some(i) => i..i + 1,
                        None => t..cases,
                    };
                    for i in range.step_by(threads) {
                        run_case(fixed, dir, seed, i as u64, &mut tally);
                    }
                    tally
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = Tally::default();
    for t in tallies {
        all.cases += t.cases;
        all.exit0 += t.exit0;
        all.exit1 += t.exit1;
        all.exit2 += t.exit2;
        all.bad.extend(t.bad);
    }
    eprintln!(
        "mutation campaign (seed {seed}): {} cases in {:.0} s: exit 0: {}, exit 1: {}, exit 2: {}, failures: {}",
        all.cases,
        started.elapsed().as_secs_f64(),
        all.exit0,
        all.exit1,
        all.exit2,
        all.bad.len()
    );
    assert!(
        all.bad.is_empty(),
        "{} bad cases:\n{}",
        all.bad.len(),
        all.bad.join("\n")
    );
}

/// Files every case shares: a small trace, a blessed run for `check`, the importer
/// fixtures' first rows.
struct Fixed {
    trace: Vec<Value>,
    header: String,
    check_run: PathBuf,
}

impl Fixed {
    fn new(dir: &Path) -> Fixed {
        let text = std::fs::read_to_string(repo().join("traces/antgroup-sample.jsonl")).unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap().to_string();
        // Twelve jobs, each a twentieth as long: a replay takes a fraction of a second.
        let trace: Vec<Value> = lines
            .take(12)
            .map(|l| {
                let mut j: Value = serde_json::from_str(l).unwrap();
                j["steps"] = (j["steps"].as_u64().unwrap() / 20).max(1).into();
                j
            })
            .collect();
        let fixed = Fixed {
            trace,
            header,
            check_run: dir.join("check-run"),
        };
        let base = dir.join("base");
        std::fs::create_dir_all(&base).unwrap();
        let scenario = fixed.scenario(&base, "quickstart.json", &fixed.trace);
        let o = dlsim(&[
            "replay",
            path_str(&scenario),
            "--out",
            path_str(&fixed.check_run),
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        fixed
    }

    /// Writes the small trace `jobs` and a copy of bundled scenario `name` that replays it
    /// into `dir`; returns the scenario's path.
    fn scenario(&self, dir: &Path, name: &str, jobs: &[Value]) -> PathBuf {
        let body: String = jobs.iter().map(|j| format!("{j}\n")).collect();
        std::fs::write(dir.join("trace.jsonl"), format!("{}\n{body}", self.header)).unwrap();
        let text = std::fs::read_to_string(repo().join("scenarios").join(name)).unwrap();
        let mut s: Value = serde_json::from_str(&text).unwrap();
        s["trace"] = "trace.jsonl".into();
        s["name"] = "quickstart".into();
        let path = dir.join("scenario.json");
        std::fs::write(&path, serde_json::to_string_pretty(&s).unwrap()).unwrap();
        path
    }
}

fn run_case(fixed: &Fixed, root: &Path, seed: u64, i: u64, tally: &mut Tally) {
    let mut rng = RngStreams::new(seed).substream("mutation-case", i);
    let dir = root.join(format!("c{}", i % 64));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let total: u32 = TARGETS.iter().map(|t| t.1).sum();
    let mut pick = rng.gen_range(0..total);
    let target = TARGETS
        .iter()
        .find(|t| {
            let hit = pick < t.1;
            pick = pick.saturating_sub(t.1);
            hit
        })
        .unwrap()
        .0;
    let case = match target {
        Target::Scenario => scenario_case(fixed, &dir, &mut rng),
        Target::TraceLine => trace_case(fixed, &dir, &mut rng),
        Target::Online => online_case(&dir, &mut rng),
        Target::Sweep => sweep_case(fixed, &dir, &mut rng),
        Target::Baseline => baseline_case(fixed, &dir, &mut rng),
        Target::Import => import_case(&dir, &mut rng),
    };
    let repro = format!(
        "case {i} ({target:?}): DLSIM_MUTATION_SEED={seed} DLSIM_MUTATION_CASE={i} cargo test --test it mutation; dlsim {}",
        case.args.join(" ")
    );
    tally.cases += 1;
    match run_limited(&case.args) {
        Outcome::Hang => tally.bad.push(format!("HANG {repro}")),
        Outcome::Signal => tally.bad.push(format!("SIGNAL/ABORT {repro}")),
        Outcome::Exit(code, err) => {
            let first = err.lines().next().unwrap_or("").to_string();
            match code {
                0 => {
                    tally.exit0 += 1;
                    if let Some(why) = poisoned(&case.out) {
                        tally.bad.push(format!("POISONED ({why}) {repro}"));
                    }
                }
                2 => {
                    tally.exit2 += 1;
                    let named = first.starts_with("error: --")
                        || case.names.iter().any(|n| first.contains(n.as_str()));
                    if !named {
                        tally.bad.push(format!("UNNAMED `{first}` {repro}"));
                    }
                }
                1 if case.exit1_ok => tally.exit1 += 1,
                101 => tally
                    .bad
                    .push(format!("PANIC `{}` {repro}", panic_line(&err))),
                c => tally.bad.push(format!("EXIT {c} `{first}` {repro}")),
            }
        }
    }
}

fn panic_line(err: &str) -> &str {
    err.lines().find(|l| l.contains("panicked")).unwrap_or("")
}

enum Outcome {
    Exit(i32, String),
    Signal,
    Hang,
}

/// Runs `dlsim args` under the memory cap and the hang limits: the CPU one as a resource
/// limit (the kernel stops the run with SIGXCPU or SIGKILL), the wall one here.
fn run_limited(args: &[String]) -> Outcome {
    // `__sh SCRIPT` runs a shell script (with `$0` the binary) instead of one command.
    let (script, rest) = match args {
        [sh, script] if sh == "__sh" => (script.clone(), &[][..]),
        _ => ("exec \"$0\" \"$@\"".to_string(), args),
    };
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {MEMORY_KIB}; ulimit -t {HANG_CPU_S}; {script}"
        ))
        .arg(env!("CARGO_BIN_EXE_dlsim"))
        .args(rest)
        .current_dir(repo())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dlsim starts");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut err = String::new();
            use std::io::Read;
            child.stderr.take().unwrap().read_to_string(&mut err).ok();
            use std::os::unix::process::ExitStatusExt;
            const SIGKILL: i32 = 9;
            const SIGXCPU: i32 = 24;
            return match (status.code(), status.signal()) {
                // A script's shell reports its command's signal as 128 + the signal.
                (Some(c), _) if c == 128 + SIGXCPU || c == 128 + SIGKILL => Outcome::Hang,
                (Some(c), _) => Outcome::Exit(c, err),
                (None, Some(SIGXCPU | SIGKILL)) => Outcome::Hang,
                (None, _) => Outcome::Signal,
            };
        }
        if start.elapsed() > HANG_WALL {
            child.kill().ok();
            child.wait().ok();
            return Outcome::Hang;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The first NaN, null or infinite value in any `summary.json` under `out`.
fn poisoned(out: &Path) -> Option<String> {
    let mut stack = vec![out.to_path_buf()];
    while let Some(p) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&p) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "summary.json") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let v: Value = match serde_json::from_str(&text) {
                    Ok(v) => v,
                    Err(e) => return Some(format!("{}: {e}", path.display())),
                };
                if let Some(k) = dlsim_swarm::check::non_finite(&v, "") {
                    return Some(format!("{}: {k}", path.display()));
                }
            }
        }
    }
    None
}

// ---- the mutations ----

/// Numbers and strings a mutated value becomes.
const EXTREMES: [&str; 20] = [
    "0",
    "-1",
    "1e-320",
    "1e19",
    "1e308",
    "-1e308",
    "4294967296",
    "18446744073709551616",
    "0.5",
    "1e9",
    "\"NaN\"",
    "\"inf\"",
    "\"-Infinity\"",
    "\"\"",
    "null",
    "true",
    "[]",
    "{}",
    "\"x\"",
    "-0",
];

/// One random mutation of the JSON document `v`, as text (the text may not be JSON).
fn mutate_json(v: &Value, rng: &mut R) -> String {
    let mut v = v.clone();
    let ops = rng.gen_range(1..=3);
    let mut text_ops = Vec::new();
    for _ in 0..ops {
        match rng.gen_range(0..10) {
            0..=4 => replace_leaf(&mut v, rng),
            5 => delete_key(&mut v, rng),
            6 => scale_number(&mut v, rng),
            op => text_ops.push(op),
        }
    }
    let mut text = serde_json::to_string_pretty(&v).unwrap();
    for op in text_ops {
        text = match op {
            7 => duplicate_line(&text, rng),
            8 => {
                let cut = rng.gen_range(0..=text.len());
                let cut = (0..=cut).rev().find(|&c| text.is_char_boundary(c)).unwrap();
                text[..cut].to_string()
            }
            _ => {
                let garbage = ["}garbage", "\n{}", "\n\u{0}", "x", ",", "\n]"];
                text + garbage.choose(rng).unwrap()
            }
        };
    }
    text
}

/// Every path to a value in `v` (object keys and array indexes).
fn paths(v: &Value, here: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(here.clone());
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                here.push(k.clone().into());
                paths(x, here, out);
                here.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                here.push(i.into());
                paths(x, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

fn at<'a>(v: &'a mut Value, path: &[Value]) -> &'a mut Value {
    path.iter().fold(v, |cur, k| match k {
        Value::String(s) => &mut cur[s.as_str()],
        _ => &mut cur[k.as_u64().unwrap() as usize],
    })
}

fn random_path(v: &Value, rng: &mut R, leaves_only: bool) -> Option<Vec<Value>> {
    let mut all = Vec::new();
    paths(v, &mut Vec::new(), &mut all);
    let all: Vec<_> = all
        .into_iter()
        .filter(|p| !p.is_empty())
        .filter(|p| {
            let mut c = v.clone();
            !leaves_only || !matches!(at(&mut c, p), Value::Object(_) | Value::Array(_))
        })
        .collect();
    all.choose(rng).cloned()
}

fn replace_leaf(v: &mut Value, rng: &mut R) {
    let leaves_only = rng.gen_bool(0.8);
    if let Some(p) = random_path(v, rng, leaves_only) {
        let x = EXTREMES.choose(rng).unwrap();
        // `18446744073709551616` and `-0` are not what serde_json's Value keeps: write
        // them as f64-sized stand-ins of the same magnitude.
        *at(v, &p) = serde_json::from_str(x).unwrap_or(Value::from(1.8e19));
    }
}

fn scale_number(v: &mut Value, rng: &mut R) {
    let Some(p) = random_path(v, rng, true) else {
        return;
    };
    let slot = at(v, &p);
    if let Some(n) = slot.as_f64() {
        let factor = [1e3, 1e6, 1e12, -1.0, 1e-6, 0.5]
            .choose(rng)
            .copied()
            .unwrap();
        *slot = serde_json::Number::from_f64(n * factor).map_or(Value::Null, Value::Number);
    }
}

fn delete_key(v: &mut Value, rng: &mut R) {
    let Some(p) = random_path(v, rng, false) else {
        return;
    };
    let (last, parent) = p.split_last().unwrap();
    match (at(v, parent), last) {
        (Value::Object(o), Value::String(k)) => {
            o.remove(k);
        }
        (Value::Array(a), k) => {
            let i = k.as_u64().unwrap() as usize;
            if i < a.len() {
                a.remove(i);
            }
        }
        _ => {}
    }
}

/// Repeats one line of pretty JSON: a duplicated key, or broken structure.
fn duplicate_line(text: &str, rng: &mut R) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return text.to_string();
    }
    let k = rng.gen_range(0..lines.len());
    let mut out: Vec<&str> = lines[..=k].to_vec();
    out.extend(&lines[k..]);
    out.join("\n")
}

// ---- the targets ----

const POLICIES: [&str; 8] = [
    "static",
    "static[sharding=dynamic]",
    "dlrover",
    "dlrover-oss",
    "optimus",
    "es",
    "well-tuned",
    "static[slow=restart]",
];

fn replay_args(scenario: &Path, out: &Path, rng: &mut R) -> Vec<String> {
    let mut args = vec![
        "replay".to_string(),
        scenario.display().to_string(),
        "--out".into(),
        out.display().to_string(),
        "--quiet".into(),
    ];
    if rng.gen_bool(0.5) {
        args.extend(["--policy".into(), POLICIES.choose(rng).unwrap().to_string()]);
    }
    args
}

fn batch_scenarios() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("scenarios"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n == "quickstart.json" || n.starts_with("faults-"))
        .collect();
    names.sort();
    names
}

fn scenario_case(fixed: &Fixed, dir: &Path, rng: &mut R) -> Case {
    let name = batch_scenarios().choose(rng).unwrap().clone();
    let path = fixed.scenario(dir, &name, &fixed.trace);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    if rng.gen_bool(0.2) {
        // A generated workload instead of the trace, so `generate` is mutated too.
        v.as_object_mut().unwrap().remove("trace");
        v["generate"] = serde_json::json!({"days": 0.01, "jobs_per_day": 800, "mean_steps": 10000});
    }
    std::fs::write(&path, mutate_json(&v, rng)).unwrap();
    let out = dir.join("out");
    Case {
        args: replay_args(&path, &out, rng),
        names: vec!["scenario.json".into(), "trace.jsonl".into()],
        out,
        exit1_ok: false,
    }
}

fn trace_case(fixed: &Fixed, dir: &Path, rng: &mut R) -> Case {
    let mut jobs = fixed.trace.clone();
    let k = rng.gen_range(0..jobs.len());
    let line = mutate_json(&jobs[k], rng).replace('\n', " ");
    jobs[k] = Value::String("placeholder".into());
    let path = fixed.scenario(dir, "quickstart.json", &jobs);
    let text = std::fs::read_to_string(dir.join("trace.jsonl"))
        .unwrap()
        .replace("\"placeholder\"", &line);
    std::fs::write(dir.join("trace.jsonl"), text).unwrap();
    let out = dir.join("out");
    Case {
        args: replay_args(&path, &out, rng),
        names: vec!["trace.jsonl".into()],
        out,
        exit1_ok: false,
    }
}

fn online_case(dir: &Path, rng: &mut R) -> Case {
    let name = ["online-7d.json", "online-7d-restart.json"]
        .choose(rng)
        .unwrap();
    let text = std::fs::read_to_string(repo().join("scenarios").join(name)).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    // An hour and a quarter: a debug replay takes about a second.
    v["days"] = 0.05.into();
    let path = dir.join("online.json");
    let mut text = mutate_json(&v, rng);
    // A valid run of many days (or of the default 7, when `days` is deleted) is long, not
    // hung (about 20 s per simulated day in a debug build): keep valid lengths short.
    // Out-of-range lengths stay as mutated.
    if let Ok(mut m) = serde_json::from_str::<Value>(&text) {
        let days = m.get("days").map_or(Some(7.0), Value::as_f64);
        if m.is_object() && days.is_some_and(|d| d > 0.1 && d <= 366.0) {
            m["days"] = 0.1.into();
            text = m.to_string();
        }
    }
    std::fs::write(&path, text).unwrap();
    let out = dir.join("out");
    let mut args = vec![
        "replay".into(),
        path.display().to_string(),
        "--out".into(),
        out.display().to_string(),
        "--quiet".into(),
    ];
    if rng.gen_bool(0.3) {
        let p = ["hpa", "kale", "autopilot", "madu", "adequate", "static"]
            .choose(rng)
            .unwrap();
        args.extend(["--policy".into(), p.to_string()]);
    }
    Case {
        args,
        names: vec!["online.json".into()],
        out,
        exit1_ok: false,
    }
}

fn sweep_case(fixed: &Fixed, dir: &Path, rng: &mut R) -> Case {
    fixed.scenario(dir, "quickstart.json", &fixed.trace[..4]);
    let sweep = serde_json::json!({
        "name": "mutated",
        "scenario": "scenario.json",
        "seed": 1,
        "seeds": 1,
        "policies": ["static", "dlrover"],
        "scenario_params": { "faults.pod_failure_per_day": [0.0, 0.1] },
        "baseline": "static"
    });
    let path = dir.join("sweep.json");
    std::fs::write(&path, mutate_json(&sweep, rng)).unwrap();
    let out = dir.join("out");
    Case {
        args: vec![
            "sweep".into(),
            path.display().to_string(),
            "--out".into(),
            out.display().to_string(),
            "--quiet".into(),
            "--threads".into(),
            "1".into(),
        ],
        names: vec!["sweep.json".into(), "scenario.json".into()],
        out,
        exit1_ok: false,
    }
}

fn baseline_case(fixed: &Fixed, dir: &Path, rng: &mut R) -> Case {
    let text = std::fs::read_to_string(repo().join("reports/baselines/quickstart.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let path = dir.join("baseline.json");
    std::fs::write(&path, mutate_json(&v, rng)).unwrap();
    Case {
        args: vec![
            "check".into(),
            fixed.check_run.display().to_string(),
            "--baseline".into(),
            path.display().to_string(),
        ],
        names: vec!["baseline.json".into(), "check-run".into()],
        out: dir.join("out"),
        exit1_ok: true,
    }
}

/// Importer sources: format, fixture, node list, header rows to keep.
const SOURCES: [(&str, &str, Option<&str>); 5] = [
    ("openb", "openb_pods.csv", Some("openb_nodes.csv")),
    (
        "pai2020",
        "pai_task_table.csv",
        Some("pai_machine_spec.csv"),
    ),
    ("philly", "philly.csv", None),
    ("dlrm2025", "dlrm2025.csv", None),
    ("openb", "openb_gpushare40.csv", Some("openb_nodes.csv")),
];

/// Mutates one field of one row of an importer fixture; then imports, and half the
/// time replays what was imported.
fn import_case(dir: &Path, rng: &mut R) -> Case {
    let (format, file, nodes) = *SOURCES.choose(rng).unwrap();
    let fx = repo().join("tests/fixtures/importers");
    let text = std::fs::read_to_string(fx.join(file)).unwrap();
    let mut rows: Vec<String> = text.lines().take(8).map(str::to_string).collect();
    let first = usize::from(format != "pai2020");
    let r = rng.gen_range(first..rows.len());
    let mut cols: Vec<String> = rows[r].split(',').map(str::to_string).collect();
    match rng.gen_range(0..10) {
        0 => {
            cols.pop();
        }
        1 => cols.push("7".into()),
        _ => {
            let c = rng.gen_range(0..cols.len());
            let v = [
                "0",
                "-1",
                "1e-320",
                "1e19",
                "1e20",
                "1e308",
                "NaN",
                "inf",
                "",
                "x",
                "4294967296",
                "1e11",
                "1e12",
                "0.0001",
            ];
            cols[c] = v.choose(rng).unwrap().to_string();
        }
    }
    rows[r] = cols.join(",");
    let input = dir.join("input.csv");
    std::fs::write(&input, rows.join("\n") + "\n").unwrap();
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let trace = out.join("trace.jsonl");
    let cluster = out.join("nodes.csv");
    let mut import = format!(
        "{} trace import --format {format} {} --out {} --cluster-out {}",
        env!("CARGO_BIN_EXE_dlsim"),
        input.display(),
        trace.display(),
        cluster.display()
    );
    if let Some(n) = nodes {
        import += &format!(" --nodes {}", fx.join(n).display());
    }
    // Import, then (when it worked and half the time) replay what it wrote: the path
    // that once imported times of 1e20 and panicked in the replay.
    let scenario = out.join("scenario.json");
    let replay = rng.gen_bool(0.5);
    std::fs::write(
        &scenario,
        r#"{"trace": "trace.jsonl", "cluster": {"node_list": "nodes.csv"}, "timeline_interval_s": 3600}"#,
    )
    .unwrap();
    let script = if replay {
        format!(
            "{import} >/dev/null && exec \"$0\" replay {} --out {} --quiet",
            scenario.display(),
            out.join("run").display()
        )
    } else {
        format!("exec {import}")
    };
    Case {
        args: vec!["__sh".into(), script],
        names: vec!["input.csv".into(), "trace.jsonl".into(), "nodes.csv".into()],
        out,
        exit1_ok: false,
    }
}
