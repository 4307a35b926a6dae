//! What the stage above the logger with a lock of its own (the control
//! socket, `control`) does at the logger's moments: its start from
//! `VLOG_CONTROL` when vlog starts, and its lock across a fork, taken after
//! the logger's (the lock order is the logger's, then the control
//! socket's). Imports point down, so the logger cannot name that stage: it
//! installs these once, before any call reaches the logger (the C entry
//! points do it on entry, `control::install`), and the logger calls what
//! was installed.

use crate::config::ControlSpec;
use crate::sys::StaticRef;

pub struct Above {
    /// `VLOG_CONTROL`, when vlog starts: called with the logger's lock
    /// held, so it opens the socket without waiting for anything (a group
    /// named rather than numbered is looked up by the socket's own thread,
    /// never under the lock), and says what went wrong itself.
    pub start_from_env: fn(&ControlSpec),
    /// In a fork's prepare, after the logger's lock is taken.
    pub before_fork: fn(),
    /// After the fork, in the parent and in the child, before the logger's
    /// lock is let go of.
    pub after_fork_parent: fn(),
    pub after_fork_child: fn(),
}

/// A plain atomic, not a `Once`: installing must never wait, not even for
/// itself (a signal handler that logs while its thread installs).
static ABOVE: StaticRef<Above> = StaticRef::new();

/// Installs the stage above (every call the same: later calls change
/// nothing). One load once installed; async-signal-safe.
#[inline]
pub fn install(above: &'static Above) {
    if ABOVE.get().is_none() {
        ABOVE.set(above);
    }
}

/// What was installed, if anything.
pub(super) fn get() -> Option<&'static Above> {
    ABOVE.get()
}
