//! Faults the program recovers from.
//!
//! A program whose own handler for a fatal signal takes `SA_SIGINFO` can see
//! where the fault was, and may be about to mend it: a garbage collector's
//! or a database's write barrier (a page made writable in the handler),
//! libsigsegv, guard pages that grow a stack. Such a handler gets the
//! signal first, before any dump, and a fault it recovers from costs the
//! program a note at most, once a minute. vlog's handler stays in place
//! meanwhile, and the fault is dumped as the crash it is when:
//!
//! - it comes back unchanged: the same thread, signal, address and
//!   registers, with no vlog call in between, so nothing ran since the
//!   program's handler returned without mending it;
//! - the program's handler falls to the default action: it sets `SIG_DFL`
//!   to re-raise the signal (through the kernel, or through the preload
//!   library's sigaction), or calls abort(), whose SIGABRT is dumped.
//!
//! A plain handler (`sa_handler`) cannot know the address, and is most
//! often a crash reporter that ends the process: it gets the signal after
//! the dump. A handler that ends the process itself (`_exit`) once it has
//! the signal first leaves no dump; a ring file (`VLOG_BUFFER_FILE`) still
//! holds the records. Everything here is async-signal-safe.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU64, Ordering};

use super::signals;
use crate::sys;
use crate::text::num::{put_decimal, put_hex};
use crate::text::Sink;

/// Whether the program's disposition `previous` gets a fault before the
/// dump (see the overview).
pub fn program_first(previous: &libc::sigaction) -> bool {
    previous.sa_sigaction != libc::SIG_DFL
        && previous.sa_sigaction != libc::SIG_IGN
        && previous.sa_flags & libc::SA_SIGINFO != 0
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
const NREGS: usize = 23;
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
const NREGS: usize = 0;

/// The last fault handed to the program first (thread 0: none, or a vlog
/// call ran since). Written only by handlers; two threads faulting at once
/// tell their faults apart by the thread id, and a torn write can only make
/// a fault look new.
struct Fault {
    tid: AtomicI32,
    sig: AtomicI32,
    addr: AtomicU64,
    regs: [AtomicU64; NREGS],
}

static LAST: Fault = Fault {
    tid: AtomicI32::new(0),
    sig: AtomicI32::new(0),
    addr: AtomicU64::new(0),
    regs: [const { AtomicU64::new(0) }; NREGS],
};

/// The general registers of the interrupted code (none elsewhere than
/// x86-64 Linux, where the address alone tells a fault that came back).
///
/// # Safety
/// `ctx` is NULL or the kernel's ucontext for this signal.
unsafe fn registers(ctx: *mut c_void) -> [u64; NREGS] {
    let mut regs = [0u64; NREGS];
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    if !ctx.is_null() {
        // SAFETY: per the caller, a ucontext_t the kernel filled.
        let gregs = unsafe { (*ctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
        for (r, g) in regs.iter_mut().zip(gregs) {
            *r = g as u64;
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    let _ = ctx;
    regs
}

/// The faulting address, or 0.
///
/// # Safety
/// `info` is NULL or the kernel's siginfo for this signal.
unsafe fn address(info: *mut libc::siginfo_t) -> u64 {
    if info.is_null() {
        0
    } else {
        // SAFETY: per the caller.
        unsafe { (*info).si_addr() as u64 }
    }
}

/// Whether this fault is the one last handed to the program, come back
/// unchanged (see the overview); otherwise it becomes that one.
///
/// # Safety
/// `info` and `ctx` are the kernel's arguments to a handler of `sig`.
pub unsafe fn came_back(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) -> bool {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    // SAFETY: per the caller.
    let (addr, regs) = unsafe { (address(info), registers(ctx)) };
    let same = LAST.tid.load(Ordering::SeqCst) == tid
        && LAST.sig.load(Ordering::SeqCst) == sig
        && LAST.addr.load(Ordering::SeqCst) == addr
        && LAST
            .regs
            .iter()
            .zip(regs)
            .all(|(r, v)| r.load(Ordering::SeqCst) == v);
    if !same {
        LAST.tid.store(0, Ordering::SeqCst);
        LAST.sig.store(sig, Ordering::SeqCst);
        LAST.addr.store(addr, Ordering::SeqCst);
        for (r, v) in LAST.regs.iter().zip(regs) {
            r.store(v, Ordering::SeqCst);
        }
        LAST.tid.store(tid, Ordering::SeqCst);
    }
    same
}

/// A vlog call ran: the program made progress since the last fault.
pub fn forget() {
    LAST.tid.store(0, Ordering::SeqCst);
}

/// When the last note was written (CLOCK_MONOTONIC seconds; 0: never) and
/// the faults handed over since.
static NOTED_AT: AtomicI64 = AtomicI64::new(0);
static UNNOTED: AtomicU64 = AtomicU64::new(0);
/// The least time between two notes.
const NOTE_EVERY_S: i64 = 60;

/// Says, at most once a minute, that a fault went to the program's handler
/// first, and how many did since the last note; to where dumps go.
///
/// # Safety
/// `info` is NULL or the kernel's siginfo for this signal.
pub unsafe fn note(sig: c_int, info: *mut libc::siginfo_t) {
    let unnoted = UNNOTED.fetch_add(1, Ordering::SeqCst);
    // Never 0, which means never noted.
    let now = (sys::monotonic_ns() / 1_000_000_000) as i64 + 1;
    let last = NOTED_AT.load(Ordering::SeqCst);
    if last != 0 && now - last < NOTE_EVERY_S
        || NOTED_AT
            .compare_exchange(last, now, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
    {
        return;
    }
    UNNOTED.fetch_sub(unnoted + 1, Ordering::SeqCst);
    // SAFETY: per the caller.
    let addr = unsafe { address(info) };
    super::dump::say_line(|line| {
        line.put(b"vlog: ");
        line.put(signals::name(sig));
        line.put(b" at address ");
        put_hex(addr, line);
        line.put(b" went to the program's own handler first, which may recover from it; vlog dumps it if it comes back unchanged or the program falls to the default action");
        if unnoted > 0 {
            line.put(b" (");
            put_decimal(unnoted, 1, line);
            line.put(b" more since the last note)");
        }
    });
}
