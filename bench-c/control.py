#!/usr/bin/env python3
"""The control socket's cost to a logging thread, for BENCHMARKS.md: ring-only
records (the ring full) with no control socket, with one idle, with a
client dumping the ring over and over, with four clients following it and
with sixteen clients that read none of their dumps. Per record: median ns
over 7 runs and the ratio to no socket (one run, side by side), heap
allocations. Usage: bench-c/control.py [PROGRAM] (`make bench-control`)."""

import statistics
import sys

import run


def main():
    program = sys.argv[1] if len(sys.argv) > 1 else "bench-c/control"
    print("| mode | ns per record | x no socket | allocations per record |")
    print("| --- | ---: | ---: | ---: |")
    base = None
    for mode in run.modes(program):
        timings = [run.run(program, mode, 0, 300_000) for _ in range(7)]
        ns = statistics.median(t[0] for t in timings)
        allocs = statistics.median(t[1] for t in timings)
        base = base or ns
        print(f"| {mode} | {ns:.0f} | {ns / base:.2f} | {allocs:.2f} |", flush=True)


if __name__ == "__main__":
    main()
