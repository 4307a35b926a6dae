#!/usr/bin/env bash
# What call sites cost (bench-c/bench's modes): a disabled call with and
# without filters that name call sites, a call a site's limit leaves out
# (VLOG_LIMITED, and VLOG_RATELIMIT on plain sites), and the recorded call
# into a full ring for comparison. Instructions per call under callgrind
# (bench-c/count.sh: the difference between N and 2N calls, so set-up
# cancels) and the median
# ns per call over ROUNDS runs, each mode in the same rounds. Usage, from
# the repo root after `make bench-c/bench`: bench-c/sites.sh [ROUNDS] [N]
set -euo pipefail
rounds=${1:-7}
n=${2:-100000}
exe=bench-c/bench
modes="vlog-disabled vlog-site-rule vlog-limited vlog-global-limit vlog-ring-full"
msgs="0 3 5"
. bench-c/count.sh
declare -A ns=()
for _ in $(seq "$rounds"); do
    for mode in $modes; do
        for msg in $msgs; do
            ns[$mode.$msg]+="$("$exe" "$mode" "$msg" $((n * 10)) | awk '{ print $1 }') "
        done
    done
done
echo "| mode | instructions per call (staticString, twoIntegers, complexFormat) | median ns per call (same) |"
echo "| --- | ---: | ---: |"
for mode in $modes; do
    ins="" nss=""
    for msg in $msgs; do
        a=$(total "$mode" "$msg" "$n")
        b=$(total "$mode" "$msg" $((2 * n)))
        ins+="$(per_call "$a" "$b" "$n") / "
        nss+="$(echo "${ns[$mode.$msg]}" | tr ' ' '\n' | grep . | median) / "
    done
    echo "| $mode | ${ins% / } | ${nss% / } |"
done
