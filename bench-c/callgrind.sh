#!/usr/bin/env bash
# Instructions per call (a holding check's and a backtrace's too) for bench-c/sanity.c under callgrind: the difference
# between runs of N1 and N2 calls, divided by N2 - N1. Run from the repo root
# after `cargo build --release` (`make bench-sanity` does both).
set -euo pipefail
exe=${1:-bench-c/sanity}
measure() { # mode n -> total instructions
    local out
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" "$exe" "$1" "$2" >/dev/null 2>&1
    awk '/^totals:/ { print $2; exit }' "$out"
    rm -f "$out"
}
for spec in "disabled 1000000 2000000" "check 1000000 2000000" "ring 100000 200000" \
    "backtrace 10000 20000"; do
    set -- $spec
    a=$(measure "$1" "$2")
    b=$(measure "$1" "$3")
    echo "$1: $(( (b - a) / ($3 - $2) )).$(( ((b - a) * 100 / ($3 - $2)) % 100 )) instructions/call ($a for $2 calls, $b for $3)"
done
