//! Sockets to log daemons and collectors: journald's and /dev/log's datagram
//! sockets, UDP collectors, and the addresses and sockets that `connection`
//! builds its streams from.

use std::ffi::c_int;
use std::io;

use super::fd::Fd;
use super::write_all_fd;

/// An unbound, non-blocking, close-on-exec datagram socket and the address
/// it sends to: a Unix socket (journald's, /dev/log) or a UDP collector. A
/// socket the program closed (see `super::fd`) is replaced before the next
/// send.
pub struct DatagramTarget {
    fd: Fd,
    family: c_int,
    addr: libc::sockaddr_storage,
    addr_len: libc::socklen_t,
    /// The socket was replaced since the last `take_replaced`.
    replaced: bool,
    /// Connected to its address (`unix_connected`): sends name no address.
    connected: bool,
    /// Connects at the first send, and again after a failed one
    /// (`unix_connecting`).
    connecting: bool,
}

impl std::fmt::Debug for DatagramTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DatagramTarget")
    }
}

/// A non-blocking, close-on-exec socket of vlog's (see [`Fd::own`]).
pub(super) fn new_socket(family: c_int, kind: c_int) -> io::Result<Fd> {
    let flags = kind | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    // SAFETY: plain socket creation; the result is checked.
    let raw = unsafe { libc::socket(family, flags, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    Fd::own(raw)
}

impl DatagramTarget {
    /// To the Unix datagram socket at `path`.
    pub fn unix(path: &[u8]) -> io::Result<DatagramTarget> {
        let (family, storage, len) = unix_addr(path)?;
        DatagramTarget::to(family, storage, len)
    }

    /// To the Unix datagram socket at `path`, connected as glibc's
    /// syslog(3) connects to /dev/log: the path is looked up once, not at
    /// every send, and a full queue at the other end is this socket's to
    /// wait on. Fails when nothing listens at `path`.
    pub fn unix_connected(path: &[u8]) -> io::Result<DatagramTarget> {
        let (family, storage, len) = unix_addr(path)?;
        let mut target = DatagramTarget::to(family, storage, len)?;
        target.connect()?;
        target.connecting = true;
        Ok(target)
    }

    /// To the Unix datagram socket at `path`, connected at the first send
    /// (nothing need listen there yet) and again when a send finds it not
    /// connected: so that a full queue at the other end is this socket's to
    /// wait on (`sys::room::wait_writable`), which an unconnected
    /// socket cannot see.
    pub fn unix_connecting(path: &[u8]) -> io::Result<DatagramTarget> {
        let mut target = DatagramTarget::unix(path)?;
        target.connecting = true;
        Ok(target)
    }

    /// Connects now if something listens at the address (else at the
    /// first send, see `unix_connecting`): so that the crash handler finds
    /// it connected ([`DatagramTarget::for_crash`]).
    pub fn connect_if_listening(&mut self) {
        if self.connecting && !self.connected {
            let _ = self.connect();
        }
    }

    /// The socket's descriptor and identity, for the crash handler, which
    /// sends on it one datagram of its own (`output::at_crash`), connecting
    /// it first if it is not yet.
    pub fn for_crash(&self) -> (c_int, super::FdInfo) {
        (self.fd.raw(), self.fd.info())
    }

    /// The descriptor to wait on for room (`sys::room::wait_writable`).
    pub fn raw(&self) -> c_int {
        self.fd.raw()
    }

    fn connect(&mut self) -> io::Result<()> {
        // SAFETY: the address is a sockaddr of `addr_len` bytes.
        let rc =
            unsafe { libc::connect(self.fd.raw(), (&raw const self.addr).cast(), self.addr_len) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        self.connected = true;
        Ok(())
    }

    /// To a UDP collector.
    pub fn udp(addr: &std::net::SocketAddr) -> io::Result<DatagramTarget> {
        let (family, storage, len) = socket_addr(addr);
        DatagramTarget::to(family, storage, len)
    }

    fn to(
        family: c_int,
        addr: libc::sockaddr_storage,
        addr_len: libc::socklen_t,
    ) -> io::Result<DatagramTarget> {
        Ok(DatagramTarget {
            fd: new_socket(family, libc::SOCK_DGRAM)?,
            family,
            addr,
            addr_len,
            replaced: false,
            connected: false,
            connecting: false,
        })
    }

    /// Whether the socket had to be replaced since the last call (the
    /// program closed it): to be reported.
    pub fn take_replaced(&mut self) -> bool {
        std::mem::take(&mut self.replaced)
    }

    /// Sends `payload` as one datagram, never waiting and never raising
    /// SIGPIPE. A payload too large for a Unix datagram goes as a sealed
    /// memfd passed with SCM_RIGHTS (journald's protocol for large entries).
    pub fn send(&mut self, payload: &[u8]) -> io::Result<()> {
        if !self.fd.is_ours() {
            let new = new_socket(self.family, libc::SOCK_DGRAM)?;
            std::mem::replace(&mut self.fd, new).abandon();
            self.replaced = true;
            if self.connected {
                self.connect()?;
            }
        }
        if self.connecting && !self.connected {
            // Nothing listens there (yet): the error is the send's.
            self.connect()?;
        }
        match self.send_datagram(payload, None) {
            // The daemon at the other end was restarted: a new socket,
            // connected to the new one, and the message sent again once,
            // as glibc does. EPIPE: the old daemon's socket shut down but
            // not closed yet (it may stay so a while on a busy machine).
            Err(e)
                if self.connected
                    && matches!(
                        e.raw_os_error(),
                        Some(libc::ECONNREFUSED | libc::ENOTCONN | libc::ECONNRESET | libc::EPIPE)
                    ) =>
            {
                let new = new_socket(self.family, libc::SOCK_DGRAM)?;
                drop(std::mem::replace(&mut self.fd, new));
                // Not connected until this connect succeeds: the next send
                // tries again.
                self.connected = false;
                self.connect()?;
                self.send_datagram(payload, None)
            }
            Err(e)
                if self.family == libc::AF_UNIX
                    && matches!(e.raw_os_error(), Some(libc::EMSGSIZE | libc::ENOBUFS)) =>
            {
                self.send_memfd(payload)
            }
            result => result,
        }
    }

    /// The memfd path on its own (public for the test that runs it against a
    /// real journald).
    pub fn send_memfd(&self, payload: &[u8]) -> io::Result<()> {
        let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
        // SAFETY: a NUL-terminated name; the result is checked.
        let raw = unsafe { libc::memfd_create(c"vlog-journal".as_ptr(), flags) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        let memfd = Fd::own(raw)?;
        write_all_fd(memfd.raw(), payload)?;
        let seals =
            libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
        // SAFETY: fcntl on our own descriptor.
        if unsafe { libc::fcntl(memfd.raw(), libc::F_ADD_SEALS, seals) } < 0 {
            return Err(io::Error::last_os_error());
        }
        self.send_datagram(b"", Some(memfd.raw()))
    }

    fn send_datagram(&self, payload: &[u8], pass_fd: Option<c_int>) -> io::Result<()> {
        let mut iov = libc::iovec {
            iov_base: payload.as_ptr() as *mut libc::c_void,
            iov_len: payload.len(),
        };
        // Room for one descriptor's control message, 8-aligned.
        let mut control = [0u64; 4];
        // SAFETY: an all-zero msghdr is valid; every pointer set below points
        // at locals that outlive the sendmsg call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        if !self.connected {
            msg.msg_name = &self.addr as *const libc::sockaddr_storage as *mut libc::c_void;
            msg.msg_namelen = self.addr_len;
        }
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if let Some(fd) = pass_fd {
            // SAFETY: the control buffer holds CMSG_SPACE(sizeof(int)) bytes
            // (asserted), and CMSG_FIRSTHDR/CMSG_DATA stay inside it.
            unsafe {
                let space = libc::CMSG_SPACE(std::mem::size_of::<c_int>() as u32) as usize;
                assert!(space <= std::mem::size_of_val(&control));
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen = space;
                let cmsg = libc::CMSG_FIRSTHDR(&msg);
                (*cmsg).cmsg_level = libc::SOL_SOCKET;
                (*cmsg).cmsg_type = libc::SCM_RIGHTS;
                (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<c_int>() as u32) as usize;
                libc::CMSG_DATA(cmsg).cast::<c_int>().write_unaligned(fd);
            }
        }
        loop {
            let flags = libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;
            // SAFETY: msg is fully initialised above.
            if unsafe { libc::sendmsg(self.fd.raw(), &msg, flags) } >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// A Unix socket path as a sockaddr for connect(2) (for vlog-ctl too).
pub fn unix_addr(path: &[u8]) -> io::Result<(c_int, libc::sockaddr_storage, libc::socklen_t)> {
    // SAFETY: an all-zero sockaddr_storage is valid; it is larger than and
    // aligned for sockaddr_un, filled below within sun_path and leaving its
    // NUL.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let addr = unsafe { &mut *(&raw mut storage).cast::<libc::sockaddr_un>() };
    if path.len() >= addr.sun_path.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (dst, &b) in addr.sun_path.iter_mut().zip(path) {
        *dst = b as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + path.len() + 1;
    Ok((libc::AF_UNIX, storage, len as libc::socklen_t))
}

/// `addr` as a sockaddr for connect(2).
pub(super) fn socket_addr(
    addr: &std::net::SocketAddr,
) -> (c_int, libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_storage is valid and large enough for
    // either family, written field by field below.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        std::net::SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            let sin = unsafe { &mut *(&raw mut storage).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from_ne_bytes(a.ip().octets());
            let len = std::mem::size_of::<libc::sockaddr_in>();
            (libc::AF_INET, storage, len as libc::socklen_t)
        }
        std::net::SocketAddr::V6(a) => {
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            let sin6 = unsafe { &mut *(&raw mut storage).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            sin6.sin6_scope_id = a.scope_id();
            let len = std::mem::size_of::<libc::sockaddr_in6>();
            (libc::AF_INET6, storage, len as libc::socklen_t)
        }
    }
}

/// Looks a collector's HOST:PORT up (getaddrinfo: as long as the name
/// servers take; vlog's resolver thread alone calls it, never under a
/// lock): its first address, or why there is none.
pub fn lookup(name: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    match name.to_socket_addrs() {
        Ok(mut addrs) => addrs.next().ok_or_else(|| "it has no address".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// The host's name, for syslog's HOSTNAME field.
pub fn hostname() -> Vec<u8> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates
    // within it on success.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return Vec::new();
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(0);
    buf[..len].to_vec()
}
