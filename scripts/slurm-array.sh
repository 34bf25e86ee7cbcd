#!/usr/bin/env bash
# Run one shard of a dlsim sweep per Slurm array task; `dlsim merge` combines them after.
#
#   sbatch --array=0-$((N-1)) scripts/slurm-array.sh SWEEP_FILE OUT_DIR
#   dlsim merge OUT_DIR/shard-* --out OUT_DIR/merged
#
# Task i runs the grid points whose index is i mod N (N = the array size), into
# OUT_DIR/shard-i. The folders only need to be on a filesystem the merging node can read.
# A task that is killed and re-queued resumes: finished runs are skipped, and a run is
# moved into place only when complete. Set DLSIM to the binary if it is not on PATH.
#SBATCH --job-name=dlsim-sweep
#SBATCH --cpus-per-task=1
#SBATCH --output=dlsim-sweep-%A_%a.out
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: sbatch --array=0-\$((N-1)) $0 SWEEP_FILE OUT_DIR [N]" >&2
    exit 2
fi
sweep=$1
out=$2
count=${3:-${SLURM_ARRAY_TASK_COUNT:?submit as an array: sbatch --array=0-N}}
task=${SLURM_ARRAY_TASK_ID:?submit as an array: sbatch --array=0-N}
"${DLSIM:-dlsim}" sweep "$sweep" --out "$out/shard-$task" --shard "$task/$count" \
    --threads "${SLURM_CPUS_PER_TASK:-1}" --quiet
