//! Filling what a public trace lacks, by one documented, seeded rule for every importer.
//!
//! Real sources record resources and times, never the model trained. For each imported job,
//! in input order, the importer draws from the ChaCha8 stream `import-<format>` of `--seed`:
//!
//! - `model`, `batch_size`, `emb_dim`: the generator's mixes (`dlsim_traces::generator`):
//!   wide_deep 50%, xdeepfm 25%, dcn 25% (an assumption); batch 256 / 512 / 1024 with
//!   50 / 40 / 10%; embedding dimension 8 / 16 / 32 with 30 / 50 / 20%;
//! - `dense_mb`: lognormal with mean 18 MB, sigma 0.8, in [0.5, 2000] (DLRover Table 3's
//!   ~4.5M dense parameters x 4 bytes).
//!
//! - for a job whose source gives no run time (openb pod lists without time columns, e.g.
//!   `multigpu50`), one more draw: `steps` as `dlsim trace gen` draws them (lognormal with
//!   the generator's mean of 249k steps, DLRover Table 3, sigma 0.9, clamped to
//!   5k..5M; [`STEPS_SIGMA`], [`STEPS_RANGE`]). The job's run time is then whatever those
//!   steps take at its request. Jobs with a run time take no extra draw, so their draws are
//!   the same as before this rule existed.
//!
//! Then, without randomness:
//!
//! - `steps = ceil(duration_s x throughput(requested config) / batch_size)`, at least 1,
//!   where throughput is [`requested_rate`]: the simulator's default ground truth
//!   (`TruthSettings::default()`: the kind's parameters from the shipped calibration,
//!   1,250 MB/s, a GPU = 24 cores) without the hidden per-job variation. A static replay of an uncontended job therefore lasts about its real
//!   duration (plus pod start-up, and +-15% from the hidden per-job variation).
//! - A job with recorded scale events (`observed.scale`, dlrm2025) runs its recorded counts
//!   under `static` (`dlsim_model::world::recorded`), so its steps integrate the rate over
//!   them instead: `sum_k throughput(counts_k) x (t_{k+1} - t_k) / batch_size` from
//!   submission to the recorded end, with the counts clamped exactly as the world clamps
//!   them (`recorded::counts`). Its PS memory check and embeddings below use the fewest PS
//!   it ever runs, since every PS then holds the largest share.
//! - Memory requests below the simulator's memory model (`perf.rs`: a worker needs
//!   `3 GB + 2 x dense + activations`, a PS `2 GB + 3 x dense / ps` before embeddings, here
//!   with 10% headroom) would be OOM-killed at start, which the source shows did not happen:
//!   they are raised to that need, rounded up to 512 MB, counted as a note and the field
//!   marked synthesised. The real request is then lost for that job (the model's 3 GB
//!   worker baseline is a TensorFlow PS/worker figure; many public-trace pods ask for less).
//! - Embeddings (PS jobs only): the final embedding size is half of what the PS memory can
//!   hold above that baseline, `0.5 x (ps_mem_mb - 2048 - 3 x dense_mb / ps) x ps`, 10%
//!   present at start and the rest growing linearly over the job's samples, so an imported
//!   job does not run out of memory. Jobs without PS get no embeddings.
//!
//! Every field filled this way is listed in the job's `synthesized`, and the trace header
//! records the truth's digest (`source.truth`, `TruthSettings::fingerprint`): a replay
//! under a truth with another digest warns that the steps no longer match the recorded
//! durations.

use crate::report::ImportReport;
use dlsim_engine::{RngStreams, SimRng};
use dlsim_model::perf::{throughput, worker_mem_mb, PerfInputs, PS_BASE_MB};
use dlsim_model::scenario::TruthSettings;
use dlsim_model::world::recorded;
use dlsim_traces::generator::{pick, GeneratorConfig, BATCH_SIZE_MIX, EMB_DIM_MIX, MODEL_MIX};
use dlsim_traces::{JobSpec, Observed};
use rand::Rng;

/// Spread of the drawn steps of a job without a run time: the generator's (`generator.rs`,
/// `draw_job`: lognormal sigma 0.9 around its mean `GeneratorConfig::mean_steps`).
pub const STEPS_SIGMA: f64 = 0.9;
/// Range of drawn steps, the generator's clamp.
pub const STEPS_RANGE: (f64, f64) = (5_000.0, 5_000_000.0);

/// Fields every importer synthesises.
pub const ALWAYS: [&str; 7] = [
    "model",
    "batch_size",
    "steps",
    "dense_mb",
    "emb_dim",
    "emb_mb_initial",
    "emb_mb_per_msample",
];

/// The resources of a job as the source requested them (per pod).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Shape {
    pub workers: u32,
    pub ps: u32,
    pub worker_cpu: f64,
    pub worker_mem_mb: u64,
    pub worker_gpu: u32,
    pub ps_cpu: f64,
    pub ps_mem_mb: u64,
}

impl Shape {
    pub fn pods(&self) -> u64 {
        u64::from(self.workers) + u64::from(self.ps)
    }
}

/// Everything about a job the source gives, before synthesis.
#[derive(Clone, Debug)]
pub struct Draft {
    pub submit_s: u64,
    pub user: String,
    pub priority: i32,
    pub shape: Shape,
    /// Run time the synthesised steps should reproduce; `None` when the source has none
    /// (steps are then drawn, see the module doc).
    pub duration_s: Option<u64>,
    pub observed: Observed,
    /// Resource fields the importer itself filled by rule (beyond [`ALWAYS`]).
    pub synthesized: Vec<&'static str>,
    /// Source line (first line of the job), for later error messages.
    pub line: usize,
}

/// Samples/s of `job` at its requested configuration under `truth` (the kind's parameters
/// from [`TruthSettings::params_for`], as the simulator uses them), without the hidden
/// per-job variation. The one place importers and `inspect` size jobs by.
pub fn requested_rate(job: &JobSpec, truth: &TruthSettings) -> f64 {
    let x = PerfInputs {
        workers: f64::from(job.workers),
        ps: f64::from(job.ps),
        worker_cores: job.worker_cpu + f64::from(job.worker_gpu) * truth.gpu_core_equiv,
        ps_cores: job.ps_cpu,
        batch: f64::from(job.batch_size),
        dense_mb: job.dense_mb,
        bandwidth_mb_s: truth.bandwidth_mb_s,
        emb_dim: f64::from(job.emb_dim),
        physics: truth.physics(),
    };
    throughput(&truth.params_for(job.model), &x)
}

fn round_up_512(mb: f64) -> u64 {
    (mb / 512.0).ceil().max(1.0) as u64 * 512
}

/// The seeded filler of one import.
pub struct Synth {
    rng: SimRng,
    truth: TruthSettings,
}

impl Synth {
    pub fn new(seed: u64, format: &str) -> Self {
        Synth {
            rng: RngStreams::new(seed).stream(&format!("import-{format}")),
            truth: TruthSettings::default(),
        }
    }

    /// Turns a draft into a job (id 0; ids are assigned after sorting).
    pub fn job(&mut self, d: Draft, report: &mut ImportReport) -> JobSpec {
        let rng = &mut self.rng;
        let model = pick(rng, &MODEL_MIX);
        let batch_size = pick(rng, &BATCH_SIZE_MIX);
        let emb_dim = pick(rng, &EMB_DIM_MIX);
        // Lognormal by Box-Muller on two uniforms, mean 18 MB.
        let (u1, u2): (f64, f64) = (rng.gen::<f64>().max(1e-12), rng.gen());
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let sigma = 0.8;
        let dense_mb = ((18f64.ln() - sigma * sigma / 2.0 + sigma * z).exp()).clamp(0.5, 2000.0);
        let dense_mb = (dense_mb * 100.0).round() / 100.0;
        let s = d.shape;
        let scale = d.observed.scale.clone();
        let mut job = JobSpec {
            id: 0,
            submit_s: d.submit_s,
            user: d.user,
            model,
            batch_size,
            steps: 1,
            dense_mb,
            emb_dim,
            emb_mb_initial: 0.0,
            emb_mb_per_msample: 0.0,
            workers: s.workers,
            ps: s.ps,
            worker_cpu: s.worker_cpu,
            worker_mem_mb: s.worker_mem_mb,
            ps_cpu: s.ps_cpu,
            ps_mem_mb: s.ps_mem_mb,
            worker_gpu: s.worker_gpu,
            priority: d.priority,
            synthesized: Vec::new(),
            observed: Some(d.observed),
        };
        let scale = scale.as_slice();
        job.steps = match d.duration_s {
            None => {
                let (u1, u2): (f64, f64) = (rng.gen::<f64>().max(1e-12), rng.gen());
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                let mean = GeneratorConfig::default().mean_steps;
                let mu = mean.ln() - STEPS_SIGMA * STEPS_SIGMA / 2.0;
                (mu + STEPS_SIGMA * z)
                    .exp()
                    .clamp(STEPS_RANGE.0, STEPS_RANGE.1) as u64
            }
            Some(duration_s) => {
                let samples = if scale.is_empty() {
                    duration_s as f64 * requested_rate(&job, &self.truth)
                } else {
                    recorded_samples(&job, scale, d.submit_s + duration_s, &self.truth)
                };
                ((samples / f64::from(batch_size)).ceil() as u64).max(1)
            }
        };
        let mut extra: Vec<&str> = d.synthesized.clone();
        // Requests below the memory model's need would be OOM-killed at start, which the
        // source shows did not happen: raise them (rounded up to 512 MB) and say so.
        let worker_need_mb = worker_mem_mb(dense_mb, f64::from(batch_size), f64::from(emb_dim));
        if (job.worker_mem_mb as f64) < worker_need_mb {
            job.worker_mem_mb = round_up_512(worker_need_mb);
            report.note("worker memory request raised to the memory model's need");
            extra.push("worker_mem_mb");
        }
        if s.ps > 0 {
            // With recorded scale events every PS holds the largest share at the fewest PS.
            let fewest_ps = scale
                .iter()
                .map(|e| recorded::counts(&job, e).0)
                .min()
                .unwrap_or(s.ps);
            let ps_base_mb = PS_BASE_MB + 3.0 * dense_mb / f64::from(fewest_ps);
            if (job.ps_mem_mb as f64) < ps_base_mb * 1.1 {
                job.ps_mem_mb = round_up_512(ps_base_mb * 1.1);
                report.note("PS memory request raised to the memory model's baseline");
                extra.push("ps_mem_mb");
            }
            let budget = (job.ps_mem_mb as f64 - ps_base_mb) * f64::from(fewest_ps);
            let emb_final = 0.5 * budget.max(0.0);
            let msamples = job.total_samples() / 1e6;
            job.emb_mb_initial = (0.1 * emb_final * 100.0).round() / 100.0;
            job.emb_mb_per_msample = (0.9 * emb_final / msamples * 1e4).floor() / 1e4;
        }
        job.synthesized = ALWAYS.iter().map(|s| s.to_string()).collect();
        for f in extra {
            if !job.synthesized.iter().any(|s| s == f) {
                job.synthesized.push(f.to_string());
            }
        }
        job
    }
}

/// Samples a job trains at the clamped recorded counts from its first event to `end_s`
/// (uncontended, at the default truth).
fn recorded_samples(
    job: &JobSpec,
    scale: &[dlsim_traces::ScaleEvent],
    end_s: u64,
    truth: &TruthSettings,
) -> f64 {
    let mut at = job.clone();
    let mut samples = 0.0;
    for (k, e) in scale.iter().enumerate() {
        let until = scale.get(k + 1).map_or(end_s, |n| n.t_s).min(end_s);
        if until <= e.t_s {
            continue;
        }
        (at.ps, at.workers) = recorded::counts(job, e);
        samples += (until - e.t_s) as f64 * requested_rate(&at, truth);
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsim_traces::Outcome;

    fn draft(duration_s: u64, shape: Shape) -> Draft {
        Draft {
            submit_s: 0,
            user: String::new(),
            priority: 0,
            shape,
            duration_s: Some(duration_s),
            observed: Observed {
                name: "x".into(),
                outcome: Outcome::Completed,
                duration_s: Some(duration_s),
                wait_s: None,
                scale: Vec::new(),
            },
            synthesized: vec![],
            line: 2,
        }
    }

    #[test]
    fn steps_reproduce_the_real_duration_at_the_requested_config() {
        let shape = Shape {
            workers: 4,
            ps: 2,
            worker_cpu: 8.0,
            worker_mem_mb: 16_384,
            worker_gpu: 0,
            ps_cpu: 8.0,
            ps_mem_mb: 32_768,
        };
        let mut report = ImportReport::new("t");
        let mut s = Synth::new(1, "t");
        for _ in 0..20 {
            let job = s.job(draft(3_600, shape), &mut report);
            assert!(job.validate().is_ok());
            let x = PerfInputs {
                workers: 4.0,
                ps: 2.0,
                worker_cores: 8.0,
                ps_cores: 8.0,
                batch: f64::from(job.batch_size),
                dense_mb: job.dense_mb,
                bandwidth_mb_s: 1_250.0,
                emb_dim: f64::from(job.emb_dim),
                physics: Default::default(),
            };
            let truth = TruthSettings::default().params_for(job.model);
            let secs = job.total_samples() / throughput(&truth, &x);
            assert!((secs - 3_600.0).abs() < 2.0, "{secs}");
            let final_ps_mb = dlsim_model::perf::ps_mem_mb(
                job.dense_mb,
                job.emb_mb_initial + job.emb_mb_per_msample * job.total_samples() / 1e6,
                0.5,
            );
            assert!(final_ps_mb < 32_768.0, "never OOMs: {final_ps_mb}");
        }
        assert!(report.notes.is_empty(), "{:?}", report.notes);
    }

    #[test]
    fn same_seed_same_draws() {
        let shape = Shape {
            workers: 1,
            worker_cpu: 4.0,
            worker_mem_mb: 1024,
            worker_gpu: 1,
            ..Shape::default()
        };
        let mut r = ImportReport::new("t");
        let a: Vec<_> = (0..5)
            .map(|_| Synth::new(3, "t").job(draft(60, shape), &mut r))
            .collect();
        let mut s = Synth::new(3, "t");
        let b = s.job(draft(60, shape), &mut r);
        assert_eq!(a[0], b);
        assert_ne!(b, s.job(draft(60, shape), &mut r));
    }
}
