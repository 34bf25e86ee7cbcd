#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for a bounded time (issue #21):
#   scripts/fuzz.sh [SECONDS_PER_TARGET=30] [TARGET...]
# Installs cargo-fuzz (crates.io, through cargo) when it is missing; needs the nightly
# toolchain (`rustup toolchain install nightly`). Each target starts from its committed
# seed corpus in fuzz/corpus/<target>/, which it only reads: new inputs go to
# target/fuzz-corpus/<target>/. A crash leaves its input in fuzz/artifacts/<target>/ and
# fails the script; turn it into a regression test (tests/it/limits.rs) before fixing.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(scenario trace importers policy_spec online_scenario sweep baseline)
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo +nightly install cargo-fuzz --locked
fi
# Address-sanitised builds of the loaders only (no polars); kept apart from the main
# target folder so they never invalidate its debug build.
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$PWD/target/fuzz}
mkdir -p target/fuzz-logs
for t in "${targets[@]}"; do
    work="target/fuzz-corpus/$t"
    log="target/fuzz-logs/$t.log"
    mkdir -p "$work"
    echo "== fuzz $t for ${secs}s (log: $log)"
    status=0
    cargo +nightly fuzz run --fuzz-dir fuzz "$t" "$work" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
        -print_final_stats=1 >"$log" 2>&1 || status=$?
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY)|panicked" "$log" || true
    if [ "$status" -ne 0 ]; then
        echo "fuzz $t failed (exit $status); crash inputs, if any, in fuzz/artifacts/$t; see $log" >&2
        exit 1
    fi
done
