//! Signals as a program that runs a child needs them (`vlog-relay`): a set
//! blocked in every thread and taken one at a time, sent on to the child,
//! and named. The names are the one table of them: the crash dump prints
//! them too. And a write's own signal (SIGPIPE, SIGXFSZ) held back from the
//! program (`without_signal`).

use std::ffi::c_int;
use std::io;
use std::mem::MaybeUninit;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

/// A set of signals (or a thread's mask).
#[derive(Clone, Copy)]
pub struct Set(libc::sigset_t);

impl Set {
    pub fn of(signals: &[c_int]) -> Set {
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: sigemptyset initialises the set it is given; sigaddset
        // only rejects a number that is no signal (then left out).
        unsafe {
            libc::sigemptyset(set.as_mut_ptr());
            for &sig in signals {
                libc::sigaddset(set.as_mut_ptr(), sig);
            }
            Set(set.assume_init())
        }
    }
}

/// Blocks `set` in the calling thread and returns the mask it had; threads
/// it starts later inherit the new one, so a signal of the set reaches none
/// of them and waits for [`take`].
pub fn block(set: &Set) -> io::Result<Set> {
    let mut old = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: a valid set, and room for the old mask.
    match unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set.0, old.as_mut_ptr()) } {
        // SAFETY: filled in by the successful call.
        0 => Ok(Set(unsafe { old.assume_init() })),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Gives `sig` its default action back if it was ignored, and says whether
/// it was: a program that waits for its child cannot keep SIGCHLD ignored,
/// with which the kernel reaps the child itself and the wait fails.
pub fn stop_ignoring(sig: c_int) -> io::Result<bool> {
    let mut old = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: querying only, into a sigaction to fill.
    if unsafe { libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: filled in by the successful call.
    if unsafe { old.assume_init() }.sa_sigaction != libc::SIG_IGN {
        return Ok(false);
    }
    // SAFETY: SIG_DFL for a signal that was ignored: no handler involved.
    if unsafe { libc::signal(sig, libc::SIG_DFL) } == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(true)
}

/// Makes `command`'s child start as the program was started: with `mask`
/// (the one [`block`] gave back), not the mask of the thread that spawns
/// it, which it would otherwise inherit through exec, and with the signals
/// in `ignored` ignored again ([`stop_ignoring`]).
pub fn spawn_as_started(command: &mut Command, mask: Set, ignored: Vec<c_int>) {
    // SAFETY: the closure runs in the forked child before exec, and only
    // calls signal(2) and pthread_sigmask, which are async-signal-safe, on
    // what it owns; it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            for &sig in &ignored {
                if libc::signal(sig, libc::SIG_IGN) == libc::SIG_ERR {
                    return Err(io::Error::last_os_error());
                }
            }
            match libc::pthread_sigmask(libc::SIG_SETMASK, &mask.0, std::ptr::null_mut()) {
                0 => Ok(()),
                e => Err(io::Error::from_raw_os_error(e)),
            }
        });
    }
}

/// A signal taken by [`take`].
#[derive(Clone, Copy, Debug)]
pub struct Taken {
    pub signal: c_int,
    /// Sent by a process (kill(2), sigqueue(3), raise(3)), not by the
    /// kernel (a terminal's ^C, a child that exited).
    pub from_a_process: bool,
    /// The process that sent it, when `from_a_process`.
    pub sender: i32,
}

/// Takes one pending signal of `set` (which the caller has blocked),
/// waiting at most `timeout`; None when none came, or when a handler of a
/// signal outside the set ran meanwhile.
pub fn take(set: &Set, timeout: Duration) -> Option<Taken> {
    let wait = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
    // SAFETY: a valid set, a siginfo_t to fill and a valid timeout.
    let signal = unsafe { libc::sigtimedwait(&set.0, info.as_mut_ptr(), &wait) };
    if signal <= 0 {
        return None;
    }
    // SAFETY: sigtimedwait filled it in for the signal it returned.
    let info = unsafe { info.assume_init() };
    let from_a_process = info.si_code <= 0;
    let sender = if from_a_process {
        // SAFETY: for a signal a process sent (si_code SI_USER, SI_QUEUE,
        // SI_TKILL), si_pid is the field the kernel filled in.
        unsafe { info.si_pid() }
    } else {
        0
    };
    Some(Taken {
        signal,
        from_a_process,
        sender,
    })
}

/// Sends `signal` to the process `pid`.
pub fn send(pid: u32, signal: c_int) -> io::Result<()> {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    };
    // SAFETY: kill(2) takes any numbers; a positive pid names one process.
    if pid <= 0 || unsafe { libc::kill(pid, signal) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A signal's name (`SIGSEGV`), if it is one of the standard ones.
/// Async-signal-safe: a table.
pub fn name(sig: c_int) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}

/// Runs `f` with `sig` blocked in this thread, and takes the `sig` that `f`
/// raised (SIGPIPE of a write to a pipe with no reader, SIGXFSZ of one past
/// the size limit), so that it is never delivered; one already pending
/// stays pending. Two rt_sigprocmask calls when the write went through:
/// what is pending is looked at only when the program had the signal
/// blocked already (one of its own may be pending) and when the write
/// failed as one that raises it does (EPIPE, EFBIG). Async-signal-safe.
pub fn without_signal<R>(sig: c_int, f: impl FnOnce() -> R) -> R {
    // SAFETY: plain signal-set manipulation on local sets.
    unsafe {
        let mut only: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut only);
        libc::sigaddset(&mut only, sig);
        libc::pthread_sigmask(libc::SIG_BLOCK, &only, &mut old);
        // Unblocked, it could not be pending (it would have been
        // delivered, or discarded as ignored).
        let was_pending = libc::sigismember(&old, sig) == 1
            && libc::sigpending(&mut pending) == 0
            && libc::sigismember(&pending, sig) == 1;
        let result = f();
        let raised = matches!(*libc::__errno_location(), libc::EPIPE | libc::EFBIG);
        if !was_pending
            && raised
            && libc::sigpending(&mut pending) == 0
            && libc::sigismember(&pending, sig) == 1
        {
            let zero = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            libc::sigtimedwait(&only, std::ptr::null_mut(), &zero);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_signal_sent_by_this_process_is_taken_with_its_sender() {
        // A signal no other test uses, blocked on this thread only and
        // sent to this thread alone, so no other test thread can take it.
        let set = Set::of(&[libc::SIGURG]);
        let before = block(&set).unwrap();
        // SAFETY: a valid set to test.
        assert_eq!(unsafe { libc::sigismember(&before.0, libc::SIGURG) }, 0);
        assert!(take(&set, Duration::from_millis(1)).is_none());
        // SAFETY: a signal to this very thread, which blocks it.
        let sent = unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGURG) };
        assert_eq!(sent, 0);
        let taken = take(&set, Duration::from_secs(5)).expect("the signal sent");
        assert_eq!(taken.signal, libc::SIGURG);
        assert!(taken.from_a_process, "{taken:?}");
        assert_eq!(taken.sender, std::process::id() as i32);
    }

    #[test]
    fn names() {
        assert_eq!(name(libc::SIGSEGV), Some("SIGSEGV"));
        assert_eq!(name(libc::SIGTERM), Some("SIGTERM"));
        assert_eq!(name(0), None);
        assert_eq!(name(libc::SIGRTMIN()), None);
        assert!(send(0, 0).is_err());
    }
}
