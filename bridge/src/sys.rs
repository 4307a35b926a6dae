//! vlog's C entry points the bridge calls, and the C types they take, as
//! include/vlog.h declares them. They are resolved when the program is
//! linked: by libvlog.so or libvlog.a in a C program, by the core built
//! in with the feature `embedded` in a Rust one.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::AtomicI32;

/// vlog.h's `vlog_source`: the library writes `level` whenever the
/// filters change, which makes the check one load.
#[repr(C)]
pub struct VlogSource {
    pub level: AtomicI32,
    pub name: *const c_char,
    pub name_len: usize,
}

// SAFETY: `level` is atomic; `name` points at a string that lives as long
// as the source, never written.
unsafe impl Sync for VlogSource {}

/// vlog.h's `vlog_field`.
#[repr(C)]
pub struct VlogField {
    pub key: *const c_char,
    pub str: *const c_char,
    pub num: i64,
    pub is_num: c_int,
}

/// vlog.h's priorities.
pub const DEBUG: c_int = 1;
pub const INFO: c_int = 2;
pub const WARN: c_int = 3;
pub const ERROR: c_int = 4;
/// A source's level before vlog registered it.
pub const UNKNOWN: c_int = 0;
/// A source's level when nothing of it is kept.
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub const OFF: c_int = 5;

extern "C" {
    pub fn vlog__source_enabled(src: *const VlogSource, prio: c_int) -> c_int;
    #[allow(clippy::too_many_arguments)]
    pub fn vlog_write_fields(
        src: *const VlogSource,
        prio: c_int,
        file: *const c_char,
        line: c_int,
        func: *const c_char,
        msg: *const c_char,
        len: usize,
        full_len: usize,
        fields: *const VlogField,
        nfields: usize,
    ) -> c_int;
    pub fn vlog_watch_levels(
        watcher: Option<extern "C" fn(lowest: c_int, arg: *mut c_void)>,
        arg: *mut c_void,
    ) -> c_int;
    pub fn vlog_last_error() -> *const c_char;
    #[cfg(feature = "log")]
    pub fn vlog_flush() -> c_int;
}
