//! vlog: a logging runtime for C daemons.
//!
//! C code includes `vlog.h`; this crate is the core behind it. The safe modules
//! parse the configuration (`priority`, `filter`, `output`, `config`), keep the
//! records (`record`, `ring`), render them (`format`) and tie it together
//! (`source`, `logger`); `ffi` is the C boundary.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

/// cbindgen:ignore
pub mod config;
/// cbindgen:ignore
pub mod crash;
/// cbindgen:ignore
pub mod deferred;
/// cbindgen:ignore
pub mod diag;
/// cbindgen:ignore
pub mod dump;
pub mod ffi;
/// cbindgen:ignore
pub mod fields;
/// cbindgen:ignore
pub mod filter;
/// cbindgen:ignore
pub mod format;
/// cbindgen:ignore
pub mod journal;
/// cbindgen:ignore
pub mod logger;
/// cbindgen:ignore
pub mod output;
/// cbindgen:ignore
pub mod printf;
/// cbindgen:ignore
pub mod priority;
/// cbindgen:ignore
pub mod reader;
/// cbindgen:ignore
pub mod record;
/// cbindgen:ignore
pub mod ring;
/// cbindgen:ignore
pub mod sites;
pub mod source;
/// cbindgen:ignore
pub(crate) mod sys;
/// cbindgen:ignore
pub mod syslog;
