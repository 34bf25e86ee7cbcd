use dlsim_kernel::calibrate::{measure, GridPoint, Kind};
fn main() {
    let kind = Kind {
        name: "wide_deep".into(),
        hidden: vec![32, 16],
        emb_dim: 16,
        batch: 512,
    };
    for rep in 0..3 {
        for (w, p, lw, lp) in [
            (4, 2, 2, 1),
            (4, 1, 1, 2),
            (4, 2, 1, 1),
            (4, 1, 2, 2),
            (1, 1, 1, 1),
            (2, 1, 1, 1),
        ] {
            let pt = GridPoint {
                workers: w,
                ps: p,
                worker_threads: lw,
                ps_threads: lp,
                batch: 512,
                emb_dim: 16,
                iterations_per_worker: 16,
                heldout: false,
                heldout_shape: false,
            };
            let m = measure(&kind, &pt, 20000.0, 7).unwrap();
            println!(
                "rep {rep} {:?} grad {:.3} emb {:.3} upd {:.3} sync {:.3} ms",
                (w, p, lw, lp),
                m.parts.grad_s * 1e3,
                m.parts.emb_s * 1e3,
                m.parts.upd_s * 1e3,
                m.parts.sync_s * 1e3
            );
        }
    }
}
