//! The few operating-system calls std does not offer, each in one small
//! `unsafe` block: descriptors and the one way vlog opens a file of its own
//! (`private`; `fd` keeps a descriptor vlog's), sockets (`net`; `connection`, a stream for an output with a
//! queue of its own), cancellation (`cancel`), the global allocator
//! (`alloc`), a reading thread's waits (`watch`; `bell`, a wake from a
//! static), the logger's lock (`lock`),
//! signals taken and sent on (`signal`), file work with another user's
//! rights for the readers (`creds`), and the thread, clock and process
//! calls below.
//!
//! The bottom of the crate: it imports nothing of vlog's.

pub mod alloc;
pub mod backtrace;
pub mod bell;
pub mod cancel;
pub mod clock;
pub mod connection;
pub mod creds;
pub mod dir;
pub mod fd;
pub mod listen;
pub mod lock;
pub mod net;
pub mod place;
pub mod private;
#[cfg(all(vlog_lock_profile, target_arch = "x86_64"))]
pub mod profile;
pub mod record_lock;
pub mod room;
pub mod signal;
pub mod syslog;
pub mod watch;

pub use clock::monotonic_ns;
pub use fd::{fd_info, write_all_fd, write_all_raw, write_lines_no_signal, write_no_signal};
pub use fd::{Fd, FdInfo, FdKind};
pub use private::{create_beside, exchange, judge_at, open_private, rename_over, Private};

use std::cell::Cell;
use std::ffi::c_int;
use std::ptr::NonNull;

thread_local! {
    // 0 = not fetched yet. Reset in a forked child, whose thread has a new id.
    static TID: Cell<u32> = const { Cell::new(0) };
}

/// A `&'static T` set at run time and read without a lock or a `Once`
/// (which a signal handler could wait on from the thread that runs it):
/// one atomic pointer. Async-signal-safe.
pub struct StaticRef<T: 'static>(std::sync::atomic::AtomicPtr<T>);

impl<T: Sync + 'static> StaticRef<T> {
    pub const fn new() -> StaticRef<T> {
        StaticRef(std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()))
    }

    /// Sets it (a later `set` replaces it).
    pub fn set(&self, value: &'static T) {
        let ptr = (value as *const T).cast_mut();
        self.0.store(ptr, std::sync::atomic::Ordering::Release);
    }

    pub fn get(&self) -> Option<&'static T> {
        let ptr = self.0.load(std::sync::atomic::Ordering::Acquire);
        // SAFETY: only `set` stores here, and only from a `&'static T`,
        // which is valid for ever and shared (`T: Sync`).
        unsafe { ptr.cast_const().as_ref() }
    }
}

/// The first of descriptors 0, 1 and 2 that is closed, if one is. A name
/// service look-up (getaddrinfo, getgrnam) opens sockets and files at the
/// lowest free numbers: with one of these closed, its socket would take the
/// number where the program's own standard input or output goes, and what
/// the program writes there would go to a name server. vlog looks nothing
/// up then.
pub fn stdio_closed() -> Option<c_int> {
    // SAFETY: F_GETFD only reads a descriptor's flags.
    (0..3).find(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0)
}

/// Why a name is not looked up now (see [`stdio_closed`]), if it is not.
pub fn lookup_refused() -> Option<String> {
    stdio_closed().map(|fd| {
        format!(
            "descriptor {fd} is closed, and a name look-up would take it (the program's own \
             output there would go to the name server); give an address, or keep 0, 1 and 2 \
             open"
        )
    })
}

/// Waits at most `ms` milliseconds, less when a signal handler runs (poll
/// with no descriptor): the caller measures its own deadline. A sleep that
/// resumed after each handler could be starved for ever by a storm of
/// signals (it counts only the time slept between them).
pub fn nap(ms: u64) {
    // SAFETY: poll with no descriptors only waits.
    unsafe { libc::poll(std::ptr::null_mut(), 0, ms.min(i32::MAX as u64) as c_int) };
}

/// The kernel thread id of the calling thread, cached per thread: the recording
/// path must not make a system call for it.
#[inline(always)]
pub fn thread_id() -> u32 {
    TID.with(|t| {
        let mut tid = t.get();
        if tid == 0 {
            // SAFETY: gettid has no preconditions and cannot fail.
            tid = unsafe { libc::gettid() } as u32;
            t.set(tid);
        }
        tid
    })
}

/// Forgets the cached thread and process ids, and gives the child a tag
/// of its own; called in the child after fork.
pub fn forget_ids_after_fork() {
    use std::sync::atomic::Ordering;
    TID.with(|t| t.set(0));
    PID.store(0, Ordering::Relaxed);
    // The parent's mixed with the child's pid and the time: no getrandom(2)
    // in a child that may be sandboxed at once.
    let parent = u64::from(TAG.load(Ordering::Relaxed));
    let tag = mix64(parent << 32 ^ u64::from(process_id()) ^ realtime_ns().rotate_left(17)) as u32;
    TAG.store(tag.max(1), Ordering::Relaxed);
}

/// A 64-bit finalizer (MurmurHash3's): every bit of `h` moves every bit of
/// the result.
fn mix64(mut h: u64) -> u64 {
    h = (h ^ (h >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    h = (h ^ (h >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

static TAG: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// This process's tag: a random number, never 0, drawn at its first use
/// and again in a forked child, that every record it makes carries (see
/// `ring::record`). A pid cannot tell two processes apart in a ring they
/// share from two pid namespaces (each the pid 1 of its own), nor one
/// from a later process that got its pid back. Async-signal-safe.
#[inline(always)]
pub fn process_tag() -> u32 {
    match TAG.load(std::sync::atomic::Ordering::Relaxed) {
        0 => new_process_tag(),
        tag => tag,
    }
}

#[cold]
#[inline(never)]
fn new_process_tag() -> u32 {
    use std::sync::atomic::Ordering;
    let mut bytes = [0u8; 4];
    // The system call itself, not glibc's getrandom(3), which is a
    // cancellation point (a cancel acting here would unwind through vlog).
    // SAFETY: getrandom writes at most the 4 bytes given; GRND_NONBLOCK
    // keeps it from waiting for the entropy pool at early boot.
    let got = keeping_errno(|| unsafe {
        libc::syscall(
            libc::SYS_getrandom,
            bytes.as_mut_ptr(),
            4usize,
            libc::GRND_NONBLOCK,
        )
    });
    let mut tag = u32::from_ne_bytes(bytes);
    if got != 4 {
        // No randomness (an old kernel, a seccomp filter): the time, the
        // pid and where this stack lies mixed, which two processes meet
        // in a ring at the same nanosecond with the same pid and layout
        // only by chance.
        let h = realtime_ns() ^ u64::from(process_id()).rotate_left(40);
        tag = mix64(h ^ &bytes as *const _ as u64) as u32;
    }
    let tag = tag.max(1);
    // A racing first use keeps one tag for the whole process.
    match TAG.compare_exchange(0, tag, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => tag,
        Err(won) => won,
    }
}

static PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// This process's id as cached, or 0 when it is not (yet, or no longer
/// after a fork): for a compare with an id that is never 0, where 0 means
/// "not this process" as a different id does. Async-signal-safe.
#[inline(always)]
pub fn cached_process_id() -> u32 {
    PID.load(std::sync::atomic::Ordering::Relaxed)
}

/// This process's id, cached (glibc makes getpid a system call).
pub fn process_id() -> u32 {
    use std::sync::atomic::Ordering;
    let mut pid = PID.load(Ordering::Relaxed);
    if pid == 0 {
        pid = std::process::id();
        PID.store(pid, Ordering::Relaxed);
    }
    pid
}

/// The program's name, as syslog and journald want it (SYSLOG_IDENTIFIER).
pub fn program_name() -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let from_args = std::env::args_os().next().and_then(|arg0| {
        std::path::Path::new(&arg0)
            .file_name()
            .map(|n| n.as_bytes().to_vec())
    });
    from_args
        .filter(|n| !n.is_empty())
        .or_else(|| {
            std::fs::read("/proc/self/comm")
                .ok()
                .map(|c| c.trim_ascii_end().to_vec())
        })
        .unwrap_or_else(|| b"vlog".to_vec())
}

/// Whole seconds of CLOCK_MONOTONIC_COARSE: a clock for "at most once a
/// second" that costs no system call.
pub fn coarse_seconds() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64
}

/// Milliseconds of CLOCK_MONOTONIC_COARSE, plus one (never 0), in 40 bits:
/// a rate limit's clock, which costs no system call. Async-signal-safe.
pub fn coarse_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ((ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000) & ((1 << 40) - 1)) + 1
}

/// Runs `f` and puts errno back as it was: for entry points C calls where
/// errno must survive (a signal handler, a logging call whose format has %m).
/// Async-signal-safe.
pub fn keeping_errno<R>(f: impl FnOnce() -> R) -> R {
    // The slot is the thread's for its whole life: fetched once.
    // SAFETY: __errno_location returns this thread's errno slot.
    let slot = unsafe { libc::__errno_location() };
    // SAFETY: a valid, aligned int of this thread.
    let saved = unsafe { *slot };
    let result = f();
    // SAFETY: as above.
    unsafe { *slot = saved };
    result
}

/// Where `byte` first is in `hay`: libc's memchr, which looks at a vector of
/// bytes at a time (the text between a format's conversions).
#[inline]
pub fn find_byte(hay: &[u8], byte: u8) -> Option<usize> {
    // SAFETY: memchr reads at most hay.len() bytes of hay; a match lies
    // inside it, so the offset is in range.
    let at = unsafe { libc::memchr(hay.as_ptr().cast(), byte.into(), hay.len()) };
    (!at.is_null()).then(|| at as usize - hay.as_ptr() as usize)
}

/// CLOCK_REALTIME in nanoseconds since the epoch (0 before 1970). One vDSO
/// call, no system call; async-signal-safe.
#[inline(always)]
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    u64::try_from(ts.tv_sec).map_or(0, |s| s * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Maps `len` bytes read-write.
///
/// # Safety
/// `flags` and `fd` must describe a mapping that aliases nothing this process
/// relies on (anonymous, or a file only vlog writes).
pub unsafe fn map_rw(len: usize, flags: c_int, fd: c_int) -> std::io::Result<NonNull<u8>> {
    // SAFETY: per the caller; the result is checked before use.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(NonNull::new(ptr.cast::<u8>()).expect("mmap returned NULL"))
}

/// The effective user id.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// True in a setuid/setgid (or otherwise privilege-changing) process, where the
/// environment belongs to a less privileged user and must not be obeyed.
pub fn secure_mode() -> bool {
    // SAFETY: getauxval only reads the auxiliary vector; 0 means absent.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

// vlog's callbacks are `C-unwind` (see `cancel::callback`): the same
// calling convention, declared here with their own pointer type.
extern "C" {
    #[link_name = "pthread_atfork"]
    fn atfork(
        prepare: Option<extern "C-unwind" fn()>,
        parent: Option<extern "C-unwind" fn()>,
        child: Option<extern "C-unwind" fn()>,
    ) -> c_int;
    #[link_name = "atexit"]
    fn atexit(f: extern "C-unwind" fn()) -> c_int;
    #[link_name = "at_quick_exit"]
    fn at_quick_exit_raw(f: extern "C-unwind" fn()) -> c_int;
}

/// Registers fork handlers with pthread_atfork. Returns false if that fails.
pub fn at_fork(
    prepare: extern "C-unwind" fn(),
    parent: extern "C-unwind" fn(),
    child: extern "C-unwind" fn(),
) -> bool {
    // SAFETY: the handlers are plain functions that live as long as the
    // program; pthread_atfork only stores them.
    unsafe { atfork(Some(prepare), Some(parent), Some(child)) == 0 }
}

/// Registers `f` to run at exit(3) (in a shared library, at its unloading
/// too). Returns false if that fails.
pub fn at_exit(f: extern "C-unwind" fn()) -> bool {
    // SAFETY: a plain function that lives as long as the program (or the
    // library, which glibc runs it before unloading).
    unsafe { atexit(f) == 0 }
}

/// Registers `f` to run at quick_exit(3). Returns false if that fails.
pub fn at_quick_exit(f: extern "C-unwind" fn()) -> bool {
    // SAFETY: as for `at_exit`.
    unsafe { at_quick_exit_raw(f) == 0 }
}

/// glibc's own printf, as the oracle the printf renderer is tested against.
#[cfg(test)]
pub mod glibc {
    use std::ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void, CStr};

    /// One argument with its C type.
    pub enum CArg<'a> {
        Int(c_int),
        UInt(c_uint),
        Long(c_long),
        ULong(c_ulong),
        Double(f64),
        Str(Option<&'a CStr>),
        Pointer(usize),
    }

    /// snprintf of `fmt`, which has one conversion taking `arg`, after the
    /// `*` counts in `stars` (at most two).
    pub fn snprintf(fmt: &CStr, stars: &[c_int], arg: CArg) -> String {
        let mut buf = vec![0u8; 4096];
        let (b, n, f) = (buf.as_mut_ptr().cast::<c_char>(), buf.len(), fmt.as_ptr());
        macro_rules! call {
            ($v:expr) => {
                // SAFETY: the caller's format has exactly the conversions
                // whose arguments are passed, with their C types, and the
                // buffer holds `n` bytes.
                unsafe {
                    match stars {
                        [] => libc::snprintf(b, n, f, $v),
                        [a] => libc::snprintf(b, n, f, *a, $v),
                        [a, c] => libc::snprintf(b, n, f, *a, *c, $v),
                        _ => unreachable!(),
                    }
                }
            };
        }
        let written = match arg {
            CArg::Int(v) => call!(v),
            CArg::UInt(v) => call!(v),
            CArg::Long(v) => call!(v),
            CArg::ULong(v) => call!(v),
            CArg::Double(v) => call!(v),
            CArg::Str(s) => call!(s.map_or(std::ptr::null(), CStr::as_ptr)),
            CArg::Pointer(p) => call!(p as *const c_void),
        };
        assert!(written >= 0 && (written as usize) < buf.len(), "{fmt:?}");
        String::from_utf8_lossy(&buf[..written as usize]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn realtime_matches_std() {
        let std_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let ours = super::realtime_ns();
        assert!(ours.abs_diff(std_ns) < 1_000_000_000, "{ours} vs {std_ns}");
    }

    #[test]
    fn thread_ids_differ_per_thread_and_are_cached() {
        let main = super::thread_id();
        assert_eq!(main, super::thread_id());
        let other = std::thread::spawn(super::thread_id).join().unwrap();
        assert_ne!(main, other);
        assert_ne!(other, 0);
    }
}
