//! The crash handler: on a fatal signal, write the ring (and a backtrace) to the
//! dump descriptor, then let the signal do what it would have done without
//! vlog: call the handler installed before ours, or die by the default action
//! with the same exit status and core file.
//!
//! Everything that runs in the handler is async-signal-safe: no allocation, no
//! lock (the ring is read the lock-free way), only write(2), sigaction, alarm,
//! nanosleep and tgkill. The handler runs on an alternate stack, so a stack
//! overflow is dumped too.

//!
//! Imports the ring (its published view, read lock-free), the text stage and
//! the bottom of the crate: never the logger, whose lock a crashing thread
//! may hold.

pub mod altstack;
pub mod dump;
pub mod signals;
pub mod target;

use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::error::ConfigError;
use crate::panic;
use crate::ring::published;
use crate::sys;
use crate::text::num::{put_decimal, put_hex, put_signed};
use crate::text::Sink;
use signals::FATAL_SIGNALS;

/// The handlers that were installed before ours, by index in FATAL_SIGNALS.
struct Previous(UnsafeCell<MaybeUninit<[libc::sigaction; 7]>>);

// SAFETY: written only by `install`, once, for each signal before that
// signal's handler can run (sigaction saves the old action in the same call);
// read afterwards only by the handlers.
unsafe impl Sync for Previous {}

static PREVIOUS: Previous = Previous(UnsafeCell::new(MaybeUninit::zeroed()));
static INSTALLED: AtomicBool = AtomicBool::new(false);
static DUMP_FD: AtomicI32 = AtomicI32::new(2);
/// Where the raw ring image goes on a crash (`VLOG_DUMP=file:PATH` makes it
/// `PATH.ring`), or -1.
static IMAGE_FD: AtomicI32 = AtomicI32::new(-1);
/// 0: nobody is dumping; a thread id: that thread is; DONE: the dump is over.
static DUMPER: AtomicI32 = AtomicI32::new(0);
const DONE: i32 = -1;
/// The fatal signal being handled, for the watchdog.
static CRASH_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// How long the whole handler may take before the watchdog ends it.
const WATCHDOG_SECONDS: u32 = 2;

/// Where dumps go: stderr unless `VLOG_DUMP=file:PATH` named a file.
pub fn set_dump_fd(fd: c_int, image_fd: Option<c_int>) {
    DUMP_FD.store(fd, Ordering::SeqCst);
    IMAGE_FD.store(image_fd.unwrap_or(-1), Ordering::SeqCst);
}

/// Installs the handler for every fatal signal (once per process) and an
/// alternate stack for the calling thread.
pub fn install() -> std::io::Result<()> {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    warm_up_backtrace();
    altstack::enable();
    altstack::ensure();
    let previous = PREVIOUS.0.get().cast::<libc::sigaction>();
    for (i, &sig) in FATAL_SIGNALS.iter().enumerate() {
        let action = fatal_action(on_fatal_signal);
        // SAFETY: `action` is initialised; `previous.add(i)` is inside the
        // static array and no handler reads slot i before this call returns.
        if unsafe { libc::sigaction(sig, &action, previous.add(i)) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A sigaction running `handler` with SA_SIGINFO on the alternate stack, with
/// every fatal signal blocked while it runs: a fault inside the handler then
/// takes the default action at once instead of recursing.
/// A signal handler as the kernel calls it.
type Handler = extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void);

fn fatal_action(handler: Handler) -> libc::sigaction {
    // SAFETY: sigaction is plain data; all-zero is a valid starting point.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler as *const () as usize;
    action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // SAFETY: sa_mask is a valid sigset_t owned by `action`.
    unsafe {
        libc::sigemptyset(&mut action.sa_mask);
        for &sig in &FATAL_SIGNALS {
            libc::sigaddset(&mut action.sa_mask, sig);
        }
        // A dump to a pipe whose reader is gone must not end the process by
        // SIGPIPE instead of the crash signal.
        libc::sigaddset(&mut action.sa_mask, libc::SIGPIPE);
    }
    action
}

/// The first backtrace() call loads libgcc_s, which allocates: do it now, not
/// in the handler.
fn warm_up_backtrace() {
    let mut frames = [std::ptr::null_mut::<c_void>(); 4];
    // SAFETY: the buffer holds 4 entries.
    unsafe { libc::backtrace(frames.as_mut_ptr(), 4) };
}

fn thread_id() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Ends the process now with `sig`'s default action, as if vlog had never
/// handled it: same exit status, same core.
fn die_by_default(sig: c_int) {
    // SAFETY: plain system calls on valid arguments; all async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(sig, &action, std::ptr::null_mut());
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::tgkill(libc::getpid(), thread_id(), sig);
    }
}

/// The handler for fatal signals. A panic must not unwind into the
/// interrupted code, so it is swallowed (see `panic::swallow`).
extern "C" fn on_fatal_signal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // SAFETY: installed by `install` as a SA_SIGINFO handler, so these are
    // the kernel's arguments.
    panic::swallow(|| unsafe { on_fatal(sig, info, ctx) })
}

/// SIGALRM during a crash dump: the dump took too long, so die as the crash
/// would have.
extern "C" fn on_watchdog(_sig: c_int, _info: *mut libc::siginfo_t, _ctx: *mut c_void) {
    panic::swallow(|| die_by_default(CRASH_SIGNAL.load(Ordering::SeqCst)))
}

/// The `VLOG_DUMP_SIGNAL` handler: dump and carry on, leaving errno as it
/// was.
extern "C" fn on_dump_signal(_sig: c_int, _info: *mut libc::siginfo_t, _ctx: *mut c_void) {
    sys::keeping_errno(|| panic::swallow(write_requested_dump))
}

/// The fatal-signal handler's body.
///
/// # Safety
/// Called only as a SA_SIGINFO signal handler, with the kernel's arguments.
unsafe fn on_fatal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let tid = thread_id();
    match DUMPER.compare_exchange(0, tid, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => {
            CRASH_SIGNAL.store(sig, Ordering::SeqCst);
            arm_watchdog();
            // SAFETY: `info` is the kernel's, forwarded from the caller.
            unsafe { write_crash_dump(sig, info, tid) };
            write_ring_image();
            // SAFETY: alarm is async-signal-safe.
            unsafe { libc::alarm(0) };
            DUMPER.store(DONE, Ordering::SeqCst);
        }
        // This thread crashed again while dumping (abort() inside the dump,
        // say): no second attempt.
        Err(owner) if owner == tid => return die_by_default(sig),
        // Another thread is dumping: give it time to finish, then go on.
        Err(_) => wait_for_dump(),
    }
    // SAFETY: forwarded from the caller.
    unsafe { chain(sig, info, ctx) };
}

/// Sleeps until the dumping thread is done, at most a little longer than the
/// watchdog allows it.
fn wait_for_dump() {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: 10_000_000,
    };
    for _ in 0..(WATCHDOG_SECONDS * 100 + 50) {
        if DUMPER.load(Ordering::SeqCst) == DONE {
            return;
        }
        // SAFETY: nanosleep is async-signal-safe; `pause` is valid.
        unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
    }
}

/// Hands the signal to whoever had it before vlog: the previous handler with
/// the original arguments, or the default action.
///
/// # Safety
/// As for [`on_fatal`].
unsafe fn chain(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let Some(index) = FATAL_SIGNALS.iter().position(|&s| s == sig) else {
        return die_by_default(sig);
    };
    // SAFETY: slot `index` was written by install() before this handler could
    // run for `sig`.
    let previous = unsafe { *PREVIOUS.0.get().cast::<libc::sigaction>().add(index) };
    // Put the previous action back, so that a fault that repeats when the
    // previous handler returns reaches it directly, as without vlog.
    // SAFETY: `previous` is a sigaction the kernel gave us.
    unsafe { libc::sigaction(sig, &previous, std::ptr::null_mut()) };
    match previous.sa_sigaction {
        libc::SIG_DFL => die_by_default(sig),
        libc::SIG_IGN => {}
        handler if previous.sa_flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: the previous owner installed this address as a
            // SA_SIGINFO handler.
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                unsafe { std::mem::transmute(handler) };
            f(sig, info, ctx);
        }
        handler => {
            // SAFETY: the previous owner installed this address as a plain
            // handler.
            let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(handler) };
            f(sig);
        }
    }
}

/// Makes SIGALRM end the process by the crash signal's default action if the
/// dump takes longer than WATCHDOG_SECONDS.
fn arm_watchdog() {
    let action = fatal_action(on_watchdog);
    // SAFETY: valid action; alarm is async-signal-safe.
    unsafe {
        libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut());
        libc::alarm(WATCHDOG_SECONDS);
    }
}

/// The header line, the backtrace of this thread and the ring.
///
/// # Safety
/// `info` is the siginfo the kernel passed to the handler (or NULL).
unsafe fn write_crash_dump(sig: c_int, info: *mut libc::siginfo_t, tid: i32) {
    let Some(fd) = dump_fd() else { return };
    let (code, addr) = if info.is_null() {
        (0, 0)
    } else {
        // SAFETY: non-NULL siginfo from the kernel.
        unsafe { ((*info).si_code, (*info).si_addr() as u64) }
    };
    let stats = dump::ring_stats();
    dump::with_fd_sink(fd, |sink| {
        sink.put(b"vlog: fatal signal ");
        sink.put(signals::name(sig));
        sink.put(b" (");
        put_decimal(sig as u64, 1, sink);
        sink.put(b"), code ");
        put_signed(code as i64, sink);
        sink.put(b", address ");
        put_hex(addr, sink);
        dump::process_line(tid, stats, sink);
        sink.put(b"vlog: backtrace of thread ");
        put_decimal(tid as u64, 1, sink);
        sink.put(b":\n");
        sink.finish();
        let mut frames = [std::ptr::null_mut::<c_void>(); 64];
        // SAFETY: the buffer holds 64 entries; backtrace_symbols_fd writes
        // straight to the descriptor without allocating (warmed up at install).
        unsafe {
            let n = libc::backtrace(frames.as_mut_ptr(), 64);
            libc::backtrace_symbols_fd(frames.as_ptr(), n, fd);
        }
        dump::records(sink);
    });
}

/// Replaces the image file's contents with the ring as it is now: a ring file
/// that vlog-dump reads.
fn write_ring_image() {
    let fd = IMAGE_FD.load(Ordering::SeqCst);
    if fd < 0 {
        return;
    }
    // SAFETY: ftruncate and lseek on our own descriptor; async-signal-safe.
    unsafe {
        libc::ftruncate(fd, 0);
        libc::lseek(fd, 0, libc::SEEK_SET);
    }
    published::read(|view| view.map(|v| v.write_image(fd)));
}

/// The dump that `VLOG_DUMP_SIGNAL` asks for: header, ring, no backtrace, and
/// the process goes on.
fn write_requested_dump() {
    if DUMPER
        .compare_exchange(0, thread_id(), Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return;
    }
    let stats = dump::ring_stats();
    if let Some(fd) = dump_fd() {
        dump::with_fd_sink(fd, |sink| {
            sink.put(b"vlog: dump requested by signal");
            dump::process_line(thread_id(), stats, sink);
            dump::records(sink);
        });
    }
    DUMPER.store(0, Ordering::SeqCst);
}

/// Where the dump goes: the dump file, or fd 2 while it is still the stderr
/// vlog adopted (a daemon that closed it may have reused fd 2 for a socket
/// or a file that must not receive the ring).
fn dump_fd() -> Option<c_int> {
    let fd = DUMP_FD.load(Ordering::SeqCst);
    (fd != 2 || crate::diag::stderr().is_some()).then_some(fd)
}

/// Installs a handler that writes a dump on `sig` and lets the process go on.
pub fn install_dump_signal(sig: c_int) -> Result<(), ConfigError> {
    let mut action = fatal_action(on_dump_signal);
    action.sa_flags |= libc::SA_RESTART;
    // SAFETY: valid action.
    if unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(ConfigError::new(format!("cannot handle signal {sig}: {e}")));
    }
    Ok(())
}
