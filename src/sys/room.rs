//! A reader slow for a moment: how long an output's write waits for a full
//! pipe or socket to take more.

use std::ffi::c_int;

use super::clock::monotonic_ns;

/// How long an output's write waits for a reader that is slow for a
/// moment: a pipe or socket another process made non-blocking (a
/// supervisor's pipe on stderr), full, says EAGAIN, and the write waits for
/// room (poll(2)) as long as the reader takes something, this long without.
/// A reader that takes nothing for this long is stalled: the output fails,
/// says so once, and waits no more until it takes a line again.
pub const ROOM_WAIT_MS: u64 = 5_000;

/// The wait of a write for a full non-blocking descriptor to take more: at
/// most `ms` since it last took something. Async-signal-safe.
pub struct Room {
    ms: u64,
    since_ns: u64,
}

impl Room {
    pub fn new(ms: u64) -> Room {
        Room {
            ms,
            since_ns: monotonic_ns(),
        }
    }

    pub fn progressed(&mut self) {
        if self.ms > 0 {
            self.since_ns = monotonic_ns();
        }
    }

    /// Waits for room (poll(2), at most 100 ms at a time); false once the
    /// descriptor has taken nothing for `ms`.
    pub fn wait(&mut self, fd: c_int) -> bool {
        let waited_ms = monotonic_ns().saturating_sub(self.since_ns) / 1_000_000;
        if waited_ms >= self.ms {
            return false;
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, (self.ms - waited_ms).min(100) as c_int) };
        true
    }
}
