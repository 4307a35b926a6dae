#!/usr/bin/env bash
# glibc's syslog(3) against libvlog-syslog.so's, in one run: instructions per
# call (callgrind: the difference between runs of N1 and N2 calls) and ns per
# call (the median of REPEAT runs, the modes taking turns). /dev/log is a
# drain (bench-c/syslog_drain) in a mount namespace of the run's own, so this
# needs root. `make bench-syslog` builds what it needs and runs it.
set -euo pipefail
lib=$(realpath "${1:-target/release/libvlog-syslog.so}")
exe=$(realpath bench-c/syslog)
N=${N:-200000} ROUNDS=${ROUNDS:-5} REPEAT=${REPEAT:-5} N1=${N1:-20000} N2=${N2:-40000}
dir=$(mktemp -d)
bench-c/syslog_drain "$dir/log.sock" & drain=$!
trap 'kill $drain 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do [ -S "$dir/log.sock" ] && break; sleep 0.1; done

# in_ns VAR=VALUE... PROGRAM ARGS...: with /dev/log the drain's socket.
in_ns() {
    unshare --mount --propagation private -- sh -c 'set -e; dir=$1; shift
mkdir -p "$dir/up" "$dir/work"
mount -t overlay overlay -o "lowerdir=/dev,upperdir=$dir/up,workdir=$dir/work" /dev
ln -sfn "$dir/log.sock" /dev/log
exec env "$@"' sh "$dir" "$@"
}

names=("glibc, masked" "glibc, to /dev/log" "vlog, masked" "vlog, filtered out"
    "vlog, ring only" "vlog, ring + /dev/log")
modes=(masked sent masked sent sent sent)
envs=("" "" "LD_PRELOAD=$lib" "LD_PRELOAD=$lib VLOG_FILTERS=4:bench"
    "LD_PRELOAD=$lib VLOG_OUTPUTS=4:syslog" "LD_PRELOAD=$lib")

instructions() { # mode env n -> total instructions
    local out=$dir/callgrind.out
    # A 64 KiB ring, full after the first thousand calls of the warm-up: the
    # steady state, whose instructions per call do not depend on the ring's
    # size, whatever the default (an 8 MiB ring would fill only after
    # 80,000). The ns runs take the default, full within their first round.
    # shellcheck disable=SC2086
    in_ns VLOG_BUFFER_SIZE=64K $2 valgrind --tool=callgrind --callgrind-out-file="$out" "$exe" "$1" "$3" >/dev/null 2>&1
    awk '/^totals:/ { print $2; exit }' "$out"
}

declare -A ns
for r in $(seq "$REPEAT"); do
    for i in "${!names[@]}"; do
        # shellcheck disable=SC2086
        ns[$i,$r]=$(in_ns ${envs[$i]} "$exe" "${modes[$i]}" "$N" "$ROUNDS")
    done
done
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
declare -a med
for i in "${!names[@]}"; do
    med[$i]=$(for r in $(seq "$REPEAT"); do echo "${ns[$i,$r]}"; done | median)
done
echo "| mode | instructions per call | ns per call | x glibc to /dev/log |"
echo "| --- | ---: | ---: | ---: |"
for i in "${!names[@]}"; do
    a=$(instructions "${modes[$i]}" "${envs[$i]}" "$N1")
    b=$(instructions "${modes[$i]}" "${envs[$i]}" "$N2")
    # Each run makes N calls to warm up, then N measured.
    per=$(awk -v a="$a" -v b="$b" -v n=$((2 * (N2 - N1))) 'BEGIN { printf "%.1f", (b - a) / n }')
    ratio=$(awk -v x="${med[$i]}" -v g="${med[1]}" 'BEGIN { printf "%.3f", x / g }')
    echo "| ${names[$i]} | $per | ${med[$i]} | $ratio |"
done
