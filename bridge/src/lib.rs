//! Rust's [`log`](https://docs.rs/log) and [`tracing`](https://docs.rs/tracing)
//! records in vlog's ring: a `log` backend ([`log::init`]) and a
//! `tracing` layer ([`tracing::layer`]) that record each call as a C call
//! to vlog does, under the same filters (`VLOG_FILTERS`, `vlog_set_filters`,
//! `vlog-ctl SOCKET filters`), in the same crash dump, through the same
//! outputs.
//!
//! # One vlog per process
//!
//! The bridge calls vlog's C entry points (`vlog__source_enabled`,
//! `vlog_write_fields`, `vlog_watch_levels`), resolved when the program is
//! linked, as a C file's calls are. A Rust library built into a static
//! library or a cdylib for a C daemon that links `libvlog.so` (or
//! `libvlog.a`) records into that daemon's vlog: the bridge brings no
//! vlog of its own. A Rust program with no C part enables the feature
//! `embedded`, which builds vlog's core into it (the crash dump, the ring
//! file, the outputs and the control socket are there as for a C program,
//! from the same `VLOG_*` variables). Never enable `embedded` in a library
//! meant for a C program: it would carry a second vlog whose exported
//! functions the program's own calls could reach.
//!
//! # How a record is made
//!
//! - Its **source** is its target, with each `::` written `.`
//!   (`rustls::client::hs` is the source `rustls.client.hs`) and each
//!   space, `=` or lone `:` written `_`, since a filter cannot name those:
//!   `VLOG_FILTERS="1:rustls 3:*"` wants rustls's debug records and only
//!   warnings from the rest, as libvirt's filters match a name that
//!   contains theirs. [`source_name`] is the mapping.
//! - Its **priority**: `trace` and `debug` are debug, then info, warn,
//!   error.
//! - Its **file and line** are the call's; the **function** is the
//!   module path (Rust's macros know no function name).
//! - Its **fields**: `log`'s key-values and `tracing`'s fields, each with
//!   vlog's rules for a C call's fields (names of letters, digits, `_` and
//!   `.`, at most 32 kept: vlog(7), FIELDS); integers stay integers, the
//!   rest is text. A `tracing` event also carries the fields of the spans
//!   entered on its thread, innermost first, after its own (a name given
//!   twice keeps the first value, so the event's own wins). A C call made
//!   inside a span does not carry them: the span is `tracing`'s, not the
//!   thread's (`vlog_thread_field_set` gives both kinds of call a field).
//! - The **level check comes first**, and follows every change of vlog's
//!   levels (vlog tells the bridge: `vlog_watch_levels`). `log`'s max
//!   level is the lowest priority vlog keeps from any source, so a
//!   disabled `log::debug!` costs `log`'s own max-level test and nothing
//!   is formatted; `tracing`'s interest in each callsite is whether vlog
//!   keeps its target's records of its level (see [`tracing`] for spans).
//!   A call that passes asks its source's level: one load once the
//!   source is known.
//!
//! # Example
//!
//! A pure Rust program (`embedded`), its records in vlog's ring and on
//! stderr:
//!
//! ```
//! # use vlog as _;
//! use tracing_subscriber::prelude::*;
//!
//! vlog_bridge::log::init().expect("the log backend");
//! tracing_subscriber::registry()
//!     .with(vlog_bridge::tracing::layer().expect("the tracing layer"))
//!     .init();
//!
//! log::warn!(target: "disk::queue", depth = 3; "queue deep");
//! let span = tracing::info_span!("request", id = 7);
//! let _entered = span.enter();
//! tracing::warn!(bytes = 512, "short read");
//! ```
//!
//! Its warnings, on stderr as vlog prints them (vlog's default level is
//! warn):
//!
//! ```text
//! 2026-12-06 22:40:01.123 warn : disk.queue : queue deep [depth=3]
//! 2026-12-06 22:40:01.124 warn : rust_out : short read [bytes=512 id=7]
//! ```
//!
//! # Signals, threads, allocation
//!
//! Recording takes vlog's lock as a C call does. The bridge keeps a table
//! of the targets it has named (no lock: a fork at any moment leaves the
//! child able to log) and a buffer per thread for the text and fields it
//! hands vlog, which grows once. Neither `log` nor `tracing` may be called
//! from a signal handler: their own dispatch is not async-signal-safe.

#![deny(missing_docs)]
// Without `log` and `tracing` the crate is only its plumbing.
#![cfg_attr(not(any(feature = "log", feature = "tracing")), allow(dead_code))]

#[cfg(feature = "embedded")]
use vlog as _;
// The unit tests link the core too (a dev-dependency): the functions the
// bridge declares are defined there.
#[cfg(test)]
use vlog as _;

mod fields;
mod levels;
mod record;
mod sys;
mod target;

#[cfg(feature = "log")]
pub mod log;
#[cfg(feature = "tracing")]
pub mod tracing;

pub use target::source_name;

/// Why the bridge could not be installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}
