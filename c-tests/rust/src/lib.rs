//! c-tests/rust_bridge.c's Rust part: a round of UDP through mio (which
//! logs its poller's registrations through `log`, at trace level) and
//! records of its own with key-values, all into the C program's vlog.

use std::ffi::c_int;
use std::io::ErrorKind;
use std::time::Duration;

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};

/// Installs vlog's `log` backend: 0, or -1 said on stderr.
#[no_mangle]
pub extern "C" fn probe_init() -> c_int {
    match vlog_bridge::log::init() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("probe_init: {e}");
            -1
        }
    }
}

/// One round: a UDP socket registered with a mio poller under token
/// `round`, a datagram sent to itself and read back. Returns the bytes
/// read, or -1 (said as an error record).
#[no_mangle]
pub extern "C" fn probe_round(round: c_int) -> c_int {
    match round_trip(round) {
        Ok(n) => n as c_int,
        Err(e) => {
            log::error!(target: "probe::net", round = round; "round {round} failed: {e}");
            -1
        }
    }
}

fn round_trip(round: c_int) -> std::io::Result<usize> {
    let mut poll = Poll::new()?;
    let mut socket = UdpSocket::bind("127.0.0.1:0".parse().expect("an address"))?;
    poll.registry()
        .register(&mut socket, Token(round as usize), Interest::READABLE)?;
    socket.send_to(b"ping", socket.local_addr()?)?;
    let mut events = Events::with_capacity(4);
    let mut buf = [0u8; 16];
    loop {
        poll.poll(&mut events, Some(Duration::from_secs(30)))?;
        if events.is_empty() {
            return Err(ErrorKind::TimedOut.into());
        }
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => {
                log::warn!(target: "probe::net", round = round, bytes = n, from = from.to_string().as_str(); "round {round}: datagram back");
                log::debug!(target: "probe::net", "round {round}: detail");
                return Ok(n);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}
