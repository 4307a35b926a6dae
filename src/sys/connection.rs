//! A stream connection of vlog's to a collector that never waits, for an
//! output that keeps its own queue (`output::fluent`, and syslog's TCP
//! collector through `net::StreamTarget`): made without waiting, at most
//! once a second after a failure, written and read with what the socket
//! takes and has now, let go of when the program closed it.

use std::ffi::c_int;
use std::io;

use super::coarse_seconds;
use super::fd::{send_some, Fd};
use super::net::{new_socket, socket_addr, unix_addr};

/// Where a stream connection goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Peer {
    Tcp(std::net::SocketAddr),
    /// A Unix stream socket's path.
    Unix(Vec<u8>),
}

/// A stream connection of vlog's that never waits: made without waiting
/// (`connect` returns at once; the connection is made while the caller goes
/// on), written and read with what the socket takes and has now. The caller
/// keeps its own queue; see `output::fluent`.
pub struct Connection {
    peer: Peer,
    stream: Option<Fd>,
    /// When a connection was last tried (coarse seconds).
    tried_at: Option<u64>,
    /// The program closed the connection since the last `take_replaced`.
    replaced: bool,
    /// Connections made so far: a caller with bytes for the last one
    /// (a frame cut short) sees a new one by it.
    made: u64,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Connection({:?})", self.peer)
    }
}

impl Connection {
    pub fn new(peer: Peer) -> Connection {
        Connection {
            peer,
            stream: None,
            tried_at: None,
            replaced: false,
            made: 0,
        }
    }

    /// Makes a connection unless one is there or one was tried this second;
    /// true when one is there (or being made) afterwards. A connection the
    /// program closed is let go of (not closed: the descriptor is someone
    /// else's now) and made anew.
    pub fn ensure(&mut self) -> bool {
        if self.stream.as_ref().is_some_and(|fd| !fd.is_ours()) {
            if let Some(fd) = self.stream.take() {
                fd.abandon();
            }
            self.replaced = true;
            self.tried_at = None;
        }
        if self.stream.is_none() && self.tried_at != Some(coarse_seconds()) {
            self.tried_at = Some(coarse_seconds());
            self.stream = self.connect().ok();
            self.made += 1;
        }
        self.stream.is_some()
    }

    fn connect(&self) -> io::Result<Fd> {
        let (family, storage, len) = match &self.peer {
            Peer::Tcp(addr) => socket_addr(addr),
            Peer::Unix(path) => unix_addr(path)?,
        };
        let fd = new_socket(family, libc::SOCK_STREAM)?;
        // SAFETY: `storage` holds a sockaddr of `len` bytes for this family.
        let rc = unsafe { libc::connect(fd.raw(), (&raw const storage).cast(), len) };
        let e = io::Error::last_os_error();
        // A Unix socket whose listener's backlog is full says EAGAIN: like
        // a connection being made, it is tried again by writing.
        if rc == 0 || matches!(e.raw_os_error(), Some(libc::EINPROGRESS | libc::EAGAIN)) {
            Ok(fd)
        } else {
            Err(e)
        }
    }

    /// Drops the connection (closing only this process's descriptor); the
    /// next `ensure` makes a new one, at once.
    pub fn disconnect(&mut self) {
        self.stream = None;
        self.tried_at = None;
    }

    /// The connection failed (refused, reset, closed by the peer): dropped,
    /// and a new one is tried in the next second, not before.
    pub fn lost(&mut self) {
        self.stream = None;
    }

    /// Whether the program closed the connection since the last call.
    pub fn take_replaced(&mut self) -> bool {
        std::mem::take(&mut self.replaced)
    }

    /// Writes what the socket takes of `buf` now: how much (0 when it is
    /// full, or still connecting). An error means the connection is gone.
    pub fn write_some(&mut self, buf: &[u8]) -> io::Result<usize> {
        let Some(fd) = self.stream.as_ref().map(Fd::raw) else {
            return Err(io::Error::from_raw_os_error(libc::ENOTCONN));
        };
        match send_some(fd, buf, libc::MSG_DONTWAIT) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) || e.raw_os_error() == Some(libc::ENOTCONN) =>
            {
                Ok(0)
            }
            other => other,
        }
    }

    /// How many connections were made (or tried) so far.
    pub fn made(&self) -> u64 {
        self.made
    }

    /// The connection's descriptor, to wait on (poll) without holding what
    /// owns it: a number that may be reused by then, which a wait harms not.
    pub fn raw(&self) -> Option<c_int> {
        self.stream.as_ref().map(Fd::raw)
    }

    /// Reads what the peer has sent now into `buf`: how much (0 when
    /// nothing is there). An error, or the peer's end of file, means the
    /// connection is gone.
    pub fn read_some(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(fd) = self.stream.as_ref().map(Fd::raw) else {
            return Err(io::Error::from_raw_os_error(libc::ENOTCONN));
        };
        // SAFETY: `buf` is valid for writes of its length.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
        match n {
            0 if !buf.is_empty() => Err(io::ErrorKind::UnexpectedEof.into()),
            n if n >= 0 => Ok(n as usize),
            _ => {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN | libc::EINTR | libc::ENOTCONN) => Ok(0),
                    _ => Err(e),
                }
            }
        }
    }
}

/// Waits at most `ms` milliseconds for `fd` to take more (`to_write`) or to
/// have something to read, or to fail: for a flush, never for a message.
pub fn wait(fd: c_int, ms: u64, to_write: bool) {
    let mut p = libc::pollfd {
        fd,
        events: if to_write {
            libc::POLLOUT
        } else {
            libc::POLLIN
        },
        revents: 0,
    };
    // SAFETY: one initialised pollfd; an EINTR is a short wait.
    unsafe { libc::poll(&mut p, 1, ms.min(i32::MAX as u64) as c_int) };
}
