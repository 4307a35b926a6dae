#!/bin/sh
# Builds libvlog-syslog.so: the C part (vlog-syslog.c) linked with the
# vlog static library, exporting only the functions it puts in front of
# glibc's (vlog-syslog.map); the core's own calls to sigaction go to
# glibc's (--wrap). Used by the Makefile and by the tests.
#
#   preload/build.sh LIBVLOG_A OUTPUT [CC_FLAGS...]
set -eu
here=$(dirname "$0")
lib=$1
out=$2
shift 2
${CC:-cc} -shared -fPIC -O2 -Wall -Wextra -Werror "$@" \
    -I"$here/../include" "$here/vlog-syslog.c" -o "$out.$$.tmp" "$lib" \
    -Wl,--version-script="$here/vlog-syslog.map" -Wl,-soname,libvlog-syslog.so \
    -Wl,-z,defs -Wl,--gc-sections -Wl,--wrap=sigaction -Wl,-S -lpthread -ldl -lm
# A name of this run's own: two builds at once (tests that install) never
# move each other's file.
mv "$out.$$.tmp" "$out"
