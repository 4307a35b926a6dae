//! The C programs in `c-tests/`, built against the library cargo just built
//! and run. Each program checks one promise of the C API and exits 0; the
//! tests here add what only a driver can check (environment, stderr, exit
//! status, files left behind). Grouped by promise, one module each:
//!
//! | module | promise |
//! | --- | --- |
//! | `api` | macros, formats, deferred arguments, messages, fields, errno, allocation, the header, the ABI check |
//! | `environment` | the `VLOG_*` variables in libvirt's syntax; setuid |
//! | `threads` | threads at full rate, lock-free dumps, re-entrant calls |
//! | `fork` | fork, daemon(3), processes sharing a ring file |
//! | `crash` | the crash handler and dump signals |
//! | `ring_file` | rings after SIGKILL, in ring files and core files |
//! | `outputs` | files, rotation, JSON, failing outputs, kept descriptors |
//! | `fluent` | the fluent output against a Forward protocol receiver |
//! | `relay` | a child's output relayed line by line |
//! | `control` | the control socket, vlog-ctl, and who may use them |
//! | `preload` | libvlog-syslog.so in programs that call syslog(3): glibc's bytes, safety, setuid; real sshd and cron against rsyslogd |
//! | `real_daemons` | journald and rsyslogd, started by the test |
//! | `context` | an error's context: the records before it its output did not print, marked, bounded, never twice; in files, JSON, journald and fluent |
//! | `writer` | vlog's writer thread: every line written, in order, at exit, at a crash, across fork, with a ring too small; after SIGKILL the ring file lists the rest |
//! | `symbols` | libvlog.so.0 exports the header's names and ABI 3's, each under its version node, and nothing else; a program records the version it needs |
//! | `sites` | call sites: rate limits, once and every N, switched on by function, file and line at run time, the catalog, message ids |
//! | `debugging` | debugging powers: bytes kept as bytes and shown as `hexdump -C` does |
//! | `authority` | nothing outside the daemon's user makes vlog open, write, wait or say more than it should: planted files, devices, a log group on the control socket, resolvers that never answer, hostile servers for vlog-ctl, fields that speak for someone else |
//!
//! `VLOGTEST_TOOL=asan` or `=valgrind` runs every program under that
//! tool (`.ci/run` does both); tests of what the tools take over themselves
//! say so and skip.

#[path = "../support/mod.rs"]
mod support;

mod common;

mod api;
mod authority;
mod backtraces;
mod context;
mod control;
mod crash;
mod debugging;
mod environment;
mod fluent;
mod fork;
mod outputs;
mod preload;
mod real_daemons;
mod relay;
mod ring_file;
mod rust;
mod sites;
mod symbols;
mod threads;
mod writer;
