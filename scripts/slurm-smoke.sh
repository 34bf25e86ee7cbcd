#!/usr/bin/env bash
# Proves the Slurm path on a real Slurm: installs a single-node Slurm (Debian slurm-wlm
# packages and munge) if needed, starts munged, slurmctld and slurmd on localhost with a
# private configuration, submits a sweep as a job array (scripts/slurm-array.sh), merges
# the shards, and checks that the result is byte-identical to the unsharded sweep. It stops
# the daemons it started, by PID, whatever happens.
#
#   scripts/slurm-smoke.sh [SWEEP_FILE] [SHARDS]
#
# Without SWEEP_FILE it runs a built-in tiny sweep (6 runs). Needs root and apt-get on
# Debian/Ubuntu when Slurm is not installed; without them it fails loudly (exit 1), never
# passes silently. Set DLSIM to a built binary to skip `cargo build`.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
shards=${2:-3}
fail() { echo "slurm-smoke: FAILED: $*" >&2; exit 1; }
say() { echo "slurm-smoke: $*"; }
start_s=$(date +%s)

# --- Slurm and munge -----------------------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
    || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
    [ "$(id -u)" = 0 ] || fail "Slurm is not installed and this is not root: cannot apt-get install it"
    command -v apt-get >/dev/null || fail "Slurm is not installed and there is no apt-get"
    say "installing slurmctld slurmd slurm-client munge (apt)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || fail "apt-get update"
    apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge \
        >/dev/null || fail "apt-get install slurm-wlm/munge"
fi
[ "$(id -u)" = 0 ] || fail "the daemons must run as root (SlurmUser=root)"

# --- dlsim ---------------------------------------------------------------------------
if [ -z "${DLSIM:-}" ]; then
    cargo build -q --bin dlsim
    target=${CARGO_TARGET_DIR:-target}
    case $target in /*) ;; *) target="$repo/$target" ;; esac
    DLSIM="$target/debug/dlsim"
fi
[ -x "$DLSIM" ] || fail "no dlsim binary at $DLSIM"
export DLSIM

work=$(mktemp -d /tmp/dlsim-slurm.XXXXXX)
chmod 755 "$work"  # munged refuses a socket in a folder others cannot traverse
pids=()
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    if [ "$status" != 0 ]; then
        for log in "$work"/*.log "$work"/logs/*; do
            [ -f "$log" ] && { echo "--- $log"; tail -n 20 "$log"; }
        done
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT

# --- the sweep -----------------------------------------------------------------------
if [ -n "${1:-}" ]; then
    sweep=$(realpath "$1")
else
    cat > "$work/tiny.json" <<'JSON'
{
  "name": "tiny",
  "generate": { "days": 0.05, "jobs_per_day": 800 },
  "cluster": { "groups": [ { "name": "cpu", "count": 30, "cores": 64, "mem_gb": 256 },
                           { "name": "gpu", "count": 2, "cores": 96, "mem_gb": 512, "gpus": 8 } ] }
}
JSON
    cat > "$work/sweep.json" <<'JSON'
{
  "name": "slurm-smoke",
  "scenario": "tiny.json",
  "seeds": 3,
  "policies": ["static"],
  "scenario_params": { "faults.pod_failure_per_day": [0.0, 0.5] }
}
JSON
    sweep="$work/sweep.json"
fi

# --- a private single-node cluster -----------------------------------------------------
host=$(hostname -s)
cpus=$(nproc)
mkdir -p "$work/state" "$work/spool" "$work/logs"
cat > "$work/slurm.conf" <<CONF
ClusterName=dlsimsmoke
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=smoke Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm.conf"

say "starting munged, slurmctld, slurmd ($cpus CPUs) in $work"
munged --force --foreground --socket="$work/munge.sock" --pid-file="$work/munged.pid" \
    --seed-file="$work/munge.seed" --log-file="$work/munged.log" >"$work/munged.out.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$work/munge.sock" ] && break; sleep 0.1; done
[ -S "$work/munge.sock" ] || fail "munged did not start"
slurmctld -D -f "$SLURM_CONF" >"$work/slurmctld.out.log" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" >"$work/slurmd.out.log" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 120); do
    state=$(sinfo -h -n "$host" -o %T 2>/dev/null | head -n 1 || true)
    [ "$state" = idle ] && break
    sleep 0.5
done
[ "$state" = idle ] || fail "the node did not become idle (state: '${state:-none}')"
say "node $host is idle"

# --- unsharded reference, then the array, then merge -----------------------------------
"$DLSIM" sweep "$sweep" --out "$work/full" --threads "$cpus" --quiet >/dev/null
say "reference sweep done; submitting a $shards-task array"
array_start=$(date +%s)
timeout 900 sbatch --wait --array="0-$((shards - 1))" --chdir="$repo" \
    --output="$work/logs/%A_%a.out" scripts/slurm-array.sh "$sweep" "$work/sharded" \
    || fail "the job array did not complete"
array_s=$(( $(date +%s) - array_start ))
"$DLSIM" merge "$work"/sharded/shard-* --out "$work/merged" >/dev/null
diff -r "$work/full" "$work/merged" >"$work/diff.log" || fail "merged shards differ from the full sweep"
runs=$(ls "$work/merged/runs" | wc -l)
say "OK: $runs runs in $shards Slurm array tasks (${array_s} s), merged byte-identical to the unsharded sweep; total $(( $(date +%s) - start_s )) s"
