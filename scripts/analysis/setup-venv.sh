#!/usr/bin/env bash
# Creates a Python venv with pandas, polars, pyarrow and matplotlib from PyPI
# (requirements.txt) for the analysis examples, or reuses it when its requirements have
# not changed; prints the venv's path. The venv lives outside the clone, in
# $DLSIM_ANALYSIS_VENV or ~/.cache/dlsim/analysis-venv, so CI reuses it across clones and
# `git clean` never removes it. Needs python3 with venv (as root, installs the Debian
# package python3-venv when it is missing).
#
#   venv=$(scripts/analysis/setup-venv.sh)
#   "$venv/bin/python" scripts/analysis/jct_cdf_pandas.py SWEEP_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${DLSIM_ANALYSIS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/dlsim/analysis-venv}
want=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.dlsim-requirements" 2>/dev/null)" = "$want" ]; then
    echo "$venv"
    exit 0
fi
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y -qq python3-venv >&2
    else
        echo "setup-venv.sh: python3 lacks venv/ensurepip; install python3-venv" >&2
        exit 1
    fi
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv" >&2
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
echo "$want" >"$venv/.dlsim-requirements"
echo "$venv"
