#!/usr/bin/env bash
# Replay benchmark: a generated 30-day trace (~60,000 jobs) on a 2,000-node cluster under
# `static`, one core. Prints wall time, events/s and peak memory, and keeps the run's
# run.json under reports/bench/<date>/ so figures can be compared over time.
set -euo pipefail
cd "$(dirname "$0")/.."
days=${DAYS:-30}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release --quiet
bin=target/release/dlsim
"$bin" trace gen --days "$days" --seed 7 --out "$work/trace.jsonl"
cat > "$work/scenario.json" <<JSON
{
  "name": "bench-${days}d",
  "seed": 7,
  "trace": "trace.jsonl",
  "cluster": { "groups": [
    { "name": "cpu", "count": 1950, "cores": 64, "mem_gb": 256 },
    { "name": "gpu", "count": 50, "cores": 96, "mem_gb": 512, "gpus": 8, "gpu_model": "A100" } ] },
  "policy": "static"
}
JSON
/usr/bin/time -v taskset -c 0 "$bin" replay "$work/scenario.json" --out "$work/out" 2> "$work/time.txt"
grep -E "Elapsed|Maximum resident" "$work/time.txt"
dest="reports/bench/$(date +%Y-%m-%d)"
mkdir -p "$dest"
cp "$work/out/run.json" "$dest/replay-${days}d-run.json"
cp "$work/out/summary.json" "$dest/replay-${days}d-summary.json"
echo "saved $dest/replay-${days}d-run.json"
