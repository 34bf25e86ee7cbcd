//! Common random numbers: two policies replaying one scenario and seed face the same pod
//! lifetimes, wherever their decisions leave a pod's key (job, role, slot, incarnation)
//! alone. Here `static` restarts a job from its checkpoint when a worker dies and
//! `static[sharding=dynamic]` does not, so the two runs drift apart in time, yet a pod both
//! run from the same instant must fail at the same instant.

use crate::support::*;
use std::collections::BTreeMap;

/// (job, role, slot, incarnation) -> (running at, failed at), in seconds.
type Lives = BTreeMap<(String, String, String, String), (Option<u64>, Option<u64>)>;

fn pod_lives(policy: &str, dir: &std::path::Path) -> Lives {
    let out = dir.join(policy.replace(['[', ']', '='], "-"));
    let o = dlsim(&[
        "replay",
        "scenarios/faults-pod-failures.json",
        "--policy",
        policy,
        "--quiet",
        "--trace-observations",
        "--out",
        path_str(&out),
    ]);
    assert!(o.status.success(), "{policy}: {}", stderr(&o));
    let csv = std::fs::read_to_string(out.join("observations.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (t, job, role, kind) = (col("time_s"), col("job"), col("role"), col("kind"));
    let (slot, inc) = (col("slot"), col("incarnation"));
    let mut lives = Lives::new();
    for line in lines {
        let c: Vec<&str> = line.split(',').collect();
        let key = (c[job].into(), c[role].into(), c[slot].into(), c[inc].into());
        let at: u64 = c[t].parse().unwrap();
        match c[kind] {
            "running" => lives.entry(key).or_default().0 = Some(at),
            "failed_error" => lives.entry(key).or_default().1 = Some(at),
            _ => {}
        }
    }
    lives
}

#[test]
fn static_and_dynamic_sharding_see_the_same_pod_failures_for_the_same_pods() {
    let dir = scratch("paired-randomness");
    let a = pod_lives("static", &dir);
    let b = pod_lives("static[sharding=dynamic]", &dir);
    let (mut same_start, mut failed_both, mut differ) = (0, 0, Vec::new());
    for (key, &(start_a, fail_a)) in &a {
        let Some(&(start_b, fail_b)) = b.get(key) else {
            continue;
        };
        if start_a.is_none() || start_a != start_b {
            continue;
        }
        same_start += 1;
        // A pod retired before its lifetime ran out has no failure; where both failed,
        // the failure came from the same draw at the same instant.
        if let (Some(x), Some(y)) = (fail_a, fail_b) {
            failed_both += 1;
            if x != y {
                differ.push(format!("{key:?}: {x} s vs {y} s"));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "pods failing at different times: {differ:?}"
    );
    // Enough to mean something: most failures happen to pods both policies started alike.
    let failed_a = a.values().filter(|l| l.1.is_some()).count();

    assert!(same_start > 1_000, "only {same_start} pods started alike");
    assert!(
        failed_both * 2 > failed_a,
        "{failed_both} of static's {failed_a} pod failures are shared"
    );
}
