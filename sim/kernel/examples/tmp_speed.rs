use dlsim_kernel::criteo::CriteoData;
use dlsim_kernel::data::{Dataset, SyntheticData};
use dlsim_kernel::model::ModelSpec;
use dlsim_kernel::train::{train, TrainConfig};
fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let (batch, threads, dim) = (args[0], args[1], args.get(2).copied().unwrap_or(8));
    let n = 65_536u64;
    let syn = SyntheticData::standard(1, n, 8);
    let data = CriteoData {
        samples: (0..n).map(|i| syn.sample(i)).collect(),
    };
    let mut cfg = TrainConfig::small(1, threads);
    cfg.worker_threads = threads;
    cfg.ps_threads = 1;
    cfg.batch = batch;
    cfg.spec = ModelSpec {
        emb_dim: dim,
        hidden: vec![32, 16],
    };
    cfg.shard_batches = 1_000_000 / batch;
    for _ in 0..3 {
        let r = train(&cfg, &data, None).unwrap();
        println!(
            "batch {batch} threads {threads}: {:.0} samples/s, loss {:.4}",
            r.wall_samples_per_s, r.epochs[0].train_logloss
        );
    }
}
