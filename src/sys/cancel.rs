//! Thread cancellation: no vlog call is a cancellation point, and none is
//! cancelled halfway (its lock held, its Rust frames unwound, which Rust
//! cannot do: the process would abort).
//!
//! [`off`] and [`restore`] bracket what must not be cancelled. They cost two
//! compare-and-swap calls into glibc, about 60 instructions, which the
//! recording path pays only for a thread whose cancellation can act at any
//! instruction (asynchronous and enabled, [`may_act_anywhere`]). Any other
//! thread can be cancelled only at a cancellation point (write, open,
//! fdatasync, ...), and the recording path reaches those only to print,
//! where the outputs bracket their writes themselves.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

// The libc crate does not bind these on Linux; glibc's values.
const PTHREAD_CANCEL_ENABLE: c_int = 0;
const PTHREAD_CANCEL_DISABLE: c_int = 1;
const PTHREAD_CANCEL_DEFERRED: c_int = 0;
const PTHREAD_CANCEL_ASYNCHRONOUS: c_int = 1;
extern "C" {
    fn pthread_setcancelstate(state: c_int, oldstate: *mut c_int) -> c_int;
    fn pthread_setcanceltype(kind: c_int, oldtype: *mut c_int) -> c_int;
}

/// Turns the calling thread's cancelability off and returns what it was,
/// for [`restore`]. Lock-free in glibc, so also usable where the caller may
/// be a signal handler.
#[inline(always)]
pub fn off() -> c_int {
    let mut old = PTHREAD_CANCEL_ENABLE;
    // SAFETY: `old` is a valid out-pointer; a valid state cannot fail.
    unsafe { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut old) };
    old
}

/// Puts back the cancelability [`off`] returned. A cancel requested
/// meanwhile acts here at once if the thread's type is asynchronous, so
/// such a caller must be a frame with nothing left to drop (the outermost
/// frame of a `C-unwind` entry point, after its work), whence the unwind
/// passes straight into the C caller. For a thread of deferred type it only
/// makes the cancel pending again, for its next cancellation point.
#[inline(always)]
pub fn restore(old: c_int) {
    if old == PTHREAD_CANCEL_ENABLE {
        let mut ignored = 0;
        // SAFETY: as in `off`.
        unsafe { pthread_setcancelstate(old, &mut ignored) };
    }
}

/// Where glibc keeps the calling thread's cancellation state and type in its
/// thread descriptor, plus one (found by [`learn`]; 0 while unknown, or when
/// it could not be found: one test on the recording path).
static CANCEL_WORD: AtomicUsize = AtomicUsize::new(0);
const NOT_FOUND: usize = 0;
/// Whether [`learn`] looked already.
static LEARNED: AtomicBool = AtomicBool::new(false);
/// glibc's bits in that word: cancellation disabled, type asynchronous.
const STATE_DISABLED: u32 = 1;
const TYPE_ASYNC: u32 = 2;
/// How much of the descriptor is searched.
const SEARCHED: usize = 1024;

/// True when a cancel could act at any instruction of the calling thread:
/// its type is asynchronous and its cancelability enabled. Also true while
/// that cannot be told (before [`learn`], or where it found nothing). A load
/// from the thread's own descriptor, about 6 instructions.
#[inline(always)]
pub fn may_act_anywhere() -> bool {
    let at = CANCEL_WORD.load(Ordering::Relaxed);
    if at == NOT_FOUND {
        return true;
    }
    // SAFETY: `learn` found this word inside every thread's descriptor
    // (pthread_self points at it in glibc) and checked that it holds the
    // thread's cancellation bits; the thread's own state and type bits
    // change only by its own calls, and other threads change the word only
    // atomically, so an atomic load is sound.
    let word = unsafe {
        AtomicU32::from_ptr(descriptor().add(at - 1).cast::<u32>()).load(Ordering::Relaxed)
    };
    word & (TYPE_ASYNC | STATE_DISABLED) == TYPE_ASYNC
}

/// The calling thread's descriptor: what pthread_self() returns, read
/// without a call on x86-64 (glibc keeps it at %fs:0x10, the TCB's self
/// pointer, which is what pthread_self loads).
#[inline(always)]
fn descriptor() -> *mut u8 {
    #[cfg(target_arch = "x86_64")]
    {
        let p: *mut u8;
        // SAFETY: reads the thread pointer's self field, a plain load
        // with no side effects, which glibc's pthread_self is.
        unsafe {
            std::arch::asm!("mov {}, fs:0x10", out(reg) p, options(nostack, readonly, preserves_flags))
        };
        p
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: pthread_self has no preconditions.
        unsafe { libc::pthread_self() as *mut u8 }
    }
}

/// Finds where glibc keeps the cancellation bits, once: by switching the
/// calling thread's type with the public call (with cancellation off, so a
/// pending cancel cannot act) and seeing which one word of its descriptor
/// changes, and how; and, when cancellation was on, that the same word's
/// state bit went with it. Anything unexpected (another C library, another
/// layout) leaves [`may_act_anywhere`] always true.
pub fn learn() {
    if LEARNED.swap(true, Ordering::Relaxed) {
        return;
    }
    // SAFETY: pthread_self has no preconditions.
    let base = unsafe { libc::pthread_self() } as *const u32;
    if base.cast_mut().cast::<u8>() != descriptor() {
        CANCEL_WORD.store(NOT_FOUND, Ordering::Relaxed);
        return;
    }
    let snapshot = || {
        let mut words = [0u32; SEARCHED / 4];
        for (i, w) in words.iter_mut().enumerate() {
            // SAFETY: glibc's thread descriptor starts at pthread_self()
            // and is larger than SEARCHED bytes; volatile, as other threads
            // may set cancel bits in it.
            *w = unsafe { base.add(i).read_volatile() };
        }
        words
    };
    let enabled = snapshot();
    let state = off();
    let disabled = snapshot();
    let mut kind = PTHREAD_CANCEL_DEFERRED;
    let flipped = |k: c_int| {
        if k == PTHREAD_CANCEL_DEFERRED {
            PTHREAD_CANCEL_ASYNCHRONOUS
        } else {
            PTHREAD_CANCEL_DEFERRED
        }
    };
    // SAFETY: plain calls with valid out-pointers; the type is put back at
    // once, cancellation off all the while.
    unsafe { pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &mut kind) };
    let mut ignored = 0;
    // SAFETY: as above.
    unsafe { pthread_setcanceltype(kind, &mut ignored) };
    let current = snapshot();
    // SAFETY: as above.
    unsafe { pthread_setcanceltype(flipped(kind), &mut ignored) };
    let other = snapshot();
    // SAFETY: as above.
    unsafe { pthread_setcanceltype(kind, &mut ignored) };
    let back = snapshot();
    restore(state);
    let changed: Vec<usize> = (0..current.len())
        .filter(|&i| current[i] != other[i])
        .collect();
    let found = match changed[..] {
        [i] if current[i] ^ other[i] == TYPE_ASYNC
            && back[i] == current[i]
            && current[i] & STATE_DISABLED != 0
            && (state != PTHREAD_CANCEL_ENABLE
                || (enabled[i] ^ disabled[i] == STATE_DISABLED
                    && enabled[i] & STATE_DISABLED == 0)) =>
        {
            i * 4 + 1
        }
        _ => NOT_FOUND,
    };
    CANCEL_WORD.store(found, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cancellation_word_is_found_and_read() {
        learn();
        assert_ne!(
            CANCEL_WORD.load(Ordering::Relaxed),
            NOT_FOUND,
            "glibc's layout"
        );
        assert!(!may_act_anywhere());
        let state = off();
        assert!(!may_act_anywhere());
        restore(state);
        let mut kind = 0;
        // SAFETY: plain calls; the type is put back before the test ends.
        unsafe { pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &mut kind) };
        let asynchronous = may_act_anywhere();
        let mut ignored = 0;
        // SAFETY: as above.
        unsafe { pthread_setcanceltype(kind, &mut ignored) };
        assert!(asynchronous);
        assert!(!may_act_anywhere());
        // Another thread has the word at the same place.
        assert!(!std::thread::spawn(may_act_anywhere).join().unwrap());
    }
}
