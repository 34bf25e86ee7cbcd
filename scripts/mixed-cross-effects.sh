#!/usr/bin/env bash
# The mixed scenario's cross-effects (issue #19): the quickstart's batch day and three online
# jobs on one cluster, under two cluster policies x two autoscalers, 3 seeds
# (scenarios/sweep-mixed.json), reported into reports/mixed/. Its deltas table pairs each
# spec with `static+hpa` by seed: how online lag moves with the batch policy (dlrover+hpa)
# and how batch JCT moves with the autoscaler (static+kale). About 40 s in a debug build.
# Usage: scripts/mixed-cross-effects.sh [OUT_DIR]  (default reports/mixed)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-reports/mixed}
target=${CARGO_TARGET_DIR:-target}
cargo build -q
runs=$(mktemp -d)
"$target/debug/dlsim" sweep scenarios/sweep-mixed.json --out "$runs/sweep" -q
"$target/debug/dlsim" report "$runs/sweep" --out "$out" -q
rm -rf "$runs"
echo "wrote $out/report.md"
