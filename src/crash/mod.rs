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

pub mod adopt;
pub mod altstack;
pub mod dump;
pub mod handback;
pub mod pending;
pub mod recover;
pub mod requested;
pub mod signals;
pub mod target;
pub mod watchdog;

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};

use crate::fields::frames;
use crate::panic;
use crate::ring::{self, published};
use crate::sys;
use crate::text::line::put_escaped;
use crate::text::num::{put_decimal, put_hex, put_signed};
use crate::text::Sink;
use handback::Saved;
use signals::FATAL_SIGNALS;

/// The dispositions the program had before vlog took a signal, by signal
/// number: the fatal signals and the dump signals.
static PREVIOUS: [Saved; 65] = [const { Saved::new() }; 65];
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// The signals whose handler is vlog's, by number.
static TAKEN: [AtomicBool; 65] = [const { AtomicBool::new(false) }; 65];
/// What a vlog call does on entry: nothing (NONE: no crash handler), give
/// its thread an alternate stack (ARMED), or first attend to what a handler
/// left for it (ATTEND): put vlog's handler back for the signals it handed
/// to a handler of the program's, and tell the logger a ring file was
/// repaired (see `ring::guard`).
static HANDLER: AtomicU8 = AtomicU8::new(NONE);
const NONE: u8 = 0;
const ARMED: u8 = 1;
const ATTEND: u8 = 2;
/// The fatal signals whose handler is to be put back.
static HANDED_BACK: [AtomicBool; 65] = [const { AtomicBool::new(false) }; 65];
/// The dump signals vlog handles, by number.
static DUMP_SIGNALS: [AtomicBool; 65] = [const { AtomicBool::new(false) }; 65];
/// The crash dump's claim. 0: nobody is dumping; a thread id: that thread
/// is; DONE: the dump is over.
static DUMPER: AtomicI32 = AtomicI32::new(0);
const DONE: i32 = -1;
/// A requested dump's claim, apart from the crash's: a crash while a
/// requested dump runs is dumped at once (the requested one stops writing).
static REQUESTED: AtomicI32 = AtomicI32::new(0);
/// Installs the handler for every fatal signal (once per process) and an
/// alternate stack for the calling thread.
pub fn install() -> std::io::Result<()> {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    warm_up_backtrace();
    altstack::ensure();
    for &sig in &FATAL_SIGNALS {
        if !TAKEN[sig as usize].load(Ordering::SeqCst) {
            take(sig)?;
        }
    }
    let _ = HANDLER.compare_exchange(NONE, ARMED, Ordering::SeqCst, Ordering::SeqCst);
    Ok(())
}

/// Takes SIGBUS, without dumping, for a process with a ring file and no
/// crash handler (`VLOG_DUMP=off`, or no `vlog_init`): a ring file another
/// process truncates is repaired (see `ring::guard`); any other SIGBUS goes
/// to the program's disposition, as without vlog.
pub fn guard_ring_files() -> std::io::Result<()> {
    if TAKEN[libc::SIGBUS as usize].load(Ordering::SeqCst) {
        return Ok(());
    }
    take(libc::SIGBUS)
}

/// Makes vlog's handler `sig`'s, keeping the program's disposition.
fn take(sig: c_int) -> std::io::Result<()> {
    let mut action = fatal_action(on_fatal_signal);
    if sig == libc::SIGBUS {
        // A ring file truncated under the dump of a SIGBUS is repaired too;
        // a real fault in the handler ends it (on_fatal's second entry).
        action.sa_flags |= libc::SA_NODEFER;
    }
    let saved = PREVIOUS[sig as usize].as_mut_ptr();
    // SAFETY: `action` is initialised; the slot is this signal's, and no
    // handler of vlog's reads it before this call returns.
    if unsafe { libc::sigaction(sig, &action, saved) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    TAKEN[sig as usize].store(true, Ordering::SeqCst);
    Ok(())
}

/// What every vlog call that takes the lock does first (see `HANDLER`):
/// one load when no crash handler is installed. True when a handler left
/// something for the logger to look at (a ring file repaired).
#[inline(always)]
pub fn on_entry() -> bool {
    !settled() && attend()
}

/// [`on_entry`] without settling: true in the common case (a handler
/// armed, or none); false when a handler left something to settle.
#[inline(always)]
pub fn settled() -> bool {
    // ARMED first: the state of every program since vlog sets itself up,
    // crash handler included, at its first call.
    let state = HANDLER.load(Ordering::Relaxed);
    if state == ARMED {
        altstack::ensure();
        true
    } else {
        state == NONE
    }
}

/// Settles what a handler left (see `HANDLER`). The program handled a
/// crash signal itself and went on (it recovered from a fault, say): vlog's
/// handler is put back for it, so the next crash is dumped too. Until then a
/// fault that repeats reaches the program's handler directly, as without
/// vlog.
#[cold]
fn attend() -> bool {
    let settled = if INSTALLED.load(Ordering::SeqCst) {
        ARMED
    } else {
        NONE
    };
    // Settled first: what a handler leaves from now on sets ATTEND again.
    HANDLER.store(settled, Ordering::SeqCst);
    for &sig in &FATAL_SIGNALS {
        if HANDED_BACK[sig as usize].swap(false, Ordering::SeqCst) {
            let _ = take(sig);
        }
    }
    if settled == ARMED {
        altstack::ensure();
    }
    true
}

/// A signal handler as the kernel calls it.
///
/// `C-unwind` with nothing but a [`sys::cancel::callback`] in it: a handler
/// of the program's that it calls, and that logs, must see the thread
/// marked as inside vlog (and never act on a cancel through vlog's frames).
type Handler = extern "C-unwind" fn(c_int, *mut libc::siginfo_t, *mut c_void);

/// A sigaction running `handler` with SA_SIGINFO on the alternate stack, with
/// every fatal signal but SIGBUS blocked while it runs: a fault inside the
/// handler then takes the default action at once instead of recursing (a
/// SIGBUS in it, unless a ring file's, ends it in `on_fatal`).
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
        // Except SIGBUS: a ring file truncated by another process faults
        // inside the dump, and is repaired (see `ring::guard`).
        libc::sigdelset(&mut action.sa_mask, libc::SIGBUS);
        // A dump to a pipe whose reader is gone, or past the file size
        // limit, must not end the process by SIGPIPE or SIGXFSZ instead of
        // the crash signal.
        libc::sigaddset(&mut action.sa_mask, libc::SIGPIPE);
        libc::sigaddset(&mut action.sa_mask, libc::SIGXFSZ);
    }
    action
}

/// A first walk of the stack now, not in the handler: whatever the
/// unwinder sets up on its first use (a lazy binding) is done.
fn warm_up_backtrace() {
    let mut buf = [0u8; frames::ENCODED_MAX];
    let _ = frames::capture(warm_up_backtrace as *const () as usize, &mut buf);
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

/// What the fatal-signal handler does once vlog's part is over, outside
/// that part: the program's handler may not return (siglongjmp, _exit), and
/// must find the thread out of vlog.
#[derive(Clone, Copy)]
enum Then {
    /// Return: the faulting access is retried (a ring file repaired).
    Return,
    /// Hand the signal to whoever had it before vlog (see [`chain`]).
    Chain,
    /// Call the program's handler before any dump (see `recover`).
    ProgramFirst(libc::sigaction),
}

/// The handler for fatal signals. A panic must not unwind into the
/// interrupted code, so it is swallowed (see `panic::swallow`), and the
/// signal goes on as without vlog.
extern "C-unwind" fn on_fatal_signal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let mut then = Then::Chain;
    // SAFETY: installed by `take` as a SA_SIGINFO handler, so these are the
    // kernel's arguments.
    sys::cancel::callback!(|| panic::swallow(|| then = unsafe { fatal(sig, info) }));
    match then {
        Then::Return => {}
        // SAFETY: as above.
        Then::Chain => unsafe { chain(sig, info, ctx) },
        Then::ProgramFirst(program) => {
            // What the program's disposition is as its handler starts (a
            // SA_RESETHAND one already reset).
            // SAFETY: the slot was filled when vlog took `sig`.
            let before = unsafe { PREVIOUS[sig as usize].get() }.sa_sigaction;
            // SAFETY: as above; `program` is the program's SA_SIGINFO
            // handler for `sig`.
            unsafe { handback::call(&program, sig, info, ctx) };
            // It returned: the access is retried, unless the program fell
            // to the default action.
            // SAFETY: as above.
            let after = || unsafe { after_program(sig, info, before) };
            sys::cancel::callback!(|| panic::swallow(after));
        }
    }
}

/// vlog's part of a fatal signal: repair a ring file, hand a fault to the
/// program first, or dump.
///
/// # Safety
/// Called only from a SA_SIGINFO signal handler, with the kernel's arguments.
unsafe fn fatal(sig: c_int, info: *mut libc::siginfo_t) -> Then {
    // SAFETY: a non-NULL `info` is the kernel's, per the caller.
    let addr = |info: *mut libc::siginfo_t| unsafe { (*info).si_addr() } as usize;
    if sig == libc::SIGBUS && !info.is_null() && ring::guard::repair(addr(info)) {
        // The faulting access is retried on private memory; the logger's
        // next call moves the ring to memory and says so.
        HANDLER.store(ATTEND, Ordering::SeqCst);
        return Then::Return;
    }
    if !INSTALLED.load(Ordering::SeqCst) {
        // Only the ring file guard: the signal is the program's.
        return Then::Chain;
    }
    // SAFETY: the slot was filled when vlog took `sig`.
    let previous = unsafe { PREVIOUS[sig as usize].get() };
    if recover::program_first(&previous) {
        // SAFETY: the kernel's arguments, per the caller.
        unsafe { recover::note(sig, info) };
        if previous.sa_flags & libc::SA_RESETHAND != 0 {
            // The kernel would have reset it as it delivered the signal:
            // the program's next fault takes the default action, dumped.
            let mut reset = previous;
            reset.sa_sigaction = libc::SIG_DFL;
            // SAFETY: the slot is this signal's; see `adopt` for a handler
            // reading it meanwhile.
            unsafe { *PREVIOUS[sig as usize].as_mut_ptr() = reset };
        }
        return Then::ProgramFirst(previous);
    }
    // On the program's own alternate stack, too small for a dump,
    // overflowing it would end the process before the program's handler
    // ran: that gets the signal, and the dump is one line.
    if let Some(size) = altstack::too_small_for_a_dump() {
        say_stack_too_small(sig, size);
        return Then::Chain;
    }
    // SAFETY: as above.
    if unsafe { dump_crash(sig, info) } {
        Then::Chain
    } else {
        // This thread crashed again while dumping (abort() inside the
        // dump, say): no second attempt.
        die_by_default(sig);
        Then::Return
    }
}

/// After the program's handler, which had the fault first, returned: if it
/// fell to the default action (it set SIG_DFL to re-raise the signal, through
/// the kernel or through the preload library), the crash it did not recover
/// from is dumped now, before the default action ends the process.
///
/// # Safety
/// As for [`fatal`].
unsafe fn after_program(sig: c_int, info: *mut libc::siginfo_t, before: libc::sighandler_t) {
    // SAFETY: the slot was filled when vlog took `sig`; an all-zero
    // sigaction is a valid out-buffer.
    let (adopted, mut now) = unsafe { (PREVIOUS[sig as usize].get(), std::mem::zeroed()) };
    // SAFETY: a query only.
    unsafe { libc::sigaction(sig, std::ptr::null(), &mut now) };
    let fell = adopted.sa_sigaction == libc::SIG_DFL && before != libc::SIG_DFL;
    if fell || now.sa_sigaction == libc::SIG_DFL {
        // SAFETY: the kernel's arguments, per the caller.
        unsafe { dump_crash(sig, info) };
    }
}

/// Dumps the crash, unless another thread did (that one is given time to
/// finish). False when this thread crashed again while dumping.
///
/// # Safety
/// Called only from a SA_SIGINFO signal handler, with the kernel's `info`.
unsafe fn dump_crash(sig: c_int, info: *mut libc::siginfo_t) -> bool {
    let tid = thread_id();
    match DUMPER.compare_exchange(0, tid, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => {
            watchdog::arm(
                sig,
                dump::ring_stats().size,
                fatal_action(watchdog::on_alarm),
            );
            // A file size limit (RLIMIT_FSIZE) fails a write with EFBIG
            // here, never raises SIGXFSZ. The ring image first (one write);
            // then the lines the outputs had not written, so that a warning
            // always comes before the fault it warned of; then the text.
            sys::signal::without_signal(libc::SIGXFSZ, || {
                pending::freeze();
                write_ring_image();
                pending::write();
                // SAFETY: `info` is the kernel's, forwarded from the caller.
                unsafe { write_crash_dump(sig, info, tid) };
            });
            watchdog::disarm();
            DUMPER.store(DONE, Ordering::SeqCst);
            true
        }
        Err(owner) if owner == tid => false,
        // The dump is over (another crash before this one).
        Err(DONE) => true,
        // Another thread is dumping: give it time to finish, then go on.
        Err(owner) => {
            watchdog::wait_for(|| DUMPER.load(Ordering::SeqCst) == owner);
            true
        }
    }
}

/// Hands the signal to whoever had it before vlog: the previous handler with
/// the original arguments, or the default action.
///
/// # Safety
/// As for [`fatal`].
unsafe fn chain(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    if !FATAL_SIGNALS.contains(&sig) {
        return die_by_default(sig);
    }
    // SAFETY: the slot was written by install() before this handler could
    // run for `sig`.
    let previous = unsafe { PREVIOUS[sig as usize].get() };
    if previous.sa_sigaction == libc::SIG_IGN {
        // Ignored before vlog took it: the process and its outputs go on.
        pending::thaw();
        DUMPER.store(0, Ordering::SeqCst);
    }
    if previous.sa_sigaction != libc::SIG_DFL && previous.sa_sigaction != libc::SIG_IGN {
        // The program handles the signal itself, and may go on (a fault it
        // recovers from): a later crash is dumped too, once a vlog call has
        // put the handler back (`attend`). Its handler gets the signal with
        // the mask it asked for (handback::call).
        // Thawed first: a crash that wins the next dump freezes again.
        pending::thaw();
        DUMPER.store(0, Ordering::SeqCst);
        HANDED_BACK[sig as usize].store(true, Ordering::SeqCst);
        HANDLER.store(ATTEND, Ordering::SeqCst);
    }
    // Put the previous action back, so that a fault that repeats when the
    // previous handler returns reaches it directly, as without vlog.
    // SAFETY: `previous` is a sigaction the kernel gave us.
    unsafe { libc::sigaction(sig, &previous, std::ptr::null_mut()) };
    // SAFETY: forwarded from the caller.
    if unsafe { handback::call(&previous, sig, info, ctx) } == handback::Handed::Default {
        die_by_default(sig);
    }
}

/// The header line, the backtrace of this thread and the ring.
///
/// # Safety
/// `info` is the siginfo the kernel passed to the handler (or NULL).
unsafe fn write_crash_dump(sig: c_int, info: *mut libc::siginfo_t, tid: i32) {
    let Some(handle) = target::dump_handle() else {
        return;
    };
    let fd = handle.raw();
    let (code, addr) = if info.is_null() {
        (0, 0)
    } else {
        // SAFETY: non-NULL siginfo from the kernel.
        unsafe { ((*info).si_code, (*info).si_addr() as u64) }
    };
    let stats = dump::ring_stats();
    let emptied = handle.make_room(target::dump_file_cap(stats.size));
    dump::with_fd_sink(fd, |sink| {
        if let Some(size) = emptied {
            dump::say_emptied(size, sink);
        }
        if REQUESTED.load(Ordering::SeqCst) != 0 {
            // A requested dump was cut short, perhaps in the middle of a
            // line: this one starts on a line of its own.
            sink.put(b"\n");
        }
        sink.put(b"vlog: fatal signal ");
        sink.put(signals::name(sig));
        sink.put(b" (");
        put_decimal(sig as u64, 1, sink);
        sink.put(b"), code ");
        put_signed(code as i64, sink);
        sink.put(b", address ");
        put_hex(addr, sink);
        dump::process_line(tid, stats, sink);
        if handle.reopened() {
            sink.put(b"vlog: the program had closed the dump file's descriptor; opened it again\n");
        }
        pending::say_stuck(sink);
        sink.put(b"vlog: backtrace of thread ");
        put_decimal(tid as u64, 1, sink);
        sink.put(b":\n");
        // The frames that called the handler (the signal's, then the
        // faulting function's), as a record's backtrace shows them.
        let mut buf = [0u8; frames::ENCODED_MAX];
        let encoded = frames::capture(on_fatal_signal as *const () as usize, &mut buf);
        crate::text::frames::put_lines(encoded, put_escaped, sink);
        dump::records(sink);
    });
}

/// The dump on a stack too small for one: a line that says so.
fn say_stack_too_small(sig: c_int, size: usize) {
    dump::say_line(|line| {
        line.put(b"vlog: fatal signal ");
        line.put(signals::name(sig));
        line.put(b", no dump: this thread's alternate signal stack (");
        put_decimal(size as u64, 1, line);
        line.put(b" bytes, the program's own) is too small for one (");
        put_decimal(altstack::DUMP_NEEDS as u64, 1, line);
        line.put(b" bytes); a ring file (VLOG_BUFFER_FILE) keeps the records for vlog-dump");
    });
}

/// Replaces the image file's contents with the ring as it is now: a ring file
/// that vlog-dump reads.
fn write_ring_image() {
    let Some(handle) = target::image_handle() else {
        return;
    };
    let fd = handle.raw();
    // SAFETY: ftruncate and lseek on a descriptor just proved to be the
    // image file (see `target`); async-signal-safe.
    unsafe {
        libc::ftruncate(fd, 0);
        libc::lseek(fd, 0, libc::SEEK_SET);
    }
    if let Some(Ok(())) = published::read(|view| view.map(|v| v.write_image(fd))) {
        watchdog::progressed(1);
    }
}

/// In a forked child (see `pending::after_fork`).
pub fn after_fork() {
    pending::after_fork();
}
