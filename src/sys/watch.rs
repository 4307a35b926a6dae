//! What a thread of vlog's needs to read a descriptor it was handed: a pipe
//! to wake it, a wait for either, reads, and a spawn with every signal
//! blocked (the program's handlers run on its own threads, never on one of
//! vlog's).

use std::ffi::c_int;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use super::bell::Bell;
use super::fd::Fd;

/// A pipe for a child's standard output or error, as `std::io::pipe` (Rust
/// 1.87, newer than the oldest Rust vlog builds with) makes one: both ends
/// close-on-exec (the child's end becomes its descriptor 1 or 2 by dup2,
/// which clears the flag) and blocking.
pub fn child_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut ends = [0 as c_int; 2];
    // SAFETY: `ends` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded: both are new descriptors that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) })
}

/// A pipe that wakes a waiting thread: both ends vlog's, close-on-exec,
/// never 0, 1 or 2, the read end non-blocking.
pub struct Waker {
    read: Fd,
    write: Fd,
}

impl Waker {
    pub fn new() -> io::Result<Waker> {
        let mut ends = [0 as c_int; 2];
        // SAFETY: `ends` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let read = Fd::own(ends[0]);
        let write = Fd::own(ends[1]);
        match (read, write) {
            (Ok(read), Ok(write)) => Ok(Waker { read, write }),
            (Err(e), _) | (_, Err(e)) => Err(e),
        }
    }

    /// The end to wait on.
    pub fn fd(&self) -> &Fd {
        &self.read
    }

    /// Takes back every wake-up given so far (a thread that is woken for
    /// work, not only to stop).
    pub fn drain(&self) {
        let mut buf = [0u8; 64];
        while self.read.is_ours() && read_some(self.read.raw(), &mut buf).is_ok_and(|n| n > 0) {}
    }

    /// Wakes the thread waiting in [`wait`] (for good: the byte stays).
    pub fn wake(&self) {
        if self.write.is_ours() {
            // SAFETY: one byte from a live buffer to vlog's own pipe; a full
            // pipe (EAGAIN) has woken the thread already.
            unsafe { libc::write(self.write.raw(), b"!".as_ptr().cast(), 1) };
        }
    }
}

/// What [`wait`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum Ready {
    /// The descriptor has data, an end of file or an error: read it.
    Data,
    /// The waker was woken.
    Woken,
}

/// Waits until `fd` can be read or `waker` is woken (the waker first).
pub fn wait(fd: c_int, waker: &Waker) -> io::Result<Ready> {
    let mut fds = [
        libc::pollfd {
            fd: waker.read.raw(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: two initialised pollfd structures.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if fds[0].revents != 0 {
            return Ok(Ready::Woken);
        }
        if fds[1].revents & libc::POLLNVAL != 0 {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        if fds[1].revents != 0 {
            return Ok(Ready::Data);
        }
    }
}

/// Waits `ms` milliseconds, or less if `waker` is woken: true when it was.
/// A waker the program closed is never woken.
pub fn sleep(waker: &Waker, ms: u64) -> bool {
    if !waker.read.is_ours() {
        // The program closed it (close_range), and its number may be a
        // file of the program's now: slept on without it, never woken.
        std::thread::sleep(std::time::Duration::from_millis(ms));
        return false;
    }
    let mut p = libc::pollfd {
        fd: waker.read.raw(),
        events: libc::POLLIN,
        revents: 0,
    };
    let timeout = ms.min(i32::MAX as u64) as c_int;
    // SAFETY: one initialised pollfd; an EINTR is a short sleep.
    unsafe { libc::poll(&mut p, 1, timeout) == 1 }
}

/// Whether `fd` can be read without waiting (data, end of file or error).
pub fn readable_now(fd: c_int) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one initialised pollfd.
    unsafe { libc::poll(&mut p, 1, 0) == 1 && p.revents & libc::POLLNVAL == 0 }
}

/// One read(2) of `fd` into `buf`, retried on EINTR: 0 at end of file.
pub fn read_some(fd: c_int, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// A descriptor of vlog's own for the file `fd` names (close-on-exec, 3 or
/// above): the caller may close `fd`, or reuse its number, and vlog goes on
/// reading the file it was handed, never another.
pub fn duplicate(fd: c_int) -> io::Result<Fd> {
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor and changes no other.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if dup < 0 {
        return Err(io::Error::last_os_error());
    }
    Fd::own(dup)
}

/// A thread of vlog's that runs until it is told to stop (the logger's
/// ticker, the control socket's server): started with every signal blocked
/// and its start over (std's, which allocates) before `spawn` returns, told
/// to stop by a flag and its waker, and never joined or detached by a
/// forked child, which has no such thread (its copy of the handle is kept,
/// see [`keep_parents`]).
pub struct Worker {
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    /// The process that started it.
    pid: u32,
    thread: Option<std::thread::JoinHandle<()>>,
    /// What the thread waits on besides its waker and `park`, rung when it
    /// is told to stop (see [`Worker::waiting_on`]).
    bell: Option<&'static Bell>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Worker(pid {})", self.pid)
    }
}

impl Worker {
    /// Starts thread `name` running `f` with the stop flag and `waker`.
    pub fn spawn(
        name: &str,
        waker: Arc<Waker>,
        f: impl FnOnce(&AtomicBool, &Waker) + Send + 'static,
    ) -> io::Result<Worker> {
        let stop = Arc::new(AtomicBool::new(false));
        let (stopped, woken) = (Arc::clone(&stop), Arc::clone(&waker));
        let started = Arc::new(Barrier::new(2));
        let go = Arc::clone(&started);
        let thread = spawn_quiet(name, move || {
            go.wait();
            f(&stopped, &woken)
        })?;
        started.wait();
        Ok(Worker {
            stop,
            waker,
            pid: super::process_id(),
            thread: Some(thread),
            bell: None,
        })
    }

    /// Says that the thread also waits on `bell` (see `sys::bell`), which
    /// [`Worker::tell_stop`] then rings.
    pub fn waiting_on(mut self, bell: &'static Bell) -> Worker {
        self.bell = Some(bell);
        self
    }

    /// Whether the thread is in this process (not a forked child's copy).
    #[inline(always)]
    pub fn is_here(&self) -> bool {
        self.pid == super::process_id()
    }

    /// The process that started it.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Wakes the thread (without stopping it), if it is in this process.
    pub fn wake(&self) {
        if self.is_here() {
            self.waker.wake();
        }
    }

    /// Unparks the thread (one that sleeps in `std::thread::park`), if it
    /// is in this process: a futex wake, no descriptor.
    #[inline]
    pub fn unpark(&self) {
        if let (true, Some(thread)) = (self.is_here(), &self.thread) {
            thread.thread().unpark();
        }
    }

    /// Sets the stop flag and wakes the thread; it ends on its own.
    pub fn tell_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if self.is_here() {
            self.waker.wake();
            self.unpark();
            if let Some(bell) = self.bell {
                bell.ring();
            }
        }
    }

    /// Told to stop, and let go of (detached): for a caller that must not
    /// wait (it holds a lock the thread may be waiting for).
    pub fn stop(mut self) {
        self.tell_stop();
        if self.is_here() {
            drop(self.thread.take());
        } else {
            keep_parents(self);
        }
    }

    /// Told to stop, and waited for (without any lock the thread takes).
    pub fn stop_and_join(mut self) {
        self.tell_stop();
        if !self.is_here() {
            keep_parents(self);
            return;
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Keeps what a forked child copied of a thread of its parent's (its
/// handle, what it shares with it): that thread is not in this process, so
/// nothing of it is joined, detached or freed, and it stays where a leak
/// checker finds it.
pub fn keep_parents<T: Send + 'static>(copy: T) {
    static KEPT: Mutex<Vec<Box<dyn Send>>> = Mutex::new(Vec::new());
    let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
    if kept.try_reserve(1).is_ok() {
        kept.push(Box::new(copy));
    } else {
        std::mem::forget(copy);
    }
}

/// The signals a thread's own faults raise.
const SYNCHRONOUS: [libc::c_int; 6] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGTRAP,
    libc::SIGSYS,
];

/// Starts a thread named `name` running `f` with every signal blocked but
/// those of its own faults; the caller's mask is as it was when this
/// returns.
pub fn spawn_quiet(
    name: &str,
    f: impl FnOnce() + Send + 'static,
) -> io::Result<std::thread::JoinHandle<()>> {
    // SAFETY: sigset_t is plain data that sigfillset initialises.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid sets; pthread_sigmask changes this thread's mask only.
    unsafe {
        libc::sigfillset(&mut all);
        // A fault of the thread's own is delivered to it whatever its mask
        // says, and kills the process when blocked: left open, it reaches
        // vlog's handlers (a ring file truncated under a reader is repaired,
        // a crash is dumped) as on any other thread.
        for sig in SYNCHRONOUS {
            libc::sigdelset(&mut all, sig);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    let spawned = std::thread::Builder::new().name(name.to_owned()).spawn(f);
    // SAFETY: puts back the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    spawned
}
