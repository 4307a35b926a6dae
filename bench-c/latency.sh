#!/usr/bin/env bash
# The caller's latency in a back-to-back burst into a file: N calls (a
# million by default) of one message with nothing between them, each call
# timed from the previous one's return (the clock read once a call, in
# every lap alike), vlog's writer thread against spdlog's async logger (a
# queue of 2^18 messages, one worker thread, blocking when full) into the
# same kind of file, ROUNDS rounds interleaved. vlog's ring is the default
# 4 MiB, which the burst overflows: a caller whose record would overwrite a
# line not yet written has one step (64 KiB) of lines written first. Every
# line of every call is checked to be in the file (the programs' checks
# count them). Prints, per message and logger, the medians over the rounds
# of p50, p99, p99.99 and the longest call (ns), and of the calls over
# 1 ms. Usage, from the repo root: make bench-latency, or after
# `make bench-c/latency bench-c/latency_spdlog`: bench-c/latency.sh [ROUNDS] [N]
set -euo pipefail
rounds=${1:-3}
n=${2:-1000000}
names=(staticString stringConcat singleInteger twoIntegers singleDouble complexFormat)
progs=("bench-c/latency vlog-ring-file")
[ -x bench-c/latency_spdlog ] && progs+=("bench-c/latency_spdlog spdlog-async-file")
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "| message | logger | p50 ns | p99 ns | p99.99 ns | longest call ns | calls over 1 ms |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
for msg in ${MSGS:-0 1 2 3 4 5}; do
    declare -A got=()
    for _ in $(seq "$rounds"); do
        for p in "${progs[@]}"; do
            got[$p]+="$($p "$msg" "$n")"$'\n'
        done
    done
    for p in "${progs[@]}"; do
        row="| ${names[$msg]} | ${p##* } |"
        for col in 1 2 3 4 5; do
            row="$row $(echo "${got[$p]}" | grep . | awk -v c=$col '{ print $c }' | median) |"
        done
        echo "$row"
    done
    unset got
done
