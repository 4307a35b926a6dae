#!/usr/bin/env python3
"""The fluent output's table for BENCHMARKS.md, one run beside its peer: a
five-field request record recorded into the ring alone, into the ring and a
JSON output, and into the ring and sent to a local receiver that drains
(bench-c/drain); fluent-logger-golang posting the same record to the same
receiver, sync and async (bench-c/fluentgo, when it is built). Per record:
median ns over 7 runs, callgrind instructions (two loop lengths, so set-up
cancels), heap allocations.
Usage: bench-c/fluent.py [PROGRAM DRAIN PEER] (`make bench-fluent`)."""

import os
import statistics
import subprocess
import sys
import tempfile
import time

import run


def main():
    program, drain, peer = (sys.argv[1:4] if len(sys.argv) > 3 else
                            ["bench-c/fluent", "bench-c/drain", "bench-c/fluentgo/fluentgo"])
    with tempfile.TemporaryDirectory() as tmp:
        portfile = os.path.join(tmp, "port")
        receiver = subprocess.Popen([drain, portfile])
        try:
            for _ in range(500):
                if os.path.exists(portfile) and open(portfile).read().strip():
                    break
                time.sleep(0.01)
            port = open(portfile).read().strip()
            run.ENV["FLUENT_PORT"] = port
            table(program, peer, port)
        finally:
            receiver.kill()


def table(program, peer, port):
    print("| mode | ns per record | instructions per record | allocations per record | bytes allocated per record | refused |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    results = {}
    for mode in run.modes(program):
        timings = [run.run(program, mode, 0, 100_000) for _ in range(7)]
        ns = statistics.median(t[0] for t in timings)
        allocs = statistics.median(t[1] for t in timings)
        i1 = run.instructions(program, mode, 0, 10_000)
        i2 = run.instructions(program, mode, 0, 30_000)
        per = (i2 - i1) / (run.calls(30_000) - run.calls(10_000))
        results[mode] = (ns, per)
        print(f"| {mode} | {ns:.0f} | {per:.0f} | {allocs:.2f} | 0 | 0 |", flush=True)
    if not os.access(peer, os.X_OK):
        print(f"\n{peer} is not built (no Go toolchain or fluent-logger-golang sources): no peer rows")
        return
    out = subprocess.run([peer, port, "20000"], capture_output=True, text=True, check=True)
    peers = {}
    for row in out.stdout.splitlines():
        print(row, flush=True)
        cells = [c.strip() for c in row.strip("|").split("|")]
        peers[cells[0]] = float(cells[1])
    fluent_ns, fluent_instr = results["vlog-ring-fluent"]
    print("\n| ratio | value |")
    print("| --- | ---: |")
    for name, ns in peers.items():
        print(f"| vlog-ring-fluent / {name} (ns) | {fluent_ns / ns:.3f} |")
    print(f"| vlog-ring-fluent / vlog-ring-json (instructions) | "
          f"{fluent_instr / results['vlog-ring-json'][1]:.3f} |")


if __name__ == "__main__":
    main()
