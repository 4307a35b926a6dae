#!/usr/bin/env bash
# What an error's context costs the thread that logs the error
# (bench-c/context.c): instructions per iteration under callgrind (the
# difference between ITER and 2*ITER iterations, so set-up cancels) and the
# median ns over ROUNDS runs, with contexts of 0 (none), 5 and 20 records
# after 20 debug records each. Usage, from the repo root after
# `make bench-c/context`: bench-c/context.sh [ROUNDS] [ITER]
set -euo pipefail
. bench-c/count.sh
rounds=${1:-7}
iter=${2:-2000}
exe=bench-c/context
echo "| context | instructions per iteration | median ns per iteration | ns as a multiple of none |"
echo "| --- | ---: | ---: | ---: |"
declare -A ns=()
for _ in $(seq "$rounds"); do
    for n in 0 5 20; do
        ns[$n]+="$("$exe" "$n" 20 $((iter * 10)) | awk '{ print $1 }') "
    done
done
base=$(echo "${ns[0]}" | tr ' ' '\n' | grep . | median)
for n in 0 5 20; do
    a=$(total "$n" 20 "$iter")
    b=$(total "$n" 20 $((iter * 2)))
    med=$(echo "${ns[$n]}" | tr ' ' '\n' | grep . | median)
    echo "| $n records | $(( (b - a) / iter )) | $med | $(awk -v a="$med" -v b="$base" 'BEGIN { printf "%.2f", a / b }') |"
done
