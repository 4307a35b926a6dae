//! The names the macros of ABI 3 called, kept (and left out of the
//! header) so that a program or library built with that header still
//! loads, even linked with `-z now`: its `VLOG_INIT` constructor asks
//! `vlog_abi_check`, which tells it once to rebuild and turns its sources
//! off, so its macros never call these; if one is called all the same,
//! it records nothing.

use std::ffi::{c_char, c_int, c_void};

use super::site::{vlog__format_is_safe, VLOG__SITE_UNSAFE};
use super::source::vlog__source_unregister;
use crate::source::vlog_source;

/// ABI 3's `vlog_site_prepare`: the site is never analysed; VLOG__SITE_UNSAFE,
/// so an ABI 3 macro hands nothing to printf.
/// NULL: ignored; ownership: nothing kept; errors: none; async-signal-safe: yes.
#[no_mangle]
pub extern "C-unwind" fn vlog_site_prepare(
    _site: *mut c_void,
    _fmt: *const c_char,
    _file: *const c_char,
    _line: c_int,
    _func: *const c_char,
) -> c_int {
    VLOG__SITE_UNSAFE
}

/// ABI 3's `vlog_record`: records nothing.
/// NULL: ignored; ownership: nothing kept; errors: -1; async-signal-safe: yes.
#[no_mangle]
pub extern "C-unwind" fn vlog_record(
    _site: *const c_void,
    _src: *const vlog_source,
    _prio: c_int,
    _words: *const u64,
    _nwords: c_int,
    _classes: u64,
) -> c_int {
    -1
}

/// ABI 3's `vlog_source_enabled`: nothing from an ABI 3 object is recorded.
/// NULL: ignored; ownership: nothing kept; errors: none; async-signal-safe: yes.
#[no_mangle]
pub extern "C-unwind" fn vlog_source_enabled(_src: *const vlog_source, _prio: c_int) -> c_int {
    0
}

/// ABI 3's `vlog_source_unregister`, which its `VLOG_INIT` destructor calls.
/// NULL: ignored; ownership: the library no longer holds `src`; errors:
/// none; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_source_unregister(src: *const vlog_source) {
    vlog__source_unregister(src)
}

/// ABI 3's `vlog_format_is_safe`.
/// NULL: 0; ownership: the string is not kept; errors: none;
/// async-signal-safe: yes.
#[no_mangle]
pub extern "C-unwind" fn vlog_format_is_safe(fmt: *const c_char) -> c_int {
    vlog__format_is_safe(fmt)
}
