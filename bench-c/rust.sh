#!/usr/bin/env bash
# Instructions per call of a disabled `log::debug!` and `tracing::debug!`
# (bench-rust/: a Rust program with vlog built in) with vlog's bridge
# installed and vlog at its default level (warn), beside the same call with
# no logger, and with vlog keeping another target's debug records (so
# `log`'s max level lets the call through to the bridge's check of its
# target). As bench-c/callgrind.sh: the difference between runs of N1 and
# N2 calls under callgrind, divided by N2 - N1. Run from the repo root
# (`make bench-rust`, which builds it).
set -euo pipefail
exe=${1:-target/bench-rust/release/bench-rust}
measure() { # mode n [VAR=value...] -> total instructions
    local out mode=$1 n=$2
    shift 2
    out=$(mktemp)
    env "$@" valgrind --tool=callgrind --callgrind-out-file="$out" "$exe" "$mode" "$n" >/dev/null 2>&1
    awk '/^totals:/ { print $2; exit }' "$out"
    rm -f "$out"
}
for spec in "log-none" "log-vlog" "log-vlog VLOG_FILTERS=1:other" \
    "tracing-none" "tracing-vlog" "tracing-vlog VLOG_FILTERS=1:other"; do
    set -- $spec
    mode=$1
    shift
    a=$(measure "$mode" 1000000 "$@")
    b=$(measure "$mode" 2000000 "$@")
    echo "$mode${1:+ ($*)}: $(( (b - a) / 1000000 )).$(( ((b - a) * 100 / 1000000) % 100 )) instructions/call ($a for 1000000 calls, $b for 2000000)"
done
