"""Load a dlsim sweep with polars and redraw its JCT CDF: one line per policy, log x axis.

    python scripts/analysis/jct_cdf_polars.py SWEEP_DIR [OUT.png]

The polars twin of jct_cdf_pandas.py: `jobs.parquet` (every job of every run) in one
call, the same check against `results.parquet` (exit 1 when they disagree), the same
figure.
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402


def main(sweep, out):
    jobs = pl.read_parquet(f"{sweep}/jobs.parquet")
    results = pl.read_parquet(f"{sweep}/results.parquet")
    meta = {k.decode(): v.decode() for k, v in pq.read_metadata(f"{sweep}/jobs.parquet").metadata.items()}
    print(f"dlsim {meta['dlsim_version']} ({meta['git_commit'][:12]}), "
          f"policies {json.loads(meta['dlsim_policies'])}, {results.height} runs, {jobs.height} jobs")

    done = jobs.filter(pl.col("status") == "completed")
    check = (
        done.group_by("run")
        .agg(pl.col("jct_s").median().alias("from_jobs"))
        .join(results.select(pl.col("id").alias("run"), "jct_median_s"), on="run", how="right")
        .select((pl.col("from_jobs") - pl.col("jct_median_s")).abs().max())
        .item()
    )
    if check is None or not check < 0.01:
        print(f"median JCT from jobs.parquet differs from results.parquet by {check} s")
        return 1

    fig, ax = plt.subplots(figsize=(8, 5), dpi=150)
    for (policy,), group in done.group_by("policy", maintain_order=True):
        hours = group.get_column("jct_s").sort() / 3600
        cdf = pl.int_range(1, hours.len() + 1, eager=True) / hours.len()
        seeds = group.get_column("seed").n_unique()
        ax.step(hours.to_numpy(), cdf.to_numpy(), where="post", label=f"{policy} ({seeds} seeds)")
        print(f"{policy}: median JCT {hours.median():.2f} h over {hours.len()} jobs")
    ax.set_xscale("log")
    ax.set_xlabel("JCT (hours, log scale)")
    ax.set_ylabel("fraction of completed jobs")
    ax.set_title("JCT CDF per policy (polars)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    sweep = sys.argv[1]
    sys.exit(main(sweep, sys.argv[2] if len(sys.argv) == 3 else f"{sweep}/jct_cdf_polars.png"))
