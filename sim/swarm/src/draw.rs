//! Random scenarios from a seed: cluster shapes, a generated workload, placement, every
//! fault class, elasticity and recovery costs, start-up latencies, observation settings,
//! horizons; and short online (streaming) scenarios. Each is written as the JSON a user
//! would write and loaded through the same validation (`Scenario::from_text`,
//! `dlsim_model::Scenario::from_text`), so a draw the limits refuse is itself a failure.

use dlsim_engine::{RngStreams, SimRng};
use rand::Rng;
use serde_json::{json, Value};

/// The batch scenario of `seed`, as scenario-file JSON.
pub fn batch(seed: u64) -> Value {
    let mut rng = RngStreams::new(seed).stream("swarm-batch");
    let cpu_nodes = rng.gen_range(2..24);
    let gpu_nodes = rng.gen_range(1..4);
    let placement = if rng.gen_bool(0.5) {
        "first_fit"
    } else {
        "best_fit"
    };
    let horizon = rng.gen_bool(0.3).then(|| rng.gen_range(3_600..40_000));
    let mut s = json!({
        "name": format!("swarm-{seed}"),
        "seed": seed,
        "generate": {
            "days": rng.gen_range(0.01..0.06),
            "jobs_per_day": 2_000.0,
            "gpu_job_fraction": 0.1,
            "mean_steps": rng.gen_range(20_000.0..300_000.0),
        },
        "cluster": {
            "groups": [
                { "name": "cpu", "count": cpu_nodes, "cores": 64, "mem_gb": 256 },
                { "name": "gpu", "count": gpu_nodes, "cores": 96, "mem_gb": 512, "gpus": 8, "gpu_model": "A100" }
            ],
            "placement": placement
        },
        "pods": {
            "start_base_s": rng.gen_range(0.0..120.0),
            "start_per_core_s": rng.gen_range(0.0..8.0),
        },
        "observation": {
            "noise_cv": rng.gen_range(0.0..0.3),
            "history_len": rng.gen_range(1..128),
        },
        "truth": {
            "job_variation_sigma": rng.gen_range(0.0..0.5),
            "bandwidth_mb_s": rng.gen_range(100.0..5_000.0),
        },
        "faults": faults(&mut rng),
        "recovery": recovery(&mut rng),
        "elasticity": elasticity(&mut rng),
        "timeline_interval_s": ([60, 300, 600, 1_800][rng.gen_range(0..4)]),
    });
    if let Some(h) = horizon {
        s["horizon_s"] = h.into();
    }
    // Half the draws have nodes slow in spells rather than for the whole run, from their
    // own stream so the rest of the draw stays as it was.
    let mut srng = RngStreams::new(seed).stream("swarm-batch-slow-spells");
    if srng.gen_bool(0.5) {
        s["faults"]["slow_spell_h"] = srng.gen_range(0.05..6.0).into();
    }
    // A quarter of the draws put online jobs beside the batch ones (issue #19), from
    // their own stream so the batch draw stays as it was.
    let mut orng = RngStreams::new(seed).stream("swarm-batch-online");
    if orng.gen_bool(0.25) {
        let span_s = s["generate"]["days"].as_f64().unwrap_or(0.01) * 86_400.0;
        let jobs: Vec<Value> = (0..orng.gen_range(1..3))
            .map(|k| online_entry(&mut orng, k, span_s))
            .collect();
        s["online"] = jobs.into();
    }
    s
}

/// Online job `k` of a batch draw: it starts within the batch workload's span and runs
/// 30 to 90 minutes on GPU workers of the draw's GPU nodes.
fn online_entry(rng: &mut SimRng, k: u64, span_s: f64) -> Value {
    let most = rng.gen_range(1..8);
    json!({
        "name": format!("online-{k}"),
        // Beyond the generator's ids (a draw has at most a few hundred jobs).
        "id": 1_000_000 + k,
        "submit_s": rng.gen_range(0.0..span_s).floor() as u64,
        "days": rng.gen_range(30.0..90.0) / 1_440.0,
        "max_workers": most,
        "worker": { "cores": 4.0, "mem_gb": 16.0, "gpus": 1 },
        "job": { "initial_workers": rng.gen_range(1..=most), "profile_workers": [1, 2, 4, 8] },
        "traffic": {
            "peak_sps": 10f64.powf(rng.gen_range(3.0..5.0)),
            "partitions": rng.gen_range(1..64),
        },
        "rescale": {
            "mode": if rng.gen_bool(0.5) { "rolling" } else { "restart" },
            "model_load_s": rng.gen_range(0.0..300.0),
        },
        "step_s": ([5, 15, 30, 60][rng.gen_range(0..4)]),
    })
}

fn faults(rng: &mut SimRng) -> Value {
    let slow_pods: Vec<Value> = (0..rng.gen_range(0..3))
        .map(|_| {
            json!({
                "job": rng.gen_range(0..20),
                "role": if rng.gen_bool(0.5) { "ps" } else { "worker" },
                "index": rng.gen_range(0..3),
                "cpu_ratio": rng.gen_range(0.03..1.0),
            })
        })
        .collect();
    json!({
        "pod_failure_per_day": rng.gen_range(0.0..0.9),
        "slow_node_fraction": rng.gen_range(0.0..0.3),
        "straggler_cpu_ratio": rng.gen_range(0.03..1.0),
        "slow_pods": slow_pods,
        "hot_ps_prob": rng.gen_range(0.0..0.5),
        "hot_ps_load_factor": rng.gen_range(1.0..5.0),
        "node_mtbf_days": if rng.gen_bool(0.5) { rng.gen_range(0.2..20.0) } else { 0.0 },
        "node_repair_h": rng.gen_range(0.1..8.0),
        "colocation": {
            "node_fraction": if rng.gen_bool(0.5) { rng.gen_range(0.0..1.0) } else { 0.0 },
            "trough": rng.gen_range(0.0..0.3),
            "peak": rng.gen_range(0.3..0.95),
            "peak_hour": rng.gen_range(0.0..24.0),
            "noise_sigma": rng.gen_range(0.0..0.5),
            "update_interval_s": rng.gen_range(60..3_600),
            "action": if rng.gen_bool(0.5) { "evict" } else { "throttle" },
        },
    })
}

fn recovery(rng: &mut SimRng) -> Value {
    let interval: f64 = if rng.gen_bool(0.2) {
        0.0
    } else {
        rng.gen_range(60.0..7_200.0)
    };
    // A checkpoint stalls at most as long as the training between two of them.
    let cost = rng
        .gen_range(0.0..120.0f64)
        .min(if interval > 0.0 { interval } else { 120.0 });
    let mut r = json!({
        "restart_budget": rng.gen_range(0..6),
        "oom_memory_factor": rng.gen_range(1.0..3.0),
        "checkpoint_interval_s": interval,
        "checkpoint_cost_s": cost,
        "init_s": rng.gen_range(0.0..300.0),
        "pending_timeout_s": if rng.gen_bool(0.5) { 0.0 } else { rng.gen_range(60.0..7_200.0) },
    });
    if rng.gen_bool(0.5) {
        r["reload_s"] = rng.gen_range(0.0..900.0).into();
    }
    r
}

/// Elasticity costs, down to the slow flash and storage that once left a job training
/// with no running worker (issue #21).
fn elasticity(rng: &mut SimRng) -> Value {
    let mut e = json!({
        "seamless_migration": rng.gen_bool(0.7),
        "flash_checkpoint": rng.gen_bool(0.5),
        "flash_mb_s": 10f64.powf(rng.gen_range(-0.5..4.7)),
        "storage_mb_s": rng.gen_range(1.0..500.0),
        "shard_batches": rng.gen_range(16..512),
    });
    if rng.gen_bool(0.5) {
        e["checkpoint_save_s"] = rng.gen_range(0.0..900.0).into();
    }
    e
}

/// Online policies, in the order seeds take them.
pub const ONLINE_POLICIES: [&str; 5] = ["hpa", "kale", "autopilot", "madu", "adequate"];

/// The online scenario of `seed` (a short run: 30 to 90 simulated minutes), as JSON.
pub fn online(seed: u64) -> Value {
    let mut rng = RngStreams::new(seed).stream("swarm-online");
    let gpu_nodes = rng.gen_range(1..6);
    let gpus = [4, 8][rng.gen_range(0..2)];
    let cpu_nodes = rng.gen_range(2..10);
    let wp_ratio: f64 = rng.gen_range(0.5..4.0);
    // The workers the cluster holds: a GPU each, and their 8-core PS pods on the
    // 64-core CPU nodes (`OnlineScenario::max_workers`).
    let most = (gpu_nodes * gpus).min((f64::from(8 * cpu_nodes) * wp_ratio).floor() as u32);
    let lo = rng.gen_range(0.0..10.0);
    json!({
        "kind": "online",
        "name": format!("swarm-online-{seed}"),
        "seed": seed,
        "days": rng.gen_range(30.0..90.0) / 1_440.0,
        "policy": ONLINE_POLICIES[(seed / 10) as usize % ONLINE_POLICIES.len()],
        "cluster": {
            "gpu_nodes": gpu_nodes,
            "gpus_per_node": gpus,
            "cpu_nodes": cpu_nodes,
            "cores_per_cpu_node": 64
        },
        "job": {
            "wp_ratio": wp_ratio,
            "initial_workers": rng.gen_range(1..=most.max(1)),
            "truth_sigma": rng.gen_range(0.0..0.3),
        },
        "traffic": {
            "peak_sps": 10f64.powf(rng.gen_range(3.0..6.0)),
            "peak_to_trough": rng.gen_range(1.0..10.0),
            "trough_hour": rng.gen_range(0.0..24.0),
            "noise_sigma": rng.gen_range(0.0..0.3),
            "bursts_per_day": rng.gen_range(0.0..200.0),
            "burst_minutes": [lo, lo + rng.gen_range(1.0..20.0)],
            "burst_gain": [0.0, rng.gen_range(0.0..2.0)],
            "partitions": rng.gen_range(1..512),
            "partition_skew_sigma": rng.gen_range(0.0..1.0),
        },
        "rescale": {
            "mode": if rng.gen_bool(0.5) { "rolling" } else { "restart" },
            "container_start_s": rng.gen_range(0.0..120.0),
            "image_pull_s": rng.gen_range(0.0..120.0),
            "model_load_s": rng.gen_range(0.0..900.0),
            "stream_rebuild_s": rng.gen_range(0.0..300.0),
        },
        "observation": {
            "metric_noise_sigma": rng.gen_range(0.0..0.1),
            "profile_noise_sigma": rng.gen_range(0.0..0.1),
        },
        "step_s": ([5, 15, 30, 60][rng.gen_range(0..4)]),
        "slo_lag_s": rng.gen_range(60.0..3_600.0),
    })
}
