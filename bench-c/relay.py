#!/usr/bin/env python3
"""The relay's tables for BENCHMARKS.md: bench-c/relay's modes on the hclog
line and on the mix, per line: median ns over 7 runs, callgrind instructions
(two loop lengths, so set-up cancels) and heap allocations; then, in the
same run, go-plugin's own relay (bench-c/goplugin/relay, when it is built)
on the same lines through a pipe the same two ways, and the ratios.
Usage: bench-c/relay.py [PROGRAM [PEER]] (`make bench-relay` builds and runs
them)."""

import os
import statistics
import subprocess
import sys

import run

LINES = [("hclog line (112 bytes)", 1), ("mix of 4 forms", 4)]


def main():
    program = sys.argv[1] if len(sys.argv) > 1 else "bench-c/relay"
    peer = sys.argv[2] if len(sys.argv) > 2 else "bench-c/goplugin/relay"
    print("| mode | line | ns per line | instructions per line | allocations per line |")
    print("| --- | --- | ---: | ---: | ---: |")
    vlog_ns = {}
    for mode in run.modes(program):
        for msg, (name, per_call) in enumerate(LINES):
            timings = [run.run(program, mode, msg, 100_000) for _ in range(7)]
            ns = statistics.median(t[0] for t in timings) / per_call
            allocs = statistics.median(t[1] for t in timings) / per_call
            i1 = run.instructions(program, mode, msg, 10_000)
            i2 = run.instructions(program, mode, msg, 30_000)
            per_line = (i2 - i1) / (run.calls(30_000) - run.calls(10_000)) / per_call
            vlog_ns[(mode, name)] = ns
            print(f"| {mode} | {name} | {ns:.0f} | {per_line:.0f} | {allocs:.2f} |", flush=True)
    if not os.access(peer, os.X_OK):
        print(f"\n{peer} is not built (no Go toolchain or go-plugin sources): no peer rows")
        return
    out = subprocess.run([peer, "20000"], capture_output=True, text=True, check=True)
    print("\n| peer, case | line | ns per line | instructions per line | allocations per line |")
    print("| --- | --- | ---: | ---: | ---: |")
    peer_ns = {}
    for row in out.stdout.splitlines():
        print(row.replace("| |", "| - |"), flush=True)
        cells = [c.strip() for c in row.strip("|").split("|")]
        peer_ns[(cells[0], cells[1])] = float(cells[2])
    print("\n| case | line | go-plugin changed / vlog | go-plugin 1.0.1 / vlog |")
    print("| --- | --- | ---: | ---: |")
    for case in ["off-pipe", "filtered-pipe", "recorded-pipe",
                 "off-stream", "filtered-stream", "recorded-stream"]:
        for name, _ in LINES:
            mine = vlog_ns[(f"relay-{case}", name)]
            changed = peer_ns[(f"go-plugin changed {case}", name)]
            old = peer_ns[(f"go-plugin 1.0.1 {case}", name)]
            print(f"| {case} | {name} | {changed / mine:.1f} | {old / mine:.1f} |")


if __name__ == "__main__":
    main()
