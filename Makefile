# The two commands: `make demo` runs the demo daemon, `cargo test` runs every
# test. The rest builds the library for C programs.

CARGO ?= cargo
CC ?= cc
CFLAGS ?= -O2 -g -Wall -Wextra -Werror
LIBS = -lpthread -ldl -lm
STATIC_LIB = target/release/libvlog.a

.PHONY: all lib demo test clean

all: lib

lib:
	$(CARGO) build --release

examples/daemon: lib examples/daemon.c examples/net.c examples/disk.c examples/daemon.h include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude examples/daemon.c examples/net.c examples/disk.c -o $@ $(STATIC_LIB) $(LIBS)

# The flight-recorder configuration: debug messages from the daemon's sources
# are recorded in the ring, while stderr prints only warnings and errors.
demo: examples/daemon
	@echo '$$ VLOG_FILTERS="1:daemon" VLOG_OUTPUTS="3:stderr" VLOG_BUFFER_SIZE=16K ./examples/daemon'
	@VLOG_FILTERS="1:daemon" VLOG_OUTPUTS="3:stderr" VLOG_BUFFER_SIZE=16K ./examples/daemon

test:
	$(CARGO) test

clean:
	$(CARGO) clean
	rm -f examples/daemon

# Callgrind instruction counts for a disabled call and a ring-only call; see
# BENCHMARKS.md.
bench-c/sanity: lib bench-c/sanity.c include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude bench-c/sanity.c -o $@ $(STATIC_LIB) $(LIBS)

.PHONY: bench-sanity
bench-sanity: bench-c/sanity
	bench-c/callgrind.sh bench-c/sanity
