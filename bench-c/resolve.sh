#!/usr/bin/env bash
# Logging calls' latency while collectors' names cannot be resolved, beside
# the same run with no collector (the floor), in one run: each in a network
# and mount namespace of its own (so this needs root) whose /etc/resolv.conf
# names a server on loopback that reads every query and answers none.
# `make bench-resolve` builds what it needs and runs it. N calls per run;
# REPEAT runs of each, taking turns.
set -euo pipefail
exe=$(realpath "${1:-bench-c/resolve}")
N=${N:-300000} REPEAT=${REPEAT:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf 'nameserver 127.0.0.1\noptions timeout:30 attempts:2\n' > "$dir/resolv.conf"
printf '127.0.0.1 localhost\n' > "$dir/hosts"
cat > "$dir/dns.py" <<'PY'
import os, socket, sys
parent = os.getppid()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
s.settimeout(0.2)
open(sys.argv[1] + "/dns-up", "w").close()
while os.getppid() == parent:
    try:
        s.recvfrom(512)
        open(sys.argv[1] + "/dns-asked", "a").write("q\n")
    except socket.timeout:
        pass
PY

run() { # mode: one row
    rm -f "$dir/dns-up" "$dir/dns-asked" "$dir/bench.log"
    local outputs="1:file:$dir/bench.log"
    [ "$1" = collector ] && outputs="1:file:$dir/bench.log 2:syslog:d@udp://startup.example.net:514"
    VLOG_OUTPUTS="$outputs" VLOG_LEVEL=info VLOG_CONTROL="$dir/ctl.sock" \
    unshare --net --mount -- sh -c 'set -e; d=$1; shift
ip link set lo up
mount --bind "$d/resolv.conf" /etc/resolv.conf
mount --bind "$d/hosts" /etc/hosts
python3 "$d/dns.py" "$d" &
while [ ! -e "$d/dns-up" ]; do sleep 0.05; done
exec "$@"' sh "$dir" "$exe" "$1" "$dir" "$N"
    if [ "$1" = collector ] && [ ! -e "$dir/dns-asked" ]; then
        echo "resolve.sh: the name server was never asked" >&2
        exit 1
    fi
}

echo "| outputs | calls | median ns | p99 ns | p99.9 ns | longest us | vlog_set_outputs ms | control outputs ms |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for _ in $(seq "$REPEAT"); do
    run file
    run collector
done
