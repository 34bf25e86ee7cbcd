#!/usr/bin/env bash
# Replays one scenario under several policies and prints a Markdown table of the headline
# metrics (JCT mean/median/p90 in minutes, JCR, job CPU/memory utilisation, rescales) and
# each replay's wall time (`wall_s` from its run.json). Usage:
#   scripts/compare-policies.sh SCENARIO [POLICY...]
# Default policies: every batch policy of the registry (`dlsim policies --names batch`).
# Builds dlsim in release.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:?usage: scripts/compare-policies.sh SCENARIO [POLICY...]}
shift
policies=("$@")
cargo build --release -q
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target="$PWD/$target" ;; esac
[ ${#policies[@]} -gt 0 ] || mapfile -t policies < <("$target/release/dlsim" policies --names batch)
out=$(mktemp -d)
echo "| policy | JCT mean (min) | median | p90 | JCR | job CPU util | job mem util | rescales | wall (s) |"
echo "|---|---|---|---|---|---|---|---|---|"
for p in "${policies[@]}"; do
  dir="$out/$(echo "$p" | tr -c 'a-zA-Z0-9_-' '_')"
  "$target/release/dlsim" replay "$scenario" --policy "$p" --out "$dir" -q
  python3 - "$dir/summary.json" "$p" "$dir/run.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
wall = json.load(open(sys.argv[3]))["wall_s"]
m = lambda k: f"{s[k] / 60:.1f}"
print(f"| {sys.argv[2]} | {m('jct_mean_s')} | {m('jct_median_s')} | {m('jct_p90_s')} | "
      f"{100 * s['jcr']:.1f}% | {100 * s['cpu_util_mean']:.1f}% | {100 * s['mem_util_mean']:.1f}% | "
      f"{s['rescales']} | {wall:.2f} |")
PY
done
rm -rf "$out"
