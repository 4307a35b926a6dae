#!/usr/bin/env python3
"""Runs every benchmark mode on the six NanoLog messages and prints the
BENCHMARKS.md tables: median ns per call (several runs), instructions per call
under callgrind (difference between two loop lengths, so start-up cancels) and
heap allocations per call. Usage: bench-c/run.py [--quick] PROGRAM...
(`make bench` builds the programs and runs this.)"""

import os
import statistics
import subprocess
import sys
import tempfile

MESSAGES = ["staticString", "stringConcat", "singleInteger",
            "twoIntegers", "singleDouble", "complexFormat"]
ENV = dict(os.environ, LTTNG_UST_REGISTER_TIMEOUT="0")
for key in [k for k in ENV if k.startswith("VLOG_") or k == "G_MESSAGES_DEBUG"]:
    del ENV[key]


def modes(program):
    out = subprocess.run([program], capture_output=True, text=True, env=ENV)
    line = [l for l in out.stderr.splitlines() if l.startswith("modes:")]
    return line[0].split()[1:] if line else []


def calls(n):
    """What the program runs for N: a warm-up of N/10 + 1, then N."""
    return n + n // 10 + 1


def run(program, mode, msg, n):
    out = subprocess.run([program, mode, str(msg), str(n)], capture_output=True,
                         text=True, env=ENV, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{program} {mode} {msg}: {out.stderr.strip()}")
    ns, allocs = out.stdout.split()
    return float(ns), float(allocs)


def instructions(program, mode, msg, n):
    with tempfile.NamedTemporaryFile(suffix=".cg") as f:
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={f.name}",
                        program, mode, str(msg), str(n)],
                       capture_output=True, env=ENV, timeout=1200, check=True)
        for line in open(f.name):
            # totals: what was counted (the header's summary: may leave
            # out a stretch the harness kept from being counted).
            if line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError("no callgrind total")


def slow(mode):
    return any(word in mode for word in ("file", "json", "write", "enabled", "threads"))


def threads(mode):
    """How many threads a mode runs its calls on: NAME-threads-N."""
    return int(mode.rsplit("-", 1)[1]) if "-threads-" in mode else 1


def measure(program, mode, msg, quick):
    n = 100_000 if "threads" in mode else 20_000 if slow(mode) else 400_000
    runs = 3 if quick else 7
    timings = [run(program, mode, msg, n) for _ in range(runs)]
    ns = statistics.median(t[0] for t in timings)
    allocs = statistics.median(t[1] for t in timings)
    n1, n2 = (1000, 3000) if quick or slow(mode) else (10_000, 30_000)
    i1 = instructions(program, mode, msg, n1)
    i2 = instructions(program, mode, msg, n2)
    per_call = (i2 - i1) / (calls(n2) - calls(n1))
    # Each thread makes the calls: per message, divide by the threads.
    ns, per_call = ns / threads(mode), per_call / threads(mode)
    return ns, per_call, allocs


def main():
    args = sys.argv[1:]
    quick = "--quick" in args
    programs = [a for a in args if a != "--quick"]
    results = {}
    for program in programs:
        for mode in modes(program):
            for msg in range(len(MESSAGES)):
                results[(mode, msg)] = measure(program, mode, msg, quick)
                print(f"{mode} {MESSAGES[msg]}: {results[(mode, msg)]}", file=sys.stderr)
    head = "| mode | " + " | ".join(MESSAGES) + " |"
    rule = "| --- |" + " ---: |" * len(MESSAGES)
    for title, index, fmt in [("Median ns per call", 0, "{:.1f}"),
                              ("Instructions per call (callgrind)", 1, "{:.0f}"),
                              ("Heap allocations per call", 2, "{:.2f}")]:
        print(f"\n### {title}\n\n{head}\n{rule}")
        for mode in dict.fromkeys(m for m, _ in results):
            cells = [fmt.format(results[(mode, m)][index]) for m in range(len(MESSAGES))]
            print(f"| {mode} | " + " | ".join(cells) + " |")
    # Instructions, and time too for the file modes: most of their time is
    # the system calls in the kernel, which callgrind does not count.
    pairs = [("vlog-disabled", "lttng-disabled", 1), ("vlog-disabled", "spdlog-filtered", 1),
             ("vlog-disabled", "glib-disabled", 1), ("vlog-fn-filtered", "spdlog-filtered", 1),
             ("vlog-ring", "spdlog-backtrace", 1), ("vlog-ring", "spdlog-null", 1),
             ("vlog-ring-full", "spdlog-backtrace", 1), ("vlog-ring-full", "vlog-ring", 1),
             ("vlog-ring", "floor-vsnprintf", 1), ("vlog-ring-file", "spdlog-file", 0),
             ("vlog-ring-file", "spdlog-file", 1), ("vlog-ring-json", "spdlog-file", 1),
             ("vlog-ring-json", "spdlog-file", 0),
             ("vlog-ring-file", "write-line", 0)]
    print("\n### vlog as a multiple of the peer\n")
    print("| vlog mode / peer | " + " | ".join(MESSAGES) + " |")
    print(rule)
    for ours, theirs, index in pairs:
        if (ours, 0) in results and (theirs, 0) in results:
            cells = ["{:.3g}".format(results[(ours, m)][index] / max(results[(theirs, m)][index], 1e-9))
                     for m in range(len(MESSAGES))]
            unit = "ns" if index == 0 else "instructions"
            print(f"| {ours} / {theirs} ({unit}) | " + " | ".join(cells) + " |")
    scaling(results)


def scaling(results):
    """Messages per second of every threaded mode, and as a multiple of the
    same logger on one thread (wall clock: compare within one run)."""
    names = dict.fromkeys(m.rsplit("-", 1)[0] for m, _ in results if "-threads-" in m)
    if not names:
        return
    print("\n### Threads into one logger: million messages per second "
          "(and as a multiple of one thread)\n")
    print("| mode | " + " | ".join(MESSAGES) + " |")
    print("| --- |" + " ---: |" * len(MESSAGES))
    for name in names:
        for n in (1, 2, 4, 8):
            mode = f"{name}-{n}"
            if (mode, 0) not in results:
                continue
            cells = []
            for m in range(len(MESSAGES)):
                rate = 1e3 / results[(mode, m)][0]
                one = 1e3 / results[(f"{name}-1", m)][0]
                cells.append(f"{rate:.1f} ({rate / one:.2f}x)")
            print(f"| {mode} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
