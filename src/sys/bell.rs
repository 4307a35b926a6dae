//! A bell: a futex word that threads ring to wake a thread waiting on it.
//! The ringer needs no handle of the waiting thread (a `std::thread::Thread`
//! lives in the state that a lock guards), so a caller rings it from a
//! static after letting go of the logger's lock. A wait starts from the
//! count read before the waiter's last look at what it waits for: a ring
//! after that look ends the wait, one before it was seen by the look.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

pub struct Bell {
    rung: AtomicU32,
}

impl Bell {
    pub const fn new() -> Bell {
        Bell {
            rung: AtomicU32::new(0),
        }
    }

    /// How often the bell has rung (wrapping): read before the waiter
    /// looks at what it waits for, then handed to [`Bell::wait`].
    pub fn count(&self) -> u32 {
        self.rung.load(Ordering::SeqCst)
    }

    /// Wakes every thread waiting on the bell: one futex(2) wake, whether
    /// or not one waits. Async-signal-safe; leaves errno as it was.
    pub fn ring(&self) {
        self.rung.fetch_add(1, Ordering::SeqCst);
        super::keeping_errno(|| self.futex(libc::FUTEX_WAKE, i32::MAX as u32, None));
    }

    /// Waits until the bell rings after `count` ([`Bell::count`]) was read,
    /// or `timeout` passes, or a signal comes (the caller's loop looks
    /// again). Returns at once if it rang meanwhile.
    pub fn wait(&self, count: u32, timeout: Option<Duration>) {
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
        });
        self.futex(libc::FUTEX_WAIT, count, ts.as_ref());
    }

    fn futex(&self, op: libc::c_int, val: u32, timeout: Option<&libc::timespec>) {
        // SAFETY: `rung` is a live, aligned 32-bit atomic; the timeout, if
        // any, is a valid relative timespec; no second word.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.rung.as_ptr(),
                op | libc::FUTEX_PRIVATE_FLAG,
                val,
                timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// A ring after the count was read ends the wait, whether it came
    /// before the wait began or during it; without one, the timeout does.
    #[test]
    fn a_ring_after_the_count_ends_the_wait() {
        static BELL: Bell = Bell::new();
        let count = BELL.count();
        BELL.ring();
        let start = std::time::Instant::now();
        BELL.wait(count, Some(Duration::from_secs(60)));
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{:?}",
            start.elapsed()
        );

        let woken = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&woken);
        let count = BELL.count();
        let waiter = std::thread::spawn(move || {
            BELL.wait(count, None);
            seen.store(true, Ordering::SeqCst);
        });
        BELL.ring();
        waiter.join().unwrap();
        assert!(woken.load(Ordering::SeqCst));

        let start = std::time::Instant::now();
        BELL.wait(BELL.count(), Some(Duration::from_millis(20)));
        assert!(
            start.elapsed() >= Duration::from_millis(20),
            "{:?}",
            start.elapsed()
        );
    }
}
