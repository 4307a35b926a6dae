#!/usr/bin/env bash
# Median ns per call (ROUNDS rounds, the modes interleaved in each, so that
# the machine's noise falls on all of them alike) for a printed line: vlog
# with its writer thread (a ring that holds the run, drained after the
# warm-up; and vlog-ring-file, a 4 MiB ring the run overflows, where callers
# write what the ring would lose), beside spdlog's file sink flushed per line
# and its async logger, and vlog's ring-only record. Usage, from the repo
# root after `make bench`: bench-c/writer_ns.sh [ROUNDS] [N]
set -euo pipefail
rounds=${1:-5}
n=${2:-100000}
names=(staticString stringConcat singleInteger twoIntegers singleDouble complexFormat)
modes=("bench-c/bench vlog-ring-burst" "bench-c/bench vlog-file-burst" "bench-c/bench vlog-json-burst"
       "bench-c/bench vlog-ring-file" "bench-c/bench_spdlog spdlog-file" "bench-c/bench_spdlog spdlog-async-file")
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "| message | vlog ring only | vlog ring + file | ring + JSON | ring + file, ring overflowing | spdlog file (flushed per line) | spdlog async file | file / spdlog file | file / spdlog async |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for msg in 0 1 2 3 4 5; do
    declare -A got=()
    for _ in $(seq "$rounds"); do
        for m in "${modes[@]}"; do
            got[$m]+="$($m "$msg" "$n" | awk '{ print $1 }') "
        done
    done
    row="| ${names[$msg]} |"
    declare -A med=()
    for m in "${modes[@]}"; do
        med[$m]=$(echo "${got[$m]}" | tr ' ' '\n' | grep . | median)
        row="$row ${med[$m]} |"
    done
    f=${med["bench-c/bench vlog-file-burst"]}
    row="$row $(awk -v a="$f" -v b="${med["bench-c/bench_spdlog spdlog-file"]}" 'BEGIN { printf "%.2f", a / b }') |"
    row="$row $(awk -v a="$f" -v b="${med["bench-c/bench_spdlog spdlog-async-file"]}" 'BEGIN { printf "%.2f", a / b }') |"
    echo "$row"
    unset got med
done
