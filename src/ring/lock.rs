//! A ring file's lock: a process-shared, robust pthread mutex in the file's
//! header space, so the processes that map one ring file (a daemon and the
//! workers it forks) append one at a time, and a process killed while it
//! holds the lock (SIGKILL mid-append) does not stop the others.

use std::ffi::c_int;
use std::io;

/// Makes the lock at `lock`.
///
/// # Safety
/// `lock` points at memory for a pthread_mutex_t that nobody uses yet and
/// that lives as long as every process that will take it has it mapped.
pub unsafe fn init(lock: *mut libc::pthread_mutex_t) -> io::Result<()> {
    let check = |rc: c_int| match rc {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    };
    // SAFETY: attr is initialised before use and destroyed after; the mutex
    // memory is the caller's, unused so far.
    unsafe {
        let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
        check(libc::pthread_mutexattr_init(&mut attr))?;
        let result = check(libc::pthread_mutexattr_setpshared(
            &mut attr,
            libc::PTHREAD_PROCESS_SHARED,
        ))
        .and_then(|()| {
            check(libc::pthread_mutexattr_setrobust(
                &mut attr,
                libc::PTHREAD_MUTEX_ROBUST,
            ))
        })
        .and_then(|()| check(libc::pthread_mutex_init(lock, &attr)));
        libc::pthread_mutexattr_destroy(&mut attr);
        result
    }
}

/// A ring file's lock, held until dropped.
pub struct SharedLock(*mut libc::pthread_mutex_t);

impl SharedLock {
    /// # Safety
    /// `lock` was made by [`init`] (by this process, or by the one that made
    /// the file before forking this one) and stays mapped while the guard
    /// lives.
    pub unsafe fn take(lock: *mut libc::pthread_mutex_t) -> SharedLock {
        // SAFETY: per the caller.
        if unsafe { libc::pthread_mutex_lock(lock) } == libc::EOWNERDEAD {
            // Its last holder died mid-append. The ring stays readable: that
            // record was never committed, or it was and tail was not moved
            // past it (the next record overwrites it and readers see a gap).
            // SAFETY: we hold the lock now (EOWNERDEAD means acquired).
            unsafe { libc::pthread_mutex_consistent(lock) };
        }
        SharedLock(lock)
    }
}

impl Drop for SharedLock {
    fn drop(&mut self) {
        // SAFETY: locked by this thread in `take`.
        unsafe { libc::pthread_mutex_unlock(self.0) };
    }
}
