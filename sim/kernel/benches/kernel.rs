//! Kernel micro-benchmarks: PS lookup and update paths (rows/s, samples/s), a local embedding
//! gather, and a STREAM-like copy so the gather rate can be read as a share of memory bandwidth.
//!
//! `memory/gather_table_3m_rows_d16` (and `gather_ps_*`, through the PS path) vs `memory/stream_copy_64mib` is the gather's share of
//! the machine's copy bandwidth (issue target: at least 25%).
//!
//! Run briefly: `cargo bench -p dlsim-kernel --features bench --bench kernel -- --warm-up-time 1 --measurement-time 3`.

use std::collections::HashMap;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use crossbeam_channel::unbounded;
use dlsim_kernel::data::{Dataset, SyntheticData, NUM_SPARSE};
use dlsim_kernel::plan::{feature_id, plan_lookup, stable_hash, unique_sorted, FeatureId};
use dlsim_kernel::ps::{Optimizer, PsCluster, PsMsg};
use dlsim_kernel::table::EmbeddingTable;
use rand::{Rng, SeedableRng};

const BATCH: usize = 256;
const DIM: usize = 16;

fn batch_ids() -> Vec<FeatureId> {
    let d = SyntheticData::standard(3, BATCH as u64, 8);
    (0..BATCH as u64).flat_map(|i| d.sample(i).sparse).collect()
}

fn lookup_all(ps: &PsCluster, ids: &[FeatureId]) -> usize {
    let plan = plan_lookup(ids, ps.num_ps(), true);
    let (tx, rx) = unbounded();
    for (tag, r) in plan.requests.iter().enumerate() {
        ps.send(
            r.ps,
            PsMsg::Lookup {
                tag,
                ids: r.ids.clone(),
                buf: Vec::new(),
                reply: tx.clone(),
            },
        );
    }
    (0..plan.requests.len())
        .map(|_| rx.recv().map_or(0, |r| r.rows.len()))
        .sum()
}

fn bench_ps(c: &mut Criterion) {
    let ids = batch_ids();
    let unique = unique_sorted(&ids);
    let ps = PsCluster::start(
        2,
        1,
        DIM + 1,
        &[0.0; 64],
        Optimizer::Adagrad {
            lr: 0.01,
            init_acc: 0.1,
        },
        1,
    );
    lookup_all(&ps, &ids); // create the rows first: measure the steady state
    let mut g = c.benchmark_group("ps");
    g.throughput(Throughput::Elements(unique.len() as u64));
    g.bench_function("lookup_rows_packed_2ps_d16", |b| {
        b.iter(|| black_box(lookup_all(&ps, &ids)))
    });
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("lookup_samples_packed_2ps_d16", |b| {
        b.iter(|| black_box(lookup_all(&ps, &ids)))
    });
    let grads = vec![0.01f32; unique.len() * (DIM + 1)];
    let plan = plan_lookup(&unique, 2, true);
    g.throughput(Throughput::Elements(unique.len() as u64));
    g.bench_function("update_rows_adagrad_2ps_d16", |b| {
        b.iter(|| {
            for r in &plan.requests {
                let n = r.ids.len() * (DIM + 1);
                ps.send(
                    r.ps,
                    PsMsg::Update {
                        ids: r.ids.clone(),
                        grads: grads[..n].to_vec(),
                    },
                );
            }
            ps.quiesce();
        })
    });
    g.finish();
}

fn bench_memory(c: &mut Criterion) {
    // Local gather: the pure memory part of an embedding lookup (hash probe + row copy).
    let ids = batch_ids();
    let table: HashMap<FeatureId, Vec<f32>> = unique_sorted(&ids)
        .into_iter()
        .map(|id| (id, vec![0.5; DIM + 1]))
        .collect();
    let mut out = vec![0.0f32; ids.len() * (DIM + 1)];
    let mut g = c.benchmark_group("memory");
    g.throughput(Throughput::Bytes((ids.len() * (DIM + 1) * 4) as u64));
    g.bench_function("gather_local_hashmap_d16", |b| {
        b.iter(|| {
            for (k, id) in ids.iter().enumerate() {
                if let Some(row) = table.get(id) {
                    out[k * (DIM + 1)..(k + 1) * (DIM + 1)].copy_from_slice(row);
                }
            }
            black_box(&out);
        })
    });
    // Gather from a table larger than the caches: 3M rows of D + 1 = 17 floats (204 MB of
    // values, as many of accumulators), Zipf(1.05)-drawn IDs as `scripts/bench-kernel-vs-torch.sh`
    // draws them. `gather_table_*` is the table's own gather into a reused buffer;
    // `gather_ps_*` the same requests through the PS path (channel, server thread, reply
    // allocation). Bytes counted are the rows gathered, once.
    let rows = 3_000_000u64;
    let opt = Optimizer::Adagrad {
        lr: 0.01,
        init_acc: 0.1,
    };
    let all: Vec<FeatureId> = (0..rows).map(|r| feature_id(0, r)).collect();
    let zipf = rand_distr::Zipf::new(rows, 1.05).expect("valid Zipf");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    // 300 requests of 13,312 IDs (one batch of 512 x 26 fields each), gathered in turn, so
    // the rows come from DRAM as in training rather than from a cache warmed by repeats.
    const REQ: usize = 13_312;
    let requests: Vec<Vec<FeatureId>> = (0..300)
        .map(|_| {
            (0..REQ)
                .map(|_| {
                    let rank = rng.sample(zipf) as u64 - 1;
                    feature_id(0, stable_hash(rank) % rows)
                })
                .collect()
        })
        .collect();
    g.throughput(Throughput::Bytes((REQ * (DIM + 1) * 4) as u64));
    g.sample_size(20);
    {
        let table = EmbeddingTable::new(DIM + 1, opt, 1);
        let mut out = vec![0.0f32; (1 << 20) * (DIM + 1)];
        for chunk in all.chunks(1 << 20) {
            table.gather(chunk, &mut out[..chunk.len() * (DIM + 1)]); // populate
        }
        let mut out = vec![0.0f32; REQ * (DIM + 1)];
        let mut next = 0;
        g.bench_function("gather_table_3m_rows_d16", |b| {
            b.iter(|| {
                table.gather(&requests[next % requests.len()], &mut out);
                next += 1;
                black_box(&out);
            })
        });
    }
    {
        let ps = PsCluster::start(1, 1, DIM + 1, &[0.0; 64], opt, 1);
        for chunk in all.chunks(1 << 20) {
            lookup_all(&ps, chunk);
        }
        let (tx, rx) = unbounded();
        let (mut next, mut buf, mut ids) = (0, Vec::new(), Vec::new());
        g.bench_function("gather_ps_3m_rows_d16", |b| {
            b.iter(|| {
                ids.clear();
                ids.extend_from_slice(&requests[next % requests.len()]);
                next += 1;
                let (reply, ids_now, buf_now) = (
                    tx.clone(),
                    std::mem::take(&mut ids),
                    std::mem::take(&mut buf),
                );
                ps.send(
                    0,
                    PsMsg::Lookup {
                        tag: 0,
                        ids: ids_now,
                        buf: buf_now,
                        reply,
                    },
                );
                if let Ok(r) = rx.recv() {
                    (ids, buf) = (r.ids, r.rows);
                }
                black_box(buf.len())
            })
        });
    }
    // STREAM "copy": bytes counted once read + once written, as STREAM does.
    let n = 8 << 20; // 64 MiB of f64
    let src = vec![1.0f64; n];
    let mut dst = vec![0.0f64; n];
    g.throughput(Throughput::Bytes((2 * n * 8) as u64));
    g.sample_size(10);
    g.bench_function("stream_copy_64mib", |b| {
        b.iter(|| {
            dst.copy_from_slice(&src);
            black_box(&dst);
        })
    });
    g.finish();
    let _ = NUM_SPARSE;
}

criterion_group!(benches, bench_ps, bench_memory);
criterion_main!(benches);
