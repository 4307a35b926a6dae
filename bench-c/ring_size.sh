#!/usr/bin/env bash
# How many records a full ring holds, by the kind of record and the ring's
# size (vlog(7), RING SIZE; BENCHMARKS.md, "How many records a ring
# holds"): each kind logged 400,000 times into a ring file, then counted by
# vlog-dump --stats; then what a ring in memory costs, in resident KiB over
# the process's own, after a warning alone and after 400,000 debug records
# (bench-c/ring_memory.c). Usage, from the repo root after `make lib`:
# bench-c/ring_size.sh [SIZE...]
set -euo pipefail
sizes=("${@:-64K 1M 16M}")
read -r -a sizes <<<"${sizes[*]}"
exe=$(mktemp -d)/ring_size
ring=$(dirname "$exe")/r.ring
trap 'rm -rf "$(dirname "$exe")"' EXIT
for prog in ring_size ring_memory; do
    cc -O2 -Wall -Wextra -Werror -Iinclude "bench-c/$prog.c" -o "$(dirname "$exe")/$prog" \
        target/release/libvlog.a -lpthread -ldl -lm
done
kinds=("a message without arguments" "three or four arguments" "two structured fields")
header="| record | bytes |"
for size in "${sizes[@]}"; do header+=" in $size |"; done
echo "$header"
echo "| --- | ---: |$(for _ in "${sizes[@]}"; do printf ' ---: |'; done)"
for kind in 0 1 2; do
    counts=
    bytes=
    for size in "${sizes[@]}"; do
        rm -f "$ring"
        VLOG_FILTERS=1:myd VLOG_OUTPUTS=4:stderr VLOG_BUFFER_SIZE="$size" \
            VLOG_BUFFER_FILE="$ring" "$exe" "$kind"
        stats=$(target/release/vlog-dump --stats "$ring")
        held=$(sed -n 's/^held: //p' <<<"$stats")
        data=$(sed -n 's/^size: //p' <<<"$stats")
        # Bytes per record: the first size's data area over what it held.
        [ -n "$bytes" ] || bytes=$((data / held))
        counts+=" $held |"
    done
    echo "| ${kinds[$kind]} | $bytes |$counts"
done
echo
header="| resident KiB the records added |"
for size in "${sizes[@]}"; do header+=" $size |"; done
echo "$header"
echo "| --- |$(for _ in "${sizes[@]}"; do printf ' ---: |'; done)"
for n in 0 400000; do
    row=
    for size in "${sizes[@]}"; do
        row+=" $(VLOG_FILTERS=1:myd VLOG_OUTPUTS=3:stderr VLOG_BUFFER_SIZE="$size" \
            "$(dirname "$exe")/ring_memory" "$n" 2>/dev/null) |"
    done
    if [ "$n" = 0 ]; then what="a warning"; else what="a warning and $n debug records"; fi
    echo "| $what |$row"
done
