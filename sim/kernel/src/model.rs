//! A small Wide&Deep model: embeddings -> MLP (deep part) plus a linear wide part.
//!
//! Every embedding row has `D + 1` floats: `D` for the deep part and one wide (linear)
//! weight, so a single lookup serves both parts. The dense parameters (MLP layers, the wide
//! weights of the 13 dense features) are one flat `Vec<f32>` sharded over the PSes by
//! [`crate::plan::dense_range`]. Weights are stored input-major (`W[i][o]`), so the forward
//! pass is a run of `axpy`s and the backward pass a run of dots, both over contiguous memory.
//! Per-sample gradients are exact (checked against finite differences in the tests).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::data::{Sample, NUM_DENSE, NUM_SPARSE};

/// Shape of the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Embedding dimension `D`.
    pub emb_dim: usize,
    /// Widths of the hidden layers of the deep part.
    pub hidden: Vec<usize>,
}

impl ModelSpec {
    /// Floats per embedding row (`D` deep + 1 wide).
    pub fn row_len(&self) -> usize {
        self.emb_dim + 1
    }

    /// Width of the deep part's input.
    pub fn input_dim(&self) -> usize {
        NUM_SPARSE * self.emb_dim + NUM_DENSE
    }

    /// `(inputs, outputs)` of each layer, the last one producing the deep logit.
    fn layers(&self) -> Vec<(usize, usize)> {
        let mut dims = vec![self.input_dim()];
        dims.extend(&self.hidden);
        dims.push(1);
        dims.windows(2).map(|w| (w[0], w[1])).collect()
    }

    /// Length of the flat dense parameter vector.
    pub fn num_dense_params(&self) -> usize {
        self.layers().iter().map(|(i, o)| i * o + o).sum::<usize>() + NUM_DENSE
    }

    /// Dense model size `M` in MB (f32 parameters).
    pub fn model_mb(&self) -> f64 {
        self.num_dense_params() as f64 * 4.0 / 1e6
    }

    /// He-initialised dense parameters (biases and wide weights start at 0).
    pub fn init_dense(&self, seed: u64) -> Vec<f32> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut out = Vec::with_capacity(self.num_dense_params());
        for (i, o) in self.layers() {
            let bound = (6.0 / i as f32).sqrt();
            out.extend((0..i * o).map(|_| rng.gen_range(-bound..bound)));
            out.extend(std::iter::repeat_n(0.0, o));
        }
        out.extend(std::iter::repeat_n(0.0, NUM_DENSE));
        out
    }
}

/// Gradients of one chunk of a batch (sums over its samples).
#[derive(Debug, Clone, Default)]
pub struct ChunkGrad {
    /// Sum of the per-sample log losses.
    pub loss_sum: f64,
    /// Gradient of the dense parameters.
    pub dense: Vec<f32>,
    /// Per (sample, field) gradient of its embedding row, `row_len` floats each.
    pub sparse: Vec<f32>,
}

/// `a · b` with independent accumulators, which the compiler vectorises.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    acc.iter().sum::<f32>() + tail
}

fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

/// Rows of one sample: `rows[f]` is field `f`'s embedding row.
pub type SampleRows<'a> = [&'a [f32]; NUM_SPARSE];

struct Forward {
    /// Activations: `acts[0]` is the input, `acts[l+1]` the output of hidden layer `l`.
    acts: Vec<Vec<f32>>,
    logit: f32,
}

fn forward(spec: &ModelSpec, params: &[f32], s: &Sample, rows: &SampleRows) -> Forward {
    let d = spec.emb_dim;
    let mut x = Vec::with_capacity(spec.input_dim());
    for r in rows {
        x.extend_from_slice(&r[..d]);
    }
    x.extend_from_slice(&s.dense);
    let mut acts = vec![x];
    let mut off = 0;
    let layers = spec.layers();
    let mut deep = 0.0;
    for (l, &(i, o)) in layers.iter().enumerate() {
        let (w, b) = (
            &params[off..off + i * o],
            &params[off + i * o..off + i * o + o],
        );
        off += i * o + o;
        let input = &acts[l];
        if l + 1 == layers.len() {
            deep = dot(input, w) + b[0];
        } else {
            let mut z = b.to_vec();
            for (k, &xk) in input.iter().enumerate() {
                if xk != 0.0 {
                    axpy(xk, &w[k * o..(k + 1) * o], &mut z);
                }
            }
            z.iter_mut().for_each(|v| *v = v.max(0.0));
            acts.push(z);
        }
    }
    let wide_dense = &params[off..off + NUM_DENSE];
    let wide = rows.iter().map(|r| r[d]).sum::<f32>() + dot(&s.dense, wide_dense);
    Forward {
        acts,
        logit: deep + wide,
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Predicted click probability of `s`.
pub fn predict(spec: &ModelSpec, params: &[f32], s: &Sample, rows: &SampleRows) -> f32 {
    sigmoid(forward(spec, params, s, rows).logit)
}

/// Forward and backward over `samples`; `rows_of(k)` gives sample `k`'s embedding rows.
pub fn forward_backward<'a>(
    spec: &ModelSpec,
    params: &[f32],
    samples: &[Sample],
    rows_of: impl Fn(usize) -> SampleRows<'a>,
) -> ChunkGrad {
    let (d, rl) = (spec.emb_dim, spec.row_len());
    let layers = spec.layers();
    let mut g = ChunkGrad {
        loss_sum: 0.0,
        dense: vec![0.0; params.len()],
        sparse: vec![0.0; samples.len() * NUM_SPARSE * rl],
    };
    let offsets: Vec<usize> = layers
        .iter()
        .scan(0, |off, &(i, o)| {
            let start = *off;
            *off += i * o + o;
            Some(start)
        })
        .collect();
    let wide_off = params.len() - NUM_DENSE;
    for (k, s) in samples.iter().enumerate() {
        let rows = rows_of(k);
        let f = forward(spec, params, s, &rows);
        let p = sigmoid(f.logit);
        g.loss_sum += f64::from(-if s.label > 0.5 {
            p.max(1e-7).ln()
        } else {
            (1.0 - p).max(1e-7).ln()
        });
        let dlogit = p - s.label;
        // Wide part.
        let sg = &mut g.sparse[k * NUM_SPARSE * rl..(k + 1) * NUM_SPARSE * rl];
        for fld in 0..NUM_SPARSE {
            sg[fld * rl + d] = dlogit;
        }
        axpy(
            dlogit,
            &s.dense,
            &mut g.dense[wide_off..wide_off + NUM_DENSE],
        );
        // Deep part, last layer first.
        let mut da = vec![dlogit];
        for l in (0..layers.len()).rev() {
            let (i, o) = layers[l];
            let off = offsets[l];
            let a_prev = &f.acts[l];
            let dz: Vec<f32> = if l + 1 == layers.len() {
                da.clone()
            } else {
                da.iter()
                    .zip(&f.acts[l + 1])
                    .map(|(g, a)| if *a > 0.0 { *g } else { 0.0 })
                    .collect()
            };
            let w = &params[off..off + i * o];
            let mut da_prev = vec![0.0f32; i];
            for (r, &ar) in a_prev.iter().enumerate() {
                let wr = &w[r * o..(r + 1) * o];
                da_prev[r] = dot(wr, &dz);
                if ar != 0.0 {
                    axpy(ar, &dz, &mut g.dense[off + r * o..off + (r + 1) * o]);
                }
            }
            axpy(1.0, &dz, &mut g.dense[off + i * o..off + i * o + o]);
            da = da_prev;
        }
        for fld in 0..NUM_SPARSE {
            sg[fld * rl..fld * rl + d].copy_from_slice(&da[fld * d..(fld + 1) * d]);
        }
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Dataset, SyntheticData};

    fn setup() -> (ModelSpec, Vec<f32>, Sample, Vec<Vec<f32>>) {
        let spec = ModelSpec {
            emb_dim: 3,
            hidden: vec![5, 4],
        };
        let mut params = spec.init_dense(1);
        let n = params.len();
        for (k, p) in params.iter_mut().enumerate().skip(n - 20) {
            *p = 0.01 * k as f32 % 0.3; // non-zero biases and wide weights
        }
        let s = SyntheticData::standard(1, 10, 1).sample(3);
        let rows = (0..NUM_SPARSE)
            .map(|f| (0..4).map(|j| ((f * 4 + j) as f32 * 0.37).sin()).collect())
            .collect();
        (spec, params, s, rows)
    }

    fn loss(spec: &ModelSpec, params: &[f32], s: &Sample, rows: &[Vec<f32>]) -> f64 {
        let r: SampleRows = std::array::from_fn(|f| rows[f].as_slice());
        let p = f64::from(predict(spec, params, s, &r));
        if s.label > 0.5 {
            -p.ln()
        } else {
            -(1.0 - p).ln()
        }
    }

    #[test]
    fn gradients_match_finite_differences() {
        let (spec, params, s, rows) = setup();
        let g = forward_backward(&spec, &params, std::slice::from_ref(&s), |_| {
            std::array::from_fn(|f| rows[f].as_slice())
        });
        let eps = 1e-2f32;
        for k in (0..params.len()).step_by(7) {
            let (mut up, mut dn) = (params.clone(), params.clone());
            up[k] += eps;
            dn[k] -= eps;
            let num = (loss(&spec, &up, &s, &rows) - loss(&spec, &dn, &s, &rows))
                / (2.0 * f64::from(eps));
            assert!(
                (num - f64::from(g.dense[k])).abs() < 2e-3,
                "dense {k}: {num} vs {}",
                g.dense[k]
            );
        }
        for (f, j) in [(0, 0), (5, 2), (25, 3), (13, 1)] {
            let (mut up, mut dn) = (rows.clone(), rows.clone());
            up[f][j] += eps;
            dn[f][j] -= eps;
            let num = (loss(&spec, &params, &s, &up) - loss(&spec, &params, &s, &dn))
                / (2.0 * f64::from(eps));
            let an = g.sparse[f * spec.row_len() + j];
            assert!(
                (num - f64::from(an)).abs() < 2e-3,
                "row {f},{j}: {num} vs {an}"
            );
        }
    }

    #[test]
    fn dense_size_counts_every_layer() {
        let spec = ModelSpec {
            emb_dim: 2,
            hidden: vec![4],
        };
        let input = NUM_SPARSE * 2 + NUM_DENSE;
        assert_eq!(spec.num_dense_params(), input * 4 + 4 + 4 + 1 + NUM_DENSE);
        assert_eq!(spec.init_dense(0).len(), spec.num_dense_params());
    }
}
