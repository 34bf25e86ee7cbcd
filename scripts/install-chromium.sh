#!/usr/bin/env bash
# Installs headless Chromium from the Debian package `chromium` (apt) when no chromium is on
# PATH, and prints the path of the binary. The report's browser test
# (tests/it/browser.rs, run when DLSIM_BROWSER_TEST=1) and the committed screenshot
# (reports/report-screenshot.png) use it. Needs root for the install.
set -euo pipefail
for name in chromium chromium-browser; do
    if command -v "$name" >/dev/null; then
        command -v "$name"
        exit 0
    fi
done
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "install-chromium.sh: no chromium on PATH; run as root on Debian to install it" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
command -v chromium
