#!/usr/bin/env bash
# Runs the analysis examples against a small sweep, as CI does: a 2-policy x 3-seed
# quickstart sweep (scenarios/sweep-analysis.json), then the pandas and the polars
# example, each of which checks jobs.parquet against results.parquet. Uses $DLSIM (or
# target/debug/dlsim) and the venv of setup-venv.sh. Output in ${1:-target/ci-analysis}.
set -euo pipefail
cd "$(dirname "$0")/../.."
dlsim=${DLSIM:-${CARGO_TARGET_DIR:-target}/debug/dlsim}
out=${1:-target/ci-analysis}
rm -rf "$out"
"$dlsim" sweep scenarios/sweep-analysis.json --out "$out/sweep" --quiet </dev/null >/dev/null
venv=$(scripts/analysis/setup-venv.sh)
"$venv/bin/python" scripts/analysis/jct_cdf_pandas.py "$out/sweep" "$out/jct_cdf_pandas.png"
"$venv/bin/python" scripts/analysis/jct_cdf_polars.py "$out/sweep" "$out/jct_cdf_polars.png"
