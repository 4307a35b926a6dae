#!/bin/sh
# `make demo-control`: the demo daemon runs (`daemon --serve`), its filters
# are changed through its control socket, and its ring is taken, with
# vlog-ctl; then it is stopped. Each command is printed before it runs.
set -e
ctl=target/release/vlog-ctl
dir=$(mktemp -d)
sock=$dir/vlog.sock
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT

# Prints the command as a shell would take it back, then runs it.
run() {
    shown=
    for a in "$@"; do
        case $a in
        *" "*) shown="$shown '$a'" ;;
        *) shown="$shown $a" ;;
        esac
    done
    echo "\$$shown"
    "$@"
}

echo "\$ VLOG_OUTPUTS=4:stderr VLOG_CONTROL=$sock ./examples/daemon --serve &"
VLOG_OUTPUTS=4:stderr VLOG_CONTROL=$sock ./examples/daemon --serve &
pid=$!
while [ ! -S "$sock" ]; do sleep 0.1; done
sleep 0.5
echo
echo "# What it runs with, as environment variables (no filters: warnings and up are kept)"
run $ctl "$sock" show
run sh -c "$ctl $sock dump | tail -2"
echo
echo "# The disk's debug messages recorded from now on, without a restart"
run $ctl --pid $pid filters "1:daemon.disk 2:daemon.net"
sleep 0.5
run sh -c "$ctl $sock dump --source disk | tail -4"
run sh -c "$ctl $sock dump --source vlog"
run $ctl "$sock" stats
echo
echo "# One statement, not a whole source: the catalog lists every call site (run or not),"
echo "# and a filter names one by file and line (or function, or id)"
run sh -c "$ctl $sock sites | grep -E '^ID|disk.c'"
run $ctl "$sock" filters "1:file=disk.c:23"
sleep 0.5
run sh -c "$ctl $sock dump --source disk | tail -3"
echo
echo "# A backtrace on each record of that line: the frames that called it, each named by"
echo "# vlog-ctl (function, file and line; the daemon reads no file: it sends each object's"
echo "# build-id and the address within it)"
run $ctl "$sock" filters "1:file=disk.c:23 bt:file=disk.c:23"
sleep 0.5
run sh -c "$ctl $sock dump --source disk | grep -A3 disk_submit:23 | tail -4"
echo
echo "# A bad value changes nothing, and says why"
run $ctl "$sock" filters "1:daemon.disk 9:daemon.net" || echo "(exit status $?)"
