#!/usr/bin/env bash
# What fields a thread carries cost (vlog_thread_field_set): callgrind
# instructions per call (bench-c/count.sh: the difference between N and 2N
# calls, so set-up cancels) of the recorded call into a full ring without
# and with two thread fields (a 12-byte request id and an integer), and of
# a disabled call and a filtered vlog() without and with them, on the six
# messages; then the median ns per call over ROUNDS runs of the recorded
# call, both taken in turn in each round, and their ratio. Usage, from the
# repo root after `make bench-c/bench`: bench-c/fields.sh [ROUNDS] [N]
set -euo pipefail
rounds=${1:-7}
n=${2:-100000}
exe=bench-c/bench
names=(staticString stringConcat singleInteger twoIntegers singleDouble complexFormat)
. bench-c/count.sh
count() { per_call "$(total "$1" "$2" "$n")" "$(total "$1" "$2" $((2 * n)))" "$n"; }
echo "| message | recorded | recorded, 2 thread fields | disabled | disabled, fields | vlog() filtered | filtered, fields |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for msg in 0 1 2 3 4 5; do
    row="| ${names[$msg]} |"
    for mode in vlog-ring-full vlog-ring-full-fields vlog-disabled vlog-disabled-fields \
        vlog-fn-filtered vlog-fn-filtered-fields; do
        row+=" $(count "$mode" "$msg") |"
    done
    echo "$row"
done
declare -A ns=()
for _ in $(seq "$rounds"); do
    for mode in vlog-ring-full vlog-ring-full-fields; do
        for msg in 0 1 2 3 4 5; do
            ns[$mode.$msg]+="$("$exe" "$mode" "$msg" "$n" | awk '{ print $1 }') "
        done
    done
done
echo
echo "| message | median ns, recorded | with 2 thread fields | ratio |"
echo "| --- | ---: | ---: | ---: |"
for msg in 0 1 2 3 4 5; do
    a=$(echo "${ns[vlog-ring-full.$msg]}" | tr ' ' '\n' | grep . | median)
    b=$(echo "${ns[vlog-ring-full-fields.$msg]}" | tr ' ' '\n' | grep . | median)
    echo "| ${names[$msg]} | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }') |"
done
