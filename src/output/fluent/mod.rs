//! `PRIO:fluent:TAG@tcp://HOST:PORT` and `PRIO:fluent:TAG@unix:/PATH`:
//! records to a receiver of Fluent's Forward protocol v1 (Fluentd's and
//! Fluent Bit's `in_forward`, Vector's `fluent` source, the OpenTelemetry
//! Collector's `fluent_forward` receiver), MessagePack over a stream.
//!
//! # Overview
//!
//! Each record is encoded straight from the record into an event,
//! `[EventTime, {"message": ..., "priority": ..., FIELD: value, ...}]`,
//! integers as integers and strings as valid UTF-8, with no map built in
//! between and nothing allocated. Events gather in a batch, sent as one
//! PackedForward message, `[TAG, bin(events), {"size": N, "chunk": ID}]`
//! (the chunk only with `?ack`), when the batch reaches its size, when it
//! is its age old (the logger's ticker asks, and so does the next event),
//! on `vlog_flush` and `vlog_shutdown`, and at exit. Ages are on
//! CLOCK_MONOTONIC: a wall clock stepped back would hold a batch back.
//!
//! One buffer, reserved when the output is opened (the queue size), holds
//! the batches in order:
//!
//! ```text
//! | sealed | sealed | ... | open: [TAG, bin32 header, events ... |
//! ^ written so far on this connection ...
//! ```
//!
//! The front is written with what the socket takes now, never waiting.
//! Without `?ack` a batch leaves the queue once it is written; with it, once
//! the receiver acknowledged its chunk, and a connection that breaks has
//! every batch not acknowledged written again on the next one (at least
//! once). An event that does not fit in the queue is dropped and counted.
//! What is in the queue at a crash is in the ring anyway.

use std::collections::VecDeque;
use std::io;

mod wire;

use super::address::Address;
use super::spec::{FluentOptions, FluentPeer};
use crate::error::ConfigError;
use crate::record::Record;
use crate::sys;
use crate::sys::connection::{Connection, Peer};
use crate::text::msgpack::{bin32_header, put_map_header, put_str, put_uint, BIN32_HEADER};
use wire::{encode_event, parse_ack, parse_hex, put_hex_fixed, EVENT_MAX};

/// What sealing a batch adds: `{"size": u32, "chunk": 32 hex digits}`.
const SEAL_MAX: usize = 64;
/// How much of the receiver's acknowledgements is read at once.
const ACKS_MAX: usize = 4096;
/// Between saying the queue is full and that it works (`may_say_recovered`).
const FULL_REPORT_FLOOR_NS: u64 = 10_000_000_000;

/// What a flush still waits for on one output.
#[derive(Debug, Clone, Copy)]
pub struct Waiting {
    /// Grows as batches are written and let go of: the flush waits while
    /// it moves.
    pub progress: usize,
    /// The connection to wait on (None while there is none).
    pub fd: Option<i32>,
    /// Wait to write (else to read acknowledgements).
    pub to_write: bool,
    /// The receiver's name is being looked up for the first time.
    pub resolving: bool,
    /// The events not sent yet.
    pub events: u64,
}

/// A sealed batch.
#[derive(Debug, Clone, Copy)]
struct Batch {
    len: usize,
    events: u32,
    chunk: u64,
    /// Acknowledged (with `?ack`): leaves the queue once it is at the front.
    acked: bool,
}

/// The open batch, at the end of the queue.
#[derive(Debug, Clone, Copy)]
struct Open {
    events: u32,
    /// When it was opened (CLOCK_MONOTONIC ns).
    since: u64,
}

#[derive(Debug)]
pub struct Fluent {
    conn: Connection,
    /// A receiver's TCP address (a name is looked up by vlog's resolver
    /// thread; events queue meanwhile); None for a Unix socket.
    address: Option<Address>,
    name: String,
    tag: Vec<u8>,
    options: FluentOptions,
    ident: Vec<u8>,
    /// The sealed batches, then the open one.
    queue: Vec<u8>,
    sealed: VecDeque<Batch>,
    /// Bytes of the sealed batches (the open one starts there).
    sealed_len: usize,
    open: Option<Open>,
    /// Bytes of the queue's front written on this connection.
    written: usize,
    /// Bytes of batches done with (written, or acknowledged) since the
    /// output opened: with `written`, what a flush sees move.
    gone: usize,
    /// What the receiver sent that is not read through yet.
    acks: Vec<u8>,
    /// The event being encoded.
    event: Vec<u8>,
    /// The chunks' names: this process, when it opened the output, and a
    /// count.
    chunk_base: u64,
    next_chunk: u64,
    /// When this episode of a full queue began (monotonic ns).
    full_since: Option<u64>,
}

impl Fluent {
    pub fn open(
        peer: &FluentPeer,
        tag: &str,
        options: FluentOptions,
    ) -> Result<Fluent, ConfigError> {
        let (peer, address, name) = match peer {
            FluentPeer::Tcp(addr) => {
                let address = Address::new(addr);
                let peer = address.get().map(Peer::Tcp);
                (peer, Some(address), format!("fluent tcp://{addr}"))
            }
            FluentPeer::Unix(path) => {
                use std::os::unix::ffi::OsStrExt;
                (
                    Some(Peer::Unix(path.as_os_str().as_bytes().to_vec())),
                    None,
                    format!("fluent unix:{}", path.display()),
                )
            }
        };
        let mut queue = Vec::new();
        let mut sealed = VecDeque::new();
        let mut acks = Vec::new();
        let mut event = Vec::new();
        queue
            .try_reserve_exact(options.queue)
            .and_then(|()| sealed.try_reserve_exact(options.queue / FLUENT_BATCH_FLOOR + 1))
            .and_then(|()| acks.try_reserve_exact(ACKS_MAX))
            .and_then(|()| event.try_reserve_exact(EVENT_MAX))
            .map_err(|e| ConfigError::new(format!("cannot make the {name} output: {e}")))?;
        let chunk_base = (u64::from(sys::process_id()) << 32) ^ sys::realtime_ns();
        Ok(Fluent {
            conn: Connection::new(peer),
            address,
            name,
            tag: tag.as_bytes().to_vec(),
            options,
            ident: sys::program_name(),
            queue,
            sealed,
            sealed_len: 0,
            open: None,
            written: 0,
            gone: 0,
            acks,
            event,
            chunk_base,
            next_chunk: 0,
            full_since: None,
        })
    }

    pub fn describe(&self) -> String {
        self.name.clone()
    }

    /// Connects, once the configuration naming it was accepted.
    pub fn start(&mut self) {
        self.conn.ensure();
    }

    /// The receiver's TCP address, if it has one to look up.
    pub fn address(&self) -> Option<&Address> {
        self.address.as_ref()
    }

    /// The result of looking the receiver's name up: what to say, if
    /// anything; once it is known, the queue goes to it.
    pub fn looked_up(
        &mut self,
        result: Result<std::net::SocketAddr, String>,
        now_ms: u64,
    ) -> Option<String> {
        let address = self.address.as_mut()?;
        let said = address.looked_up(result, now_ms, "fluent receiver");
        if let Some(addr) = address.get() {
            if !self.conn.has_peer() {
                self.conn.set_peer(Peer::Tcp(addr));
                self.pump();
            }
        }
        said
    }

    /// Encodes `rec`, adds it to the open batch, and writes
    /// what the socket takes. An error: the event was dropped (the queue is
    /// full: the receiver is gone or slow).
    pub fn send(&mut self, rec: &Record) -> io::Result<()> {
        let mut event = std::mem::take(&mut self.event);
        event.clear();
        encode_event(rec, &self.ident, &mut event);
        let kept = self.add(&event);
        self.event = event;
        // A batch to write, or acknowledgements to read: otherwise nothing
        // to do on the socket (the ticker looks after reconnecting).
        if self.written < self.sealed_len || (self.options.ack && !self.sealed.is_empty()) {
            self.pump();
        }
        if kept {
            Ok(())
        } else {
            self.full_since.get_or_insert_with(sys::monotonic_ns);
            // ENOBUFS allocates nothing; `why` says it for people, once.
            Err(io::Error::from_raw_os_error(libc::ENOBUFS))
        }
    }

    /// Whether an output whose queue was full may say it works again: once
    /// the queue has drained below half, and [`FULL_REPORT_FLOOR_NS`] after
    /// the episode began. A receiver a little slower than the program keeps
    /// the queue at the edge of full: ending the episode at each event that
    /// fits made a pair of reports per event.
    pub fn may_say_recovered(&mut self) -> bool {
        let Some(since) = self.full_since else {
            return true;
        };
        let over = self.queue.len() <= self.options.queue / 2
            && sys::monotonic_ns().saturating_sub(since) >= FULL_REPORT_FLOOR_NS;
        if over {
            self.full_since = None;
        }
        over
    }

    pub fn take_replaced(&mut self) -> bool {
        self.conn.take_replaced()
    }

    /// Adds an encoded event to the open batch (opening one), sealing it
    /// when full. False when it does not fit in the queue.
    fn add(&mut self, event: &[u8]) -> bool {
        // A batch old enough goes before the event, whatever the ticker
        // does.
        if self.open.is_some_and(|o| self.is_old(o)) {
            self.seal();
        }
        let prefix = self.prefix_len();
        let open_len = self.queue.len() - self.sealed_len;
        let need = event.len() + SEAL_MAX + if self.open.is_none() { prefix } else { 0 };
        if self.queue.len() + need > self.options.queue
            || self.sealed.len() == self.sealed.capacity()
        {
            // A full open batch makes room by going out whole; the event
            // waits for the next call.
            if self.open.is_some() && open_len > prefix {
                self.seal();
            }
            return false;
        }
        if self.open.is_none() {
            self.queue.push(0x93);
            put_str(&self.tag, &mut self.queue);
            self.queue.extend_from_slice(&bin32_header(0));
            self.open = Some(Open {
                events: 0,
                since: sys::monotonic_ns(),
            });
        }
        self.queue.extend_from_slice(event);
        if let Some(open) = &mut self.open {
            open.events += 1;
        }
        if self.queue.len() - self.sealed_len - prefix >= self.options.batch {
            self.seal();
        }
        true
    }

    /// The bytes of a batch before its events: the array, the tag, the
    /// events' bin32 header.
    fn prefix_len(&self) -> usize {
        // The tag has at most 128 bytes: a fixstr or a str 8.
        let header = if self.tag.len() < 32 { 1 } else { 2 };
        1 + header + self.tag.len() + BIN32_HEADER
    }

    /// Seals the open batch: its events' length, and its options.
    fn seal(&mut self) {
        let Some(open) = self.open.take() else {
            return;
        };
        let prefix = self.prefix_len();
        let start = self.sealed_len;
        let events_len = self.queue.len() - start - prefix;
        let at = start + prefix - BIN32_HEADER;
        self.queue[at..at + BIN32_HEADER].copy_from_slice(&bin32_header(events_len as u32));
        let chunk = self.next_chunk;
        self.next_chunk += 1;
        put_map_header(if self.options.ack { 2 } else { 1 }, &mut self.queue);
        put_str(b"size", &mut self.queue);
        put_uint(u64::from(open.events), &mut self.queue);
        if self.options.ack {
            put_str(b"chunk", &mut self.queue);
            self.put_chunk_id(chunk);
        }
        let len = self.queue.len() - start;
        self.sealed.push_back(Batch {
            len,
            events: open.events,
            chunk,
            acked: false,
        });
        self.sealed_len += len;
    }

    /// A chunk's name: 32 hex digits, unique to this process and output.
    fn put_chunk_id(&mut self, chunk: u64) {
        let mut id = [0u8; 32];
        let mut digits = crate::text::Bounded::new(&mut id);
        put_hex_fixed(self.chunk_base, &mut digits);
        put_hex_fixed(chunk, &mut digits);
        let id = digits.finish();
        let id: [u8; 32] = id.try_into().unwrap_or([b'0'; 32]);
        put_str(&id, &mut self.queue);
    }

    /// What the logger's ticker asks every so often, and a flush: seals a
    /// batch that is old enough (any, when `all`), writes what the socket
    /// takes, and reads acknowledgements.
    pub fn tick(&mut self, all: bool) {
        if self.open.is_some_and(|o| all || self.is_old(o)) {
            self.seal();
        }
        self.pump();
    }

    fn is_old(&self, open: Open) -> bool {
        sys::monotonic_ns().saturating_sub(open.since) >= self.options.age_ms * 1_000_000
    }

    /// One step of a flush (`vlog_flush`, `vlog_shutdown`, exit): the open
    /// batch sealed (`first`), what the socket takes written, and what is
    /// still to be sent, for the caller to wait on without the lock (see
    /// `logger::ticker::drain`). None when everything went.
    pub fn drain_step(&mut self, first: bool) -> Option<Waiting> {
        if first {
            self.tick(true);
        } else {
            self.pump();
        }
        self.pending().then(|| Waiting {
            progress: self.gone + self.written,
            fd: self.conn.raw(),
            to_write: self.written < self.sealed_len,
            resolving: self.address.as_ref().is_some_and(Address::first_lookup),
            events: self.queued_events(),
        })
    }

    /// The shortest time between ticks this output needs (ms).
    pub fn tick_ms(&self) -> u64 {
        // Twice per age: a batch goes out at most half its age late.
        (self.options.age_ms / 2).clamp(1, 500)
    }

    /// Whether anything is waiting to be written or acknowledged.
    pub fn pending(&self) -> bool {
        !self.sealed.is_empty()
    }

    /// Writes the sealed batches the socket takes now; reads the receiver's
    /// acknowledgements; lets go of the batches done with.
    fn pump(&mut self) {
        if !self.conn.ensure() {
            return;
        }
        while self.written < self.sealed_len {
            match self
                .conn
                .write_some(&self.queue[self.written..self.sealed_len])
            {
                Ok(0) => break,
                Ok(n) => self.written += n,
                Err(_) => return self.broken(),
            }
        }
        if self.options.ack {
            if let Err(()) = self.read_acks() {
                return self.broken();
            }
        }
        self.let_go();
    }

    /// The batches at the front that are done: written (without `?ack`) or
    /// acknowledged.
    fn let_go(&mut self) {
        let mut done = 0;
        while let Some(b) = self.sealed.front() {
            let written = done + b.len <= self.written;
            if !written || (self.options.ack && !b.acked) {
                break;
            }
            done += b.len;
            self.sealed.pop_front();
        }
        if done > 0 {
            self.gone += done;
            self.queue.drain(..done);
            self.sealed_len -= done;
            self.written -= done;
        }
    }

    /// Reads `{"ack": ID}` maps; Err when the receiver sent something else,
    /// or went away.
    fn read_acks(&mut self) -> Result<(), ()> {
        loop {
            let have = self.acks.len();
            self.acks.resize(ACKS_MAX, 0);
            let got = self.conn.read_some(&mut self.acks[have..]);
            self.acks.truncate(have + *got.as_ref().unwrap_or(&0));
            match got {
                Err(_) => return Err(()),
                Ok(0) => break,
                Ok(_) => {}
            }
            while let Some((id, used)) = parse_ack(&self.acks)? {
                // An ID of ours: this output's base, then the chunk's count.
                let chunk = (id.len() == 32 && parse_hex(&id[..16]) == Some(self.chunk_base))
                    .then(|| parse_hex(&id[16..]))
                    .flatten();
                if let Some(b) = self.sealed.iter_mut().find(|b| Some(b.chunk) == chunk) {
                    b.acked = true;
                }
                self.acks.drain(..used);
            }
            if self.acks.len() == ACKS_MAX {
                return Err(());
            }
        }
        Ok(())
    }

    /// The connection broke: a new one next second, and every batch not
    /// done is written again on it.
    fn broken(&mut self) {
        self.conn.lost();
        self.written = 0;
        self.acks.clear();
    }

    /// In a forked child: the queue and the connection are the parent's,
    /// which sends them; the child starts with nothing.
    pub fn after_fork(&mut self) {
        self.conn.disconnect();
        self.queue.clear();
        self.sealed.clear();
        self.sealed_len = 0;
        self.open = None;
        self.written = 0;
        self.acks.clear();
        self.full_since = None;
        self.chunk_base = (u64::from(sys::process_id()) << 32) ^ sys::realtime_ns();
    }

    /// What a failed send means, for the one report of it.
    pub fn why(&self, e: &io::Error) -> String {
        if e.raw_os_error() == Some(libc::ENOBUFS) {
            format!(
                "its queue ({} bytes) is full: the receiver is gone or slow; events are dropped",
                self.options.queue
            )
        } else {
            e.to_string()
        }
    }

    /// Events in the queue (sealed or open), for what is said when they
    /// cannot be sent at exit.
    pub fn queued_events(&self) -> u64 {
        self.sealed.iter().map(|b| u64::from(b.events)).sum::<u64>()
            + self.open.map_or(0, |o| u64::from(o.events))
    }
}

/// Fewer bytes than a batch ever has (its tag, one event's eleven keys and
/// its options): the queue holds at most its size over this many batches.
const FLUENT_BATCH_FLOOR: usize = 128;
