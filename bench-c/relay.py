#!/usr/bin/env python3
"""The relay's table for BENCHMARKS.md: bench-c/relay's modes on the hclog
line and on the mix, per line: median ns over 7 runs, callgrind instructions
(two loop lengths, so set-up cancels) and heap allocations.
Usage: bench-c/relay.py [PROGRAM] (`make bench-relay` builds and runs it)."""

import statistics
import sys

import run

LINES = [("hclog line (112 bytes)", 1), ("mix of 4 forms", 4)]


def main():
    program = sys.argv[1] if len(sys.argv) > 1 else "bench-c/relay"
    print("| mode | line | ns per line | instructions per line | allocations per line |")
    print("| --- | --- | ---: | ---: | ---: |")
    for mode in run.modes(program):
        for msg, (name, per_call) in enumerate(LINES):
            timings = [run.run(program, mode, msg, 100_000) for _ in range(7)]
            ns = statistics.median(t[0] for t in timings) / per_call
            allocs = statistics.median(t[1] for t in timings) / per_call
            i1 = run.instructions(program, mode, msg, 10_000)
            i2 = run.instructions(program, mode, msg, 30_000)
            per_line = (i2 - i1) / (run.calls(30_000) - run.calls(10_000)) / per_call
            print(f"| {mode} | {name} | {ns:.0f} | {per_line:.0f} | {allocs:.2f} |", flush=True)


if __name__ == "__main__":
    main()
