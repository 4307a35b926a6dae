//! A datagram reader slow for a moment: journald, the syslog daemon at
//! /dev/log, whose socket queues a few datagrams (net.unix.max_dgram_qlen:
//! 10 by default, 512 under systemd), or a UDP socket's send buffer. A full
//! queue (EAGAIN) is no reason to drop a line: libsystemd's sd_journal_send
//! and glibc's syslog(3) wait for it, and so does vlog, on the terms of
//! every output's slow reader (`sys::room::ROOM_WAIT_MS`):
//!
//! - vlog's writer thread (or a caller, when there is none: `VLOG_WRITER=
//!   caller`) waits for room (poll(2) on the connected socket) as long as
//!   the reader takes something, and `ROOM_WAIT_MS` without. The ring holds
//!   the lines meanwhile, and a ring full of lines not written yet makes
//!   the callers that need room wait with it.
//! - A caller that writes its own line (an error, `?sync`) while vlog's
//!   writer thread runs waits `HAND_OFF_MS` at most, then hands the
//!   datagram to the writer thread: it is held, in the order it came, and
//!   sent before any later one (the writer thread sends what is held
//!   before it sleeps, and so do a flush and exit).
//! - A reader that takes nothing for `ROOM_WAIT_MS` is stalled: what is held
//!   is dropped and counted, the output says so once (and once more, with
//!   the count, when the reader takes a line again), and nothing waits
//!   until then. One pair of reports an episode, however long.

use std::io;

use crate::sys::room::ROOM_WAIT_MS;
use crate::sys::{monotonic_ns, net::DatagramTarget};

/// How long a caller that writes its own line waits for a slow reader
/// before it hands the line to vlog's writer thread.
pub const HAND_OFF_MS: u64 = 100;

/// What an output holds for the writer thread, at most: datagrams a slow
/// reader had no room for when their caller could wait no longer. Reserved
/// when the output is made, so holding never allocates.
pub const HOLD_MAX: usize = 64 * 1024;

/// Who sends, and so how long it may wait for a slow reader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Patience {
    /// vlog's writer thread, a flush, exit, or a caller when vlog has no
    /// writer thread: as long as the reader takes something.
    #[default]
    Full,
    /// A caller while vlog's writer thread runs: `HAND_OFF_MS`, then the
    /// writer thread's.
    HandOff,
}

/// One datagram output's dealings with a slow reader: what it holds for the
/// writer thread, and whether the reader is stalled.
#[derive(Debug, Default)]
pub struct Pace {
    /// Datagrams, each its u32 length then its bytes, oldest first.
    held: Vec<u8>,
    /// How many datagrams `held` has.
    count: u64,
    /// The reader took nothing for `ROOM_WAIT_MS`: nothing waits for it
    /// until it takes a datagram again.
    stalled: bool,
    /// Datagrams dropped since the last `take_dropped` (a stall's).
    dropped: u64,
}

impl Pace {
    /// Reserves what holding needs.
    pub fn reserve(&mut self) -> Result<(), std::collections::TryReserveError> {
        self.held.try_reserve_exact(HOLD_MAX)
    }

    /// Whether datagrams wait for the writer thread.
    pub fn holding(&self) -> bool {
        self.count > 0
    }

    /// Datagrams dropped since the last call (the reader stalled): counted
    /// lost by the output.
    pub fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }

    /// In a forked child: what the parent holds is the parent's to send.
    pub fn forget(&mut self) {
        self.held.clear();
        self.count = 0;
    }

    /// Sends `entry` on `socket` after what is held, waiting for room as
    /// `patience` says (see the overview). An error means the datagram was
    /// not sent nor held: the reader is stalled (EAGAIN), or gone, or the
    /// datagram refused.
    pub fn send(
        &mut self,
        socket: &mut DatagramTarget,
        entry: &[u8],
        patience: Patience,
    ) -> io::Result<()> {
        self.send_held(socket, patience)?;
        if self.holding() {
            // What is held goes first: this waits behind it.
            return self.hold(socket, entry);
        }
        let wait = match patience {
            Patience::Full => Wait::Room,
            Patience::HandOff => Wait::HandOff(HAND_OFF_MS),
        };
        match send_waiting(socket, entry, wait, &mut self.stalled) {
            Ok(true) => Ok(()),
            Ok(false) => self.hold(socket, entry),
            Err(e) => Err(self.dropping_held(e)),
        }
    }

    /// Sends what is held: the writer thread's (and a flush's) `Full`
    /// patience waits for room; a caller's only tries, and leaves what
    /// does not go at once to the writer thread.
    pub fn send_held(&mut self, socket: &mut DatagramTarget, patience: Patience) -> io::Result<()> {
        let wait = match patience {
            Patience::Full => Wait::Room,
            Patience::HandOff => Wait::HandOff(0),
        };
        while self.holding() {
            let len = u32::from_ne_bytes(self.held[..4].try_into().unwrap()) as usize;
            match send_waiting(socket, &self.held[4..4 + len], wait, &mut self.stalled) {
                Ok(true) => {
                    self.held.drain(..4 + len);
                    self.count -= 1;
                }
                Ok(false) => return Ok(()),
                Err(e) => return Err(self.dropping_held(e)),
            }
        }
        Ok(())
    }

    /// A stall drops what is held (counted); any other error keeps it.
    fn dropping_held(&mut self, e: io::Error) -> io::Error {
        if e.kind() == io::ErrorKind::WouldBlock {
            self.dropped += self.count;
            self.held.clear();
            self.count = 0;
        }
        e
    }

    /// Holds `entry` for the writer thread; with no room left to hold, the
    /// caller waits as the writer would.
    fn hold(&mut self, socket: &mut DatagramTarget, entry: &[u8]) -> io::Result<()> {
        if self.held.len() + 4 + entry.len() > HOLD_MAX {
            self.send_held(socket, Patience::Full)?;
            return match send_waiting(socket, entry, Wait::Room, &mut self.stalled) {
                Ok(_) => Ok(()),
                Err(e) => Err(self.dropping_held(e)),
            };
        }
        self.held
            .extend_from_slice(&(entry.len() as u32).to_ne_bytes());
        self.held.extend_from_slice(entry);
        self.count += 1;
        Ok(())
    }
}

/// How long a send waits for room.
#[derive(Clone, Copy)]
enum Wait {
    /// As long as the reader takes something, `ROOM_WAIT_MS` without.
    Room,
    /// This many ms, then the datagram is handed to the writer thread.
    HandOff(u64),
}

/// Sends `entry`, waiting for room: true when sent, false when a hand-off's
/// time is over; EAGAIN once the reader took nothing for `ROOM_WAIT_MS`
/// (stalled from then on: nothing waits until a datagram goes through).
fn send_waiting(
    socket: &mut DatagramTarget,
    entry: &[u8],
    wait: Wait,
    stalled: &mut bool,
) -> io::Result<bool> {
    let start = monotonic_ns();
    loop {
        match socket.send(entry) {
            Ok(()) => {
                *stalled = false;
                return Ok(true);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && !*stalled => {
                let waited_ms = monotonic_ns().saturating_sub(start) / 1_000_000;
                let limit = match wait {
                    Wait::Room => ROOM_WAIT_MS,
                    Wait::HandOff(ms) => ms,
                };
                if waited_ms >= limit {
                    if let Wait::HandOff(_) = wait {
                        return Ok(false);
                    }
                    *stalled = true;
                    return Err(e);
                }
                socket.wait_for_room((limit - waited_ms).min(100) as std::ffi::c_int);
            }
            Err(e) => return Err(e),
        }
    }
}
