//! Stage 1: DLRover-RM's warm start (Alg. 1, Eq. 10). A config DB of completed jobs, filled
//! as the replay runs and optionally pre-loaded from a history file; a new job starts from
//! the exponentially smoothed configuration of its top-k most similar predecessors.
//!
//! The history file is a `jobs.csv` of an earlier run (`dlsim replay` writes one), or any
//! CSV with its columns `user, model, status, workers, ps, worker_cpu, worker_mem_mb,
//! worker_gpu, ps_cpu, ps_mem_mb, steps, batch_size, dense_mb, emb_dim`. Only rows with
//! status `completed` enter the DB, in file order, as a production job master's history
//! would: the configuration a job ended with is the one worth repeating.

use dlsim_model::policy::{JobConfig, JobView};
use dlsim_traces::ModelKind;
use std::collections::{HashMap, VecDeque};
use std::path::Path;

/// The top-k of Alg. 1.
const TOP_K: usize = 5;
/// The DB keeps the most recent entries.
const DB_LIMIT: usize = 5_000;

/// A completed job's metadata and final configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct DbEntry {
    pub model: ModelKind,
    pub user: String,
    pub samples: f64,
    pub dense_mb: f64,
    pub emb_dim: u32,
    pub config: JobConfig,
}

/// The DB, with each entry's user interned so that a lookup compares integers: a lookup
/// scans every entry (at most [`DB_LIMIT`]), once per submitted job.
#[derive(Clone, Debug, Default)]
pub struct ConfigDb {
    entries: VecDeque<DbEntry>,
    /// `user_ids[i]` is `entries[i].user`, interned.
    user_ids: VecDeque<u32>,
    users: HashMap<String, u32>,
}

impl ConfigDb {
    pub fn push(&mut self, e: DbEntry) {
        if self.entries.len() >= DB_LIMIT {
            self.entries.pop_front();
            self.user_ids.pop_front();
        }
        let next = self.users.len() as u32;
        self.user_ids
            .push_back(*self.users.entry(e.user.clone()).or_insert(next));
        self.entries.push_back(e);
    }

    /// Loads the completed jobs of a history CSV. Errors name the file, line and field.
    pub fn load(path: &Path) -> Result<ConfigDb, String> {
        let text = dlsim_fsio::read_to_string_limited(path, dlsim_fsio::MAX_INPUT_BYTES)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}:{e}", path.display()))
    }

    /// Parses a history CSV (see the module docs); errors are `line: field: problem`.
    pub fn parse(text: &str) -> Result<ConfigDb, String> {
        let mut lines = text.lines().enumerate();
        let header: Vec<&str> = match lines.next() {
            Some((_, h)) => h.split(',').map(str::trim).collect(),
            None => return Err("1: empty file, expected a jobs.csv header".into()),
        };
        const NEEDED: [&str; 14] = [
            "user",
            "model",
            "status",
            "workers",
            "ps",
            "worker_cpu",
            "worker_mem_mb",
            "worker_gpu",
            "ps_cpu",
            "ps_mem_mb",
            "steps",
            "batch_size",
            "dense_mb",
            "emb_dim",
        ];
        let mut col = [0usize; 14];
        for (k, name) in NEEDED.iter().enumerate() {
            col[k] = header
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| format!("1: {name}: missing column (a jobs.csv is expected)"))?;
        }
        let mut db = ConfigDb::default();
        for (i, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let row: Vec<&str> = line.split(',').map(str::trim).collect();
            let line_no = i + 1;
            let field = |k: usize| -> Result<&str, String> {
                row.get(col[k]).copied().ok_or_else(|| {
                    format!(
                        "{line_no}: {}: missing (row has {} fields)",
                        NEEDED[k],
                        row.len()
                    )
                })
            };
            if field(2)? != "completed" {
                continue;
            }
            let num = |k: usize| -> Result<f64, String> {
                let v = field(k)?;
                v.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| format!("{line_no}: {}: `{v}` is not a number >= 0", NEEDED[k]))
            };
            let model = ModelKind::ALL
                .into_iter()
                .find(|m| m.as_str() == field(1).unwrap_or_default())
                .ok_or_else(|| {
                    format!(
                        "{line_no}: model: `{}` is not one of wide_deep, xdeepfm, dcn",
                        field(1).unwrap_or_default()
                    )
                })?;
            let (workers, ps) = (num(3)? as u32, num(4)? as u32);
            if workers == 0 {
                return Err(format!(
                    "{line_no}: workers: a job needs at least one worker"
                ));
            }
            db.push(DbEntry {
                model,
                user: field(0)?.to_string(),
                samples: num(10)? * num(11)?,
                dense_mb: num(12)?,
                emb_dim: num(13)? as u32,
                config: JobConfig {
                    workers,
                    ps,
                    worker_cpu: num(5)?,
                    worker_mem_mb: num(6)? as u64,
                    worker_gpu: num(7)? as u32,
                    ps_cpu: num(8)?,
                    ps_mem_mb: num(9)? as u64,
                },
            });
        }
        Ok(db)
    }

    /// Alg. 1: the smoothed configuration of the top-k similar completed jobs, or `None`
    /// (cold start) when none has the job's model kind and architecture (with or without
    /// PS) on the same kind of worker (GPU or CPU): a CPU job's forty 5-core workers say
    /// nothing about how many GPUs a GPU job needs (until 2026-11-27 a GPU job took them,
    /// as GPU workers).
    pub fn warm_config(&self, job: &JobView<'_>, mu: f64) -> Option<JobConfig> {
        let r = job.request;
        let samples = r.steps as f64 * f64::from(r.batch_size);
        // exp(-|ln(a / b)|), the paper's closeness, is min(a, b) / max(a, b).
        let closeness = |a: f64, b: f64| {
            let (a, b) = (a.max(1e-9), b.max(1e-9));
            a.min(b) / a.max(b)
        };
        let user = self.users.get(&r.user).copied();
        let scored = self.entries.iter().enumerate().filter_map(|(i, e)| {
            if e.model != r.model
                || (e.config.ps == 0) != (r.requested.ps == 0)
                || (e.config.worker_gpu > 0) != (r.requested.worker_gpu > 0)
            {
                return None;
            }
            let s = f64::from(u8::from(Some(self.user_ids[i]) == user))
                + closeness(e.samples, samples)
                + closeness(e.dense_mb, r.dense_mb)
                + closeness(f64::from(e.emb_dim), f64::from(r.emb_dim));
            Some((s, i))
        });
        let top = top_k(scored, TOP_K);
        if top.is_empty() {
            return None;
        }
        let top: Vec<&JobConfig> = top.iter().map(|&(_, i)| &self.entries[i].config).collect();
        let v = |c: &JobConfig| {
            [
                f64::from(c.workers),
                f64::from(c.ps),
                c.worker_cpu,
                c.worker_mem_mb as f64,
                c.ps_cpu,
                c.ps_mem_mb as f64,
            ]
        };
        let mut acc = v(top[0]);
        for c in &top[1..] {
            let x = v(c);
            for k in 0..acc.len() {
                acc[k] = mu * x[k] + (1.0 - mu) * acc[k];
            }
        }
        let req = r.requested;
        let ps = if req.ps == 0 {
            0
        } else {
            (acc[1].round() as u32).max(1)
        };
        // Memory comes from the similar jobs' final (right-sized) configurations, above or
        // below the user's request (DLRover-RM Sec. 4.2: warm start from history); an
        // under-estimate is an OOM the post stage relaunches with doubled memory.
        Some(JobConfig {
            workers: (acc[0].round() as u32).max(1),
            ps,
            worker_cpu: (acc[2] * 2.0).round().max(1.0) / 2.0,
            worker_mem_mb: (acc[3] as u64).max(1_024),
            worker_gpu: req.worker_gpu,
            ps_cpu: (acc[4] * 2.0).round().max(1.0) / 2.0,
            ps_mem_mb: (acc[5] as u64).max(1_024),
        })
    }
}

/// The `k` largest `(score, index)` pairs, ascending (most similar last, ties to the
/// larger index, the more recent entry): what sorting them all and keeping the last `k`
/// gives, in one pass.
fn top_k(scored: impl Iterator<Item = (f64, usize)>, k: usize) -> Vec<(f64, usize)> {
    let better =
        |a: &(f64, usize), b: &(f64, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).is_gt();
    let mut top: Vec<(f64, usize)> = Vec::with_capacity(k + 1);
    for key in scored {
        if top.len() == k && !better(&key, &top[0]) {
            continue;
        }
        let at = top.partition_point(|t| better(&key, t));
        top.insert(at, key);
        if top.len() > k {
            top.remove(0);
        }
    }
    top
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "id,user,model,status,workers,ps,worker_cpu,worker_mem_mb,worker_gpu,ps_cpu,ps_mem_mb,steps,batch_size,dense_mb,emb_dim";

    #[test]
    fn top_k_is_the_tail_of_the_full_sort() {
        // Scores with many ties (a few distinct values), as similar jobs produce.
        let mut x: u64 = 7;
        let scores: Vec<(f64, usize)> = (0..500)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (f64::from((x >> 60) as u8) / 4.0, i)
            })
            .collect();
        for k in [1, 5, 17] {
            let mut sorted = scores.clone();
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let tail = sorted[sorted.len() - k..].to_vec();
            assert_eq!(top_k(scores.iter().copied(), k), tail, "k = {k}");
        }
        assert!(top_k(std::iter::empty(), 5).is_empty());
    }

    #[test]
    fn loads_completed_jobs_only() {
        let text = format!(
            "{HEADER}\n1,u1,wide_deep,completed,8,2,4,8192,0,8,16384,1000,512,40,16\n\
             2,u1,wide_deep,failed,1,1,1,1024,0,1,1024,1000,512,40,16\n"
        );
        let db = ConfigDb::parse(&text).unwrap();
        assert_eq!(db.entries.len(), 1);
        let e = &db.entries[0];
        assert_eq!(
            (e.model, e.config.workers, e.config.ps),
            (ModelKind::WideDeep, 8, 2)
        );
        assert_eq!(e.samples, 512_000.0);
    }

    #[test]
    fn errors_name_the_line_and_field() {
        let bad_num = format!("{HEADER}\n1,u1,dcn,completed,many,2,4,8192,0,8,16384,1,1,1,1\n");
        assert_eq!(
            ConfigDb::parse(&bad_num).unwrap_err(),
            "2: workers: `many` is not a number >= 0"
        );
        let bad_model = format!("{HEADER}\n1,u1,bert,completed,1,2,4,8192,0,8,16384,1,1,1,1\n");
        assert!(ConfigDb::parse(&bad_model)
            .unwrap_err()
            .starts_with("2: model: `bert`"));
        assert_eq!(
            ConfigDb::parse("id,user\n").unwrap_err(),
            "1: model: missing column (a jobs.csv is expected)"
        );
        let short = format!("{HEADER}\n1,u1,dcn,completed\n");
        assert!(ConfigDb::parse(&short)
            .unwrap_err()
            .starts_with("2: workers: missing"));
    }
}
