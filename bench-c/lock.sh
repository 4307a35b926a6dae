#!/usr/bin/env bash
# What the flight recorder's call costs, and how much of it runs while the
# logger's lock is held: callgrind instructions per call of the recorded
# call into a full ring (vlog-ring-full), in all and inside
# `State::reserve_words` (everything the lock's holder does between taking
# the lock and letting go of it, the room made by evicting included), for
# the six messages. Exact: the difference between N and 2N calls, so
# set-up cancels. The library is built a second time with
# --cfg vlog_lock_profile, which makes reserve_words a function of its own
# (inlined otherwise): its count includes that function's call, entry and
# return, which the product does not make. Usage, from the repo root after
# `make bench-c/bench`: bench-c/lock.sh [N]
set -euo pipefail
n=${1:-100000}
exe=bench-c/bench
profiled=target/lock-profile/release/libvlog.a
RUSTFLAGS="--cfg vlog_lock_profile" cargo build --release --quiet --target-dir target/lock-profile
${CC:-cc} -O2 -g -Wall -Wextra -Werror -Iinclude bench-c/bench.c -o bench-c/bench-lock \
    "$profiled" -lpthread -ldl -lm
lexe=bench-c/bench-lock
count() { # MSG CALLS [TOGGLE]
    local out args=() prog=$exe
    out=$(mktemp)
    [ $# -gt 2 ] && args=(--collect-atstart=no "--toggle-collect=$3") && prog=$lexe
    valgrind --tool=callgrind "${args[@]}" --callgrind-out-file="$out" \
        "$prog" vlog-ring-full "$1" "$2" >/dev/null 2>&1
    callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
    rm -f "$out"
}
per_call() { awk -v a="$1" -v b="$2" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / n }'; }
names=(staticString stringConcat singleInteger twoIntegers singleDouble complexFormat)
echo "| message | instructions per call | of which under the lock |"
echo "| --- | ---: | ---: |"
for msg in 0 1 2 3 4 5; do
    all=$(per_call "$(count $msg "$n")" "$(count $msg $((2 * n)))")
    lock=$(per_call "$(count $msg "$n" '*reserve_words*')" "$(count $msg $((2 * n)) '*reserve_words*')")
    echo "| ${names[$msg]} | $all | $lock |"
done
