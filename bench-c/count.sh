# Sourced by the scripts that count bench-c/bench's instructions per call
# under callgrind (lock.sh, sites.sh): the difference between runs of N and
# 2N timed calls, divided by the calls between them. The harness
# (harness.h) makes N / 10 + 1 warm-up calls before the N it times, and
# both are counted.
calls() { echo $(($1 + $1 / 10 + 1)); }
# per_call TOTAL_N TOTAL_2N N
per_call() {
    awk -v a="$1" -v b="$2" -v c="$(($(calls $((2 * $3))) - $(calls "$3")))" \
        'BEGIN { printf "%.1f", (b - a) / c }'
}
# total ARGS...: callgrind's count of every instruction "$exe" (set by the
# script that sources this) executes with ARGS.
total() {
    local out
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" "$exe" "$@" >/dev/null 2>&1
    awk '/^totals:/ { print $2; exit }' "$out"
    rm -f "$out"
}
# median: the median of the numbers on standard input.
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
