//! vlog's own diagnostics ("vlog: ..." lines), and the rule for fd 2.
//!
//! Daemons close their standard descriptors, and the next open(2) or socket(2)
//! gets fd 2. Writing there then puts log text into someone else's file or
//! connection. So vlog remembers which file fd 2 was when it started (or when
//! `vlog_adopt_stderr` was last called, by a daemon that redirects stderr on
//! purpose; log rotation, `vlog_reopen`, never adopts it) and writes to fd 2, diagnostics and the stderr output alike, only
//! while fd 2 is still that file. The check is one fstat(2) before each write.
//! Diagnostics about outputs are also recorded in the ring (see the logger), so
//! a dump shows them whatever fd 2 is.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::sys::{self, FdInfo, FdKind};
use crate::text::line::put_escaped;

const STDERR: i32 = 2;

static ADOPTED: AtomicBool = AtomicBool::new(false);
static DEV: AtomicU64 = AtomicU64::new(0);
static INO: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread is reading the environment (`while_starting`).
    static STARTING: Cell<bool> = const { Cell::new(false) };
}
/// What the last reading of the environment refused: its first warning,
/// and how many there were. `vlog_init` hands it back for as long as that
/// reading is in force.
static REFUSED: Mutex<(Option<String>, usize)> = Mutex::new((None, 0));

/// Takes fd 2 as it is now as the stderr vlog writes to (nothing, if it is
/// closed).
pub fn adopt_stderr() {
    let (dev, ino) = match sys::fd_info(STDERR) {
        Ok(info) => (info.dev, info.ino),
        // Closed: no file has identity (0, 0) and an open descriptor.
        Err(_) => (0, 0),
    };
    DEV.store(dev, Ordering::Relaxed);
    INO.store(ino, Ordering::Relaxed);
    ADOPTED.store(true, Ordering::Release);
}

/// How to write to fd 2, if it is still the file vlog adopted.
pub fn stderr() -> Option<FdKind> {
    if !ADOPTED.load(Ordering::Acquire) {
        adopt_stderr();
    }
    let FdInfo { dev, ino, kind, .. } = sys::fd_info(STDERR).ok()?;
    (dev == DEV.load(Ordering::Relaxed) && ino == INO.load(Ordering::Relaxed)).then_some(kind)
}

/// Writes one line to fd 2 if it is still the adopted file, with one write(2)
/// and never raising SIGPIPE. False when the line was not written.
pub fn write_stderr(line: &[u8]) -> bool {
    // write(2) is a cancellation point (see `sys::cancel`).
    let cancelability = sys::cancel::point();
    let written = stderr().is_some_and(|kind| sys::write_no_signal(STDERR, line, kind).is_ok());
    sys::cancel::restore(cancelability);
    written
}

/// Says `message` as [`say`] does. While the environment is read, a
/// warning is also something it asked for and did not get
/// (`while_starting`); [`say`] is for what is in force anyway.
pub fn warn(message: &str) {
    let message = say(message);
    if STARTING.get() {
        // Never waited for: the lock is only ever held for a store.
        if let Ok(mut refused) = REFUSED.try_lock() {
            refused.0.get_or_insert_with(|| message.into_owned());
            refused.1 += 1;
        }
    }
}

/// Writes "vlog: MESSAGE" to fd 2 under the rule above, as one line:
/// whatever the message holds from outside (a path, a field name) is
/// escaped as the text line escapes messages, so no newline, carriage
/// return or terminal escape reaches the terminal raw. Never a refusal (a
/// damaged ring file replaced by the ring asked for). Returns the message
/// as said.
pub fn say(message: &str) -> std::borrow::Cow<'static, str> {
    let message = crate::error::for_people(message.to_owned().into());
    let mut line = Vec::with_capacity(message.len() + 7);
    line.extend_from_slice(b"vlog: ");
    put_escaped(message.as_bytes(), &mut line);
    line.push(b'\n');
    write_stderr(&line);
    message
}

/// Runs `read`, the reading of the environment, keeping what it warns about
/// as what the environment asked for and did not get.
pub fn while_starting(read: impl FnOnce()) {
    if let Ok(mut refused) = REFUSED.lock() {
        *refused = (None, 0);
    }
    // Reset however `read` ends, a caught panic included.
    struct Started;
    impl Drop for Started {
        fn drop(&mut self) {
            STARTING.set(false);
        }
    }
    STARTING.set(true);
    let _started = Started;
    read();
}

/// What the environment asked for and did not get, in the words of the
/// first warning (and how many more there were), or None when all of it
/// is in force.
pub fn refused_at_start() -> Option<String> {
    let refused = REFUSED.lock().ok()?;
    let first = refused.0.as_ref()?;
    Some(match refused.1 {
        0 | 1 => first.clone(),
        n => format!("{first} (and {} more, each said on stderr)", n - 1),
    })
}
