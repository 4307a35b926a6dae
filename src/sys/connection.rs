//! A stream connection of vlog's to a collector that never waits, for an
//! output that keeps its own queue (`output::fluent`), and syslog's TCP
//! collector on it with a queue of frames (`StreamTarget`): made without
//! waiting, at most once a second after a failure, written and read with
//! what the socket takes and has now, let go of when the program closed it.

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
    /// None while a collector's name is being looked up (see
    /// `output::address`): nothing is connected to until it is known.
    peer: Option<Peer>,
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
    pub fn new(peer: Option<Peer>) -> Connection {
        Connection {
            peer,
            stream: None,
            tried_at: None,
            replaced: false,
            made: 0,
        }
    }

    /// Where it connects, now that it is known (a name was looked up).
    pub fn set_peer(&mut self, peer: Peer) {
        self.peer = Some(peer);
        self.tried_at = None;
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
        if self.stream.is_none() && self.peer.is_some() && self.tried_at != Some(coarse_seconds()) {
            self.tried_at = Some(coarse_seconds());
            self.stream = self.connect().ok();
            self.made += 1;
        }
        self.stream.is_some()
    }

    fn connect(&self) -> io::Result<Fd> {
        let (family, storage, len) = match &self.peer {
            Some(Peer::Tcp(addr)) => socket_addr(addr),
            Some(Peer::Unix(path)) => unix_addr(path)?,
            None => return Err(io::Error::from_raw_os_error(libc::EDESTADDRREQ)),
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

    /// Whether it knows where to connect.
    pub fn has_peer(&self) -> bool {
        self.peer.is_some()
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

/// A TCP connection to a log collector that never makes the logging thread
/// wait (a [`Connection`]): what the socket cannot take yet (a frame cut
/// short, frames sent while connecting, or while the collector's name is
/// being looked up) queued within 64 KiB and sent first next time (or at
/// the next [`StreamTarget::flush`]); what was queued for a connection that
/// broke is counted lost.
pub struct StreamTarget {
    conn: Connection,
    /// What the socket could not take yet, and how many frames (or frame
    /// ends) that is, for the connection `for_connection` made.
    pending: Vec<u8>,
    queued: u64,
    for_connection: u64,
    /// Queued frames lost with a broken connection, not yet counted.
    dropped: u64,
}

impl std::fmt::Debug for StreamTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StreamTarget({:?})", self.conn)
    }
}

/// How much a collector connection queues when the socket cannot take more.
const PENDING_MAX: usize = 64 * 1024;

impl StreamTarget {
    /// A connection to `addr` (None until a name is looked up: see
    /// [`StreamTarget::set_addr`]), not made yet: [`StreamTarget::start`]
    /// or the first send makes it. Fails only without the memory for its
    /// queue.
    pub fn new(addr: Option<std::net::SocketAddr>) -> io::Result<StreamTarget> {
        let mut pending = Vec::new();
        pending
            .try_reserve_exact(PENDING_MAX)
            .map_err(|_| io::Error::from_raw_os_error(libc::ENOMEM))?;
        Ok(StreamTarget {
            conn: Connection::new(addr.map(Peer::Tcp)),
            pending,
            queued: 0,
            for_connection: 0,
            dropped: 0,
        })
    }

    /// Connects now (without waiting for the connection to be made).
    pub fn start(&mut self) {
        self.ensure();
    }

    /// A connection, if one is there or can be tried now; what was queued
    /// for an earlier one is let go of (its frames counted lost).
    fn ensure(&mut self) -> bool {
        let up = self.conn.ensure();
        if self.conn.made() != self.for_connection {
            self.for_connection = self.conn.made();
            self.forget_pending();
        }
        up
    }

    /// The collector's address, now that its name was looked up: the
    /// frames queued meanwhile are sent on the connection made now.
    pub fn set_addr(&mut self, addr: std::net::SocketAddr) {
        self.conn.set_peer(Peer::Tcp(addr));
        self.for_connection = self.conn.made() + 1;
        self.ensure();
    }

    /// Drops the connection (closing only this process's descriptor) and
    /// any unsent rest; the next send connects anew.
    pub fn disconnect(&mut self) {
        self.conn.disconnect();
        self.pending.clear();
        self.queued = 0;
    }

    /// Queued frames that a broken connection took with it, since the last
    /// call.
    pub fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }

    /// Whether the program closed the connection since the last call: to
    /// be reported.
    pub fn take_replaced(&mut self) -> bool {
        self.conn.take_replaced()
    }

    fn forget_pending(&mut self) {
        self.dropped += self.queued;
        self.queued = 0;
        self.pending.clear();
    }

    /// Writes what is queued as far as the socket takes it now, so that
    /// queued frames do not wait for the next message (vlog's ticker).
    pub fn flush(&mut self) {
        if !self.pending.is_empty() && self.conn.has_peer() {
            let _ = self.send(&[]);
        }
    }

    /// Whether it knows where to connect.
    pub fn has_peer(&self) -> bool {
        self.conn.has_peer()
    }

    /// Whether frames are queued.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Sends `frame` (the octet count prefix included), whole or, when the
    /// socket takes only part of it, with the rest kept for the next call.
    /// An error means the frame was not sent.
    pub fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        if !self.conn.has_peer() {
            // The name is being looked up: kept for when it resolves.
            return if self.pending.len() + frame.len() <= PENDING_MAX {
                self.pending.extend_from_slice(frame);
                self.queued += 1;
                Ok(())
            } else {
                Err(io::ErrorKind::WouldBlock.into())
            };
        }
        if !self.ensure() {
            return Err(io::Error::from_raw_os_error(libc::ENOTCONN));
        }
        let conn = &mut self.conn;
        let pending = &mut self.pending;
        let queued = &mut self.queued;
        let result = (|| -> io::Result<()> {
            while !pending.is_empty() {
                match conn.write_some(pending)? {
                    0 => break,
                    n => {
                        pending.drain(..n);
                        if pending.is_empty() {
                            *queued = 0;
                        }
                    }
                }
            }
            let sent = if pending.is_empty() {
                conn.write_some(frame)?
            } else {
                0
            };
            // What the socket cannot take yet (still connecting, or its
            // buffer full) waits here, within the bound, for the next send.
            let rest = &frame[sent..];
            if rest.is_empty() {
                Ok(())
            } else if pending.len() + rest.len() <= PENDING_MAX {
                pending.extend_from_slice(rest);
                *queued += 1;
                Ok(())
            } else if sent == 0 {
                Err(io::ErrorKind::WouldBlock.into())
            } else {
                // Half a frame that cannot be kept: the stream is out of step.
                Err(io::Error::from_raw_os_error(libc::EMSGSIZE))
            }
        })();
        match result {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => {
                // Gone, refused, reset: a new connection next second; what
                // was queued for this one is lost, and counted.
                self.conn.lost();
                self.forget_pending();
                Err(e)
            }
            other => other,
        }
    }
}
