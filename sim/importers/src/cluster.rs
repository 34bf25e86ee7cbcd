//! Cluster descriptions produced by an import: the node-list CSV the scenario's
//! `cluster.node_list` reads (`name,cores,mem_gb,gpus,gpu_model`), the check that a pod fits
//! some node, and the sizing rule for sources that publish no node list.
//!
//! Sizing rule (philly, dlrm2025, pai2020 without `--nodes`): pods are split into a CPU class
//! and a GPU class, each with a fixed node shape per format (widened to hold the largest pod).
//! Each job is assumed to hold its pods from submission for its real duration with no
//! queueing; the peak of the summed requests of a class over time (in cores, memory and
//! GPUs, whichever needs most nodes), plus 10% for fragmentation, gives the node count. The
//! replay then has about the capacity the real cluster needed to run the trace as recorded.

use dlsim_traces::JobSpec;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

/// One node of the cluster, in the units of the node-list CSV.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeRow {
    pub name: String,
    pub cores: f64,
    pub mem_gb: f64,
    pub gpus: u32,
    pub gpu_model: String,
}

impl NodeRow {
    /// Whether a pod with these requests fits on an empty node of this shape. Memory is
    /// compared in MB as the simulator does (`mem_gb x 1024`, rounded).
    pub fn holds(&self, cpu: f64, mem_mb: u64, gpus: u32) -> bool {
        let milli = |c: f64| (c * 1000.0).round() as u64;
        milli(cpu) <= milli(self.cores)
            && mem_mb <= (self.mem_gb * 1024.0).round() as u64
            && gpus <= self.gpus
    }
}

/// Whether every pod of the job fits some node; `Err` names the field that does not.
pub fn check_fits(nodes: &[NodeRow], s: &JobSpec) -> Result<(), &'static str> {
    if !nodes
        .iter()
        .any(|n| n.holds(s.worker_cpu, s.worker_mem_mb, s.worker_gpu))
    {
        return Err(if nodes.iter().all(|n| n.gpus < s.worker_gpu) {
            "worker_gpu"
        } else if nodes
            .iter()
            .all(|n| n.mem_gb * 1024.0 < s.worker_mem_mb as f64)
        {
            "worker_mem_mb"
        } else {
            "worker_cpu"
        });
    }
    if s.ps > 0 && !nodes.iter().any(|n| n.holds(s.ps_cpu, s.ps_mem_mb, 0)) {
        return Err(
            if nodes.iter().all(|n| n.mem_gb * 1024.0 < s.ps_mem_mb as f64) {
                "ps_mem_mb"
            } else {
                "ps_cpu"
            },
        );
    }
    Ok(())
}

/// A node shape for the sizing rule.
#[derive(Clone, Debug)]
pub struct NodeShape {
    pub prefix: &'static str,
    pub cores: f64,
    pub mem_gb: f64,
    pub gpus: u32,
    pub gpu_model: &'static str,
}

/// Sizes a cluster for `drafts` by the rule in the module docs: CPU pods go to `cpu`,
/// GPU pods to `gpu`. Returns the nodes and a one-line description.
pub fn size_cluster(jobs: &[JobSpec], cpu: &NodeShape, gpu: &NodeShape) -> (Vec<NodeRow>, String) {
    let mut nodes = Vec::new();
    let mut desc = String::from("synthesised by the peak-demand rule:");
    for (is_gpu, shape) in [(false, cpu), (true, gpu)] {
        // (time, +1 start / -1 end, cores, mem_gb, gpus) per pod group of a job.
        let mut events: Vec<(u64, i8, f64, f64, f64)> = Vec::new();
        let mut widest = shape.clone();
        for s in jobs {
            let mut groups = Vec::with_capacity(2);
            if (s.worker_gpu > 0) == is_gpu {
                groups.push((s.workers, s.worker_cpu, s.worker_mem_mb, s.worker_gpu));
            }
            if s.ps > 0 && !is_gpu {
                groups.push((s.ps, s.ps_cpu, s.ps_mem_mb, 0));
            }
            for (n, c, m, g) in groups {
                let n = f64::from(n);
                let mem_gb = m as f64 / 1024.0;
                widest.cores = widest.cores.max(c);
                widest.mem_gb = widest.mem_gb.max(mem_gb.ceil());
                widest.gpus = widest.gpus.max(g);
                let duration_s = s.observed.as_ref().and_then(|o| o.duration_s).unwrap_or(0);
                let end = s.submit_s + duration_s.max(1);
                let amount = (n * c, n * mem_gb, n * f64::from(g));
                events.push((s.submit_s, 1, amount.0, amount.1, amount.2));
                events.push((end, -1, amount.0, amount.1, amount.2));
            }
        }
        if events.is_empty() {
            continue;
        }
        // Ends before starts at the same second; ties otherwise in insertion order.
        events.sort_by_key(|e| (e.0, e.1));
        let (mut cur, mut peak) = ([0.0f64; 3], [0.0f64; 3]);
        for (_, sign, c, m, g) in events {
            let sign = f64::from(sign);
            for (k, v) in [c, m, g].into_iter().enumerate() {
                cur[k] += sign * v;
                peak[k] = peak[k].max(cur[k]);
            }
        }
        let need = [
            peak[0] / widest.cores,
            peak[1] / widest.mem_gb,
            if widest.gpus > 0 {
                peak[2] / f64::from(widest.gpus)
            } else {
                0.0
            },
        ];
        let count = ((need.iter().fold(0.0f64, |a, &b| a.max(b)) * 1.1).ceil() as usize).max(1);
        for i in 0..count {
            nodes.push(NodeRow {
                name: format!("{}-{i:05}", widest.prefix),
                cores: widest.cores,
                mem_gb: widest.mem_gb,
                gpus: widest.gpus,
                gpu_model: widest.gpu_model.to_string(),
            });
        }
        let _ = write!(
            desc,
            " {count} x {} ({} cores, {} GB, {} GPUs; peak demand {:.0} cores, {:.0} GB, {:.0} GPUs)",
            widest.prefix, widest.cores, widest.mem_gb, widest.gpus, peak[0], peak[1], peak[2]
        );
    }
    (nodes, desc)
}

/// One-line summary of a node list: counts by shape.
pub fn describe(nodes: &[NodeRow], source: &str) -> String {
    let cores: f64 = nodes.iter().map(|n| n.cores).sum();
    let gpus: u64 = nodes.iter().map(|n| u64::from(n.gpus)).sum();
    let gpu_nodes = nodes.iter().filter(|n| n.gpus > 0).count();
    format!(
        "{} nodes ({gpu_nodes} with GPUs; {cores:.0} cores, {gpus} GPUs) from {source}",
        nodes.len()
    )
}

/// Writes the node-list CSV atomically (`dlsim_fsio`).
pub fn write_node_list(path: &Path, nodes: &[NodeRow]) -> std::io::Result<()> {
    dlsim_fsio::write_atomic_with(path, |out| {
        writeln!(out, "name,cores,mem_gb,gpus,gpu_model")?;
        for n in nodes {
            writeln!(
                out,
                "{},{},{},{},{}",
                n.name, n.cores, n.mem_gb, n.gpus, n.gpu_model
            )?;
        }
        Ok(())
    })
}
