//! A syslog collector over UDP, whose name may still be looked up: the
//! socket is made once the address is known, and what was sent before
//! waits until then.

use std::io;

use crate::output::address::Address;
use crate::sys::net::DatagramTarget;

/// A UDP collector. Its socket is made once its address is known (the
/// socket's family is the address's); messages sent before that wait
/// (64 KiB of them) and go then.
#[derive(Debug)]
pub struct Udp {
    pub address: Address,
    pub socket: Option<DatagramTarget>,
    /// Each message as its length (u32) and its bytes.
    pub waiting: Vec<u8>,
}

/// What a UDP collector keeps while its name is looked up.
pub const UDP_WAITING_MAX: usize = 64 * 1024;

impl Udp {
    pub fn send(&mut self, entry: &[u8]) -> io::Result<()> {
        if let Some(socket) = &mut self.socket {
            return socket.send(entry);
        }
        if self.waiting.len() + 4 + entry.len() > UDP_WAITING_MAX {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.waiting
            .extend_from_slice(&(entry.len() as u32).to_ne_bytes());
        self.waiting.extend_from_slice(entry);
        Ok(())
    }

    /// The address is known: the socket made, what waited sent.
    pub fn start(&mut self) -> io::Result<()> {
        let Some(addr) = self.address.get() else {
            return Ok(());
        };
        let mut socket = DatagramTarget::udp(&addr)?;
        let mut rest = &self.waiting[..];
        while let Some((len, tail)) = rest.split_first_chunk::<4>() {
            let len = (u32::from_ne_bytes(*len) as usize).min(tail.len());
            let _ = socket.send(&tail[..len]);
            rest = &tail[len..];
        }
        self.waiting = Vec::new();
        self.socket = Some(socket);
        Ok(())
    }
}
