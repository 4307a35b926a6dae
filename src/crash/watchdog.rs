//! The crash dump's watchdog: a dump that makes progress is never cut
//! short; one that is stuck ends, and the process dies as the crash would
//! have. Everything here is async-signal-safe.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU64, Ordering};

use super::{die_by_default, handback};
use crate::panic;
use crate::sys;

/// The watchdog ends a dump that wrote nothing for this long (a full pipe
/// nobody reads, a disk that hangs)...
pub const STALL_SECONDS: u32 = 5;
/// ... and one that goes on past this, plus `LIMIT_SECONDS_PER_MIB` per
/// MiB of ring: a dump that trickles. A dump that makes progress on a busy
/// machine (a 4 MiB ring's took from 4 s to over a minute with eight
/// programs crashing at once) is never cut short before.
pub const LIMIT_SECONDS: i64 = 60;
pub const LIMIT_SECONDS_PER_MIB: i64 = 30;

/// The fatal signal being handled.
static CRASH_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Bytes the dump has written so far, and what the watchdog saw of them
/// last time; when the dump began (CLOCK_MONOTONIC seconds) and the
/// bound it has.
static PROGRESS: AtomicU64 = AtomicU64::new(0);
static PROGRESS_SEEN: AtomicU64 = AtomicU64::new(0);
static DUMP_STARTED: AtomicI64 = AtomicI64::new(0);
static DUMP_LIMIT: AtomicI64 = AtomicI64::new(0);

/// Counts bytes a dump wrote.
pub(crate) fn progressed(bytes: usize) {
    PROGRESS.fetch_add(bytes as u64, Ordering::Relaxed);
}

fn monotonic_seconds() -> i64 {
    (sys::monotonic_ns() / 1_000_000_000) as i64
}

/// Starts watching the dump of `sig`, of a ring of `ring_size` bytes, with
/// SIGALRM handled by `action` (running [`on_alarm`]).
pub fn arm(sig: c_int, ring_size: u64, action: libc::sigaction) {
    CRASH_SIGNAL.store(sig, Ordering::SeqCst);
    let ring_mib = (ring_size >> 20) as i64;
    DUMP_LIMIT.store(
        LIMIT_SECONDS + LIMIT_SECONDS_PER_MIB * ring_mib,
        Ordering::Relaxed,
    );
    DUMP_STARTED.store(monotonic_seconds(), Ordering::Relaxed);
    PROGRESS_SEEN.store(PROGRESS.load(Ordering::Relaxed), Ordering::Relaxed);
    handback::arm_watchdog(&action, STALL_SECONDS);
}

/// Stops watching: SIGALRM and the program's alarm are put back.
pub fn disarm() {
    handback::disarm_watchdog();
}

/// SIGALRM during a crash dump: a dump that wrote something since the last
/// look, within its bound, gets another `STALL_SECONDS`; one that wrote
/// nothing (stuck), or went past its bound, ends: die as the crash would
/// have.
pub extern "C-unwind" fn on_alarm(_sig: c_int, _info: *mut libc::siginfo_t, _ctx: *mut c_void) {
    sys::cancel::callback!(|| panic::swallow(|| {
        let now = PROGRESS.load(Ordering::Relaxed);
        let moved = PROGRESS_SEEN.swap(now, Ordering::Relaxed) != now;
        let elapsed = monotonic_seconds() - DUMP_STARTED.load(Ordering::Relaxed);
        if moved && elapsed < DUMP_LIMIT.load(Ordering::Relaxed) {
            // SAFETY: alarm is async-signal-safe.
            unsafe { libc::alarm(STALL_SECONDS) };
            return;
        }
        die_by_default(CRASH_SIGNAL.load(Ordering::SeqCst))
    }))
}

/// Sleeps while `dumping()` says another thread's dump goes on and makes
/// progress (its own watchdog bounds it otherwise).
pub fn wait_for(dumping: impl Fn() -> bool) {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: 10_000_000,
    };
    let mut last = (PROGRESS.load(Ordering::Relaxed), monotonic_seconds());
    while dumping() {
        let now = (PROGRESS.load(Ordering::Relaxed), monotonic_seconds());
        if now.0 != last.0 {
            last = now;
        } else if now.1 - last.1 > i64::from(STALL_SECONDS) + 1 {
            return;
        }
        // SAFETY: nanosleep is async-signal-safe; `pause` is valid.
        unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
    }
}
