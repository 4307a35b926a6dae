//! Thread cancellation: no vlog call is cancelled halfway (its lock held,
//! its Rust frames unwound, which Rust cannot do: the process would abort),
//! and a deferred cancel is not lost either.
//!
//! [`off`] and [`restore`] bracket what must not be cancelled. They cost two
//! compare-and-swap calls into glibc, about 60 instructions, which the
//! recording path pays only for a thread whose cancellation can act at any
//! instruction (asynchronous and enabled, [`may_act_anywhere`]). Any other
//! thread can be cancelled only at a cancellation point (write, open,
//! fdatasync, ...), and the recording path reaches those only to print,
//! where the outputs bracket their writes themselves, with [`point`].
//!
//! A cancel that would have acted at such a point inside vlog acts instead
//! as the vlog call returns: [`enter`] and [`leave`] bracket each call, and
//! [`leave`] of the outermost one on the thread calls pthread_testcancel
//! when a [`point`] was passed inside it. So a thread whose only
//! cancellation points are its log calls still ends on a deferred cancel,
//! at the first call that wrote, as it would with stdio; and a call nested
//! in a signal handler that interrupted a vlog call never acts, as the
//! frames below it are vlog's: it hands the duty on to the call it
//! interrupted.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering};

// The libc crate does not bind these on Linux; glibc's values.
const PTHREAD_CANCEL_ENABLE: c_int = 0;
const PTHREAD_CANCEL_DISABLE: c_int = 1;
const PTHREAD_CANCEL_DEFERRED: c_int = 0;
const PTHREAD_CANCEL_ASYNCHRONOUS: c_int = 1;
// C-unwind: a cancel that acts in pthread_setcancelstate (asynchronous
// type) or pthread_testcancel unwinds through them into the caller.
extern "C-unwind" {
    fn pthread_setcancelstate(state: c_int, oldstate: *mut c_int) -> c_int;
    fn pthread_setcanceltype(kind: c_int, oldtype: *mut c_int) -> c_int;
    fn pthread_testcancel();
}

/// The calling thread's vlog call: IN_CALL while one runs, PASSED once it
/// has passed a cancellation point.
const IN_CALL: u8 = 1;
const PASSED: u8 = 2;

// On x86-64 Linux the byte is a thread-local of the initial-exec model,
// reached with two instructions and no call: a Rust thread-local is
// general-dynamic in a library, a call to __tls_get_addr as far as the
// compiler knows (the linker turns it into a load when it links a
// program), and the recording entry, which marks the call before
// anything else, would save and restore its six arguments around it.
// Initial-exec needs static TLS, which a library loaded by dlopen gets
// from glibc's reserve: one byte.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
std::arch::global_asm!(
    ".pushsection .tbss,\"awT\",@nobits",
    ".globl vlog__cancel_call",
    ".hidden vlog__cancel_call",
    ".type vlog__cancel_call,@object",
    ".size vlog__cancel_call,1",
    "vlog__cancel_call:",
    ".zero 1",
    ".popsection",
);

/// The calling thread's call byte. Not a closure-taking accessor: the
/// entry points use it in frames that must keep no landing pad, in debug
/// builds too.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[inline(always)]
fn call_byte() -> &'static AtomicU8 {
    let at: *mut u8;
    // SAFETY: reads the byte's offset from the thread pointer (the GOT
    // entry the linker fills) and the thread pointer itself (%fs:0 holds
    // it); no side effects, the same answer all through one thread.
    unsafe {
        std::arch::asm!(
            "mov {at}, qword ptr [rip + vlog__cancel_call@GOTTPOFF]",
            "add {at}, qword ptr fs:[0]",
            at = out(reg) at,
            options(nostack, pure, readonly),
        )
    };
    // SAFETY: the calling thread's own byte, alive as long as the thread
    // (no destructor: usable while it exits; the reference is never kept
    // or sent to another thread), and used by it alone. Atomics, as a
    // signal handler on the thread may change it between a load and a
    // store: plain loads and stores, as a handler that runs between them
    // loses at most its own mark, and the cancel stays pending for the
    // next cancellation point.
    unsafe { AtomicU8::from_ptr(at) }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
thread_local! {
    static CALL: AtomicU8 = const { AtomicU8::new(0) };
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
#[inline(always)]
fn call_byte() -> &'static AtomicU8 {
    // SAFETY: as above: the reference is used by this thread only, while
    // it lives.
    CALL.with(|call| unsafe { &*(call as *const AtomicU8) })
}

/// Marks the start of a vlog call on this thread; what it returns goes to
/// [`leave`]. The entry points call it first, in a frame with nothing to
/// drop and no landing pad: a call nested in a signal handler can act on a
/// cancel when this mark is not set yet only where the unwind can pass.
#[inline(always)]
pub fn enter() -> u8 {
    let call = call_byte();
    let saved = call.load(Ordering::Relaxed);
    call.store(IN_CALL, Ordering::Relaxed);
    saved
}

/// Marks the end of the vlog call [`enter`] began. True when it is the
/// outermost one on this thread and passed a cancellation point: the
/// caller then calls [`act`] once it has put everything back.
#[inline(always)]
pub fn leave(saved: u8) -> bool {
    let call = call_byte();
    let now = call.load(Ordering::Relaxed);
    call.store(saved, Ordering::Relaxed);
    // What `enter` left, unless a point was passed (rare: the call
    // printed).
    now != IN_CALL && passed_in(call, saved)
}

#[cold]
#[inline(never)]
fn passed_in(call: &AtomicU8, saved: u8) -> bool {
    if saved & IN_CALL != 0 {
        // Nested (from a signal handler): the interrupted call acts.
        call.store(saved | PASSED, Ordering::Relaxed);
        return false;
    }
    true
}

/// [`leave`] for vlog's own callbacks (fork and exit handlers, signal
/// handlers, a thread's exit), which never act on a cancel: a mark a call
/// nested in them left goes to the vlog call they interrupted, if any.
#[inline(always)]
pub fn leave_quietly(saved: u8) {
    let call = call_byte();
    let now = call.load(Ordering::Relaxed);
    let handed_on = if saved & IN_CALL != 0 {
        now & PASSED
    } else {
        0
    };
    call.store(saved | handed_on, Ordering::Relaxed);
}

/// Runs `f` in a frame of its own: whatever it holds and catches (its
/// landing pads) stays out of the entry point's or callback's frame, which
/// a cancel acting as the call returns, or a nested call's, unwinds
/// through.
#[inline(never)]
pub fn apart<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// The body of one of vlog's own callbacks (a fork or exit handler, a
/// signal handler, a thread-key destructor), a closure: the thread is
/// marked as inside vlog while it runs (see [`leave_quietly`]). The
/// callback is an `extern "C-unwind"` function with nothing else in it, so
/// that its frame has no landing pad (see [`enter`]). A macro, not a
/// function taking the closure, for the same reason.
macro_rules! callback {
    ($body:expr) => {{
        let call = $crate::sys::cancel::enter();
        let result = $crate::sys::cancel::apart($body);
        $crate::sys::cancel::leave_quietly(call);
        result
    }};
}
pub(crate) use callback;

/// Acts on a pending cancel, if cancellation is enabled (a deferred one
/// that arrived during the call). Called only from the outermost frame of a
/// `C-unwind` entry point, after its work, with nothing left to drop: the
/// unwind passes straight into the C caller.
#[cold]
#[inline(never)]
pub fn act() {
    // SAFETY: no preconditions; see above for where it may unwind.
    unsafe { pthread_testcancel() };
}

/// [`off`] for a cancellation point that vlog is about to pass (a write, an
/// open, a connect): also notes that the vlog call it is in must act on a
/// pending cancel as it returns.
#[inline]
pub fn point() -> c_int {
    passed();
    off()
}

/// Notes that the vlog call running on this thread passes a cancellation
/// point.
#[inline]
pub fn passed() {
    let call = call_byte();
    call.store(call.load(Ordering::Relaxed) | PASSED, Ordering::Relaxed);
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
