#!/bin/sh
# Compiler or linker flags for the peer loggers that are installed
# (`peers.sh cflags` or `peers.sh libs`); a missing peer is named on stderr and
# its modes are compiled out, never faked.
what=$1
for peer in glib-2.0:HAVE_GLIB lttng-ust:HAVE_LTTNG log4c:HAVE_LOG4C; do
    pkg=${peer%%:*}
    def=${peer##*:}
    if pkg-config --exists "$pkg" 2>/dev/null; then
        if [ "$what" = cflags ]; then
            printf ' -D%s %s' "$def" "$(pkg-config --cflags "$pkg")"
        else
            printf ' %s' "$(pkg-config --libs "$pkg")"
        fi
    elif [ "$what" = cflags ]; then
        echo "bench: $pkg not installed; its modes are left out" >&2
    fi
done
echo
