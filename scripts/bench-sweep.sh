#!/usr/bin/env bash
# Sweep throughput: the quickstart scenario under `static` for SEEDS seeds (default 12),
# run by `dlsim sweep` on 1 and then 2 threads into fresh folders. Prints runs/s for each
# and their ratio, and saves them under reports/bench/<date>/sweep-throughput.json.
# Uses the debug binary `cargo test` builds (polars is never built in release here), so
# absolute runs/s are those of an unoptimised simulator; the ratio is the point.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${SEEDS:-12}
bin=${DLSIM:-}
if [ -z "$bin" ]; then
    cargo build -q --bin dlsim
    target=${CARGO_TARGET_DIR:-target}
    case $target in /*) ;; *) target="$(pwd)/$target" ;; esac
    bin="$target/debug/dlsim"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/sweep.json" <<JSON
{ "name": "bench", "scenario": "$(pwd)/scenarios/quickstart.json", "seeds": $seeds,
  "policies": ["static"] }
JSON
declare -A rate
for threads in 1 2; do
    line=$("$bin" sweep "$work/sweep.json" --out "$work/t$threads" --threads "$threads" \
        | grep -E '^[0-9]+ runs in')
    echo "threads=$threads: $line"
    rate[$threads]=$(echo "$line" | sed -E 's/.*\(([0-9.]+) runs\/s\).*/\1/')
done
diff -r "$work/t1" "$work/t2" >/dev/null && echo "outputs byte-identical on 1 and 2 threads"
ratio=$(awk -v a="${rate[1]}" -v b="${rate[2]}" 'BEGIN { printf "%.2f", b / a }')
echo "runs/s: 1 thread ${rate[1]}, 2 threads ${rate[2]}, ratio ${ratio}x ($(nproc) cores)"
dest="reports/bench/$(date +%Y-%m-%d)"
mkdir -p "$dest"
cat > "$dest/sweep-throughput.json" <<JSON
{ "scenario": "quickstart", "policy": "static", "runs": $seeds, "build": "debug",
  "cores": $(nproc), "runs_per_s_1_thread": ${rate[1]}, "runs_per_s_2_threads": ${rate[2]},
  "ratio": $ratio, "load_avg_1m_after": $(cut -d' ' -f1 /proc/loadavg),
  "note": "2-thread scaling is bounded by other load on the machine: compare load_avg" }
JSON
echo "saved $dest/sweep-throughput.json"
