# The two commands: `make demo` runs the demo daemon, `cargo test` runs every
# test. The rest builds the library for C programs.

CARGO ?= cargo
CC ?= cc
CFLAGS ?= -O2 -g -Wall -Wextra -Werror
LIBS = -lpthread -ldl -lm
STATIC_LIB = target/release/libvlog.a

.PHONY: all lib demo demo-control test clean install uninstall

all: lib

# libvlog.so.0 (the soname, the name programs linked with -lvlog look for
# at run time), linked from the static library with versioned symbols
# (link/libvlog.sh), and libvlog.so pointing to it; and libvlog-syslog.so,
# the library a daemon that logs with syslog(3) is started with
# (LD_PRELOAD).
SHARED_LIB = target/release/libvlog.so.0
PRELOAD_LIB = target/release/libvlog-syslog.so

lib:
	$(CARGO) build --release -p vlog
	CC="$(CC)" link/libvlog.sh $(STATIC_LIB) $(SHARED_LIB)
	ln -sf libvlog.so.0 target/release/libvlog.so
	CC="$(CC)" preload/build.sh $(STATIC_LIB) $(PRELOAD_LIB)

examples/daemon: lib examples/daemon.c examples/net.c examples/disk.c examples/daemon.h include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude examples/daemon.c examples/net.c examples/disk.c -o $@ $(STATIC_LIB) $(LIBS)

examples/cost: lib examples/cost.c include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude examples/cost.c -o $@ $(STATIC_LIB) $(LIBS)

# vlog's three promises in under a minute. First what a debug statement
# costs, measured live beside printf. Then the flight recorder: debug
# messages from the daemon's sources are recorded in the ring (kept in a
# file), while stderr prints only warnings and errors, an error with the
# last 5 debug records of its thread before it (its context). The daemon
# crashes at the end: its crash dump (the backtrace, resolved here with
# addr2line, then the ring) goes to a file, and vlog-dump reads its ring
# file after it is gone.
DEMO_ENV = VLOG_FILTERS="1:daemon" VLOG_OUTPUTS="3:stderr" VLOG_CONTEXT=5 \
	VLOG_BUFFER_FILE=examples/daemon.ring VLOG_DUMP=file:examples/daemon.crash

demo: examples/daemon examples/cost
	@rm -f examples/daemon.ring examples/daemon.crash examples/daemon.crash.ring
	@echo '# 1. A debug statement that is off costs nothing: measured now, beside printf'
	@echo '$$ ./examples/cost'
	@./examples/cost
	@echo
	@echo '# 2. The flight recorder: debug messages go to the ring, stderr prints warnings'
	@echo '#    and errors, and an error brings the debug records that led to it'
	@echo '$$ $(DEMO_ENV) ./examples/daemon'
	@$(DEMO_ENV) ./examples/daemon; echo "(the daemon is gone: exit status $$?)"
	@echo
	@echo '# 3. The crash dump: what killed it, where (the backtrace, resolved by addr2line),'
	@echo '#    then the ring: the last messages before the crash, over real time'
	@echo '$$ sed -n 1,2p examples/daemon.crash; tail -6 examples/daemon.crash'
	@sed -n 1,2p examples/daemon.crash
	@grep -o 'daemon(+0x[0-9a-f]*)' examples/daemon.crash \
		| sed 's/.*(+\(0x[0-9a-f]*\))/\1/' \
		| addr2line -e examples/daemon -f -C -p 2>/dev/null | grep 'examples/' \
		| sed -e 's|$(CURDIR)/||' -e 's/ (discriminator [0-9]*)//' -e 's/^/    (addr2line:) /' || true
	@tail -6 examples/daemon.crash
	@echo
	@echo '# 4. The ring file outlived the process: the disk'"'"'s debug messages, and how'
	@echo '#    much time a ring of this size holds at this rate'
	@echo '$$ target/release/vlog-dump --source disk examples/daemon.ring | tail -3'
	@target/release/vlog-dump --source disk examples/daemon.ring | tail -3
	@echo '$$ target/release/vlog-dump --stats examples/daemon.ring | grep -E "^(recorded|size|held|covers)"'
	@target/release/vlog-dump --stats examples/daemon.ring | grep -E "^(recorded|size|held|covers)"

# The demo daemon serving requests, its filters changed and its ring taken
# through its control socket with vlog-ctl (README "Change a running
# daemon", vlog-ctl(1)).
demo-control: examples/daemon
	@examples/control-demo.sh

test:
	$(CARGO) test

clean:
	$(CARGO) clean
	rm -f examples/daemon examples/cost examples/daemon.ring examples/daemon.crash examples/daemon.crash.ring

# Callgrind instruction counts for a disabled call and a ring-only call; see
# BENCHMARKS.md.
bench-c/sanity: lib bench-c/sanity.c include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude bench-c/sanity.c -o $@ $(STATIC_LIB) $(LIBS)

.PHONY: bench-sanity
bench-sanity: bench-c/sanity
	bench-c/callgrind.sh bench-c/sanity

# A disabled log::debug! and tracing::debug! in a Rust program with vlog
# built in (bench-rust/, vlog-bridge), beside no logger; see BENCHMARKS.md.
.PHONY: bench-rust
bench-rust:
	$(CARGO) build --release --quiet --manifest-path bench-rust/Cargo.toml --target-dir target/bench-rust
	bench-c/rust.sh target/bench-rust/release/bench-rust

# glibc's syslog(3) against libvlog-syslog.so's, in one run (needs root: a
# mount namespace gives the run a /dev/log of its own); see BENCHMARKS.md.
# The program knows nothing of vlog, and is built as Debian builds.
bench-c/syslog: bench-c/syslog.c
	$(CC) $(CFLAGS) -D_FORTIFY_SOURCE=2 bench-c/syslog.c -o $@

bench-c/syslog_drain: bench-c/syslog_drain.c
	$(CC) $(CFLAGS) bench-c/syslog_drain.c -o $@

.PHONY: bench-syslog
bench-syslog: lib bench-c/syslog bench-c/syslog_drain
	bench-c/syslog.sh $(PRELOAD_LIB)

# Time to dump a full 4 MiB ring; see BENCHMARKS.md.
bench-c/dump_time: lib bench-c/dump_time.c include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude bench-c/dump_time.c -o $@ $(STATIC_LIB) $(LIBS)

bench-c/relay: lib bench-c/relay.c bench-c/harness.h c-tests/count_alloc.h include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude bench-c/relay.c -o $@ $(STATIC_LIB) $(LIBS)

# go-plugin's own relay beside it, built offline from Debian's sources when
# they are there: apt-get install golang-go golang-github-hashicorp-go-plugin-dev
# golang-google-grpc-dev golang-goprotobuf-dev golang-golang-x-net-dev
bench-c/goplugin/relay: bench-c/goplugin/relay.go bench-c/goplugin/hook.go bench-c/goplugin/build.sh
	bench-c/goplugin/build.sh $(CURDIR)/$@

GOPLUGIN_PEER = $(if $(shell command -v go >/dev/null && test -f /usr/share/gocode/src/github.com/hashicorp/go-plugin/client.go && echo y),bench-c/goplugin/relay)

.PHONY: bench-relay
bench-relay: bench-c/relay $(GOPLUGIN_PEER)
	bench-c/relay.py bench-c/relay bench-c/goplugin/relay

# The fluent output beside fluent-logger-golang, built offline from Debian's
# sources when they are there: apt-get install golang-go
# golang-github-fluent-fluent-logger-golang-dev
bench-c/fluent: lib bench-c/fluent.c bench-c/harness.h c-tests/count_alloc.h include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude bench-c/fluent.c -o $@ $(STATIC_LIB) $(LIBS)

bench-c/drain: bench-c/drain.c
	$(CC) $(CFLAGS) bench-c/drain.c -o $@

bench-c/fluentgo/fluentgo: bench-c/fluentgo/main.go bench-c/fluentgo/build.sh
	bench-c/fluentgo/build.sh $(CURDIR)/$@

FLUENT_PEER = $(if $(shell command -v go >/dev/null && test -d /usr/share/gocode/src/github.com/fluent/fluent-logger-golang && echo y),bench-c/fluentgo/fluentgo)

.PHONY: bench-fluent
bench-fluent: bench-c/fluent bench-c/drain $(FLUENT_PEER)
	bench-c/fluent.py bench-c/fluent bench-c/drain bench-c/fluentgo/fluentgo

# What an error's context costs the thread that logs the error (BENCHMARKS.md).
bench-c/context: lib bench-c/context.c include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude bench-c/context.c -o $@ $(STATIC_LIB) $(LIBS)

# What an error costs its caller after a long quiet spell (BENCHMARKS.md).
bench-c/error_walk: lib bench-c/error_walk.c include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude bench-c/error_walk.c -o $@ $(STATIC_LIB) $(LIBS)

.PHONY: bench-sites
bench-sites: bench-c/bench
	bench-c/sites.sh

.PHONY: bench-lock
bench-lock: bench-c/bench
	bench-c/lock.sh

.PHONY: bench-context
bench-context: bench-c/context bench-c/error_walk
	bench-c/context.sh
	bench-c/error_walk.sh

bench-c/control: lib bench-c/control.c bench-c/harness.h c-tests/count_alloc.h include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude bench-c/control.c -o $@ $(STATIC_LIB) $(LIBS)

bench-c/control_fork: lib bench-c/control_fork.c include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude bench-c/control_fork.c -o $@ $(STATIC_LIB) $(LIBS)

# What the control socket costs a logging thread while clients dump,
# follow or stall, how long a fork waits while clients dump, and how fast a
# dump is (BENCHMARKS.md).
.PHONY: bench-control
bench-control: bench-c/control bench-c/control_fork
	bench-c/control.py bench-c/control
	@echo
	@echo "| dumping clients | fork median ms | fork longest ms | recorded call longest ms |"
	@echo "| ---: | ---: | ---: | ---: |"
	@for n in 0 1 4 16; do bench-c/control_fork fork $$n || exit 1; done
	@echo
	@echo "| request | bytes | ms |"
	@echo "| --- | ---: | ---: |"
	@bench-c/control_fork dump
	@bench-c/control_fork dump "--source nomatch"

.PHONY: bench-dump
bench-dump: bench-c/dump_time
	bench-c/dump_time

# Logging calls' latency while collectors' names cannot be resolved (a name
# server that never answers, in a network namespace of the run's own: needs
# root), beside the same run without collectors; see BENCHMARKS.md.
bench-c/resolve: lib bench-c/resolve.c include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude bench-c/resolve.c -o $@ $(STATIC_LIB) $(LIBS)

.PHONY: bench-resolve
bench-resolve: bench-c/resolve
	bench-c/resolve.sh bench-c/resolve

# Side by side with other loggers; see BENCHMARKS.md. The peers come from
# Debian: apt-get install libspdlog-dev libglib2.0-dev liblttng-ust-dev liblog4c-dev
BENCH_PROGRAMS = bench-c/bench $(if $(shell pkg-config --exists spdlog && echo y),bench-c/bench_spdlog)

bench-c/bench: lib bench-c/bench.c bench-c/harness.h bench-c/messages.h c-tests/count_alloc.h include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude $$(bench-c/peers.sh cflags) bench-c/bench.c -o $@ $(STATIC_LIB) $$(bench-c/peers.sh libs) $(LIBS)

bench-c/bench_spdlog: bench-c/bench_spdlog.cpp bench-c/harness.h c-tests/count_alloc.h
	$(CXX) -std=c++17 $(CFLAGS) $$(pkg-config --cflags spdlog) bench-c/bench_spdlog.cpp -o $@ $$(pkg-config --libs spdlog)

# The same programs timing every call (bench-c/latency.sh).
bench-c/latency: lib bench-c/bench.c bench-c/harness.h bench-c/messages.h c-tests/count_alloc.h include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -DBENCH_LATENCY -Iinclude $$(bench-c/peers.sh cflags) bench-c/bench.c -o $@ $(STATIC_LIB) $$(bench-c/peers.sh libs) $(LIBS)

bench-c/latency_spdlog: bench-c/bench_spdlog.cpp bench-c/harness.h c-tests/count_alloc.h
	$(CXX) -std=c++17 $(CFLAGS) -DBENCH_LATENCY $$(pkg-config --cflags spdlog) bench-c/bench_spdlog.cpp -o $@ $$(pkg-config --libs spdlog)

.PHONY: bench-latency
bench-latency: bench-c/latency bench-c/latency_spdlog
	bench-c/latency.sh

# Every figure of README.md and BENCHMARKS.md, rerun section by section
# (bench-c/figures.sh; FIGURES="lock printed" runs only those), the rows
# to paste kept in bench-figures.out.
.PHONY: bench-figures
bench-figures:
	bash -c 'set -o pipefail; bench-c/figures.sh 2>&1 | tee bench-figures.out'

.PHONY: bench
bench: $(BENCH_PROGRAMS)
	@pkg-config --exists spdlog || echo "bench: spdlog not installed; its modes are left out"
	bench-c/run.py $(BENCH_PROGRAMS)

# 2, 8 and 64 threads at full rate into a 16 KiB ring for SOAK_SECONDS each,
# dumped without a lock all the while; every dump and the final accounting are
# checked (c-tests/soak.c). cargo test runs it for one second each.
SOAK_SECONDS ?= 10
bench-c/soak: lib c-tests/soak.c c-tests/check.h include/vlog.h include/vlog_gen.h
	$(CC) $(CFLAGS) -Iinclude c-tests/soak.c -o $@ $(STATIC_LIB) $(LIBS)

.PHONY: soak
soak: bench-c/soak
	for t in 2 8 64; do bench-c/soak $$t $(SOAK_SECONDS) || exit 1; done

# Installs the library, libvlog-syslog.so, headers, pkg-config file, CMake package, vlog-dump, vlog-relay, vlog-ctl and the man pages under
# DESTDIR/PREFIX; `make uninstall` with the same variables removes them.
PREFIX ?= /usr/local
DESTDIR ?=
VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# libdir: where the libraries go on the target system (a distribution's
# multiarch directory: libdir=/usr/lib/x86_64-linux-gnu).
libdir ?= $(PREFIX)/lib
LIBDIR = $(DESTDIR)$(libdir)
# The CMake package finds the libraries and headers from its own place:
# these paths are relative to lib/cmake/vlog, so a staged root works.
CMAKE_TO_LIBDIR = $(shell realpath -m --relative-to=$(libdir)/cmake/vlog $(libdir))
CMAKE_TO_INCLUDEDIR = $(shell realpath -m --relative-to=$(libdir)/cmake/vlog $(PREFIX)/include)
# Programs linked against a library outside the dynamic linker's paths start
# without LD_LIBRARY_PATH: vlog.pc records the directory in them.
RPATH = $(if $(filter /usr /usr/local,$(PREFIX)),,-Wl,-rpath,$${libdir})
MANDIR = $(DESTDIR)$(PREFIX)/share/man
# The installed libraries carry no debug information and no LLVM bitcode:
# what a backtrace needs, the symbols, stays (STRIP= installs them as built).
STRIP ?= strip
OBJCOPY ?= objcopy

# Every name vlog(3) documents (its NAME section) gets a page of its own that
# points to vlog(3), as Debian's library packages do: `man vlog_init`.
MAN3_NAMES = $(filter-out vlog,$(shell sed -n '/^\.SH NAME$$/,/\\-/p' man/vlog.3 \
	| sed -e '1d' -e 's/\\-.*//' | tr ',' ' '))
MAN3_ALIASES = $(foreach n,$(MAN3_NAMES),$(MANDIR)/man3/$(n).3)
INSTALLED = $(LIBDIR)/libvlog.so.0 $(LIBDIR)/libvlog.so $(LIBDIR)/libvlog.a \
	$(LIBDIR)/libvlog-syslog.so \
	$(LIBDIR)/pkgconfig/vlog.pc $(LIBDIR)/cmake/vlog/vlogConfig.cmake \
	$(LIBDIR)/cmake/vlog/vlogConfigVersion.cmake $(DESTDIR)$(PREFIX)/include/vlog.h \
	$(DESTDIR)$(PREFIX)/include/vlog_gen.h $(DESTDIR)$(PREFIX)/bin/vlog-dump \
	$(DESTDIR)$(PREFIX)/bin/vlog-relay $(DESTDIR)$(PREFIX)/bin/vlog-ctl \
	$(MANDIR)/man1/vlog-dump.1 $(MANDIR)/man1/vlog-relay.1 $(MANDIR)/man1/vlog-ctl.1 \
	$(MANDIR)/man3/vlog.3 $(MANDIR)/man7/vlog.7 $(MANDIR)/man7/vlog-syslog.7 \
	$(MAN3_ALIASES)

# The directories install makes are those missing before it, listed in
# share/vlog/made-dirs (merged over reinstalls; as they are on the target
# system, without DESTDIR), so that uninstall removes exactly them again,
# never one that was there already (/usr/local/lib).
INSTALL_DIRS = $(LIBDIR)/pkgconfig $(LIBDIR)/cmake/vlog $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin \
	$(MANDIR)/man1 $(MANDIR)/man3 $(MANDIR)/man7 $(DESTDIR)$(PREFIX)/share/vlog
MADE_DIRS = $(DESTDIR)$(PREFIX)/share/vlog/made-dirs
# Under the system's prefix (/usr, /usr/local), root's install and uninstall
# refresh the dynamic linker's cache, so no stale libvlog.so.0 entry outlives
# the file; another prefix is not the linker's to know.
LDCONFIG = if [ -z "$(DESTDIR)" ] && [ -n "$(filter /usr /usr/local,$(PREFIX))" ] \
	&& [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

# What install copies. install builds only when one is missing, as make's
# habit is (`make && sudo make install`: root's PATH has no ~/.cargo/bin);
# a build it cannot run says how to make one.
BUILT = target/release/libvlog.so.0 $(STATIC_LIB) $(PRELOAD_LIB) \
	target/release/vlog-dump target/release/vlog-relay target/release/vlog-ctl

.PHONY: built
built:
	@missing=; for f in $(BUILT); do [ -e "$$f" ] || missing="$$missing $$f"; done; \
	[ -z "$$missing" ] && exit 0; \
	if ! command -v $(CARGO) >/dev/null 2>&1; then \
		echo "make install: not built yet:$$missing" >&2; \
		echo "make install: and '$(CARGO)' is not on this PATH to build it: run 'make' first as the user" >&2; \
		echo "  who has Rust (https://rustup.rs), then 'sudo make install'; or CARGO=/path/to/cargo" >&2; \
		exit 1; \
	fi; \
	$(MAKE) --no-print-directory lib

install: built
	@made=; for d in $(INSTALL_DIRS); do \
		while [ ! -d "$$d" ] && [ "$$d" != "$(DESTDIR)" ] && [ "$$d" != / ]; do \
			made="$$made $${d#"$(DESTDIR)"}"; d=$$(dirname "$$d"); done; \
	done; \
	install -d $(INSTALL_DIRS) && \
	{ cat $(MADE_DIRS) 2>/dev/null; for d in $$made; do echo "$$d"; done; } | sort -u > $(MADE_DIRS).new && \
	mv $(MADE_DIRS).new $(MADE_DIRS)
	install -m 0755 $(SHARED_LIB) $(LIBDIR)/libvlog.so.0
	ln -sf libvlog.so.0 $(LIBDIR)/libvlog.so
	install -m 0644 $(STATIC_LIB) $(LIBDIR)/libvlog.a
	install -m 0755 $(PRELOAD_LIB) $(LIBDIR)/libvlog-syslog.so
	if [ -n "$(STRIP)" ]; then \
		$(STRIP) --strip-debug $(LIBDIR)/libvlog.so.0 $(LIBDIR)/libvlog.a && \
		$(OBJCOPY) -R .llvmbc -R .llvmcmd $(LIBDIR)/libvlog.a; fi
	install -m 0644 include/vlog.h include/vlog_gen.h $(DESTDIR)$(PREFIX)/include/
	install -m 0755 target/release/vlog-dump $(DESTDIR)$(PREFIX)/bin/vlog-dump
	install -m 0755 target/release/vlog-relay $(DESTDIR)$(PREFIX)/bin/vlog-relay
	install -m 0755 target/release/vlog-ctl $(DESTDIR)$(PREFIX)/bin/vlog-ctl
	install -m 0644 man/vlog-dump.1 man/vlog-relay.1 man/vlog-ctl.1 $(MANDIR)/man1/
	install -m 0644 man/vlog.3 $(MANDIR)/man3/
	install -m 0644 man/vlog.7 man/vlog-syslog.7 $(MANDIR)/man7/
	for name in $(MAN3_NAMES); do echo '.so man3/vlog.3' > $(MANDIR)/man3/$$name.3; done
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(libdir)|' -e 's|@VERSION@|$(VERSION)|' \
		-e 's|@RPATH@|$(RPATH)|' \
		pkgconfig/vlog.pc.in \
		> $(LIBDIR)/pkgconfig/vlog.pc
	chmod 0644 $(LIBDIR)/pkgconfig/vlog.pc
	sed -e 's|@CMAKE_TO_LIBDIR@|$(CMAKE_TO_LIBDIR)|' -e 's|@CMAKE_TO_INCLUDEDIR@|$(CMAKE_TO_INCLUDEDIR)|' \
		cmake/vlogConfig.cmake.in > $(LIBDIR)/cmake/vlog/vlogConfig.cmake
	chmod 0644 $(LIBDIR)/cmake/vlog/vlogConfig.cmake
	sed -e 's|@VERSION@|$(VERSION)|' cmake/vlogConfigVersion.cmake.in \
		> $(LIBDIR)/cmake/vlog/vlogConfigVersion.cmake
	chmod 0644 $(LIBDIR)/cmake/vlog/vlogConfigVersion.cmake

	$(LDCONFIG)

uninstall:
	rm -f $(INSTALLED)
	@if [ -f $(MADE_DIRS) ]; then \
		dirs=$$(sort -r $(MADE_DIRS)); rm -f $(MADE_DIRS); \
		for d in $$dirs; do rmdir "$(DESTDIR)$$d" 2>/dev/null || true; done; \
	fi
	$(LDCONFIG)
