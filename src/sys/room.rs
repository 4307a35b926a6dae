//! A reader slow for a moment (see `output::slow`): how long it may take
//! nothing before it is stalled, and the wait for it to take more, made
//! with no lock held.

use std::ffi::c_int;

/// A reader that takes nothing for this long is stalled: its output fails,
/// says so once, and holds nothing for it until it takes a line again.
pub const ROOM_WAIT_MS: u64 = 5_000;

/// Waits at most `ms` milliseconds for `fd` to take more (poll(2),
/// POLLOUT; a connected datagram socket's reader has room in its queue).
/// A signal or an error ends the wait early: the caller tries again.
/// poll(2) is a cancellation point, as a write is: a cancel pending for a
/// caller that waits here acts as its vlog call returns, never inside it
/// (an unwind through the call's frames would abort the process).
///
/// True when the descriptor is ready: it has room, or a write fails at
/// once (its reader is gone, POLLERR or POLLHUP). A pipe that says it has
/// room takes a write of PIPE_BUF bytes or fewer without blocking.
pub fn wait_writable(fd: c_int, ms: u64) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    let cancelability = super::cancel::point();
    // SAFETY: one valid pollfd.
    let ready = unsafe { libc::poll(&mut pfd, 1, ms.min(i32::MAX as u64) as c_int) } == 1;
    super::cancel::restore(cancelability);
    ready && pfd.revents != 0
}
