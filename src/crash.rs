//! The crash handler: on a fatal signal, write the ring (and a backtrace) to the
//! dump descriptor, then let the signal do what it would have done without
//! vlog: call the handler installed before ours, or die by the default action
//! with the same exit status and core file.
//!
//! Everything that runs in the handler is async-signal-safe: no allocation, no
//! lock (the ring is read the lock-free way), only write(2), sigaction, alarm,
//! nanosleep and tgkill. The handler runs on an alternate stack, so a stack
//! overflow is dumped too.

use std::cell::Cell;
use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::config::ConfigError;
use crate::dump;
use crate::format::{self, Sink};
use crate::logger;

pub const FATAL_SIGNALS: [c_int; 7] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
    libc::SIGSYS,
    libc::SIGTRAP,
];

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

pub fn is_installed() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// Installs the handler for every fatal signal (once per process) and an
/// alternate stack for the calling thread.
pub fn install() -> std::io::Result<()> {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    warm_up_backtrace();
    ensure_alt_stack();
    let previous = PREVIOUS.0.get().cast::<libc::sigaction>();
    for (i, &sig) in FATAL_SIGNALS.iter().enumerate() {
        let action = fatal_action(crate::ffi::crash::on_fatal_signal);
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

/// The fatal-signal handler's body.
///
/// # Safety
/// Called only as a SA_SIGINFO signal handler, with the kernel's arguments.
pub unsafe fn on_fatal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
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
    let action = fatal_action(crate::ffi::crash::on_watchdog);
    // SAFETY: valid action; alarm is async-signal-safe.
    unsafe {
        libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut());
        libc::alarm(WATCHDOG_SECONDS);
    }
}

/// The watchdog's body: the dump hung, so die as the crash would have.
pub fn on_watchdog() {
    die_by_default(CRASH_SIGNAL.load(Ordering::SeqCst));
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
    let stats = logger::read_ring(|view| view.map(|v| v.stats()).unwrap_or_default());
    dump::with_fd_sink(fd, |sink| {
        sink.put(b"vlog: fatal signal ");
        sink.put(signal_name(sig));
        sink.put(b" (");
        format::put_decimal(sig as u64, 1, sink);
        sink.put(b"), code ");
        put_signed(code, sink);
        sink.put(b", address ");
        format::put_hex(addr, sink);
        write_process_line(tid, stats, sink);
        sink.put(b"vlog: backtrace of thread ");
        format::put_decimal(tid as u64, 1, sink);
        sink.put(b":\n");
        sink.finish();
        let mut frames = [std::ptr::null_mut::<c_void>(); 64];
        // SAFETY: the buffer holds 64 entries; backtrace_symbols_fd writes
        // straight to the descriptor without allocating (warmed up at install).
        unsafe {
            let n = libc::backtrace(frames.as_mut_ptr(), 64);
            libc::backtrace_symbols_fd(frames.as_ptr(), n, fd);
        }
        write_records(sink);
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
    logger::read_ring(|view| view.map(|v| v.write_image(fd)));
}

/// The dump that `VLOG_DUMP_SIGNAL` asks for: header, ring, no backtrace, and
/// the process goes on.
pub fn write_requested_dump() {
    if DUMPER
        .compare_exchange(0, thread_id(), Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return;
    }
    let stats = logger::read_ring(|view| view.map(|v| v.stats()).unwrap_or_default());
    if let Some(fd) = dump_fd() {
        dump::with_fd_sink(fd, |sink| {
            sink.put(b"vlog: dump requested by signal");
            write_process_line(thread_id(), stats, sink);
            write_records(sink);
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

/// `, pid P, tid T, time ..., R records, L lost\n`
fn write_process_line(tid: i32, stats: crate::ring::Stats, sink: &mut impl Sink) {
    sink.put(b", pid ");
    format::put_decimal(std::process::id() as u64, 1, sink);
    sink.put(b", tid ");
    format::put_decimal(tid as u64, 1, sink);
    sink.put(b", time ");
    format::put_timestamp(crate::logger::now_ns(), sink);
    sink.put(b", ");
    format::put_decimal(stats.recorded, 1, sink);
    sink.put(b" records, ");
    format::put_decimal(stats.lost, 1, sink);
    sink.put(b" lost\n");
}

fn write_records(sink: &mut impl Sink) {
    sink.put(b"vlog: ring, oldest first:\n");
    let count = logger::read_ring(|view| view.map_or(0, |v| dump::entries(&v, sink)));
    sink.put(b"vlog: end of dump, ");
    format::put_decimal(count, 1, sink);
    sink.put(b" records\n");
}

fn put_signed(value: i32, sink: &mut impl Sink) {
    if value < 0 {
        sink.put(b"-");
    }
    format::put_decimal(value.unsigned_abs() as u64, 1, sink);
}

fn signal_name(sig: c_int) -> &'static [u8] {
    match sig {
        libc::SIGSEGV => b"SIGSEGV",
        libc::SIGBUS => b"SIGBUS",
        libc::SIGILL => b"SIGILL",
        libc::SIGFPE => b"SIGFPE",
        libc::SIGABRT => b"SIGABRT",
        libc::SIGSYS => b"SIGSYS",
        libc::SIGTRAP => b"SIGTRAP",
        _ => b"signal",
    }
}

/// Refuses signals that cannot serve as a dump request.
pub fn check_dump_signal(sig: c_int) -> Result<c_int, ConfigError> {
    if !(1..=64).contains(&sig)
        || FATAL_SIGNALS.contains(&sig)
        || sig == libc::SIGKILL
        || sig == libc::SIGSTOP
    {
        return Err(ConfigError::new(format!(
            "signal {sig} cannot request a dump: use a non-fatal signal such as SIGUSR2 ({})",
            libc::SIGUSR2
        )));
    }
    Ok(sig)
}

/// Parses `VLOG_DUMP_SIGNAL`: `USR1`, `USR2` (with or without `SIG`) or a
/// signal number.
pub fn parse_dump_signal(s: &str) -> Result<c_int, ConfigError> {
    let name = s.strip_prefix("SIG").unwrap_or(s);
    let sig = match name {
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        n if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n.parse().unwrap_or(0),
        _ => {
            return Err(ConfigError::new(format!(
                "invalid signal '{s}': use USR1, USR2 or a signal number"
            )))
        }
    };
    check_dump_signal(sig)
}

/// Installs a handler that writes a dump on `sig` and lets the process go on.
pub fn install_dump_signal(sig: c_int) -> Result<(), ConfigError> {
    let mut action = fatal_action(crate::ffi::crash::on_dump_signal);
    action.sa_flags |= libc::SA_RESTART;
    // SAFETY: valid action.
    if unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(ConfigError::new(format!("cannot handle signal {sig}: {e}")));
    }
    Ok(())
}

/// Where crash dumps go (`VLOG_DUMP`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DumpTarget {
    #[default]
    Stderr,
    File(std::path::PathBuf),
    Off,
}

impl DumpTarget {
    pub fn parse(s: &str) -> Result<DumpTarget, ConfigError> {
        match s {
            "stderr" => Ok(DumpTarget::Stderr),
            "off" => Ok(DumpTarget::Off),
            _ => match s.strip_prefix("file:") {
                Some(path) => std::path::absolute(path)
                    .map(DumpTarget::File)
                    .map_err(|e| ConfigError::new(format!("invalid path in '{s}': {e}"))),
                None => Err(ConfigError::new(format!(
                    "invalid dump destination '{s}': use stderr, file:PATH or off"
                ))),
            },
        }
    }

    /// For `file:PATH`, `PATH.ring`: where the crash handler also writes the
    /// ring as a ring file. Opened now (0600, close-on-exec, no symbolic link);
    /// an existing file that is not a vlog ring is left alone (None).
    pub fn open_image(&self) -> Option<c_int> {
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::IntoRawFd;
        let DumpTarget::File(path) = self else {
            return None;
        };
        let mut image = path.as_os_str().to_owned();
        image.push(".ring");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&image)
            .ok()?;
        let mut head = [0u8; 8];
        let n = std::io::Read::read(&mut &file, &mut head).ok()?;
        (n == 0 || head == crate::ring::magic()).then(|| file.into_raw_fd())
    }

    /// The descriptor dumps are written to: the file is opened now (appended
    /// to, 0600, close-on-exec, never through a symbolic link), because the
    /// handler cannot open files.
    pub fn open(&self) -> Result<c_int, ConfigError> {
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::IntoRawFd;
        match self {
            DumpTarget::Stderr | DumpTarget::Off => Ok(2),
            DumpTarget::File(path) => std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)
                .map(IntoRawFd::into_raw_fd)
                .map_err(|e| {
                    ConfigError::new(format!("cannot open dump file '{}': {e}", path.display()))
                }),
        }
    }
}

/// An alternate signal stack with a guard page below it, owned by one thread
/// and released when the thread exits.
struct AltStack {
    map: *mut c_void,
    map_len: usize,
}

impl Drop for AltStack {
    fn drop(&mut self) {
        // SAFETY: disable the stack only if it is still ours and not in use,
        // then unmap what `new_alt_stack` mapped.
        unsafe {
            let mut current: libc::stack_t = std::mem::zeroed();
            libc::sigaltstack(std::ptr::null(), &mut current);
            let ours = current.ss_sp == self.map.cast::<u8>().add(page_size()).cast();
            if ours && current.ss_flags & libc::SS_ONSTACK == 0 {
                let disable = libc::stack_t {
                    ss_sp: std::ptr::null_mut(),
                    ss_flags: libc::SS_DISABLE,
                    ss_size: 0,
                };
                libc::sigaltstack(&disable, std::ptr::null_mut());
                libc::munmap(self.map, self.map_len);
            }
        }
    }
}

thread_local! {
    static ALT_STACK_CHECKED: Cell<bool> = const { Cell::new(false) };
    static ALT_STACK: Cell<Option<AltStack>> = const { Cell::new(None) };
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// Gives the calling thread an alternate signal stack, once, when the crash
/// handler is installed and the thread has none of its own.
#[inline]
pub fn ensure_alt_stack() {
    if is_installed() && !ALT_STACK_CHECKED.with(|c| c.replace(true)) {
        give_thread_alt_stack();
    }
}

/// The first logging call of a thread with the handler installed.
#[cold]
fn give_thread_alt_stack() {
    // SAFETY: sigaltstack only reads our out-pointer's size.
    let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: querying only.
    unsafe { libc::sigaltstack(std::ptr::null(), &mut current) };
    if current.ss_flags & libc::SS_DISABLE == 0 {
        return; // someone else's stack: never replace it
    }
    if let Some(stack) = new_alt_stack() {
        ALT_STACK.with(|slot| slot.set(Some(stack)));
    }
}

fn new_alt_stack() -> Option<AltStack> {
    let page = page_size();
    // SAFETY: getauxval only reads the auxiliary vector (0 when absent).
    let kernel_min = unsafe { libc::getauxval(libc::AT_MINSIGSTKSZ) } as usize;
    let size = (64 * 1024).max(4 * kernel_min).max(libc::SIGSTKSZ);
    let size = size.div_ceil(page) * page;
    let map_len = size + page;
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK;
    // SAFETY: a fresh anonymous mapping aliases nothing.
    let map = unsafe { crate::sys::map_rw(map_len, flags, -1) }
        .ok()?
        .as_ptr()
        .cast::<c_void>();
    // SAFETY: the lowest page of our own mapping becomes the guard; the stack
    // above it is registered for this thread.
    unsafe {
        libc::mprotect(map, page, libc::PROT_NONE);
        let stack = libc::stack_t {
            ss_sp: map.cast::<u8>().add(page).cast(),
            ss_flags: 0,
            ss_size: size,
        };
        if libc::sigaltstack(&stack, std::ptr::null_mut()) != 0 {
            libc::munmap(map, map_len);
            return None;
        }
    }
    Some(AltStack { map, map_len })
}
