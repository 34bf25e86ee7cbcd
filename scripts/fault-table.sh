#!/usr/bin/env bash
# Median JCT (min) / JCR of every scenarios/faults-*.json under static, dlrover and dlrover-oss:
# the fault table committed in reports/baselines/faults.md. Uses $DLSIM, else the debug binary
# that `cargo test` builds (about a minute on 2 cores).
# Usage: scripts/fault-table.sh > reports/baselines/faults.md.new
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
D=${DLSIM:-$target/debug/dlsim}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| scenario | static | dlrover | dlrover-oss |"
echo "|---|---|---|---|"
for f in scenarios/faults-*.json; do
  n=$(basename $f .json); n=${n#faults-}
  row="| $n |"
  for p in static dlrover dlrover-oss; do
    $D replay $f --policy $p --out $out/$n-$p --quiet </dev/null >/dev/null 2>&1
    row="$row $(python3 -c "import json; s=json.load(open('$out/$n-$p/summary.json')); print('%.1f / %.1f%%' % (s['jct_median_s']/60, 100*s['jcr']))") |"
  done
  echo "$row"
done
