#!/usr/bin/env bash
# Trace benchmark (issue #22): imports every public trace in ../shared/data (no flags) and
# replays each under every batch policy, then replays generated traces at scale: 60,000
# jobs / 30 days / 2,000 nodes and 1,000,000 jobs / one year / 10,000 nodes. Each replay
# records wall time, peak RSS, events and events/s (release build, one core via taskset).
#
# Writes reports/bench/<date>/traces.md (the table, with the machine's description) and
# traces.csv. Knobs (environment):
#   DATA=../shared/data     where the public traces are
#   TIMEOUT=900             seconds per replay before it is stopped (marked "timeout")
#   POLICIES="static dlrover dlrover-oss optimus es well-tuned"
#   SCALE=1                 0 skips the generated traces
#   BIG_POLICIES="static dlrover"   policies for the 1,000,000-job trace
#   OUT=reports/bench/<date>
set -euo pipefail
cd "$(dirname "$0")/.."
data=${DATA:-../shared/data}
timeout_s=${TIMEOUT:-900}
policies=${POLICIES:-static dlrover dlrover-oss optimus es well-tuned}
big_policies=${BIG_POLICIES:-static dlrover}
out=${OUT:-reports/bench/$(date +%Y-%m-%d)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/dlsim
mkdir -p "$out"
csv="$work/traces.csv"
echo "trace,jobs,policy,status,wall_s,peak_rss_mb,events,events_per_s,jcr" > "$csv"

# replay NAME SCENARIO POLICY: one timed replay, one CSV row.
replay() {
    local name=$1 scenario=$2 policy=$3 dir="$work/runs/$1-$3" status=ok rc=0
    mkdir -p "$work/runs"
    /usr/bin/time -f "%e %M" -o "$work/time" timeout "$timeout_s" taskset -c 0 \
        "$bin" replay "$scenario" --policy "$policy" --out "$dir" --quiet </dev/null >/dev/null 2>"$work/err" || rc=$?
    case $rc in 0) ;; 124) status=timeout ;; *) status="failed($rc)" ;; esac
    local wall rss events jcr jobs eps
    read -r wall rss < <(tail -1 "$work/time" | grep -oE '^[0-9.]+ [0-9]+$' || echo "$timeout_s 0")
    if [ "$status" = ok ]; then
        read -r jobs events jcr < <(python3 -c "import json; s=json.load(open('$dir/summary.json')); print(s['jobs_submitted'], s['events'], round(s['jcr'], 4))")
        eps=$(python3 -c "print(round($events / max($wall, 0.01)))")
    else
        jobs=""; events=""; jcr=""; eps=""
        tail -1 "$work/err" >&2 || true
    fi
    echo "$name,$jobs,$policy,$status,$wall,$((rss / 1024)),$events,$eps,$jcr" >> "$csv"
    echo "$name $policy: $status, ${wall} s, $((rss / 1024)) MB, ${events:-?} events" >&2
    rm -rf "$dir"
}

# scenario NAME TRACE NODES: a scenario file for an imported trace and its node list.
scenario() {
    cat > "$work/$1.json" <<JSON
{ "name": "$1", "seed": 1, "trace": "$2", "cluster": { "node_list": "$3" },
  "policy": "static", "timeline_interval_s": 3600 }
JSON
}

# import NAME FORMAT FILE [--nodes LIST]
import() {
    local name=$1 format=$2 file=$3
    shift 3
    if [ ! -f "$file" ]; then
        echo "skipping $name: $file not found" >&2
        return 1
    fi
    "$bin" trace import --format "$format" "$file" "$@" --out "$work/$name.jsonl" \
        --cluster-out "$work/$name-nodes.csv" >/dev/null 2>&1
    scenario "$name" "$work/$name.jsonl" "$work/$name-nodes.csv"
}

openb_nodes=(--nodes "$data/openb/openb_node_list_all_node.csv")
imports=(
    "openb-default openb $data/openb/openb_pod_list_default.csv openb"
    "openb-cpu050 openb $data/openb/openb_pod_list_cpu050.csv openb"
    "openb-gpushare40 openb $data/openb/openb_pod_list_gpushare40.csv openb"
    "openb-multigpu50 openb $data/openb/openb_pod_list_multigpu50.csv openb"
    "dlrm2025 dlrm2025 $data/dlrm2025/disaggregated_DLRM_trace.csv -"
    "philly philly $data/philly/philly.csv -"
    "swf swf $data/swf/NASA-iPSC-1993-3.1-cln.swf.gz -"
)
for entry in "${imports[@]}"; do
    read -r name format file nodes <<<"$entry"
    extra=()
    [ "$nodes" = openb ] && extra=("${openb_nodes[@]}")
    import "$name" "$format" "$file" "${extra[@]}" || continue
    for p in $policies; do
        replay "$name" "$work/$name.json" "$p"
    done
done

# Generated traces: `dlsim trace gen` on a homogeneous cluster of 64-core CPU nodes with
# 2.5% 8-GPU nodes (the quickstart's mix).
generated() {
    local name=$1 days=$2 per_day=$3 nodes=$4
    shift 4
    local gpu=$((nodes / 40)) cpu=$((nodes - nodes / 40))
    "$bin" trace gen --days "$days" --jobs-per-day "$per_day" --seed 7 --out "$work/$name.jsonl" >/dev/null
    cat > "$work/$name.json" <<JSON
{ "name": "$name", "seed": 7, "trace": "$name.jsonl",
  "cluster": { "groups": [
    { "name": "cpu", "count": $cpu, "cores": 64, "mem_gb": 256 },
    { "name": "gpu", "count": $gpu, "cores": 96, "mem_gb": 512, "gpus": 8, "gpu_model": "A100" } ] },
  "policy": "static", "timeline_interval_s": 3600 }
JSON
    for p in "$@"; do
        replay "$name" "$work/$name.json" "$p"
    done
}
if [ "${SCALE:-1}" = 1 ]; then
    generated gen-60k-30d 30 2000 2000 static dlrover
    generated gen-1m-365d 365 2740 10000 $big_policies
fi

# The report: a Markdown table with each policy's wall time and peak memory against
# `static` on the same trace.
{
    echo "# Trace benchmark, $(date +%Y-%m-%d)"
    echo
    echo "\`scripts/bench-traces.sh\` (release build, one core via taskset, timeout ${timeout_s} s per replay)."
    echo
    echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -sr); dlsim $(git rev-parse --short HEAD)."
    echo
    python3 - "$csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
base = {r["trace"]: r for r in rows if r["policy"] == "static" and r["status"] == "ok"}
print("| trace | jobs | policy | status | wall (s) | x static | peak RSS (MB) | x static | events | events/s | JCR |")
print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    b = base.get(r["trace"])
    xw = xm = ""
    if b and r["status"] == "ok":
        xw = "%.1f" % (float(r["wall_s"]) / max(float(b["wall_s"]), 0.01))
        xm = "%.1f" % (float(r["peak_rss_mb"]) / max(float(b["peak_rss_mb"]), 1.0))
    print(f"| {r['trace']} | {r['jobs']} | {r['policy']} | {r['status']} | {r['wall_s']} | {xw} | {r['peak_rss_mb']} | {xm} | {r['events']} | {r['events_per_s']} | {r['jcr']} |")
PY
    echo
    echo "Wall-time ratios below 0.01 s of \`static\` are noise-bound: \`static\` replays most imported traces in well under a second."
} > "$work/traces.md"
cp "$csv" "$out/traces.csv"
cp "$work/traces.md" "$out/traces.md"
echo "wrote $out/traces.md and $out/traces.csv" >&2
