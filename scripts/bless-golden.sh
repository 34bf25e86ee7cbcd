#!/usr/bin/env bash
# Rewrites the golden digests (tests/golden/<case>.sha256) from this build's replays of
# tests/golden/cases.json, then shows which changed. Commit them with a message saying why
# the outputs changed. Usage: scripts/bless-golden.sh
set -euo pipefail
cd "$(dirname "$0")/.."
UPDATE_GOLDEN=1 cargo test --test it golden:: -- --test-threads 2
git status --short tests/golden
