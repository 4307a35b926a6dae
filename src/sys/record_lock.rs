//! POSIX record locks on a file vlog writes (fcntl F_SETLK), which order the
//! processes that rotate one log file (`output::rotate`). Held by the
//! process, not the open file, so a forked child that shares a descriptor's
//! open file is kept out as any other process is. Never waited for.

use std::io;
use std::os::unix::fs::MetadataExt;

use super::fd::{not_ours, Fd};

/// Who holds a lock that kept this process out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// A process of this process's user (the pid): a peer.
    Peer(i32),
    /// A process of another user (the uid), or one vlog cannot tell (its
    /// pid hidden, /proc not mounted: u32::MAX).
    Stranger(u32),
}

impl Fd {
    /// The lock on the whole file, for writing, if no other process holds
    /// one on any of it: Ok(None) when taken, Ok(Some(holder)) when not.
    pub fn try_record_lock(&self) -> io::Result<Option<Holder>> {
        if !self.is_ours() {
            return Err(not_ours());
        }
        loop {
            let mut lock = whole_file(libc::F_WRLCK);
            match fcntl(self, libc::F_SETLK, &mut lock) {
                Ok(()) => return Ok(None),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => {
                    return Ok(Some(self.record_lock_holder()))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Lets go of the lock [`Fd::try_record_lock`] took.
    pub fn record_unlock(&self) {
        if self.is_ours() {
            let _ = fcntl(self, libc::F_SETLK, &mut whole_file(libc::F_UNLCK));
        }
    }

    /// Who holds a lock that conflicts with this process's taking it: a
    /// read lock by anyone who may read the file keeps a writer out too.
    fn record_lock_holder(&self) -> Holder {
        let mut lock = whole_file(libc::F_WRLCK);
        if fcntl(self, libc::F_GETLK, &mut lock).is_err() || lock.l_type == libc::F_UNLCK as i16 {
            // Let go of meanwhile: whoever held it, a peer's turn is short.
            return Holder::Peer(0);
        }
        let pid = lock.l_pid;
        // /proc/PID belongs to the process's effective user.
        match std::fs::metadata(format!("/proc/{pid}")) {
            Ok(m) if pid > 0 && m.uid() == super::private::effective_uid() => Holder::Peer(pid),
            Ok(m) if pid > 0 => Holder::Stranger(m.uid()),
            _ => Holder::Stranger(u32::MAX),
        }
    }
}

fn whole_file(kind: libc::c_int) -> libc::flock {
    // SAFETY: all-zero is a valid flock: the whole file from offset 0.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock
}

fn fcntl(fd: &Fd, cmd: libc::c_int, lock: &mut libc::flock) -> io::Result<()> {
    // SAFETY: fcntl's lock commands on our own descriptor with a valid
    // flock, which F_GETLK fills.
    if unsafe { libc::fcntl(fd.raw(), cmd, lock as *mut libc::flock) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
