#!/usr/bin/env bash
# Threads into one logger, in one run: million messages per second into one
# full ring from 1, 2 and 8 threads, and as a multiple of one thread, for
# vlog, spdlog's backtrace ring and the four floors (bench-c/bench's modes),
# the median of ROUNDS runs, the modes taken in turn in every round so that
# the machine's noise falls on all of them alike. Wall clock on a shared
# machine: compare within one run only. Usage, from the repo root after
# `make bench-c/bench bench-c/bench_spdlog`: bench-c/threads.sh [ROUNDS] [N]
# BESIDE=EXE adds another build's bench-c/bench (another commit's library,
# say) to the same run, its rows named beside-vlog-threads-N.
set -euo pipefail
. bench-c/count.sh
rounds=${1:-7}
n=${2:-100000}
names=(staticString stringConcat singleInteger twoIntegers singleDouble complexFormat)
runs=()
for t in 1 2 8; do runs+=("bench-c/bench vlog-threads-$t"); done
if [ -n "${BESIDE:-}" ]; then
    for t in 1 2 8; do runs+=("$BESIDE vlog-threads-$t"); done
fi
for t in 1 2; do
    runs+=("bench-c/bench floor-short-lock-threads-$t" "bench-c/bench floor-shared-line-threads-$t")
done
for t in 1 2 8; do
    runs+=("bench-c/bench floor-one-lock-threads-$t" "bench-c/bench floor-shared-ring-threads-$t")
done
if [ -x bench-c/bench_spdlog ]; then
    for t in 1 2 8; do runs+=("bench-c/bench_spdlog spdlog-threads-$t"); done
fi
declare -A ns=()
for _ in $(seq "$rounds"); do
    for r in "${runs[@]}"; do
        for msg in 0 1 2 3 4 5; do
            # ns per call of each thread; a thread's calls are all its own.
            ns[$r.$msg]+="$($r "$msg" "$n" | awk '{ print $1 }') "
        done
    done
done
printf "| mode | "; printf "%s | " "${names[@]}"; echo
echo "| --- |$(printf ' ---: |%.0s' 1 2 3 4 5 6)"
for r in "${runs[@]}"; do
    mode=${r##* }
    [ -n "${BESIDE:-}" ] && [[ $r == "$BESIDE "* ]] && mode=beside-$mode
    threads=${mode##*-}
    one="${r%-*}-1"
    row="| $mode |"
    for msg in 0 1 2 3 4 5; do
        t=$(echo "${ns[$r.$msg]}" | tr ' ' '\n' | grep . | median)
        t1=$(echo "${ns[$one.$msg]}" | tr ' ' '\n' | grep . | median)
        # Messages per second: each of `threads` threads makes one per t ns.
        row+=$(awk -v t="$t" -v t1="$t1" -v k="$threads" \
            'BEGIN { r = k * 1e3 / t; r1 = 1e3 / t1; printf " %.1f (%.2fx) |", r, r / r1 }')
    done
    echo "$row"
done
