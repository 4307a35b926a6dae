//! Descriptors: the rule that keeps a descriptor vlog's, and writes that
//! never raise SIGPIPE or SIGXFSZ. (The one way vlog opens a file of its
//! own is `private`.)
//!
//! A daemon may close every descriptor above 2 (`close_range`, `closefrom`)
//! and open its own files, which then get the numbers vlog had. Writing,
//! truncating or closing by number would then hit the daemon's data. So an
//! [`Fd`] remembers the device and inode of the file it opened, and every
//! write, truncation and close is preceded by one fstat(2) that proves the
//! number still names that file; a descriptor that is not is let go of
//! without closing it. A file the program opens between that fstat and the
//! write, from another thread, is the window no check can close; so vlog's
//! descriptors are kept where the program's opens, which take the lowest
//! free number, do not land (at [`high_floor`], half the soft
//! RLIMIT_NOFILE up to 1024, and above). What remains: a program with
//! that many descriptors open, one that dup2()s onto vlog's numbers, and
//! a limit so low that nothing is free up there.
//!
//! vlog's descriptors are never 0, 1 or 2: in a program started with those
//! closed, a file of vlog's there would receive the program's own output, and
//! fd 2 would be refused by the rule for stderr (see `diag`).

use std::ffi::c_int;
use std::io;

/// What kind of file a descriptor is, for how to write to it without
/// SIGPIPE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FdKind {
    /// A regular file, a terminal, a character device: write(2).
    #[default]
    Plain,
    /// A pipe or FIFO: write(2) with SIGPIPE blocked.
    Pipe,
    /// A socket: send(2) with MSG_NOSIGNAL.
    Socket,
}

/// Identity and kind of an open descriptor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FdInfo {
    pub dev: u64,
    pub ino: u64,
    pub kind: FdKind,
    /// 0 once the file has been deleted.
    pub nlink: u64,
    /// The file's size in bytes.
    pub size: u64,
    /// Its owner and permission bits (`st_mode & 0o7777`).
    pub uid: u32,
    pub mode: u32,
    /// Whether it is a regular file.
    pub regular: bool,
    /// Whether it is a character device other than /dev/null, /dev/zero and
    /// /dev/full (a terminal, for a file vlog opened).
    pub device: bool,
}

impl FdInfo {
    /// Whether `other` is the same file.
    pub fn same_file(&self, other: &FdInfo) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

fn info_of(st: &libc::stat) -> FdInfo {
    let kind = match st.st_mode & libc::S_IFMT {
        libc::S_IFIFO => FdKind::Pipe,
        libc::S_IFSOCK => FdKind::Socket,
        _ => FdKind::Plain,
    };
    FdInfo {
        dev: st.st_dev,
        ino: st.st_ino,
        kind,
        nlink: st.st_nlink,
        size: st.st_size as u64,
        uid: st.st_uid,
        mode: st.st_mode & 0o7777,
        regular: st.st_mode & libc::S_IFMT == libc::S_IFREG,
        device: st.st_mode & libc::S_IFMT == libc::S_IFCHR && !is_null(st.st_rdev),
    }
}

/// fstat(2) of `fd`: Err when it is not open. Async-signal-safe.
pub fn fd_info(fd: c_int) -> io::Result<FdInfo> {
    // SAFETY: an all-zero stat is a valid out-buffer for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid out-pointer; a bad fd is an error, not UB.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info_of(&st))
}

/// Whether a character device is one that takes what is written and puts
/// it nowhere: /dev/null (1:3), /dev/zero (1:5), /dev/full (1:7, which
/// refuses it: ENOSPC).
pub(super) fn is_null(rdev: libc::dev_t) -> bool {
    libc::major(rdev) == 1 && matches!(libc::minor(rdev), 3 | 5 | 7)
}

/// A descriptor vlog opened, and the file it opened.
#[derive(Debug)]
pub struct Fd {
    raw: c_int,
    info: FdInfo,
    /// Whether opening it created the file.
    created: bool,
}

impl Fd {
    /// Takes `raw`, which vlog just made, moving it (with close-on-exec)
    /// out of the program's way: to [`high_floor`] or above, or, where
    /// nothing is free there, to 3 or above when it is 0, 1 or 2.
    /// Async-signal-safe.
    pub fn own(raw: c_int) -> io::Result<Fd> {
        Fd::own_file(raw, None)
    }

    /// [`Fd::own`] for a file just opened by its path, which names the
    /// file `named` (its device and inode, looked up right after the
    /// open): the descriptor moved out of the way must be that file. If it
    /// is not, the program closed vlog's new number and opened a file of
    /// its own there meanwhile: that number is the program's and is left
    /// open, and the open fails (said, and tried again later).
    pub fn own_file(raw: c_int, named: Option<(u64, u64)>) -> io::Result<Fd> {
        let raw = out_of_the_way(raw, named)?;
        match fd_info(raw) {
            Ok(info) => Ok(Fd {
                raw,
                info,
                created: false,
            }),
            Err(e) => {
                close_raw(raw);
                Err(e)
            }
        }
    }

    /// The descriptor's number, for a call made right after [`Fd::check`]
    /// or [`Fd::is_ours`] said yes.
    pub fn raw(&self) -> c_int {
        self.raw
    }

    /// The file as it was opened.
    pub fn info(&self) -> FdInfo {
        self.info
    }

    /// Whether opening the file created it.
    pub fn created(&self) -> bool {
        self.created
    }

    /// Records that opening the file created it (see `private`).
    pub(super) fn mark_created(&mut self) {
        self.created = true;
    }

    /// The file as it is now, if the descriptor still names the file vlog
    /// opened: one fstat(2). Async-signal-safe.
    pub fn check(&self) -> Option<FdInfo> {
        fd_info(self.raw)
            .ok()
            .filter(|now| now.same_file(&self.info))
    }

    /// Whether the descriptor still names the file vlog opened.
    /// Async-signal-safe.
    pub fn is_ours(&self) -> bool {
        self.check().is_some()
    }

    /// A second descriptor of vlog's for the same open file (close-on-exec,
    /// 3 or above), if this one is still ours: to wait on it (fdatasync)
    /// without holding what owns this one.
    pub fn duplicate(&self) -> io::Result<Fd> {
        if !self.is_ours() {
            return Err(not_ours());
        }
        // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor and changes no
        // other.
        let dup = unsafe { libc::fcntl(self.raw, libc::F_DUPFD_CLOEXEC, high_floor()) };
        if dup < 0 {
            return Err(io::Error::last_os_error());
        }
        Fd::own(dup)
    }

    /// fdatasync(2), if the descriptor is still ours; [`not_ours`]
    /// otherwise.
    pub fn sync_data(&self) -> io::Result<()> {
        if !self.is_ours() {
            return Err(not_ours());
        }
        // SAFETY: fdatasync on a descriptor just proved ours.
        if unsafe { libc::fdatasync(self.raw) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Makes the file `len` bytes long with every block allocated now
    /// (posix_fallocate), so that a mapping of it never meets a full disk
    /// (which would be SIGBUS); without raising SIGXFSZ past the size limit.
    pub fn allocate(&self, len: u64) -> io::Result<()> {
        let len =
            libc::off_t::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        super::signal::without_signal(libc::SIGXFSZ, || {
            // SAFETY: ftruncate and posix_fallocate of our own descriptor.
            if unsafe { libc::ftruncate(self.raw, len) } != 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: as above.
            match unsafe { libc::posix_fallocate(self.raw, 0, len) } {
                0 => Ok(()),
                e => Err(io::Error::from_raw_os_error(e)),
            }
        })
    }

    /// Reads exactly `buf.len()` bytes at `offset` (pread), if the
    /// descriptor is still ours.
    pub fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        if !self.is_ours() {
            return Err(not_ours());
        }
        while !buf.is_empty() {
            let at = libc::off_t::try_from(offset)
                .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
            // SAFETY: `buf` is valid for writes of its length.
            let n = unsafe { libc::pread(self.raw, buf.as_mut_ptr().cast(), buf.len(), at) };
            match n {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n if n > 0 => {
                    buf = &mut buf[n as usize..];
                    offset += n as u64;
                }
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }

    /// flock(2) without waiting: a shared lock (`exclusive` false) or an
    /// exclusive one. Ok(false) when another holds a lock that conflicts.
    /// Converting a lock this descriptor holds may drop it first (flock's
    /// rule); the caller takes it again.
    pub fn try_lock(&self, exclusive: bool) -> io::Result<bool> {
        let how = if exclusive {
            libc::LOCK_EX
        } else {
            libc::LOCK_SH
        } | libc::LOCK_NB;
        loop {
            // SAFETY: flock of our own descriptor.
            if unsafe { libc::flock(self.raw, how) } == 0 {
                return Ok(true);
            }
            match io::Error::last_os_error() {
                e if e.raw_os_error() == Some(libc::EWOULDBLOCK) => return Ok(false),
                e if e.kind() == io::ErrorKind::Interrupted => {}
                e => return Err(e),
            }
        }
    }

    /// Lets go of a descriptor that is no longer vlog's without closing it:
    /// the number belongs to someone else now.
    pub fn abandon(self) {
        std::mem::forget(self);
    }
}

impl Drop for Fd {
    /// Closes the descriptor if it is still vlog's; one that is not is
    /// someone else's now and is left open.
    fn drop(&mut self) {
        if self.is_ours() {
            close_raw(self.raw);
        }
    }
}

/// The error of a write refused because the descriptor is no longer the
/// file vlog opened.
pub fn not_ours() -> io::Error {
    io::Error::other(
        "the descriptor is no longer the file vlog opened (the program closed it, \
         and the number may name a file of its own now)",
    )
}

fn close_raw(raw: c_int) {
    // SAFETY: closing a descriptor vlog made and no longer uses.
    unsafe { libc::close(raw) };
}

/// `raw` if it is at [`high_floor`] or above; otherwise a close-on-exec
/// duplicate there (or at 3 or above), and `raw` closed by the system call
/// itself: close(3) is a cancellation point, and a descriptor is made
/// inside logging calls (the writer thread's start), where a pending
/// cancel must not act. Async-signal-safe.
fn out_of_the_way(raw: c_int, named: Option<(u64, u64)>) -> io::Result<c_int> {
    let floor = high_floor();
    if raw >= floor {
        return Ok(raw);
    }
    // SAFETY: fcntl on a descriptor vlog just made.
    let mut moved = unsafe { libc::fcntl(raw, libc::F_DUPFD_CLOEXEC, floor) };
    if moved < 0 && raw > 2 {
        // Nothing free up there (EMFILE), or the limit is below the floor
        // (EINVAL): it stays where it is.
        return Ok(raw);
    }
    if moved < 0 {
        // SAFETY: as above.
        moved = unsafe { libc::fcntl(raw, libc::F_DUPFD_CLOEXEC, 3) };
    }
    let result = if moved < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(moved)
    };
    if let (Some(want), Ok(moved)) = (named, &result) {
        if fd_info(*moved).map(|i| (i.dev, i.ino)).ok() != Some(want) {
            // The number is the program's now: only the duplicate of it
            // is closed. (Had the file been renamed in the instant between
            // the open and the look at its path, the number is vlog's and
            // stays open: one descriptor, against closing the program's.)
            // SAFETY: closing the duplicate just made, vlog's own.
            unsafe { libc::syscall(libc::SYS_close, *moved) };
            return Err(not_ours());
        }
    }
    // SAFETY: closing the descriptor just duplicated, vlog's own.
    unsafe { libc::syscall(libc::SYS_close, raw) };
    result
}

/// The lowest number vlog's descriptors take: half the soft RLIMIT_NOFILE,
/// at most 1024, so that a program's own opens, which take the lowest free
/// number, reach them only with that many descriptors open (a daemon
/// that closes every descriptor and opens its files gets numbers vlog
/// does not write to). Read at each open (one getrlimit: opens are rare,
/// and the program may raise its limit). Async-signal-safe.
pub fn high_floor() -> c_int {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid out-pointer.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur
    } else {
        0
    };
    soft.min(2048).div_ceil(2).max(3) as c_int
}

/// Writes all of `buf` to `fd` without ever raising SIGPIPE or SIGXFSZ: a
/// reader that went away is the error EPIPE, a file at the size limit
/// (RLIMIT_FSIZE) the error EFBIG, never the end of the process. A
/// descriptor in non-blocking mode that is full gives EAGAIN (nothing
/// waits). Async-signal-safe.
pub fn write_no_signal(fd: c_int, buf: &[u8], kind: FdKind) -> io::Result<()> {
    match kind {
        FdKind::Pipe => {
            super::signal::without_signal(libc::SIGPIPE, || write_all_kind(fd, buf, kind))
        }
        FdKind::Plain if file_size_limited() => {
            super::signal::without_signal(libc::SIGXFSZ, || write_all_kind(fd, buf, kind))
        }
        _ => write_all_kind(fd, buf, kind),
    }
}

/// Writes whole lines (`bytes` ends at a line's end) with
/// [`write_no_signal`]: in one write(2), or to a pipe in pieces of at most
/// PIPE_BUF bytes that each end at a line's end, which the kernel writes
/// whole, so no other writer's bytes land inside a line. (A line longer
/// than PIPE_BUF is a piece of its own, as it was when written alone.) On
/// an error, how many bytes were written before it (for a pipe; 0 for
/// the others, whose one write is all or nothing as far as vlog knows).
pub fn write_lines_no_signal(
    fd: c_int,
    bytes: &[u8],
    kind: FdKind,
) -> Result<(), (io::Error, usize)> {
    const PIPE_BUF: usize = libc::PIPE_BUF;
    if kind != FdKind::Pipe || bytes.len() <= PIPE_BUF {
        return write_no_signal(fd, bytes, kind).map_err(|e| (e, 0));
    }
    let mut rest = bytes;
    while !rest.is_empty() {
        let cut = if rest.len() <= PIPE_BUF {
            rest.len()
        } else {
            match rest[..PIPE_BUF].iter().rposition(|&b| b == b'\n') {
                Some(end) => end + 1,
                None => rest
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(rest.len(), |end| end + 1),
            }
        };
        write_no_signal(fd, &rest[..cut], kind).map_err(|e| (e, bytes.len() - rest.len()))?;
        rest = &rest[cut..];
    }
    Ok(())
}

/// Whether the process has a file size limit, past which a write raises
/// SIGXFSZ. Read at every write (one getrlimit): the program may set it at
/// any time. Async-signal-safe.
fn file_size_limited() -> bool {
    let mut limit = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: `limit` is a valid out-pointer.
    unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit) };
    limit.rlim_cur != libc::RLIM_INFINITY
}

fn write_all_kind(fd: c_int, mut buf: &[u8], kind: FdKind) -> io::Result<()> {
    if kind != FdKind::Socket {
        return write_all_fd(fd, buf);
    }
    while !buf.is_empty() {
        match send_some(fd, buf, 0) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One send(2) of as much of `buf` as the socket takes, with MSG_NOSIGNAL
/// and `flags`. Async-signal-safe.
pub fn send_some(fd: c_int, buf: &[u8], flags: c_int) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes.
    let n = unsafe {
        libc::send(
            fd,
            buf.as_ptr().cast(),
            buf.len(),
            flags | libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Writes all of `bytes` to `fd`, retrying on EINTR and short writes. Uses only
/// write(2), so it is async-signal-safe.
pub fn write_all_fd(fd: c_int, bytes: &[u8]) -> io::Result<()> {
    write_all_raw(fd, bytes.as_ptr(), bytes.len())
}

/// As [`write_all_fd`], for memory that another thread may be changing (the
/// ring), which therefore is never turned into a slice.
pub fn write_all_raw(fd: c_int, mut ptr: *const u8, mut len: usize) -> io::Result<()> {
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
    use super::*;
    use crate::sys::private::{open_private, Private};

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("vlog-fd-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_descriptor_reused_by_the_program_is_neither_written_nor_closed() {
        let dir = scratch("reused");
        let fd = open_private(&dir.join("ours"), Private::Image).unwrap();
        assert!(fd.created() && fd.is_ours(), "{fd:?}");
        let raw = fd.raw();
        // The program closes it and opens a file of its own at that number
        // (dup2: other tests open files meanwhile).
        let theirs = std::fs::File::create(dir.join("theirs")).unwrap();
        let theirs_raw = std::os::fd::AsRawFd::as_raw_fd(&theirs);
        // SAFETY: the test's own descriptors.
        let moved = unsafe { libc::dup2(theirs_raw, raw) };
        assert_eq!(moved, raw);
        assert!(!fd.is_ours(), "{fd:?}");
        drop(fd);
        assert!(fd_info(raw).is_ok(), "the program's file stays open");
        assert_eq!(std::fs::read(dir.join("theirs")).unwrap(), b"");
    }

    #[test]
    fn an_existing_file_is_not_counted_as_created() {
        let dir = scratch("existing");
        std::fs::write(dir.join("f"), b"kept").unwrap();
        let fd = open_private(&dir.join("f"), Private::Log).unwrap();
        assert!(!fd.created(), "{fd:?}");
        assert!(open_private(&dir.join("f"), Private::NewRing).is_err());
    }
}
