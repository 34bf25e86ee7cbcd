//! A small Wide&Deep model: embeddings -> MLP (deep part) plus a linear wide part.
//!
//! Every embedding row has `D + 1` floats: `D` for the deep part and one wide (linear)
//! weight, so a single lookup serves both parts. The dense parameters (MLP layers, the wide
//! weights of the 13 dense features) are one flat `Vec<f32>` sharded over the PSes by
//! [`crate::plan::dense_range`]. Weights are stored input-major (`W[i][o]`, a row-major
//! `i x o` matrix). A chunk of samples runs batch-major: its inputs form a `B x i` matrix and
//! each layer is one GEMM forward and two backward (`matrixmultiply`'s packed SIMD kernels),
//! into buffers ([`Scratch`]) reused across steps. Gradients are exact (checked against finite
//! differences in the tests).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::data::{Sample, NUM_DENSE, NUM_SPARSE};
use crate::index::copy_row;

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

    /// Multiply-adds of the MLP per sample (forward pass).
    pub fn mlp_macs(&self) -> usize {
        self.layers().iter().map(|(i, o)| i * o).sum()
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

/// Rows of one sample: `rows[f]` is field `f`'s embedding row.
pub type SampleRows<'a> = [&'a [f32]; NUM_SPARSE];

/// A row-major matrix view for [`gemm`]: `rows x cols`, element `(r, c)` at `r * rs + c * cs`.
#[derive(Clone, Copy)]
struct View {
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

impl View {
    fn row_major(rows: usize, cols: usize) -> Self {
        View {
            rows,
            cols,
            rs: cols,
            cs: 1,
        }
    }

    fn t(self) -> Self {
        View {
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
        }
    }

    fn span(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            0
        } else {
            (self.rows - 1) * self.rs + (self.cols - 1) * self.cs + 1
        }
    }
}

/// `c = a b + beta c` on the packed, cache-blocked SIMD kernels of `matrixmultiply`.
fn gemm(a: &[f32], av: View, b: &[f32], bv: View, beta: f32, c: &mut [f32], cv: View) {
    assert!(av.cols == bv.rows && av.rows == cv.rows && bv.cols == cv.cols);
    assert!(a.len() >= av.span() && b.len() >= bv.span() && c.len() >= cv.span());
    assert!(cv.rs >= cv.cols && cv.cs == 1, "c must be row-major");
    let s = |x: usize| x as isize;
    // SAFETY: the asserts above check that every element the views address lies inside its
    // slice (`span`), that the shapes agree, and that `c` is laid out without overlapping
    // elements; `c` is borrowed mutably, so it aliases neither `a` nor `b`.
    unsafe {
        matrixmultiply::sgemm(
            av.rows,
            av.cols,
            bv.cols,
            1.0,
            a.as_ptr(),
            s(av.rs),
            s(av.cs),
            b.as_ptr(),
            s(bv.rs),
            s(bv.cs),
            beta,
            c.as_mut_ptr(),
            s(cv.rs),
            s(cv.cs),
        );
    }
}

/// Buffers of one chunk's forward and backward pass, reused across batches so that a
/// training step allocates nothing once warm. Layouts are batch-major (`samples x width`).
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    /// `acts[0]` is the input (`B x input_dim`), `acts[l + 1]` the output of hidden layer `l`.
    acts: Vec<Vec<f32>>,
    /// Gradient with respect to the current layer's pre-activation and input.
    dz: Vec<f32>,
    da: Vec<f32>,
    logits: Vec<f32>,
}

fn layer_offsets(spec: &ModelSpec) -> Vec<(usize, usize, usize)> {
    let mut off = 0;
    spec.layers()
        .into_iter()
        .map(|(i, o)| {
            let start = off;
            off += i * o + o;
            (i, o, start)
        })
        .collect()
}

/// Forward pass of `n` samples into `sc` (activations and logits).
fn forward_batch<'a>(
    spec: &ModelSpec,
    layers: &[(usize, usize, usize)],
    params: &[f32],
    samples: &[Sample],
    rows_of: &impl Fn(usize) -> SampleRows<'a>,
    sc: &mut Scratch,
) {
    let (n, d) = (samples.len(), spec.emb_dim);
    sc.acts.resize_with(layers.len(), Vec::new);
    let width = spec.input_dim();
    let input = &mut sc.acts[0];
    input.resize(n * width, 0.0);
    for (k, (s, x)) in samples
        .iter()
        .zip(input.chunks_exact_mut(width))
        .enumerate()
    {
        for (r, dst) in rows_of(k).iter().zip(x.chunks_exact_mut(d)) {
            copy_row(dst, &r[..d]);
        }
        copy_row(&mut x[NUM_SPARSE * d..], &s.dense);
    }
    let last = layers.len() - 1;
    for (l, &(i, o, off)) in layers[..last].iter().enumerate() {
        let (w, b) = (
            &params[off..off + i * o],
            &params[off + i * o..off + i * o + o],
        );
        let (head, tail) = sc.acts.split_at_mut(l + 1);
        let (x, z) = (&head[l], &mut tail[0]);
        z.clear();
        for _ in 0..n {
            z.extend_from_slice(b);
        }
        gemm(
            x,
            View::row_major(n, i),
            w,
            View::row_major(i, o),
            1.0,
            z,
            View::row_major(n, o),
        );
        z.iter_mut().for_each(|v| *v = v.max(0.0));
    }
    let (i, _, off) = layers[last];
    let (w, b) = (&params[off..off + i], params[off + i]);
    let wide_dense = &params[params.len() - NUM_DENSE..];
    let x = &sc.acts[last];
    sc.logits.clear();
    sc.logits.extend(samples.iter().enumerate().map(|(k, s)| {
        let wide = rows_of(k).iter().map(|r| r[d]).sum::<f32>() + dot(&s.dense, wide_dense);
        dot(&x[k * i..(k + 1) * i], w) + b + wide
    }));
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Predicted click probability of `s`.
pub fn predict(spec: &ModelSpec, params: &[f32], s: &Sample, rows: &SampleRows) -> f32 {
    let mut sc = Scratch::default();
    let layers = layer_offsets(spec);
    forward_batch(
        spec,
        &layers,
        params,
        std::slice::from_ref(s),
        &|_| *rows,
        &mut sc,
    );
    sigmoid(sc.logits[0])
}

/// Forward and backward over `samples` (allocating form of [`forward_backward_into`]).
pub fn forward_backward<'a>(
    spec: &ModelSpec,
    params: &[f32],
    samples: &[Sample],
    rows_of: impl Fn(usize) -> SampleRows<'a>,
) -> ChunkGrad {
    let mut g = ChunkGrad {
        loss_sum: 0.0,
        dense: vec![0.0; params.len()],
        sparse: vec![0.0; samples.len() * NUM_SPARSE * spec.row_len()],
    };
    g.loss_sum = forward_backward_into(
        spec,
        params,
        samples,
        rows_of,
        &mut Scratch::default(),
        &mut g.dense,
        &mut g.sparse,
    );
    g
}

/// Forward and backward over `samples`, batch-major on GEMMs; `rows_of(k)` gives sample
/// `k`'s embedding rows. Adds the summed dense gradient to `dense` (the caller zeroes it),
/// writes each (sample, field) row gradient to `sparse` (`row_len` floats each, overwritten)
/// and returns the summed log loss.
pub fn forward_backward_into<'a>(
    spec: &ModelSpec,
    params: &[f32],
    samples: &[Sample],
    rows_of: impl Fn(usize) -> SampleRows<'a>,
    sc: &mut Scratch,
    dense: &mut [f32],
    sparse: &mut [f32],
) -> f64 {
    let (n, d, rl) = (samples.len(), spec.emb_dim, spec.row_len());
    assert_eq!(dense.len(), params.len(), "dense gradient length");
    assert_eq!(sparse.len(), n * NUM_SPARSE * rl, "sparse gradient length");
    if n == 0 {
        return 0.0;
    }
    let layers = layer_offsets(spec);
    forward_batch(spec, &layers, params, samples, &rows_of, sc);
    let last = layers.len() - 1;
    let mut loss_sum = 0.0f64;
    // dz of the output layer: dlogit per sample.
    sc.dz.clear();
    for (s, &logit) in samples.iter().zip(&sc.logits) {
        let p = sigmoid(logit);
        loss_sum += f64::from(-if s.label > 0.5 {
            p.max(1e-7).ln()
        } else {
            (1.0 - p).max(1e-7).ln()
        });
        sc.dz.push(p - s.label);
    }
    // Wide part: every field's wide weight gets dlogit; the dense wide weights get dlogit x.
    let wide_off = params.len() - NUM_DENSE;
    for (k, s) in samples.iter().enumerate() {
        let g = sc.dz[k];
        for fld in 0..NUM_SPARSE {
            sparse[(k * NUM_SPARSE + fld) * rl + d] = g;
        }
        for (acc, x) in dense[wide_off..].iter_mut().zip(&s.dense) {
            *acc += g * x;
        }
    }
    // Output layer (i -> 1): gW += A^T dz, gb += sum dz, dA = dz W^T.
    let (i, _, off) = layers[last];
    {
        let a = &sc.acts[last];
        let gw = &mut dense[off..off + i];
        for (k, &g) in sc.dz.iter().enumerate() {
            for (acc, x) in gw.iter_mut().zip(&a[k * i..(k + 1) * i]) {
                *acc += g * x;
            }
        }
        dense[off + i] += sc.dz.iter().sum::<f32>();
        let w = &params[off..off + i];
        sc.da.clear();
        for &g in &sc.dz {
            sc.da.extend(w.iter().map(|x| g * x));
        }
    }
    // Hidden layers, last first: dz = dA masked by ReLU, then gradients and dA of the input.
    for l in (0..last).rev() {
        let (i, o, off) = layers[l];
        let out = &sc.acts[l + 1];
        std::mem::swap(&mut sc.dz, &mut sc.da);
        for (g, a) in sc.dz.iter_mut().zip(out) {
            if *a <= 0.0 {
                *g = 0.0;
            }
        }
        let a = &sc.acts[l];
        gemm(
            a,
            View::row_major(n, i).t(),
            &sc.dz,
            View::row_major(n, o),
            1.0,
            &mut dense[off..off + i * o],
            View::row_major(i, o),
        );
        for row in sc.dz.chunks_exact(o) {
            for (acc, g) in dense[off + i * o..off + i * o + o].iter_mut().zip(row) {
                *acc += g;
            }
        }
        sc.da.resize(n * i, 0.0);
        gemm(
            &sc.dz,
            View::row_major(n, o),
            &params[off..off + i * o],
            View::row_major(i, o).t(),
            0.0,
            &mut sc.da,
            View::row_major(n, i),
        );
    }
    // The input's gradient: each field's D columns go to that (sample, field) row.
    let width = spec.input_dim();
    for k in 0..n {
        let da = &sc.da[k * width..(k + 1) * width];
        for fld in 0..NUM_SPARSE {
            let dst = (k * NUM_SPARSE + fld) * rl;
            copy_row(&mut sparse[dst..dst + d], &da[fld * d..(fld + 1) * d]);
        }
    }
    loss_sum
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
