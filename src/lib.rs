//! vlog: a logging runtime for C daemons. C code includes `vlog.h`; this
//! crate is the core behind it.
//!
//! The tree follows a record's life, one folder per stage, and imports only
//! point down (a test checks it: `cargo test --test architecture`):
//!
//! ```text
//! ffi/       the C boundary: every exported function, one module per C noun
//! relay/     a child's output, line by line, recorded as messages
//! preload    syslog(3) calls taken over by libvlog-syslog.so, as records
//! logger/    the global state and its lock; emit (the recorded call), apply
//!            (configuration), levels (the sources' cached levels), fork,
//!            ticker, control (the control socket)
//! config/    the environment, the filters and a reader's selection, parsed
//! crash/     the crash handler, its dump, where dumps go, alternate stacks
//! output/    the outputs as objects: file, journald, syslog, and their spec
//! ring/      the ring: layout, records, dictionary, writer, readers, images
//! deferred   a format's arguments captured at the call, rendered when read
//! text/      text without allocation: sinks, numbers, time, line, JSON, printf
//! bottom     error, priority, record, fields, source, site (call sites and
//!            their catalog), stats, diag, panic, sys/
//! ```
//!
//! `unsafe` lives in `ffi/`, `ring/`, `crash/`, `sys/`, `source.rs` and
//! `site.rs` (the C structs the macros compile into programs) only, each
//! block with a `// SAFETY:` comment.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

// cbindgen reads every module for exported items; only ffi/ and source.rs
// have any, and the others are left out of its way.
//
// A constant that only the header and a `const _: () = assert!(..)` read
// carries `#[allow(dead_code)]`: the oldest Rust vlog builds with (Cargo.toml's
// rust-version, the distributions' compiler) does not count a use inside an
// anonymous constant, and its build stays free of warnings.

/// cbindgen:ignore
mod config;
/// cbindgen:ignore
mod control;
/// cbindgen:ignore
mod crash;
/// cbindgen:ignore
mod deferred;
/// cbindgen:ignore
mod diag;
/// cbindgen:ignore
mod error;
mod ffi;
/// cbindgen:ignore
mod fields;
/// cbindgen:ignore
mod logger;
/// cbindgen:ignore
mod output;
/// cbindgen:ignore
mod panic;
/// cbindgen:ignore
mod preload;
/// cbindgen:ignore
mod priority;
/// cbindgen:ignore
mod record;
/// cbindgen:ignore
mod relay;
/// cbindgen:ignore
mod ring;
mod site;
mod source;
/// cbindgen:ignore
mod stats;
/// cbindgen:ignore
mod symbols;
/// cbindgen:ignore
mod sys;
/// cbindgen:ignore
mod text;
mod tool;

/// Every Rust allocation in a program that links vlog: malloc, and an
/// emergency reserve when malloc fails, so that running out of memory
/// degrades vlog instead of aborting its daemon (see `sys::alloc`).
#[global_allocator]
static ALLOCATOR: sys::alloc::Allocator = sys::alloc::Allocator;

/// Not an API: what `vlog-dump`, the fuzz targets and the tests need of the
/// core. Nothing here is stable; C programs use `vlog.h`.
#[doc(hidden)]
pub mod internal {
    pub use crate::config::filter::Filters;
    pub use crate::config::matcher::contains_match;
    pub use crate::config::select::{parse_priority, parse_when, Selection};
    pub use crate::config::{from_env, parse_size};
    pub use crate::crash::target::{parse_dump_signal, DumpTarget};
    pub use crate::error::for_people;
    pub use crate::ffi::guarded;
    pub use crate::fields::{encode as encode_fields, Field, Value};
    pub use crate::output::journald::send_via_memfd as send_to_journald_via_memfd;
    pub use crate::output::spec::{parse_list as parse_outputs, Dest, Spec};
    pub use crate::priority::Priority;
    pub use crate::record::Record;
    pub use crate::ring::image::{read_ring, read_rings_in_file};
    pub use crate::ring::layout::starts_with_magic;
    pub use crate::ring::reader::{read_marked, Cursor};
    pub use crate::ring::{find_rings, read, Damage, Entry, Held, Image, ImageError, Ring};
    /// Makes the text of records name their backtraces' frames.
    pub use crate::symbols::install as name_frames;
    pub use crate::symbols::reply::name_frames_in;
    pub use crate::symbols::{read_for as name_frames_for, Owner as FramesOwner};
    pub use crate::text::json::{put_json_string, render_json};
    pub use crate::text::line::{put_fields_text, put_for_terminal, render_line};
    pub use crate::text::time::{parse_time, put_rfc3164, put_timestamp, Clock};
    pub use crate::tool::Tool;

    // For vlog-ctl.
    pub use crate::control::COMMANDS as CONTROL_COMMANDS;
    pub use crate::sys::listen::peer_cred;
    pub use crate::sys::net::unix_addr;

    // For vlog-relay.
    pub use crate::relay::watch::Watch;
    pub use crate::relay::{Notes, Relay, TAIL_MAX};
    pub use crate::ring::published::walk as walk_this_ring;
    pub use crate::sys::signal;
    pub use crate::sys::watch::child_pipe;

    /// Sets vlog up from the environment, as a C program's first call does.
    pub fn start() {
        crate::control::install();
        let _ = crate::logger::config_call::configure(|s| {
            s.ensure_init();
            Ok(())
        });
    }

    /// What `vlog_set_filters` does.
    pub fn set_filters(spec: &str) -> Result<(), String> {
        crate::logger::config_call::configure(|s| s.set_filters(spec)).map_err(|e| e.to_string())
    }

    /// What `vlog_shutdown` does: the outputs flushed and closed.
    pub fn shutdown() {
        let _ = crate::control::stop();
        crate::logger::ticker::drain(crate::logger::ticker::Drain::Asked);
        let _ = crate::logger::apply::flush();
        crate::logger::enter(|s| s.shutdown());
    }
}
