#!/usr/bin/env bash
# The error call of bench-c/error_walk.c after RECORDS ring-only records:
# median ms over ROUNDS runs, this build with VLOG_CONTEXT=0 and with the
# default context, and, with OLD=DIR (a checkout of an earlier commit,
# built with `cargo build --release`), the same program built against that
# library, in the same rounds. Usage, from the repo root after
# `make bench-c/error_walk`: [OLD=DIR] bench-c/error_walk.sh [ROUNDS] [RECORDS]
set -euo pipefail
rounds=${1:-5}
records=${2:-4000000}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
old=
if [ -n "${OLD:-}" ]; then
    old=$(mktemp)
    cc -O2 -I"$OLD/include" bench-c/error_walk.c -o "$old" "$OLD/target/release/libvlog.a" -lpthread -ldl -lm
fi
declare -A got=()
for _ in $(seq "$rounds"); do
    got[none]+="$(VLOG_CONTEXT=0 bench-c/error_walk "$records" | awk '{ print $1 }') "
    got[context]+="$(bench-c/error_walk "$records" | awk '{ print $1 }') "
    if [ -n "$old" ]; then
        got[old]+="$("$old" "$records" | awk '{ print $1 }') "
    fi
done
for k in old none context; do
    [ -n "${got[$k]:-}" ] || continue
    echo "$k: $(echo "${got[$k]}" | tr ' ' '\n' | grep . | median) ms"
done
[ -z "$old" ] || rm -f "$old"
