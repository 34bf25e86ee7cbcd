#!/usr/bin/env bash
# Peer benchmark of the Rust kernel against CPU PyTorch (issue #23).
#
# Same model (Wide&Deep, emb dim 8, hidden 32,16: the kernel's `wide_deep` kind), same data
# (SyntheticData::standard, seed 1, vocab scale 8 = 23,560 IDs), same initial state (the
# kernel exports its dense init and every ID's initial row), same batches in the same order,
# same Adagrad (lr 0.05, init_acc 0.1). Writes OUT/README.md and OUT/results.json
# (default OUT: reports/bench/kernel-vs-torch; with --quick: target/peer-quick).
#
# Throughput: for batch in 32 512 4096 and threads in 1 2, REPS reps ALTERNATING the two
# implementations (the first of each pair alternates too). Samples are in memory on both
# sides (generation and ID->row mapping are not timed); samples/s = trained samples / wall
# time of the training loop (the kernel's `wall_samples_per_s`).
# "Same thread count": the kernel runs 1 worker with T compute threads and T PS shards of 1
# server thread each (the worker waits on the PSes, so at most T threads are busy); PyTorch
# runs torch.set_num_threads(T) with OMP_WAIT_POLICY=PASSIVE (idle OpenMP threads sleep).
#
# Agreement (1 thread, batch 512 and 32): per-batch losses of the first batches, final
# train log loss and held-out log loss; exits 1 if a final log loss differs by > 1e-4.
# Gather: 3M x 17-float table, Zipf IDs, the kernel's PS Lookup path vs index_select, each
# against a single-thread STREAM-copy bandwidth.
#
# Usage: scripts/bench-kernel-vs-torch.sh [--quick] [--reps N] [--out DIR] [--wait-quiet S]
#   --wait-quiet S: before each timed run, wait up to S seconds for the rest of the machine
#   to use under 10% of the cores (a shared machine); the waits are in results.json.
# Env: CARGO_TARGET_DIR (default target), PEER_VENV (default target/peer-venv),
#      OMP_WAIT_POLICY (default PASSIVE), PYTHON (interpreter that creates the venv,
#      default python3), PEER_KEEP_WORK=1 (keep the temporary folder of raw JSON and data).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

args="$*"
reps="" quick=0 out=""
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=1 ;;
        --reps) reps=$2; shift ;;
        --out) out=$2; shift ;;
        --wait-quiet) export PEER_WAIT_QUIET=$2; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
if [ "$quick" = 1 ]; then
    reps=${reps:-1} samples=8192 holdout=1024 gather_ids=500000 nb512=8 nb32=32
    out=${out:-target/peer-quick}
else
    samples=65536 holdout=8192 gather_ids=4000000 nb512=32 nb32=128
    reps=${reps:-6}
    out=${out:-reports/bench/kernel-vs-torch}
fi
case $reps in ''|*[!0-9]*|0) echo "--reps wants a positive integer" >&2; exit 2 ;; esac
batches="32 512 4096"
threads_list="1 2"

# --- PyTorch (CPU) in a private venv --------------------------------------------------------
# PyPI's Linux torch wheel is a CUDA build: `import torch` needs the nvidia-* / cuda-toolkit
# wheels it depends on even on a CPU-only machine (about 5.4 GiB installed in all), and no
# CPU-only index is reachable here, so the plain `pip install torch` is what works.
venv=${PEER_VENV:-target/peer-venv}
py=$venv/bin/python
install_s=0
if ! "$py" -c 'import torch, numpy' 2>/dev/null; then
    echo "installing CPU PyTorch + numpy into $venv (several GiB of wheels)..."
    t0=$(date +%s)
    "${PYTHON:-python3}" -m venv "$venv"
    "$py" -m pip install -q torch numpy
    install_s=$(( $(date +%s) - t0 ))
    echo "installed in ${install_s}s"
fi
torch_version=$("$py" -c 'import torch; print(torch.__version__)')

# --- kernel example -------------------------------------------------------------------------
cargo build -q --release -p dlsim-kernel --example peer
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target="$root/$target" ;; esac
peer="$target/release/examples/peer"

work=$(mktemp -d)
# PEER_KEEP_WORK=1 keeps the raw JSON (and the exported data) for inspection.
trap 'if [ -n "${PEER_KEEP_WORK:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi' EXIT
data="$work/data"
"$peer" export --out "$data" --samples $((samples + holdout)) --seed 1 \
    --emb-dim 8 --hidden 32,16 --vocab-scale 8 >"$work/meta.json"
# Idle OpenMP threads sleep instead of spinning (override with OMP_WAIT_POLICY=ACTIVE; the
# policy used is in the report). On a quiet machine PASSIVE costs PyTorch ~10% at 2 threads
# and batch 512; with the default policy some runs on this shared 2-core machine collapsed
# (6k instead of 228k samples/s at batch 512, 2 threads).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

rust() { "$peer" train --data "$data" --holdout "$holdout" "$@"; }
torch() { "$py" scripts/peer/torch_wd.py train --data "$data" --holdout "$holdout" "$@"; }
# Appends one run's JSON line to runs.jsonl, wrapped by measured.py with the rep, the run's
# own CPU time and the CPU time the rest of the machine used meanwhile.
record() {
    local rep=$1 impl=$2
    shift 2
    local cmd
    if [ "$impl" = rust ]; then
        cmd=("$peer" train --data "$data" --holdout "$holdout")
    else
        cmd=("$py" scripts/peer/torch_wd.py train --data "$data" --holdout "$holdout")
    fi
    "$py" scripts/peer/measured.py "$rep" "${cmd[@]}" "$@" >>"$work/runs.jsonl"
}

# --- throughput -----------------------------------------------------------------------------
: >"$work/runs.jsonl"
for batch in $batches; do
    for threads in $threads_list; do
        for rep in $(seq 1 "$reps"); do
            if [ $((rep % 2)) = 1 ]; then
                record "$rep" rust --batch "$batch" --threads "$threads"
                record "$rep" torch --batch "$batch" --threads "$threads"
            else
                record "$rep" torch --batch "$batch" --threads "$threads"
                record "$rep" rust --batch "$batch" --threads "$threads"
            fi
        done
        echo "batch $batch, threads $threads: $reps reps done"
    done
done

# --- learning-curve agreement (1 thread) ----------------------------------------------------
for spec in "512 $nb512" "32 $nb32"; do
    set -- $spec
    rust --batch "$1" --threads 1 --eval --losses --loss-batches "$2" >"$work/agree-rust-$1.json"
    torch --batch "$1" --threads 1 --eval --losses --loss-batches "$2" >"$work/agree-torch-$1.json"
done

# --- gather ---------------------------------------------------------------------------------
"$peer" gather --rows 3000000 --dim 16 --ids "$gather_ids" --ids-out "$work/gather_ids.u64" \
    >"$work/gather-rust.json"
"$py" scripts/peer/torch_wd.py gather --rows 3000000 --dim 16 --ids "$work/gather_ids.u64" \
    >"$work/gather-torch.json"

# --- report ---------------------------------------------------------------------------------
cpuinfo() { grep -m1 "^$1" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'; }
l3=$(lscpu 2>/dev/null | sed -n 's/^L3 cache: *//p')
simd=$(grep -m1 '^flags' /proc/cpuinfo | grep -o -w 'avx2\|avx512f' | tr '\n' ' ' | sed 's/ $//')
mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
machine="$(cpuinfo 'model name') (cpuinfo cache size $(cpuinfo 'cache size')${l3:+, L3 $l3}${simd:+, $simd}), $mem RAM"
"$py" scripts/peer/report.py --work "$work" --out "$out" --reps "$reps" --quick "$quick" \
    --cpu "$machine" --nproc "$(nproc)" --date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    --kernel "$(uname -sr)" --rustc "$(rustc --version)" --torch "$torch_version" \
    --install-s "$install_s" --args="$args" --commit "$(git describe --always --dirty 2>/dev/null || echo unknown)"
# The throughput table, for the terminal.
sed -n '/^## Throughput/,/^## Learning/p' "$out/README.md" | sed '$d'
