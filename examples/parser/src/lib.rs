use std::ffi::c_int;

/// The daemon calls this once: from then on, `log`'s records go to its vlog.
#[no_mangle]
pub extern "C" fn parser_init() -> c_int {
    vlog_bridge::log::init().map_or(-1, |()| 0)
}

/// Checks a frame's length, logging as it goes.
#[no_mangle]
pub extern "C" fn parser_check(len: c_int) -> c_int {
    log::debug!(target: "parser::frame", len; "checking a frame");
    if len > 1500 {
        log::warn!(target: "parser::frame", len, max = 1500; "frame too long");
        return -1;
    }
    0
}
