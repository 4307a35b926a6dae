//! The few operating-system calls std does not offer, each in one small
//! `unsafe` block.

use std::cell::Cell;
use std::ffi::c_int;
use std::io;
use std::ptr::NonNull;

thread_local! {
    // 0 = not fetched yet. Reset in a forked child, whose thread has a new id.
    static TID: Cell<u32> = const { Cell::new(0) };
}

/// The kernel thread id of the calling thread, cached per thread: the recording
/// path must not make a system call for it.
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

/// Forgets the cached thread id; called in the child after fork.
pub fn reset_thread_id() {
    TID.with(|t| t.set(0));
}

/// Runs `f` and puts errno back as it was: for entry points C calls where
/// errno must survive (a signal handler, a logging call whose format has %m).
/// Async-signal-safe.
pub fn keeping_errno<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: __errno_location returns this thread's errno slot.
    let saved = unsafe { *libc::__errno_location() };
    let result = f();
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
    result
}

/// CLOCK_REALTIME in nanoseconds since the epoch (0 before 1970). One vDSO
/// call, no system call; async-signal-safe.
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

/// True in a setuid/setgid (or otherwise privilege-changing) process, where the
/// environment belongs to a less privileged user and must not be obeyed.
pub fn secure_mode() -> bool {
    // SAFETY: getauxval only reads the auxiliary vector; 0 means absent.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

/// Writes all of `bytes` to `fd`, retrying on EINTR and short writes. Uses only
/// write(2), so it is async-signal-safe.
pub fn write_all_fd(fd: i32, bytes: &[u8]) -> io::Result<()> {
    write_all_raw(fd, bytes.as_ptr(), bytes.len())
}

/// As [`write_all_fd`], for memory that another thread may be changing (the
/// ring), which therefore is never turned into a slice.
pub fn write_all_raw(fd: i32, mut ptr: *const u8, mut len: usize) -> io::Result<()> {
    while len > 0 {
        // SAFETY: `ptr..ptr+len` is readable memory (callers pass a live slice or
        // the ring's mapping); write(2) only reads it and does not keep it.
        let n = unsafe { libc::write(fd, ptr.cast(), len) };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        // SAFETY: write(2) wrote n <= len bytes, so this stays in bounds.
        ptr = unsafe { ptr.add(n as usize) };
        len -= n as usize;
    }
    Ok(())
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
