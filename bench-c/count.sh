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
