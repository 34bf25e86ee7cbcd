#!/usr/bin/env python3
"""The kernel's Wide&Deep model in CPU PyTorch: the peer of `sim/kernel/examples/peer.rs`.

Subcommands (each prints one JSON line, like the Rust side):

* ``train --data DIR --batch B --threads T``: trains on the samples that ``peer export``
  wrote, starting from the same initial dense vector and embedding rows, with
  ``torch.optim.Adagrad`` (sparse embedding gradients, ``initial_accumulator_value`` =
  init_acc, eps=1e-10, no lr decay, no weight decay). Same batches in the same order as the
  kernel with one worker, so with one thread the losses agree with the kernel's to float
  rounding.
* ``gather --ids FILE``: ``index_select`` on a rows x (D+1) float32 table with the row
  indices the Rust ``gather`` wrote, plus torch and numpy copy bandwidths.

Model (as in ``sim/kernel/src/model.rs``): every embedding row has D + 1 floats, D deep and
one wide weight. Deep input = the 26 rows' first D floats, then the 13 dense features; MLP
with ReLU hidden layers and one output (the deep logit). The Rust flat dense vector stores
each layer input-major (W[i][o], then the bias) and ends with the 13 wide weights of the
dense features; nn.Linear wants W[o][i], so the blocks are transposed.
logit = deep + sum_f row_f[D] + dense . wide_dense; loss = mean log loss.

Threads: ``torch.set_num_threads(T)``. Run with ``OMP_WAIT_POLICY=PASSIVE`` (the bench script
sets it) so idle OpenMP threads sleep instead of spinning on the 2-core machine, which
would otherwise steal the core from the other process or thread.
"""

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# torch.optim.Adagrad builds sparse tensors internally and warns about skipped checks.
warnings.filterwarnings("ignore", message="Sparse invariant checks")

NUM_DENSE = 13
NUM_SPARSE = 26


def load(data_dir):
    """Reads an export folder; maps feature IDs to table rows once (not timed)."""
    with open(os.path.join(data_dir, "meta.json")) as f:
        meta = json.load(f)

    def arr(name, dtype):
        return np.fromfile(os.path.join(data_dir, name), dtype=dtype)

    n = meta["samples"]
    row_len = meta["row_len"]
    dense = arr("dense.f32", "<f4").reshape(n, NUM_DENSE)
    label = arr("label.f32", "<f4")
    sparse = arr("sparse.u64", "<u8").reshape(n, NUM_SPARSE)
    dense_init = arr("dense_init.f32", "<f4")
    emb_ids = arr("emb_ids.u64", "<u8")
    emb_init = arr("emb_init.f32", "<f4").reshape(len(emb_ids), row_len)
    # ID -> row: emb_ids is sorted and unique, so a vectorised binary search is the dict.
    idx = np.searchsorted(emb_ids, sparse)
    if not np.array_equal(emb_ids[np.minimum(idx, len(emb_ids) - 1)], sparse):
        sys.exit("error: a sample's ID has no initial row in emb_ids.u64")
    return meta, dense, label, idx.astype(np.int64), dense_init, emb_init


class WideDeep(nn.Module):
    def __init__(self, emb_dim, hidden, dense_init, emb_init):
        super().__init__()
        self.d = emb_dim
        self.emb = nn.Embedding.from_pretrained(
            torch.from_numpy(emb_init.copy()), freeze=False, sparse=True
        )
        dims = [NUM_SPARSE * emb_dim + NUM_DENSE, *hidden, 1]
        self.layers = nn.ModuleList()
        off = 0
        for i, o in zip(dims[:-1], dims[1:]):
            lin = nn.Linear(i, o)
            w = dense_init[off : off + i * o].reshape(i, o)  # input-major in Rust
            b = dense_init[off + i * o : off + i * o + o]
            off += i * o + o
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(w.T.copy()))
                lin.bias.copy_(torch.from_numpy(b.copy()))
            self.layers.append(lin)
        assert off + NUM_DENSE == len(dense_init), "dense vector does not match the spec"
        self.wide_dense = nn.Parameter(torch.from_numpy(dense_init[off:].copy()))

    def forward(self, dense, idx):
        e = self.emb(idx)  # [B, 26, D+1]
        b = dense.shape[0]
        x = torch.cat([e[:, :, : self.d].reshape(b, NUM_SPARSE * self.d), dense], dim=1)
        for lin in self.layers[:-1]:
            x = torch.relu(lin(x))
        deep = self.layers[-1](x).squeeze(1)
        wide = e[:, :, self.d].sum(dim=1) + dense @ self.wide_dense
        return deep + wide


def logloss(p, y):
    """As dlsim_kernel::metrics::logloss (p clamped to [1e-7, 1 - 1e-7])."""
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return float(np.mean(np.where(y > 0.5, -np.log(p), -np.log(1 - p))))


def auc(scores, labels):
    """Rank-sum AUC with average ranks for ties (as dlsim_kernel::metrics::auc)."""
    order = np.argsort(scores, kind="stable")
    s = scores[order]
    ranks = np.empty(len(s))
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        ranks[i : j + 1] = (i + j) / 2 + 1
        i = j + 1
    pos_mask = labels[order] > 0.5
    pos = pos_mask.sum()
    neg = len(s) - pos
    if pos == 0 or neg == 0:
        return 0.5
    return float((ranks[pos_mask].sum() - pos * (pos + 1) / 2) / (pos * neg))


def cmd_train(a):
    torch.set_num_threads(a.threads)
    meta, dense, label, idx, dense_init, emb_init = load(a.data)
    n_all = len(label)
    if not 0 <= a.holdout < n_all:
        sys.exit("error: --holdout leaves no training data")
    n = n_all - a.holdout
    spec = meta["spec"]
    opt_meta = meta["optimizer"]
    lr = a.lr if a.lr is not None else opt_meta["lr"]
    init_acc = a.init_acc if a.init_acc is not None else opt_meta["init_acc"]
    torch.manual_seed(0)  # nothing is random below; fixed anyway
    model = WideDeep(spec["emb_dim"], spec["hidden"], dense_init, emb_init)
    opt = torch.optim.Adagrad(
        model.parameters(), lr=lr, initial_accumulator_value=init_acc, eps=1e-10
    )
    dense_t = torch.from_numpy(dense)
    idx_t = torch.from_numpy(idx)
    y_t = torch.from_numpy(label)
    bs = a.batch
    batch_losses = []
    epoch_losses = []
    t0 = time.perf_counter()
    for _ in range(a.epochs):
        loss_sum = 0.0
        for start in range(0, n, bs):
            end = min(start + bs, n)
            opt.zero_grad(set_to_none=True)
            logit = model(dense_t[start:end], idx_t[start:end])
            loss = F.binary_cross_entropy_with_logits(logit, y_t[start:end])
            loss.backward()
            opt.step()
            lv = loss.item()
            loss_sum += lv * (end - start)
            if a.losses and len(epoch_losses) == 0 and len(batch_losses) < a.loss_batches:
                batch_losses.append(lv)
        epoch_losses.append(loss_sum / n)
    wall = time.perf_counter() - t0
    out = {
        "impl": "torch",
        "torch": torch.__version__,
        "batch": bs,
        "threads": a.threads,
        "torch_threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "epochs": a.epochs,
        "train_samples": n,
        "wall_s": wall,
        "samples_per_s": a.epochs * n / wall,
        "timed_includes_eval": False,
        "train_logloss": epoch_losses,
        "eval_logloss": None,
        "eval_auc": None,
    }
    if a.eval and a.holdout > 0:
        with torch.no_grad():
            logit = model(dense_t[n:], idx_t[n:])
            p = torch.sigmoid(logit).double().numpy()
        out["eval_logloss"] = logloss(p, label[n:])
        out["eval_auc"] = auc(p, label[n:])
    if a.losses:
        out["batch_losses"] = batch_losses
    print(json.dumps(out))


def copy_gib_s(nbytes, reps, fn_src_dst):
    src, dst, copy = fn_src_dst(nbytes)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        copy(dst, src)
        best = min(best, time.perf_counter() - t)
    return 2 * nbytes / best / 2**30  # STREAM copy: read + write


def cmd_gather(a):
    torch.set_num_threads(a.threads)
    ids = np.fromfile(a.ids, dtype="<u8").astype(np.int64)
    if len(ids) == 0 or ids.max() >= a.rows:
        sys.exit("error: IDs missing or out of the table's range")
    rl = a.dim + 1
    table = torch.empty(a.rows, rl, dtype=torch.float32).uniform_(-0.05, 0.05)
    idx = torch.from_numpy(ids)
    chunks = list(torch.split(idx, a.request_ids))
    out = torch.empty(a.request_ids, rl, dtype=torch.float32)
    times = []
    checksum = 0.0
    for _ in range(max(1, a.reps)):
        t = time.perf_counter()
        for c in chunks:
            o = out[: len(c)]
            torch.index_select(table, 0, c, out=o)
            checksum += float(o[0, 0])
        times.append(time.perf_counter() - t)
    best = min(times)
    gather = len(ids) * rl * 4 / best / 2**30

    def torch_bufs(nb):
        s = torch.arange(nb // 8, dtype=torch.float64)
        return s, torch.zeros_like(s), lambda d, s: d.copy_(s)

    def numpy_bufs(nb):
        s = np.arange(nb // 8, dtype=np.float64)
        return s, np.zeros_like(s), lambda d, s: np.copyto(d, s)

    tcopy = copy_gib_s(a.copy_bytes, 5, torch_bufs)
    ncopy = copy_gib_s(a.copy_bytes, 5, numpy_bufs)
    print(
        json.dumps(
            {
                "impl": "torch",
                "torch": torch.__version__,
                "path": "torch.index_select(table, 0, idx, out=buf) per request",
                "threads": a.threads,
                "rows": a.rows,
                "dim": a.dim,
                "row_len": rl,
                "ids": len(ids),
                "request_ids": a.request_ids,
                "times_s": times,
                "gather_gib_s": gather,
                "copy_gib_s": tcopy,
                "numpy_copy_gib_s": ncopy,
                "copy_convention": "STREAM copy, read + write bytes, best of 5",
                "gather_pct_of_copy": 100 * 2 * gather / tcopy,
                "checksum": checksum,
            }
        )
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train on an export folder; print one JSON line")
    t.add_argument("--data", required=True, help="folder written by `peer export`")
    t.add_argument("--batch", type=int, required=True)
    t.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    t.add_argument("--epochs", type=int, default=1)
    t.add_argument("--lr", type=float, default=None, help="default: meta.json's")
    t.add_argument("--init-acc", type=float, default=None, help="default: meta.json's")
    t.add_argument("--holdout", type=int, default=0, help="hold out the last K samples")
    t.add_argument("--eval", action="store_true", help="evaluate on the held-out samples")
    t.add_argument("--losses", action="store_true", help="report per-batch losses")
    t.add_argument("--loss-batches", type=int, default=64)
    t.set_defaults(fn=cmd_train)
    g = sub.add_parser("gather", help="index_select vs copy bandwidth; print one JSON line")
    g.add_argument("--ids", required=True, help="row indices (u64) from `peer gather --ids-out`")
    g.add_argument("--rows", type=int, default=3_000_000)
    g.add_argument("--dim", type=int, default=16)
    g.add_argument("--request-ids", type=int, default=26 * 512)
    g.add_argument("--reps", type=int, default=3)
    g.add_argument("--threads", type=int, default=1)
    g.add_argument("--copy-bytes", type=int, default=256 << 20)
    g.set_defaults(fn=cmd_gather)
    a = p.parse_args()
    if a.cmd == "train" and (a.batch <= 0 or a.threads <= 0 or a.epochs <= 0):
        sys.exit("error: batch, threads, epochs must be positive")
    a.fn(a)


if __name__ == "__main__":
    main()
