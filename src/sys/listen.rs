//! A Unix stream socket vlog listens on (the control socket), the
//! credentials of who connects, and the epoll instance and timer its
//! server waits on.
//!
//! The socket file is made so that nobody else can take it over: its
//! directory must belong to this user or root and be writable by nobody
//! else (so between bind(2) and the chmod that follows, the file cannot be
//! swapped for another); bind(2) never follows a symbolic link and never
//! replaces a file; a file already at the path is removed only when it is a
//! socket of this user that nobody listens on any more (a crashed run's),
//! and never otherwise. The file is removed later only by the process that
//! made it, and only while it is still the file it made (device and inode).
//! The directory is resolved once (no link left in its path) and the socket
//! bound there, so a link in the path given cannot be turned elsewhere
//! between the check and the bind.

use std::ffi::{c_int, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::fd::Fd;
use super::net::{new_socket, unix_addr};
use super::place::check_directory;

/// Who is at the other end of a connection (SO_PEERCRED, SO_PEERGROUPS).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerCred {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
    /// The supplementary groups, when the kernel tells (Linux 4.13 and up).
    pub groups: Vec<u32>,
}

impl PeerCred {
    /// Whether the peer is in group `gid`, as its primary group or a
    /// supplementary one.
    pub fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.groups.contains(&gid)
    }
}

/// A listening Unix stream socket of vlog's, and the file it is bound to.
pub struct Listener {
    fd: Fd,
    path: PathBuf,
    /// The socket file's device and inode when it was bound.
    file: (u64, u64),
    /// The process that bound it: only that one removes the file.
    pid: u32,
    removed: bool,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Listener({})", self.path.display())
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("the path contains a NUL byte"))
}

/// lstat(2): the file at `path` itself, a symbolic link not followed.
fn lstat(path: &CString) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-pointer.
    if unsafe { libc::lstat(path.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// Binds and listens on a new socket at `path` (absolute, at most 107
/// bytes), in a directory [`check_directory`] accepts; the file made 0600,
/// or 0660 with group `group`. A file already at the path is removed only
/// when it is a socket of this user that nobody listens on.
pub fn listen(path: &Path, group: Option<u32>) -> io::Result<Listener> {
    if !path.is_absolute() {
        return Err(io::Error::other("the socket's path must be absolute"));
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::other("the socket's path has no directory"));
    };
    let dir = std::fs::canonicalize(dir)?;
    check_directory(&dir)?;
    let path = &dir.join(name);
    let c = c_path(path)?;
    let (_, storage, len) = unix_addr(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("the socket's path is longer than 107 bytes"))?;
    let fd = new_socket(libc::AF_UNIX, libc::SOCK_STREAM)?;
    let bind = || {
        // SAFETY: `storage` holds a sockaddr_un of `len` bytes.
        if unsafe { libc::bind(fd.raw(), (&raw const storage).cast(), len) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    };
    if let Err(e) = bind() {
        if e.raw_os_error() != Some(libc::EADDRINUSE) {
            return Err(e);
        }
        remove_stale(path, &c)?;
        bind()?;
    }
    let st = lstat(&c)?;
    let mut listener = Listener {
        fd,
        path: path.to_owned(),
        file: (st.st_dev, st.st_ino),
        pid: super::process_id(),
        removed: false,
    };
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        // Someone replaced it already: it is not ours to remove.
        listener.removed = true;
        return Err(io::Error::other(
            "the socket file was replaced as it was made",
        ));
    }
    // The directory lets nobody else replace the file between the lstat
    // above and these (see the overview).
    let mode = if group.is_some() { 0o660 } else { 0o600 };
    if let Some(gid) = group {
        // SAFETY: a NUL-terminated path; lchown never follows a link.
        if unsafe { libc::lchown(c.as_ptr(), u32::MAX, gid) } != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::other(format!(
                "cannot give the socket to group {gid}: {e}"
            )));
        }
    }
    // SAFETY: a NUL-terminated path, just proved to be our socket.
    if unsafe { libc::chmod(c.as_ptr(), mode) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: listen on our bound socket.
    if unsafe { libc::listen(listener.fd.raw(), 16) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(listener)
}

/// What is at `path` when bind(2) found it taken: removed if it is a socket
/// of this user that refuses connections (a run that ended without removing
/// it); an error saying what it is otherwise.
fn remove_stale(path: &Path, c: &CString) -> io::Result<()> {
    let st = lstat(c)?;
    let what = match st.st_mode & libc::S_IFMT {
        libc::S_IFSOCK if st.st_uid == super::effective_uid() => {
            let (family, storage, len) = unix_addr(path.as_os_str().as_bytes())?;
            let probe = new_socket(family, libc::SOCK_STREAM)?;
            // SAFETY: `storage` holds a sockaddr_un of `len` bytes.
            let rc = unsafe { libc::connect(probe.raw(), (&raw const storage).cast(), len) };
            let e = io::Error::last_os_error();
            if rc != 0 && e.raw_os_error() == Some(libc::ECONNREFUSED) {
                // SAFETY: a NUL-terminated path; the directory is this
                // user's alone, so the file is still the one looked at.
                if unsafe { libc::unlink(c.as_ptr()) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                return Ok(());
            }
            "a socket another process listens on"
        }
        libc::S_IFSOCK => "a socket of another user",
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFDIR => "a directory",
        _ => "a file",
    };
    Err(io::Error::other(format!(
        "'{}' is {what}: left as it is",
        path.display()
    )))
}

impl Listener {
    /// The listening descriptor.
    pub fn fd(&self) -> &Fd {
        &self.fd
    }

    /// Accepts one connection, if one waits: its descriptor (non-blocking,
    /// close-on-exec) and who made it.
    pub fn accept(&self) -> io::Result<Option<(Fd, PeerCred)>> {
        if !self.fd.is_ours() {
            return Err(super::fd::not_ours());
        }
        let flags = libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
        // SAFETY: accept4 on our listening socket, no address wanted.
        let raw = unsafe {
            libc::accept4(
                self.fd.raw(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                flags,
            )
        };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN | libc::EINTR | libc::ECONNABORTED) => Ok(None),
                _ => Err(e),
            };
        }
        let fd = Fd::own(raw)?;
        let cred = peer_cred(fd.raw())?;
        Ok(Some((fd, cred)))
    }

    /// Whether the file at the path is still the socket this process made.
    pub fn file_is_ours(&self) -> bool {
        c_path(&self.path)
            .and_then(|c| lstat(&c))
            .is_ok_and(|st| (st.st_dev, st.st_ino) == self.file)
    }

    /// Removes the socket file, once, if this process made it and it is
    /// still the file it made.
    pub fn remove(&mut self) {
        if self.removed || self.pid != super::process_id() {
            return;
        }
        self.removed = true;
        if self.file_is_ours() {
            if let Ok(c) = c_path(&self.path) {
                // SAFETY: a NUL-terminated path to our own socket file.
                unsafe { libc::unlink(c.as_ptr()) };
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Shuts the sending side of a connection (the peer reads an end of file
/// after what was sent).
pub fn shutdown_write(fd: &Fd) {
    // SAFETY: shutdown of a socket the caller proved ours.
    unsafe { libc::shutdown(fd.raw(), libc::SHUT_WR) };
}

/// Who is at the other end of Unix socket `fd` (for vlog-ctl too: the
/// process that serves a control socket).
pub fn peer_cred(fd: c_int) -> io::Result<PeerCred> {
    // SAFETY: an all-zero ucred is valid; getsockopt fills it.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a valid out-buffer of `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut groups = [0u32; 256];
    let mut glen = std::mem::size_of_val(&groups) as libc::socklen_t;
    // SAFETY: a valid out-buffer of `glen` bytes; a peer with more groups
    // than fit (ERANGE) is judged by the ones that do not need them.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERGROUPS,
            groups.as_mut_ptr().cast(),
            &mut glen,
        )
    };
    let n = if rc == 0 { glen as usize / 4 } else { 0 };
    Ok(PeerCred {
        pid: cred.pid,
        uid: cred.uid,
        gid: cred.gid,
        groups: groups[..n.min(groups.len())].to_vec(),
    })
}

/// What a descriptor registered with a [`Poller`] waits for.
pub const READABLE: u32 = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
pub const WRITABLE: u32 = libc::EPOLLOUT as u32;

/// An epoll instance of vlog's: one descriptor that is readable when any
/// descriptor registered with it is ready (for a program's event loop).
pub struct Poller {
    fd: Fd,
}

impl Poller {
    pub fn new() -> io::Result<Poller> {
        // SAFETY: plain creation; the result is checked.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Poller { fd: Fd::own(raw)? })
    }

    pub fn fd(&self) -> &Fd {
        &self.fd
    }

    fn ctl(&self, op: c_int, fd: &Fd, events: u32) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events,
            u64: fd.raw() as u64,
        };
        // SAFETY: epoll_ctl with a valid event structure.
        if unsafe { libc::epoll_ctl(self.fd.raw(), op, fd.raw(), &mut ev) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Registers `fd` (which the caller proved ours) for `events`.
    pub fn add(&self, fd: &Fd, events: u32) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events)
    }

    /// Changes what `fd` is waited for.
    pub fn modify(&self, fd: &Fd, events: u32) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, events)
    }

    /// Takes `fd` out (before it is closed, so that a copy of it in a
    /// forked child does not keep it registered).
    pub fn delete(&self, fd: &Fd) {
        let _ = self.ctl(libc::EPOLL_CTL_DEL, fd, 0);
    }

    /// Whether this descriptor is still our epoll instance: every epoll
    /// descriptor is the same anonymous inode, so the proof is that it
    /// holds `member`, a descriptor of ours registered with it (changing
    /// what `member` waits for to `events`, what it waited for).
    pub fn holds(&self, member: &Fd, events: u32) -> bool {
        self.fd.is_ours() && member.is_ours() && self.modify(member, events).is_ok()
    }
}

/// A timerfd of vlog's that ticks every so often, so that a [`Poller`]
/// wakes for time as well as for descriptors.
pub struct Timer {
    fd: Fd,
}

impl Timer {
    pub fn new() -> io::Result<Timer> {
        let flags = libc::TFD_CLOEXEC | libc::TFD_NONBLOCK;
        // SAFETY: plain creation; the result is checked.
        let raw = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, flags) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Timer { fd: Fd::own(raw)? })
    }

    pub fn fd(&self) -> &Fd {
        &self.fd
    }

    /// Ticks every `ms` milliseconds from now; 0 stops it.
    pub fn every(&self, ms: u64) {
        let t = libc::timespec {
            tv_sec: (ms / 1000) as libc::time_t,
            tv_nsec: ((ms % 1000) * 1_000_000) as libc::c_long,
        };
        let spec = libc::itimerspec {
            it_interval: t,
            it_value: t,
        };
        if self.fd.is_ours() {
            // SAFETY: a valid itimerspec for our own timerfd.
            unsafe { libc::timerfd_settime(self.fd.raw(), 0, &spec, std::ptr::null_mut()) };
        }
    }

    /// Takes the ticks that came, so that the timer is not ready until the
    /// next.
    pub fn take(&self) {
        let mut ticks = [0u8; 8];
        if self.fd.is_ours() {
            let _ = super::watch::read_some(self.fd.raw(), &mut ticks);
        }
    }
}

/// Waits on the epoll descriptor `fd` until something registered with it
/// is ready or `ms` pass, taking no event (they are level-triggered: the
/// round that follows finds them). A descriptor that is not an epoll one
/// (closed by the program) is a wait of `ms` without it.
pub fn wait_on(fd: c_int, ms: u64) {
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 1];
    let timeout = ms.min(i32::MAX as u64) as c_int;
    // SAFETY: a buffer of one event.
    let n = unsafe { libc::epoll_wait(fd, events.as_mut_ptr(), 1, timeout) };
    if n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}
