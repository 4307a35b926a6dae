#!/bin/sh
# Makes libvlog.a's vlog_init a weak definition, in place: a program linked
# with Open vSwitch's static library, which defines a vlog_init of its own,
# gets Open vSwitch's instead of a "multiple definition" error (vlog starts
# at its first call without it; vlog(3), NAMESAKES).
#
# Then links libvlog.so.0 from the static library cargo builds, with the version
# script libvlog.map: every exported name under its version node, nothing
# else exported. cargo cannot make such a library itself: rustc hands the
# linker a version script of its own (unversioned), and GNU ld takes only
# one; `.symver` directives in the Rust code would break every static link
# of libvlog.a. Used by the Makefile and the tests, so that what the tests
# load is what `make install` installs.
#
#   link/libvlog.sh LIBVLOG_A OUTPUT [CC_FLAGS...]   (LIBVLOG_A is changed)
set -eu
here=$(dirname "$0")
lib=$1
out=$2
shift 2
${OBJCOPY:-objcopy} --weaken-symbol=vlog_init "$lib"
# The libraries are those `rustc --print native-static-libs` names for
# the static library (Rust's std needs libgcc_s to unwind); --as-needed
# keeps only those used. Full RELRO and a non-executable stack, as rustc
# links a cdylib.
${CC:-cc} -shared "$@" -o "$out.$$.tmp" \
    -Wl,--whole-archive "$lib" -Wl,--no-whole-archive \
    -Wl,--version-script="$here/libvlog.map" -Wl,-soname,libvlog.so.0 \
    -Wl,-z,defs -Wl,--gc-sections -Wl,-z,relro,-z,now -Wl,-z,noexecstack \
    -Wl,--as-needed -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
# A name of this run's own: two builds at once (tests that install) never
# move each other's file.
mv "$out.$$.tmp" "$out"
