//! The AntGroup-style synthetic trace generator behind `dlsim trace gen`.
//!
//! Each distribution cites the published statistic it reproduces. Where a paper gives
//! only a mean or a share, the shape (lognormal, categorical) is our assumption and is
//! marked as such. All draws come from the named stream `trace-gen` of the given seed.

use crate::{JobSpec, ModelKind};
use dlsim_engine::RngStreams;
use rand::Rng;
use rand_distr::{Distribution, LogNormal, Poisson};
use serde::{Deserialize, Serialize};

const DAY_S: f64 = 86_400.0;

/// Knobs of the generator. Defaults reproduce the papers' published job profile.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GeneratorConfig {
    pub days: f64,
    /// Mean arrivals per day: 2,000, DLRover-RM Sec. 6's "AntGroup's DLRM training jobs
    /// (2K per day)" (DLRover Table 3's week holds 6,109 of DLRover's own jobs).
    pub jobs_per_day: f64,
    /// Relative amplitude of the daily arrival cycle (0 = flat). The shared qps trace shows a
    /// day/night swing and DLRover-RM Sec. 2 speaks of daytime resource scarcity; the shape
    /// and 0.6 (peak/trough = 4) are assumptions.
    pub diurnal_amplitude: f64,
    /// Hour of day at which arrivals peak.
    pub peak_hour: f64,
    /// Mean steps per job: 249k (DLRover Table 3).
    pub mean_steps: f64,
    /// Share of jobs that train on GPU workers (PICASSO-style hybrid jobs); AntGroup's
    /// PS jobs are CPU-only, so this is small by default (assumption).
    pub gpu_job_fraction: f64,
    /// Median ratio of requested to needed memory of every worker: lognormal with
    /// `mem_overprovision_sigma`, at least 1 and at most 32. The median is chosen so that
    /// user configurations use 15.2% of their workers' memory pooled over the cluster
    /// (used / allocated MB-seconds over every job, as DLRover-RM Fig. 14 plots the
    /// cluster's; Sec. 6.3's "before" level; measured with `static` on
    /// `scenarios/paper/dlrover-rm/production.json`, see `traces/README.md`); the sigma
    /// (an assumption) spreads requests over round sizes from about 2x to 30x of the need.
    pub mem_overprovision_median: f64,
    /// The same for the PS of every job not in `mem_underprovision_share`, chosen so that
    /// user configurations use 13.8% of their PSes' memory, pooled (DLRover-RM Sec. 6.3).
    pub ps_mem_overprovision_median: f64,
    pub mem_overprovision_sigma: f64,
    /// Share of jobs whose PS memory request falls short of what their embeddings grow to
    /// (uniform in [0.6, 1) of it): users who size memory to the job and under-estimate its
    /// growth. DLRover-RM Table 4: 4.7% of jobs fail with OOM under user configurations
    /// (DLRover Sec. 1: about 5%); a job drawn short meets its OOM only if it runs long
    /// enough, so the share is a little above the rate.
    pub mem_underprovision_share: f64,
    /// Number of distinct users submitting jobs.
    pub users: u32,
    /// Mean workers a job asks for: 8, our assumption ("from a few pods to hundreds"); the
    /// count is lognormal (sigma 0.9) and the PS about a quarter of it (DLRover Table 2
    /// uses 24:8 and 8:2). Left out of a written trace's header at its default, so the
    /// bundled trace regenerates byte for byte.
    #[serde(skip_serializing_if = "is_default_mean_workers")]
    pub mean_workers: f64,
    /// The generator's seed, when it must not follow the scenario's: a scenario's
    /// `generate` draws from its own seed by default (so each replay seed is another
    /// population); with a seed here every replay seed meets the same jobs, those that
    /// `dlsim trace gen --seed N` writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// A user's cores per worker and how often each is asked for, as `[cores, weight]`
    /// pairs ([`WORKER_CPU_MIX`] by default). Left out of a written trace's header at its
    /// default, as `mean_workers`.
    #[serde(skip_serializing_if = "is_default_worker_cpu_mix")]
    pub worker_cpu_mix: Vec<[f64; 2]>,
    /// A user's cores per PS and how often each is asked for ([`PS_CPU_MIX`] by default).
    #[serde(skip_serializing_if = "is_default_ps_cpu_mix")]
    pub ps_cpu_mix: Vec<[f64; 2]>,
    /// How often each model kind is drawn, as weights by kind, e.g. `{"wide_deep": 0.5,
    /// "xdeepfm": 0.25, "dcn": 0.25}` ([`MODEL_MIX`] by default); a kind left out is never
    /// drawn. Left out of a written trace's header at its default, as `mean_workers`.
    #[serde(skip_serializing_if = "is_default_model_mix")]
    pub model_mix: std::collections::BTreeMap<ModelKind, f64>,
}

fn is_default_model_mix(v: &std::collections::BTreeMap<ModelKind, f64>) -> bool {
    *v == default_model_mix()
}

fn default_model_mix() -> std::collections::BTreeMap<ModelKind, f64> {
    MODEL_MIX.into_iter().collect()
}

fn is_default_mean_workers(v: &f64) -> bool {
    *v == GeneratorConfig::default().mean_workers
}

fn is_default_worker_cpu_mix(v: &[[f64; 2]]) -> bool {
    v == pairs(&WORKER_CPU_MIX)
}

fn is_default_ps_cpu_mix(v: &[[f64; 2]]) -> bool {
    v == pairs(&PS_CPU_MIX)
}

/// A mix as the `[value, weight]` pairs a scenario writes.
fn pairs(mix: &[(f64, f64)]) -> Vec<[f64; 2]> {
    mix.iter().map(|&(v, w)| [v, w]).collect()
}

/// A `[value, weight]` mix: at least one entry, values in `lo..=hi`, weights finite and
/// non-negative with a positive sum.
fn check_mix(mix: &[[f64; 2]], lo: f64, hi: f64) -> Result<(), String> {
    if mix.is_empty() {
        return Err("needs at least one [value, weight] pair".into());
    }
    if let Some(v) = mix
        .iter()
        .map(|m| m[0])
        .find(|v| !(v.is_finite() && (lo..=hi).contains(v)))
    {
        return Err(format!("value {v} is outside [{lo}, {hi}]"));
    }
    check_weights(mix.iter().map(|m| m[1]))
}

/// A mix's weights: each finite and at least 0, with a positive sum.
fn check_weights(weights: impl Iterator<Item = f64> + Clone) -> Result<(), String> {
    if let Some(w) = weights.clone().find(|w| !(w.is_finite() && *w >= 0.0)) {
        return Err(format!("weight {w} must be finite and at least 0"));
    }
    if weights.sum::<f64>() <= 0.0 {
        return Err("needs a positive weight (the weights sum to 0)".into());
    }
    Ok(())
}

impl Default for GeneratorConfig {
    fn default() -> Self {
        GeneratorConfig {
            days: 1.0,
            jobs_per_day: 2_000.0,
            diurnal_amplitude: 0.6,
            peak_hour: 15.0,
            mean_steps: 249_000.0,
            gpu_job_fraction: 0.05,
            mem_overprovision_median: 5.5,
            ps_mem_overprovision_median: 6.0,
            mem_overprovision_sigma: 0.55,
            mem_underprovision_share: 0.06,
            users: 200,
            mean_workers: 8.0,
            seed: None,
            worker_cpu_mix: pairs(&WORKER_CPU_MIX),
            ps_cpu_mix: pairs(&PS_CPU_MIX),
            model_mix: default_model_mix(),
        }
    }
}

impl GeneratorConfig {
    /// Checks every knob's range (`crate::limits`), the expected number of jobs included,
    /// before anything is drawn. Returns the field (under `generate.`) and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        use crate::limits::*;
        let check = |field: &'static str, r: Result<(), String>| r.map_err(|m| (field, m));
        check(
            "generate.days",
            in_range(self.days, 0.0, MAX_TIME_S / DAY_S),
        )?;
        check(
            "generate.jobs_per_day",
            in_range(self.jobs_per_day, 0.0, MAX_PER_DAY),
        )?;
        check(
            "generate.diurnal_amplitude",
            in_range(self.diurnal_amplitude, 0.0, 1.0),
        )?;
        check("generate.peak_hour", in_range(self.peak_hour, 0.0, 24.0))?;
        check(
            "generate.mean_steps",
            in_range(self.mean_steps, 1.0, MAX_STEPS as f64),
        )?;
        check(
            "generate.gpu_job_fraction",
            in_range(self.gpu_job_fraction, 0.0, 1.0),
        )?;
        check(
            "generate.mem_overprovision_median",
            in_range(self.mem_overprovision_median, 0.01, 100.0),
        )?;
        check(
            "generate.ps_mem_overprovision_median",
            in_range(self.ps_mem_overprovision_median, 0.01, 100.0),
        )?;
        check(
            "generate.mem_overprovision_sigma",
            in_range(self.mem_overprovision_sigma, 0.0, MAX_SIGMA),
        )?;
        check(
            "generate.mem_underprovision_share",
            in_range(self.mem_underprovision_share, 0.0, 1.0),
        )?;
        check("generate.users", at_most(self.users.into(), MAX_JOBS))?;
        check(
            "generate.mean_workers",
            in_range(self.mean_workers, 1.0, 300.0),
        )?;
        // A pod's cores: at most the AntGroup-style clusters' node (64 cores), as its memory
        // is at most a node's (`MAX_POD_MEM_MB`).
        check(
            "generate.worker_cpu_mix",
            check_mix(&self.worker_cpu_mix, 0.5, 64.0),
        )?;
        check(
            "generate.ps_cpu_mix",
            check_mix(&self.ps_cpu_mix, 0.5, 64.0),
        )?;
        check(
            "generate.model_mix",
            check_weights(self.model_mix.values().copied()),
        )?;
        // Arrivals are drawn at the peak rate and thinned: bound what that draws.
        let expected = self.days * self.jobs_per_day * (1.0 + self.diurnal_amplitude);
        if expected > MAX_JOBS as f64 {
            return Err((
                "generate.jobs_per_day",
                format!(
                    "days x jobs_per_day x (1 + diurnal_amplitude) = {expected:e} jobs, over the limit of {MAX_JOBS}"
                ),
            ));
        }
        Ok(())
    }
}

/// Draws one trace from `seed` (or the config's own [`GeneratorConfig::seed`]). Jobs are
/// sorted by submission time and numbered from 0.
pub fn generate(cfg: &GeneratorConfig, seed: u64) -> Vec<JobSpec> {
    let mut rng = RngStreams::new(cfg.seed.unwrap_or(seed)).stream("trace-gen");
    let arrivals = arrival_times(cfg, &mut rng);
    let mixes = Mixes {
        model: cfg.model_mix.iter().map(|(&k, &w)| (k, w)).collect(),
        worker_cpu: mix_of(&cfg.worker_cpu_mix),
        ps_cpu: mix_of(&cfg.ps_cpu_mix),
    };
    arrivals
        .into_iter()
        .enumerate()
        .map(|(i, t)| draw_job(cfg, &mixes, i as u64, t, &mut rng))
        .collect()
}

/// The configuration's mixes as [`pick`] takes them, converted once per trace.
struct Mixes {
    model: Vec<(ModelKind, f64)>,
    worker_cpu: Vec<(f64, f64)>,
    ps_cpu: Vec<(f64, f64)>,
}

/// Non-homogeneous Poisson arrivals by thinning: rate(t) = base * (1 + A sin(...)).
fn arrival_times(cfg: &GeneratorConfig, rng: &mut impl Rng) -> Vec<u64> {
    let horizon_s = cfg.days * DAY_S;
    let base = cfg.jobs_per_day / DAY_S;
    let amp = cfg.diurnal_amplitude.clamp(0.0, 1.0);
    let max_rate = base * (1.0 + amp);
    if max_rate <= 0.0 || horizon_s <= 0.0 {
        return Vec::new();
    }
    let phase = (cfg.peak_hour / 24.0 - 0.25) * DAY_S;
    let mut out = Vec::new();
    let mut t = 0.0;
    loop {
        t += -rng.gen::<f64>().max(f64::MIN_POSITIVE).ln() / max_rate;
        if t >= horizon_s {
            break;
        }
        let rate = base * (1.0 + amp * (2.0 * std::f64::consts::PI * (t - phase) / DAY_S).sin());
        if rng.gen::<f64>() * max_rate <= rate {
            out.push(t as u64);
        }
    }
    out
}

fn lognormal_with_mean(rng: &mut impl Rng, mean: f64, sigma: f64) -> f64 {
    let mu = mean.ln() - sigma * sigma / 2.0;
    LogNormal::new(mu, sigma)
        .expect("valid lognormal")
        .sample(rng)
}

/// Model mix (the default of `generate.model_mix`): DLRover evaluates W&D and xDeepFM,
/// DLRover-RM adds DCN (Model-Z, Sec. 6's workloads, on Criteo); the mix in production is
/// not stated (assumption: half W&D, a quarter each of the others). Kept in the order of
/// `ModelKind`'s `Ord`, the order a scenario's map is drawn in.
pub const MODEL_MIX: [(ModelKind, f64); 3] = [
    (ModelKind::WideDeep, 0.5),
    (ModelKind::Xdeepfm, 0.25),
    (ModelKind::Dcn, 0.25),
];

/// Batch sizes are powers of two around 512, the papers' setting; the mix makes the mean
/// samples per job ~103M given 249k mean steps (DLRover Table 3's average dataset size,
/// read as the samples a job trains: one pass, an assumption).
pub const BATCH_SIZE_MIX: [(u32, f64); 3] = [(256, 0.5), (512, 0.4), (1024, 0.1)];

/// A user's cores per PS and how often each is asked for: most ask for 16-48, some for a
/// whole 64-core node, and 15% for 4 cores, the PS-CPU-starved tail (measured against
/// DLRover-RM's "before" figures, `traces/README.md`). Until 2026-11-27 4 / 8 / 16 / 24
/// cores at 20 / 40 / 30 / 10%, chosen when a PS served each lookup on one thread.
pub const PS_CPU_MIX: [(f64, f64); 5] = [
    (4.0, 0.15),
    (16.0, 0.2),
    (32.0, 0.35),
    (48.0, 0.2),
    (64.0, 0.1),
];

/// A user's cores per worker and how often each is asked for: generous sizes (DLRover Sec.
/// 1: over 80% of jobs use under half of their CPU); the sizes are an assumption, not
/// chosen for a level (`traces/README.md`).
pub const WORKER_CPU_MIX: [(f64, f64); 4] = [(4.0, 0.2), (8.0, 0.35), (16.0, 0.3), (32.0, 0.15)];

/// Embedding dimensions (assumption).
pub const EMB_DIM_MIX: [(u32, f64); 3] = [(8, 0.3), (16, 0.5), (32, 0.2)];

/// One of `choices` drawn with probability proportional to its weight.
pub fn pick<T: Copy>(rng: &mut impl Rng, choices: &[(T, f64)]) -> T {
    let total: f64 = choices.iter().map(|c| c.1).sum();
    let mut x = rng.gen::<f64>() * total;
    for &(v, w) in choices {
        if x < w {
            return v;
        }
        x -= w;
    }
    choices[choices.len() - 1].0
}

/// `[value, weight]` pairs as [`pick`] takes them.
fn mix_of(pairs: &[[f64; 2]]) -> Vec<(f64, f64)> {
    pairs.iter().map(|&[v, w]| (v, w)).collect()
}

fn draw_job(
    cfg: &GeneratorConfig,
    mixes: &Mixes,
    id: u64,
    submit_s: u64,
    rng: &mut impl Rng,
) -> JobSpec {
    let model = pick(rng, &mixes.model);
    let batch_size = pick(rng, &BATCH_SIZE_MIX);
    let steps = lognormal_with_mean(rng, cfg.mean_steps, 0.9).clamp(5_000.0, 5_000_000.0) as u64;
    // Dense parameters: mean ~4.5M (of the 34.5M-parameter average, DLRover Table 3; the
    // rest is embeddings). 4 bytes each.
    let dense_mb = (lognormal_with_mean(rng, 4.5e6, 0.8) * 4.0 / 1e6).max(0.5);
    let emb_dim = pick(rng, &EMB_DIM_MIX);
    // Embedding memory after all samples: ~30M parameters on average (34.5M - dense),
    // x4 bytes, x2 for Adagrad slots, heavy-tailed across jobs (assumption on the tail).
    let emb_mb_final = lognormal_with_mean(rng, 30e6 * 8.0 / 1e6, 1.3).clamp(10.0, 200_000.0);
    let total_msamples = steps as f64 * f64::from(batch_size) / 1e6;
    let emb_mb_initial = 0.1 * emb_mb_final;
    let emb_mb_per_msample = 0.9 * emb_mb_final / total_msamples;
    // Job size: "from a few pods to hundreds" (issue); `mean_workers` (8, assumption),
    // about one PS per four workers (DLRover Table 2 uses 24:8 and 8:2).
    let workers = lognormal_with_mean(rng, cfg.mean_workers, 0.9)
        .round()
        .clamp(1.0, 300.0) as u32;
    let ps = (f64::from(workers) / 4.0 * lognormal_with_mean(rng, 1.0, 0.4))
        .round()
        .clamp(1.0, 40.0) as u32;
    // Users pick generous CPU per pod (DLRover Sec. 1: over 80% of jobs use under half).
    let worker_cpu = pick(rng, &mixes.worker_cpu);
    // PS sizes: chosen for DLRover-RM's "before" PS figures together (`traces/README.md`):
    // CPU utilisation 13%, hot PS in 8% of jobs (Table 4) and PS-CPU-starved jobs 6%
    // (Sec. 6.3); assumption, the papers state no pod sizes.
    let ps_cpu = pick(rng, &mixes.ps_cpu);
    // What the user believes the pods need, then their safety factor.
    let worker_need_mb = 3_072.0 + dense_mb * 2.0;
    let ps_need_mb = 2_048.0 + (dense_mb * 3.0 + emb_mb_final) / f64::from(ps);
    let over = |rng: &mut _, median: f64| {
        let f: f64 = LogNormal::new(median.ln(), cfg.mem_overprovision_sigma)
            .expect("valid lognormal")
            .sample(rng);
        f.clamp(1.0, 32.0)
    };
    let worker_mem_mb =
        round_mb((worker_need_mb * over(rng, cfg.mem_overprovision_median)).min(MAX_POD_MEM_MB));
    let ps_factor = if rng.gen::<f64>() < cfg.mem_underprovision_share {
        rng.gen_range(0.6..1.0)
    } else {
        over(rng, cfg.ps_mem_overprovision_median)
    };
    let ps_mem_mb = round_mb((ps_need_mb * ps_factor).min(MAX_POD_MEM_MB));
    let gpu = rng.gen::<f64>() < cfg.gpu_job_fraction;
    let priority = if rng.gen::<f64>() < 0.1 { 1 } else { 0 };
    // Users follow a Zipf-like activity profile (assumption): a few submit most jobs.
    let user_rank = (Poisson::new(3.0).expect("valid").sample(rng) as u32 * 7
        + rng.gen_range(0..7))
        % cfg.users.max(1);
    JobSpec {
        id,
        submit_s,
        user: format!("u{user_rank:03}"),
        model,
        batch_size,
        steps,
        dense_mb: (dense_mb * 100.0).round() / 100.0,
        emb_dim,
        emb_mb_initial: (emb_mb_initial * 100.0).round() / 100.0,
        emb_mb_per_msample: (emb_mb_per_msample * 1e4).round() / 1e4,
        workers: if gpu { workers.div_ceil(4) } else { workers },
        ps,
        worker_cpu: if gpu { 8.0 } else { worker_cpu },
        worker_mem_mb,
        ps_cpu,
        ps_mem_mb,
        worker_gpu: u32::from(gpu),
        priority,
        synthesized: Vec::new(),
        observed: None,
    }
}

/// The most memory a user asks for one pod: a whole CPU node of the AntGroup-style
/// clusters (the quickstart's 64 cores and 256 GB). Over-provisioning stops there: a request
/// above it would fit no node of those clusters and the trace would be refused on load
/// (swarm seed 13002877 drew a 640 GB PS: 200 GB of embeddings on one PS, over-provisioned
/// 3x). Assumption: the papers state no pod sizes. The largest PS need the generator draws
/// (200 GB of embeddings on one PS) stays below it.
pub const MAX_POD_MEM_MB: f64 = 262_144.0;

/// Users ask for memory in round numbers: multiples of 512 MB.
fn round_mb(mb: f64) -> u64 {
    ((mb / 512.0).ceil() as u64).max(1) * 512
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cfg` is refused, naming `field`, with a message that says `why`.
    fn assert_refused(cfg: GeneratorConfig, field: &str, why: &str) {
        let (f, msg) = cfg.validate().unwrap_err();
        assert_eq!(f, field);
        assert!(msg.contains(why), "{msg}");
    }

    /// The pod-size mixes are knobs: a bad one names its field, and a different one changes
    /// the sizes drawn (and only them: counts, models and arrivals stay where they were).
    #[test]
    fn cpu_mixes_are_checked_and_drawn() {
        for (mix, why) in [
            (vec![], "at least one"),
            (vec![[100.0, 1.0]], "outside"),
            (vec![[8.0, -1.0]], "weight"),
            (vec![[8.0, 0.0]], "sum to 0"),
        ] {
            let cfg = GeneratorConfig {
                ps_cpu_mix: mix,
                ..GeneratorConfig::default()
            };
            assert_refused(cfg, "generate.ps_cpu_mix", why);
        }
        let base = GeneratorConfig {
            days: 0.2,
            ..GeneratorConfig::default()
        };
        let wide = GeneratorConfig {
            worker_cpu_mix: vec![[24.0, 1.0]],
            ..base.clone()
        };
        let (a, b) = (generate(&base, 4), generate(&wide, 4));
        assert_eq!(a.len(), b.len());
        assert!(b.iter().all(|j| j.worker_gpu > 0 || j.worker_cpu == 24.0));
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (x.workers, x.ps, x.model, x.submit_s),
                (y.workers, y.ps, y.model, y.submit_s)
            );
        }
    }

    /// `generate.model_mix` is checked, draws only the kinds it weights, and at its
    /// default draws what `MODEL_MIX` did.
    #[test]
    fn the_model_mix_is_checked_and_drawn() {
        use std::collections::BTreeMap;
        for (mix, why) in [
            (BTreeMap::new(), "positive weight"),
            (BTreeMap::from([(ModelKind::Dcn, -1.0)]), "at least 0"),
            (BTreeMap::from([(ModelKind::Dcn, f64::NAN)]), "finite"),
            (BTreeMap::from([(ModelKind::Dcn, 0.0)]), "positive weight"),
        ] {
            let cfg = GeneratorConfig {
                model_mix: mix,
                ..GeneratorConfig::default()
            };
            assert_refused(cfg, "generate.model_mix", why);
        }
        let base = GeneratorConfig {
            days: 0.2,
            ..GeneratorConfig::default()
        };
        let only = GeneratorConfig {
            model_mix: BTreeMap::from([(ModelKind::Xdeepfm, 1.0), (ModelKind::Dcn, 0.0)]),
            ..base.clone()
        };
        assert!(generate(&only, 4)
            .iter()
            .all(|j| j.model == ModelKind::Xdeepfm));
        let kinds: std::collections::BTreeSet<ModelKind> =
            generate(&base, 4).iter().map(|j| j.model).collect();
        assert_eq!(kinds.len(), 3, "the default draws every kind");
        // Written out, a default mix is left out of the header; another one is kept.
        let text = serde_json::to_string(&base).unwrap();
        assert!(!text.contains("model_mix"), "{text}");
        assert!(serde_json::to_string(&only).unwrap().contains("model_mix"));
    }

    #[test]
    fn same_seed_same_trace_and_sorted() {
        let cfg = GeneratorConfig {
            days: 0.5,
            ..GeneratorConfig::default()
        };
        let a = generate(&cfg, 9);
        let b = generate(&cfg, 9);
        assert_eq!(a, b);
        assert!(a.windows(2).all(|w| w[0].submit_s <= w[1].submit_s));
        assert_ne!(a, generate(&cfg, 10));
    }

    #[test]
    fn matches_published_job_profile() {
        let cfg = GeneratorConfig {
            days: 3.0,
            ..GeneratorConfig::default()
        };
        let jobs = generate(&cfg, 1);
        let n = jobs.len() as f64;
        assert!(
            (n - 6_000.0).abs() < 300.0,
            "about 2,000 jobs a day, got {n}"
        );
        let mean_steps = jobs.iter().map(|j| j.steps as f64).sum::<f64>() / n;
        assert!(
            (mean_steps - 249_000.0).abs() / 249_000.0 < 0.1,
            "mean steps {mean_steps}"
        );
        let mean_samples = jobs.iter().map(|j| j.total_samples()).sum::<f64>() / n;
        assert!(
            (mean_samples - 103e6).abs() / 103e6 < 0.2,
            "mean samples {mean_samples}"
        );
        for j in &jobs {
            j.validate().unwrap();
        }
    }

    #[test]
    fn arrivals_follow_the_daily_cycle() {
        let cfg = GeneratorConfig {
            days: 4.0,
            ..GeneratorConfig::default()
        };
        let jobs = generate(&cfg, 2);
        let by_hour = |h: u64| {
            jobs.iter()
                .filter(|j| (j.submit_s % 86_400) / 3_600 == h)
                .count()
        };
        assert!(
            by_hour(15) > 2 * by_hour(3),
            "peak {} vs trough {}",
            by_hour(15),
            by_hour(3)
        );
    }
}
