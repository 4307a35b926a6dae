//! A record into vlog: the one way both `log` and `tracing` records take
//! (`vlog_write_fields`, as a C call with fields).

use std::ffi::c_int;

use crate::fields::{with_parts, Parts};
use crate::sys;
use crate::target::Named;

/// Where a call was made.
pub struct Call<'a> {
    pub target: &'a str,
    pub prio: c_int,
    pub file: Option<&'a str>,
    pub line: Option<u32>,
    /// The module path, which vlog shows as the function.
    pub module: Option<&'a str>,
}

/// Records `call` with the message and fields `fill` gives: true when vlog
/// kept it.
pub fn record(named: Named, call: &Call, fill: impl FnOnce(&mut Parts)) -> bool {
    with_parts(|p| {
        fill(p);
        if named.shared {
            p.text("TARGET", |w| {
                let _ = w.write_str(call.target);
            });
        }
        let file = call.file.map(|f| p.c_string(f));
        let func = call.module.map(|m| p.c_string(m));
        let line = call
            .line
            .map_or(0, |l| c_int::try_from(l).unwrap_or(c_int::MAX));
        let (msg, full_len, fields, buf) = p.finish();
        let at =
            |offset: Option<usize>| offset.map_or(std::ptr::null(), |o| buf[o..].as_ptr().cast());
        // SAFETY: the source is leaked (valid for ever); `file` and `func`
        // are NUL-terminated strings in `buf`, `msg` is `msg.len()` bytes,
        // and the fields' names and values are NUL-terminated strings in
        // `buf`, all alive until `p` changes, after the call.
        let kept = unsafe {
            sys::vlog_write_fields(
                named.source,
                call.prio,
                at(file),
                line,
                at(func),
                msg.as_ptr().cast(),
                msg.len(),
                full_len.max(msg.len()),
                fields.as_ptr(),
                fields.len(),
            )
        };
        kept == 1
    })
}
