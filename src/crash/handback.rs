//! Handing a signal back to the program: whatever vlog borrowed to dump a
//! crash or a requested dump (SIGALRM's disposition and the program's alarm,
//! for the watchdog; the signal mask of the handler it runs in) is put back
//! before the program's own handler is called, so a program that handles
//! the signal itself, and even recovers from it, finds things as it left
//! them. Everything here is async-signal-safe.

use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};

use crate::sys;

/// A signal's disposition as it was before vlog took the signal.
pub struct Saved(UnsafeCell<MaybeUninit<libc::sigaction>>);

// SAFETY: each slot is written by sigaction while vlog installs its own
// handler for that signal, before that handler can run, and only read
// afterwards (by that handler and by whoever puts it back).
unsafe impl Sync for Saved {}

impl Saved {
    pub const fn new() -> Saved {
        Saved(UnsafeCell::new(MaybeUninit::zeroed()))
    }

    pub fn as_mut_ptr(&self) -> *mut libc::sigaction {
        self.0.get().cast()
    }

    /// # Safety
    /// The slot was filled by sigaction (zeroed, it reads as SIG_DFL).
    pub unsafe fn get(&self) -> libc::sigaction {
        // SAFETY: per the caller; a sigaction is plain data.
        unsafe { *self.as_mut_ptr() }
    }
}

/// What became of a signal handed back.
#[derive(PartialEq, Eq)]
pub enum Handed {
    /// The previous disposition is the default action.
    Default,
    /// It was ignored.
    Ignored,
    /// The program's handler ran and returned.
    Handled,
}

/// Calls `previous`, the program's disposition of `sig`, as the kernel
/// would have: with the signal mask the interrupted code had (from `ctx`),
/// plus the handler's own `sa_mask`, plus `sig` unless SA_NODEFER.
///
/// # Safety
/// Called from a handler of `sig`, with the kernel's `info` and `ctx`.
pub unsafe fn call(
    previous: &libc::sigaction,
    sig: c_int,
    info: *mut libc::siginfo_t,
    ctx: *mut c_void,
) -> Handed {
    match previous.sa_sigaction {
        libc::SIG_DFL => return Handed::Default,
        libc::SIG_IGN => return Handed::Ignored,
        _ => {}
    }
    // SAFETY: sigset_t is plain data; every set is initialised before use.
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        if ctx.is_null() {
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
        } else {
            mask = (*ctx.cast::<libc::ucontext_t>()).uc_sigmask;
        }
        for s in 1..=64 {
            if libc::sigismember(&previous.sa_mask, s) == 1 {
                libc::sigaddset(&mut mask, s);
            }
        }
        if previous.sa_flags & libc::SA_NODEFER == 0 {
            libc::sigaddset(&mut mask, sig);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut());
    }
    let handler = previous.sa_sigaction;
    if previous.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the program installed this address as a SA_SIGINFO
        // handler.
        let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
            unsafe { std::mem::transmute(handler) };
        f(sig, info, ctx);
    } else {
        // SAFETY: the program installed this address as a plain handler.
        let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(handler) };
        f(sig);
    }
    Handed::Handled
}

/// SIGALRM's disposition and the program's alarm while the watchdog has
/// them.
static ALARM_ACTION: Saved = Saved::new();
static ALARM_LEFT: AtomicU32 = AtomicU32::new(0);
static ARMED_AT: AtomicI64 = AtomicI64::new(0);
static ARMED: AtomicBool = AtomicBool::new(false);

/// Makes SIGALRM run `action` in `seconds`, keeping what the program had.
pub fn arm_watchdog(action: &libc::sigaction, seconds: u32) {
    if ARMED.swap(true, Ordering::SeqCst) {
        return;
    }
    ARMED_AT.store(monotonic_seconds(), Ordering::SeqCst);
    // SAFETY: valid action and out-pointer; alarm is async-signal-safe.
    unsafe {
        libc::sigaction(libc::SIGALRM, action, ALARM_ACTION.as_mut_ptr());
        ALARM_LEFT.store(libc::alarm(seconds), Ordering::SeqCst);
    }
}

/// Puts SIGALRM and the program's alarm back (the time the dump took
/// counted against it; an alarm due meanwhile fires at once).
pub fn disarm_watchdog() {
    if !ARMED.swap(false, Ordering::SeqCst) {
        return;
    }
    // SAFETY: as in `arm_watchdog`; the saved action came from sigaction.
    unsafe {
        libc::alarm(0);
        libc::sigaction(
            libc::SIGALRM,
            ALARM_ACTION.as_mut_ptr(),
            std::ptr::null_mut(),
        );
    }
    let left = ALARM_LEFT.load(Ordering::SeqCst);
    if left > 0 {
        let took = (monotonic_seconds() - ARMED_AT.load(Ordering::SeqCst)).max(0) as u32;
        // SAFETY: alarm is async-signal-safe.
        unsafe { libc::alarm(left.saturating_sub(took).max(1)) };
    }
}

fn monotonic_seconds() -> i64 {
    sys::monotonic_ns() as i64 / 1_000_000_000
}
