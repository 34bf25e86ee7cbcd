#!/usr/bin/env python3
"""Runs one benchmark command and wraps its JSON line with how busy the machine was.

Usage: measured.py REP CMD [ARGS...]

Prints one JSON object: ``rep``, ``run`` (the command's JSON line), ``elapsed_s`` (the whole
process, start-up included), ``own_cpu_s`` (the command's user + system CPU time),
``other_cpu_s`` (CPU time the rest of the machine used meanwhile: busy jiffies of
/proc/stat, steal included, minus the command's own) and ``load_1m_before``. On a 2-core
machine ``other_cpu_s`` near 0 means the run had the machine to itself.

With ``PEER_WAIT_QUIET=S`` in the environment it first waits, up to S seconds, for a
half-second window in which the rest of the machine used under 10% of the cores, and
records ``waited_s`` and ``busy_share_before`` (the last window's share)."""

import json
import os
import resource
import subprocess
import sys
import time


def busy_s():
    """Busy CPU seconds of the whole machine so far (user nice system irq softirq steal)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)
    return busy / os.sysconf("SC_CLK_TCK")


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def wait_quiet(limit_s):
    """Waits (up to limit_s) for a 0.5 s window with under 10% of the cores busy."""
    ncpu = os.cpu_count() or 1
    t0 = time.perf_counter()
    while True:
        b0 = busy_s()
        time.sleep(0.5)
        share = (busy_s() - b0) / (0.5 * ncpu)
        waited = time.perf_counter() - t0
        if share < 0.10 or waited >= limit_s:
            return waited, share


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rep, cmd = int(sys.argv[1]), sys.argv[2:]
    quiet = float(os.environ.get("PEER_WAIT_QUIET", "0") or 0)
    waited, share = wait_quiet(quiet) if quiet > 0 else (0.0, None)
    with open("/proc/loadavg") as f:
        load = float(f.read().split()[0])
    b0, c0, t0 = busy_s(), children_cpu_s(), time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    t1, c1, b1 = time.perf_counter(), children_cpu_s(), busy_s()
    if p.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} exited with {p.returncode}")
    lines = [line for line in p.stdout.splitlines() if line.strip()]
    own = c1 - c0
    print(
        json.dumps(
            {
                "rep": rep,
                "load_1m_before": load,
                "elapsed_s": t1 - t0,
                "own_cpu_s": own,
                "other_cpu_s": max(0.0, (b1 - b0) - own),
                "waited_s": waited,
                "busy_share_before": share,
                "run": json.loads(lines[-1]),
            }
        )
    )


if __name__ == "__main__":
    main()
