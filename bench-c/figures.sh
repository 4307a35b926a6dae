#!/usr/bin/env bash
# Reruns the scripts behind every figure of README.md and BENCHMARKS.md, in
# the order of BENCHMARKS.md's sections, and prints each section's heading,
# its command and the table rows it made, to paste (`make bench-figures`,
# which also keeps them in bench-figures.out). Instruction counts are
# callgrind's, exact on any machine; the ns figures are ratios within one
# run, and need a machine with no other load for their absolute values.
#
# FIGURES=LIST runs only the sections named (space-separated, as printed in
# the headings: bench printed context lock threads fields sites ring_size
# sanity rust dump relay fluent control syslog resolve printf soak). A section
# whose requirements are missing (root for syslog and resolve; strace; the
# peers) says so and the run goes on. The sections that compare with an
# earlier commit (context's error walk, threads' BESIDE) build that commit
# in a temporary worktree. Usage, from the repo root: bench-c/figures.sh
set -uo pipefail
cd "$(dirname "$0")/.."
only=" ${FIGURES:-} "
failed=()

wanted() { [ "$only" = "  " ] || [[ "$only" == *" $1 "* ]]; }

# section NAME TITLE: the heading every section's rows come under.
section() {
    echo
    echo "## [$1] $2 ($(date -u '+%Y-%m-%d %H:%M'), $(git rev-parse --short HEAD))"
}

# run COMMAND...: prints the command, runs it, and keeps it if it failed.
run() {
    echo "\$ $*"
    if ! "$@"; then
        echo "(failed: $*)"
        failed+=("$*")
    fi
}

# old_build COMMIT: a worktree of COMMIT with its library and bench-c/bench
# built, its path in $base (removed at the end).
worktrees=()
old_build() {
    base=$(mktemp -d)/base
    git worktree add -q --detach "$base" "$1" || return 1
    worktrees+=("$base")
    (cd "$base" && cargo build --release --quiet && make -s bench-c/bench)
}
cleanup() {
    for dir in "${worktrees[@]}"; do
        git worktree remove --force "$dir" 2>/dev/null
    done
}
trap cleanup EXIT

make -s lib bench-c/bench bench-c/sanity bench-c/context bench-c/error_walk bench-c/dump_time >/dev/null || exit 1
pkg-config --exists spdlog && make -s bench-c/bench_spdlog bench-c/latency bench-c/latency_spdlog >/dev/null

if wanted bench; then
    section bench "vlog beside other loggers (README: recorded ns, disabled instructions)"
    run make -s bench
fi

if wanted printed; then
    section printed "Printed lines: vlog's writer thread (README: caller ns)"
    run bench-c/writer.sh
    if pkg-config --exists spdlog; then
        run bench-c/written.sh
        run bench-c/writer_ns.sh 5 100000
        run bench-c/latency.sh 3 1000000
    else
        echo "(spdlog not installed: written.sh, writer_ns.sh and latency.sh left out)"
    fi
    if command -v strace >/dev/null; then
        run bench-c/syscalls.sh vlog-file-burst 10000
    else
        echo "(strace not installed: syscalls.sh left out)"
    fi
fi

if wanted context; then
    section context "An error's context"
    run bench-c/callgrind.sh bench-c/sanity
    run bench-c/context.sh 7 2000
    if old_build 9071e8e; then
        OLD=$base run bench-c/error_walk.sh 5 4000000
    else
        echo "(9071e8e could not be built: error_walk.sh without it)"
        run bench-c/error_walk.sh 5 4000000
    fi
fi

if wanted lock; then
    section lock "The flight recorder's call: instructions, and under the lock"
    run bench-c/lock.sh
    MODE=vlog-file-burst run bench-c/lock.sh
    MODE=vlog-sync-burst run bench-c/lock.sh
fi

if wanted threads; then
    section threads "Threads into one logger"
    if old_build dac37f3; then
        BESIDE=$base/bench-c/bench run bench-c/threads.sh 7 100000
    else
        echo "(dac37f3 could not be built: threads.sh without it)"
        run bench-c/threads.sh 7 100000
    fi
fi

# simple NAME TITLE COMMAND...: a section that is one command.
simple() {
    local name=$1 title=$2
    shift 2
    wanted "$name" || return 0
    section "$name" "$title"
    run "$@"
}
simple fields "Fields a thread carries" bench-c/fields.sh 7 100000
simple sites "Call sites: a rule that names them, a limit that leaves calls out" \
    bench-c/sites.sh 7 100000
simple ring_size "How many records a ring holds" bench-c/ring_size.sh 64K 1M 8M 16M
simple sanity "Sanity figures" make -s bench-sanity
simple rust "Rust's log and tracing: a disabled call" make -s bench-rust
simple dump "Dumping a full ring" make -s bench-dump
simple relay "The relay: a child's lines" make -s bench-relay
simple fluent "The fluent output" make -s bench-fluent
simple control "The control socket" make -s bench-control

for root_only in syslog resolve; do
    wanted "$root_only" || continue
    section "$root_only" "make bench-$root_only (needs root)"
    if [ "$(id -u)" = 0 ]; then
        run make -s "bench-$root_only"
        # BENCHMARKS.md's second table of the section: the same with a 64K
        # ring, run right after.
        if [ "$root_only" = resolve ]; then
            VLOG_BUFFER_SIZE=64K run bench-c/resolve.sh bench-c/resolve
        fi
    else
        echo "(not root: make bench-$root_only left out)"
    fi
done

if wanted printf; then
    section printf "printf renderer against glibc"
    VLOG_PRINTF_CASES=10000000 VLOG_PRINTF_SEED=4 \
        run cargo test --quiet --release --lib printf::tests::matches
fi

simple soak "Soak" make -s soak

echo
if [ ${#failed[@]} -gt 0 ]; then
    echo "bench-figures: failed: ${failed[*]}"
    exit 1
fi
echo "bench-figures: every section ran"
