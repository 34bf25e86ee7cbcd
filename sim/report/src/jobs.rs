//! `jobs.parquet`: every job of every run of a sweep in one tidy table, so a notebook loads
//! a sweep's per-job results (JCT CDFs, per-job ratios) in one call.
//!
//! One row per job of each run, runs in grid order and jobs in `jobs.csv` order, with the
//! run's `run` id, `policy`, `group` (scenario parameters), each scenario parameter and
//! `seed` in front of `jobs.csv`'s own columns. A column that reads as numbers in one run
//! and as empty in another (e.g. `gpu_util` without GPUs) takes one type for all runs.
//! The Parquet metadata is that of every table (provenance and units).

use crate::aggregate::read_csv;
use crate::exec::run_dir;
use crate::results::RunResult;
use crate::sweep::scalar;
use crate::table::{atomic, metadata, write_parquet, Provenance};
use polars::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Writes `<out>/jobs.parquet` from the runs of a complete sweep; returns its path.
pub fn write_jobs(
    out: &Path,
    param_keys: &[String],
    runs: &[RunResult],
    provenance: &Provenance,
) -> anyhow::Result<PathBuf> {
    let mut frames = Vec::with_capacity(runs.len());
    for r in runs {
        let jobs = read_csv(&run_dir(out, &r.point).join("jobs.csv"))?;
        let n = jobs.height();
        let mut front = vec![
            Column::new("run".into(), vec![r.point.id.as_str(); n]),
            Column::new("policy".into(), vec![r.point.policy.as_str(); n]),
            Column::new("group".into(), vec![r.point.group(); n]),
        ];
        for k in param_keys {
            let v = r
                .point
                .scenario_params
                .get(k)
                .map(scalar)
                .unwrap_or_default();
            front.push(Column::new(k.as_str().into(), vec![v; n]));
        }
        front.push(Column::new("seed".into(), vec![r.point.seed as i64; n]));
        front.extend(jobs.get_columns().iter().cloned());
        frames.push(DataFrame::new(front)?);
    }
    let mut df = stack(frames)?;
    let columns: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|c| c.to_string())
        .collect();
    let meta = metadata(
        "jobs",
        "Every job of every run of the sweep",
        &columns,
        provenance,
        &BTreeMap::new(),
    );
    let path = out.join("jobs.parquet");
    atomic(&path, |f| write_parquet(f, &mut df, meta))?;
    Ok(path)
}

/// Stacks frames with the same columns, giving each column one type: its type where the
/// runs agree, Float64 where some runs read numbers and others nothing or integers, and
/// String otherwise.
fn stack(frames: Vec<DataFrame>) -> anyhow::Result<DataFrame> {
    let Some(first) = frames.first() else {
        return Ok(DataFrame::empty());
    };
    let mut types: Vec<DataType> = Vec::new();
    for col in first.get_columns() {
        let name = col.name();
        let mut seen: Vec<DataType> = Vec::new();
        for f in &frames {
            let t = f.column(name)?.dtype().clone();
            if t != DataType::Null && !seen.contains(&t) {
                seen.push(t);
            }
        }
        types.push(match seen.as_slice() {
            [] => DataType::String,
            [one] => one.clone(),
            many if many.iter().all(|t| t.is_primitive_numeric()) => DataType::Float64,
            _ => DataType::String,
        });
    }
    let mut out: Option<DataFrame> = None;
    for f in frames {
        let cast = f
            .get_columns()
            .iter()
            .zip(&types)
            .map(|(c, t)| c.cast(t))
            .collect::<PolarsResult<Vec<_>>>()?;
        let f = DataFrame::new(cast)?;
        match &mut out {
            None => out = Some(f),
            Some(o) => {
                o.vstack_mut(&f)?;
            }
        }
    }
    Ok(out.expect("at least one frame"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_that_differ_in_type_across_runs_get_one_type() {
        let a = df!("id" => [1i64, 2], "gpu_util" => [None::<f64>, None], "reason" => ["", "oom"])
            .unwrap();
        let b = df!("id" => [3i64], "gpu_util" => [Some(0.5)], "reason" => [""]).unwrap();
        let c = df!("id" => [4.5f64], "gpu_util" => [Some(0.25)], "reason" => ["x"]).unwrap();
        let s = stack(vec![a, b, c]).unwrap();
        assert_eq!(s.height(), 4);
        assert_eq!(s.column("id").unwrap().dtype(), &DataType::Float64);
        assert_eq!(s.column("gpu_util").unwrap().dtype(), &DataType::Float64);
        assert_eq!(s.column("gpu_util").unwrap().null_count(), 2);
        assert_eq!(s.column("reason").unwrap().dtype(), &DataType::String);
    }
}
