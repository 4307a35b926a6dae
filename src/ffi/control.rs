//! The control socket from C: opened served by a thread of vlog's, or by
//! the program's own event loop, and closed.

use std::ffi::{c_char, c_int};

use super::{cancellation_point, config_call, config_str};
use crate::config::ControlSpec;
use crate::control;
use crate::error::ConfigError;

/// The socket `spec` names (NULL: `auto`).
///
/// # Safety
/// `spec` is NULL or a NUL-terminated string.
unsafe fn spec_arg(spec: *const c_char) -> Result<ControlSpec, ConfigError> {
    if spec.is_null() {
        return Ok(ControlSpec::default());
    }
    // SAFETY: forwarded from the caller.
    ControlSpec::parse(unsafe { config_str(spec, "the control socket") }?)
}

/// Opens the control socket `spec` names, in `VLOG_CONTROL` syntax (an
/// absolute path, or `auto` for `$RUNTIME_DIRECTORY/vlog.sock`, else
/// `/run/IDENT/vlog.sock` as root and `$XDG_RUNTIME_DIR/IDENT/vlog.sock`
/// otherwise; then `?group=GROUP` to let that group use it too), served by
/// a thread of vlog's. The socket is made 0600 (0660 with a group) in a
/// directory only its user or root may write to; a file already at the
/// path is never followed or removed unless it is a socket of this user
/// that nobody listens on. Only the process's effective user, root and the
/// group may use it (SO_PEERCRED on each connection). A socket open
/// already is closed first. The file is removed by `vlog_control_stop`,
/// `vlog_shutdown` and at exit. A forked child does not serve its parent's
/// socket; it may open its own. Returns 0, or -1 with `vlog_last_error()`
/// set and nothing made (also under `VLOG_WRITER=caller`, which starts no
/// thread: `vlog_control_open` serves the socket from the program's loop).
/// NULL: `auto`; ownership: the string is not kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_control_start(spec: *const c_char) -> c_int {
    cancellation_point!(|| {
        config_call(|| {
            // SAFETY: NULL or a NUL-terminated string, per the API contract.
            let spec = unsafe { spec_arg(spec) }?;
            control::start(&spec, true).map(drop)
        })
    })
}

/// Opens the control socket as `vlog_control_start` does, to be served by
/// the program's own event loop instead of a thread: returns a descriptor
/// (an epoll one, vlog's) that is readable when there is something to do;
/// the loop then calls `vlog_control_handle`. While a client is connected
/// it is also readable every 100 ms. Returns -1 with `vlog_last_error()`
/// set and nothing made on failure.
/// NULL: `auto`; ownership: the descriptor stays vlog's (never close it;
/// `vlog_control_stop` does); errors: -1 and vlog_last_error();
/// async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_control_open(spec: *const c_char) -> c_int {
    cancellation_point!(|| {
        let mut fd = -1;
        let rc = config_call(|| {
            // SAFETY: NULL or a NUL-terminated string, per the API contract.
            let spec = unsafe { spec_arg(spec) }?;
            fd = control::start(&spec, false)?;
            Ok(())
        });
        if rc == 0 {
            fd
        } else {
            -1
        }
    })
}

/// Serves what the control socket has now, without waiting: connections
/// accepted (or refused), requests read, commands run, replies written as
/// far as the sockets take them. Returns the descriptor to poll from now
/// on: the one `vlog_control_open` gave, unless the program closed it
/// (then a new one; a program that closes every descriptor calls this to
/// learn it). Returns -1 with `vlog_last_error()` set when no control
/// socket is open, or when called from a signal handler that interrupted
/// this call.
/// NULL: takes no pointer; ownership: the descriptor stays vlog's; errors:
/// -1 and vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_control_handle() -> c_int {
    cancellation_point!(|| {
        let mut fd = -1;
        let rc = config_call(|| {
            control::serve()?;
            fd = control::poll_fd()?;
            Ok(())
        });
        if rc == 0 {
            fd
        } else {
            -1
        }
    })
}

/// Closes the control socket (served by a thread or by the program's
/// loop): its file removed if it is still the one vlog made, its thread
/// stopped and waited for, its connections closed. Does nothing when none
/// is open. Returns 0, or -1 with `vlog_last_error()` set when called from
/// a signal handler that interrupted vlog on this thread (nothing done).
/// NULL: takes no pointer; ownership: nothing kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_control_stop() -> c_int {
    cancellation_point!(|| config_call(control::stop))
}
