//! A reader slow for a moment: journald, the syslog daemon at /dev/log,
//! whose socket queues a few datagrams (net.unix.max_dgram_qlen: 10 by
//! default, 512 under systemd), a UDP socket's send buffer, a pipe on
//! stderr another process made non-blocking. A full queue (EAGAIN) is no
//! reason to drop a line: libsystemd's sd_journal_send and glibc's
//! syslog(3) wait for it. vlog waits too, but never under a lock:
//!
//! - A datagram the socket has no room for is held by its output, in
//!   order, before any later one (`Pace`); a pipe's bytes stay in its
//!   output's batch. Nothing waits while the outputs' lock is held.
//! - An output that holds `HOLD_MAX` or more (a pipe: any) is blocked: the
//!   outputs' walk stops before the next line, which stays in the ring
//!   (`logger::printer`). A configuration call, under the logger's lock,
//!   does not stop: its outputs hold on.
//! - The waiting is done with no lock held: vlog's writer thread, a flush
//!   and exit wait for room (poll(2) on the socket or pipe, 100 ms at a
//!   time), send what is held and go on; so does a caller that must make
//!   room in a ring full of unwritten lines, or whose line is its own to
//!   write (`VLOG_WRITER=caller`). A caller that writes its own line (an
//!   error, `?sync`) while the writer thread runs leaves it to that thread.
//! - A reader that takes nothing for `ROOM_WAIT_MS` is stalled: what is
//!   held is dropped and counted, the output says so once (and once more,
//!   with the count, when the reader takes a line again), and nothing is
//!   held or waited for until then. One pair of reports an episode,
//!   however long.

use std::io;

use crate::sys::monotonic_ns;
use crate::sys::net::DatagramTarget;
use crate::sys::room::ROOM_WAIT_MS;

/// What a datagram output holds before it is blocked (its walk stops);
/// reserved, with room for a few more entries, so holding never allocates
/// but where a configuration call's walk goes on regardless.
pub const HOLD_MAX: usize = 64 * 1024;
const HOLD_RESERVED: usize = HOLD_MAX + 32 * 1024;

/// One datagram output's dealings with a slow reader: what it holds, since
/// when the reader took nothing, and whether it is stalled.
#[derive(Debug, Default)]
pub struct Pace {
    /// Datagrams, each its u32 length then its bytes, oldest first.
    held: Vec<u8>,
    /// How many datagrams `held` has.
    count: u64,
    /// When the reader last refused a datagram with nothing taken since
    /// (monotonic ns), None while it takes them.
    refused_since: Option<u64>,
    /// The reader took nothing for `ROOM_WAIT_MS`: nothing is held for it
    /// until it takes a datagram again.
    stalled: bool,
    /// Datagrams dropped since the last `take_dropped` (a stall's).
    dropped: u64,
    /// `count` as the crash handler last learnt it (`at_crash::note_held`).
    told: u64,
}

impl Pace {
    /// Reserves what holding needs.
    pub fn reserve(&mut self) -> Result<(), std::collections::TryReserveError> {
        self.held.try_reserve_exact(HOLD_RESERVED)
    }

    /// Whether datagrams wait for room.
    pub fn holding(&self) -> bool {
        self.count > 0
    }

    /// How many datagrams wait for room.
    pub fn held(&self) -> u64 {
        self.count
    }

    /// Whether the output holds so much that the outputs' walk stops
    /// before its next line.
    pub fn blocked(&self) -> bool {
        self.held.len() >= HOLD_MAX
    }

    /// Tells the crash handler how many datagrams are held on `socket`,
    /// and the record just handed to it (`seq`), if any: lines the outputs
    /// passed and did not send, and where they are (`at_crash::Note`).
    pub fn tell_crash_handler(&mut self, socket: &DatagramTarget, seq: Option<u64>) {
        if self.told != self.count || seq.is_some() {
            self.told = self.count;
            super::at_crash::note_held(socket.raw(), self.count, seq);
        }
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

    /// Sends `entry` on `socket` after what is held, or holds it: never
    /// waits. An error means it was neither sent nor held: the reader is
    /// stalled (EAGAIN), gone, or refused it.
    pub fn send(&mut self, socket: &mut DatagramTarget, entry: &[u8]) -> io::Result<()> {
        self.send_held(socket)?;
        if self.holding() {
            self.hold(entry);
            return Ok(());
        }
        match self.try_send(socket, entry) {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.hold(entry);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Sends what is held, as far as the socket takes it now; never waits.
    /// An error means the reader stalled or is gone: what was held is
    /// dropped and counted.
    pub fn send_held(&mut self, socket: &mut DatagramTarget) -> io::Result<()> {
        let mut sent = 0;
        let mut result = Ok(());
        while self.count > 0 {
            let len = u32::from_ne_bytes(self.held[sent..sent + 4].try_into().unwrap()) as usize;
            let entry = &self.held[sent + 4..sent + 4 + len];
            match try_send(socket, entry, &mut self.refused_since, &mut self.stalled) {
                Ok(true) => {
                    sent += 4 + len;
                    self.count -= 1;
                }
                Ok(false) => break,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.held.drain(..sent);
        if result.is_err() {
            // Stalled, or gone: what is held cannot go, dropped and counted.
            self.dropped += self.count;
            self.forget();
        }
        result
    }

    fn try_send(&mut self, socket: &mut DatagramTarget, entry: &[u8]) -> io::Result<bool> {
        let result = try_send(socket, entry, &mut self.refused_since, &mut self.stalled);
        if result.is_err() {
            self.dropped += self.count;
            self.forget();
        }
        result
    }

    /// Holds `entry` (its room reserved, but for a configuration call's
    /// walk, which does not stop: then the hold grows, or, without the
    /// memory, the datagram is dropped and counted).
    fn hold(&mut self, entry: &[u8]) {
        if self.held.try_reserve(4 + entry.len()).is_err() {
            self.dropped += 1;
            return;
        }
        self.held
            .extend_from_slice(&(entry.len() as u32).to_ne_bytes());
        self.held.extend_from_slice(entry);
        self.count += 1;
    }
}

/// One try at sending `entry`: true when sent, false when the reader has
/// no room (to be held); EAGAIN once it has taken nothing for
/// `ROOM_WAIT_MS` (stalled from then on, until a datagram goes through),
/// and at once while it is stalled.
fn try_send(
    socket: &mut DatagramTarget,
    entry: &[u8],
    refused_since: &mut Option<u64>,
    stalled: &mut bool,
) -> io::Result<bool> {
    match socket.send(entry) {
        Ok(()) => {
            *refused_since = None;
            *stalled = false;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock && !*stalled => {
            let now = monotonic_ns();
            let since = *refused_since.get_or_insert(now);
            if now.saturating_sub(since) >= ROOM_WAIT_MS * 1_000_000 {
                *stalled = true;
                return Err(e);
            }
            Ok(false)
        }
        Err(e) => Err(e),
    }
}
