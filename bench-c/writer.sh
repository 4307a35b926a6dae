#!/usr/bin/env bash
# What a printed line costs with vlog's writer thread, in callgrind
# instructions per line, for the six messages: on the calling thread
# (--toggle-collect=ring_run, the measured loop's function) and in all (the
# writer thread's share is the difference), for the ring alone and the ring
# with a text file or a JSON file, in a ring that holds the run (the *-burst
# modes, drained after the warm-up); the ring alone and with a text file
# again for a thread that carries two fields (the *-burst-fields modes). With OLD=DIR (a checkout built with
# `make bench-c/bench`), the same messages through that build's
# vlog-ring-file, vlog-ring-json and vlog-ring modes, whose lines were written
# on the calling thread. Differences of runs of 100,000 and 200,000 calls (a
# tenth more as warm-up), so start-up cancels. Usage, from the repo root
# after `make bench-c/bench`:  bench-c/writer.sh [OLD=/path/to/old/checkout]
set -euo pipefail
old=${OLD:-}
count() { # exe mode msg n [toggle] -> instructions
    local f
    f=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$f" ${5:+--toggle-collect=$5} \
        "$1" "$2" "$3" "$4" >/dev/null 2>&1
    awk '/^totals:/ { print $2; exit }' "$f"
    rm -f "$f"
}
per_call() { # exe mode msg [toggle]
    local a b
    a=$(count "$1" "$2" "$3" 100000 "${4:-}")
    b=$(count "$1" "$2" "$3" 200000 "${4:-}")
    echo $(( (b - a) / 110000 ))
}
names=(staticString stringConcat singleInteger twoIntegers singleDouble complexFormat)
echo "| message | ring only (caller) | ring + file: caller | ratio | writer thread | ring + JSON: caller | ratio | writer thread | 2 thread fields: ring only (caller) | ring + file: caller | ratio |${old:+ before: ring + file | before: ring + JSON | before: ring |}"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |${old:+ ---: | ---: | ---: |}"
for msg in 0 1 2 3 4 5; do
    ring=$(per_call bench-c/bench vlog-ring-burst $msg ring_run)
    fc=$(per_call bench-c/bench vlog-file-burst $msg ring_run)
    ft=$(per_call bench-c/bench vlog-file-burst $msg)
    jc=$(per_call bench-c/bench vlog-json-burst $msg ring_run)
    jt=$(per_call bench-c/bench vlog-json-burst $msg)
    rf=$(per_call bench-c/bench vlog-ring-burst-fields $msg ring_run)
    ff=$(per_call bench-c/bench vlog-file-burst-fields $msg ring_run)
    row="| ${names[$msg]} | $ring | $fc | $(awk -v a=$fc -v b=$ring 'BEGIN{printf "%.2f", a/b}') | $((ft - fc)) | $jc | $(awk -v a=$jc -v b=$ring 'BEGIN{printf "%.2f", a/b}') | $((jt - jc)) | $rf | $ff | $(awk -v a=$ff -v b=$rf 'BEGIN{printf "%.2f", a/b}') |"
    if [ -n "$old" ]; then
        of=$(per_call "$old/bench-c/bench" vlog-ring-file $msg)
        oj=$(per_call "$old/bench-c/bench" vlog-ring-json $msg)
        orr=$(per_call "$old/bench-c/bench" vlog-ring $msg)
        row="$row $of | $oj | $orr |"
    fi
    echo "$row"
done
