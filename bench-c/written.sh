#!/usr/bin/env bash
# A line in the file, in all: callgrind instructions per line of every
# thread (the difference between runs of 100,000 and 200,000 calls, a tenth
# more as warm-up), for the six messages: a line vlog's caller writes itself
# (a `?sync` file, as an error's line is written), a line vlog's writer
# thread writes (vlog-file-burst), spdlog's file sink flushed after every
# line and spdlog's async logger into the same sink, with the ratios the
# issue tracker's targets name. Usage, from the repo root after
# `make bench-c/bench bench-c/bench_spdlog`: bench-c/written.sh
set -euo pipefail
count() { # exe mode msg n -> instructions of every thread
    local f
    f=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$f" "$1" "$2" "$3" "$4" >/dev/null 2>&1
    awk '/^totals:/ { print $2; exit }' "$f"
    rm -f "$f"
}
per_call() { # exe mode msg
    local a b
    a=$(count "$1" "$2" "$3" 100000)
    b=$(count "$1" "$2" "$3" 200000)
    echo $(( (b - a) / 110000 ))
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
names=(staticString stringConcat singleInteger twoIntegers singleDouble complexFormat)
echo "| message | vlog ?sync (caller writes) | vlog writer thread (all threads) | spdlog file, flushed | spdlog async | ?sync / spdlog flushed | writer thread / spdlog flushed | writer thread / spdlog async |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for msg in 0 1 2 3 4 5; do
    s=$(per_call bench-c/bench vlog-sync-burst $msg)
    w=$(per_call bench-c/bench vlog-file-burst $msg)
    f=$(per_call bench-c/bench_spdlog spdlog-file $msg)
    a=$(per_call bench-c/bench_spdlog spdlog-async-file $msg)
    echo "| ${names[$msg]} | $s | $w | $f | $a | $(ratio "$s" "$f") | $(ratio "$w" "$f") | $(ratio "$w" "$a") |"
done
