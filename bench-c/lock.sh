#!/usr/bin/env bash
# What the flight recorder's call costs, and how much of it runs while the
# logger's lock is held: callgrind instructions per call of the recorded
# call into a full ring (vlog-ring-full), in all and under the lock, for
# the six messages. Exact: the difference between N and 2N calls, so
# set-up cancels (bench-c/count.sh). For the count under the lock the
# library is built a second time with --cfg vlog_lock_profile, where the
# call toggles callgrind's collection (a client request, sys/profile.rs)
# as soon as its compare-and-swap has taken the lock and again once the
# lock is let go of: the count is everything in between, the release
# included, and the second mark's own 3 instructions (its address, a
# register cleared, one rotation). The product's code differs from the
# profiled one only by the marks. MODE=vlog-file-burst measures a line vlog's
# writer thread prints (a ring that holds the run; "in all" then includes
# the writer thread's work), MODE=vlog-sync-burst one its caller writes
# (a `?sync` file, as an error's line is). Usage, from the repo root after
# `make bench-c/bench`: [MODE=...] bench-c/lock.sh [N]
set -euo pipefail
n=${1:-100000}
mode=${MODE:-vlog-ring-full}
exe=bench-c/bench
profiled=target/lock-profile/release/libvlog.a
RUSTFLAGS="--cfg vlog_lock_profile" cargo build --release --quiet --target-dir target/lock-profile
${CC:-cc} -O2 -g -Wall -Wextra -Werror -Iinclude bench-c/bench.c -o bench-c/bench-lock \
    "$profiled" -lpthread -ldl -lm
lexe=bench-c/bench-lock
count() { # MSG CALLS [under-lock]
    local out args=() prog=$exe
    out=$(mktemp)
    [ $# -gt 2 ] && args=(--collect-atstart=no) && prog=$lexe
    valgrind --tool=callgrind "${args[@]}" --callgrind-out-file="$out" \
        "$prog" "$mode" "$1" "$2" >/dev/null 2>&1
    awk '/^totals:/ { print $2; exit }' "$out"
    rm -f "$out"
}
. bench-c/count.sh
names=(staticString stringConcat singleInteger twoIntegers singleDouble complexFormat)
echo "| message | instructions per call | of which under the lock |"
echo "| --- | ---: | ---: |"
for msg in 0 1 2 3 4 5; do
    all=$(per_call "$(count $msg "$n")" "$(count $msg $((2 * n)))" "$n")
    lock=$(per_call "$(count $msg "$n" lock)" "$(count $msg $((2 * n)) lock)" "$n")
    echo "| ${names[$msg]} | $all | $lock |"
done
