"""Load a dlsim sweep with pandas and redraw its JCT CDF: one line per policy, log x axis.

    python scripts/analysis/jct_cdf_pandas.py SWEEP_DIR [OUT.png]

`jobs.parquet` holds every job of every run (one call loads the sweep); `results.parquet`
one row per run. Both carry their provenance and units in the Parquet metadata. The
script checks that the two agree (each run's median JCT from its jobs equals the one in
`results.parquet`) and exits 1 otherwise, so CI runs it as a test.
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402


def main(sweep, out):
    jobs = pd.read_parquet(f"{sweep}/jobs.parquet")
    results = pd.read_parquet(f"{sweep}/results.parquet")
    meta = {k.decode(): v.decode() for k, v in pq.read_metadata(f"{sweep}/jobs.parquet").metadata.items()}
    units = json.loads(meta["dlsim_units"])
    print(f"dlsim {meta['dlsim_version']} ({meta['git_commit'][:12]}), "
          f"scenarios {json.loads(meta['dlsim_scenarios'])}, {len(results)} runs, "
          f"{len(jobs)} jobs; jct_s is in {units['jct_s']}")

    done = jobs[jobs["status"] == "completed"]
    # The same number results.parquet holds, from the jobs: the join is right.
    median = done.groupby("run")["jct_s"].median()
    check = results.set_index("id")["jct_median_s"]
    worst = (median.reindex(check.index) - check).abs().max()
    if not worst < 0.01:
        print(f"median JCT from jobs.parquet differs from results.parquet by {worst} s")
        return 1

    fig, ax = plt.subplots(figsize=(8, 5), dpi=150)
    for policy, group in done.groupby("policy", sort=False):
        hours = np.sort(group["jct_s"].to_numpy() / 3600)
        cdf = np.arange(1, len(hours) + 1) / len(hours)
        seeds = group["seed"].nunique()
        ax.step(hours, cdf, where="post", label=f"{policy} ({seeds} seeds)")
        print(f"{policy}: median JCT {np.median(hours):.2f} h over {len(hours)} jobs")
    ax.set_xscale("log")
    ax.set_xlabel("JCT (hours, log scale)")
    ax.set_ylabel("fraction of completed jobs")
    ax.set_title("JCT CDF per policy (pandas)")
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
    sys.exit(main(sweep, sys.argv[2] if len(sys.argv) == 3 else f"{sweep}/jct_cdf_pandas.png"))
