#!/usr/bin/env bash
# System calls the calling thread makes for N logged lines: bench-c/bench
# MODE MESSAGE N under strace -f, counting the main thread's calls between
# the two getppid() marks around the measured loop (bench-c/harness.h);
# vlog's writer thread's are counted apart. Usage:
#   bench-c/syscalls.sh [MODE [N]]   (default: vlog-file-burst 10000)
# Run from the repo root after `make bench` built bench-c/bench.
set -euo pipefail
mode=${1:-vlog-file-burst}
n=${2:-10000}
command -v strace >/dev/null || { echo "syscalls.sh: strace is not installed" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
strace -f -qq -o "$out" bench-c/bench "$mode" 0 "$n" >/dev/null
main=$(awk 'NR == 1 { print $1; exit }' "$out")
# A call that another thread's interrupts in strace's output is split into
# an "<unfinished ...>" line and a "<... resumed>" one: counted once.
awk -v main="$main" -v mode="$mode" -v n="$n" '
    $1 == main && $2 ~ /^getppid\(/ { marks++; next }
    marks == 1 && $1 == main && $2 !~ /^(\+\+\+|---|<\.\.\.)/ {
        split($2, name, "("); calls[name[1]]++; total++
    }
    marks == 1 && $1 != main && $2 !~ /^(\+\+\+|---|<\.\.\.)/ { others++ }
    END {
        printf "%s, %d lines: the calling thread made %d system calls", mode, n, total
        sep = " ("
        for (c in calls) { printf "%s%s %d", sep, c, calls[c]; sep = ", " }
        printf "%s; vlog'"'"'s other threads %d\n", (total ? ")" : ""), others
    }' "$out"
