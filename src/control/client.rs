//! One connection to the control socket: one request line read (at most
//! `REQUEST_MAX` bytes, within `REQUEST_MS`), then its reply written as the
//! socket takes it. A dump or a follow is read from the ring a part at a
//! time, only while the client has taken what it was sent: a client that
//! reads slowly holds at most one part in vlog's memory and is told what
//! the ring overwrote meanwhile; one that takes nothing for `STALL_MS` is
//! dropped. Nothing here waits.

use std::io;

use super::authority::Role;
use crate::config::select::Selection;
use crate::ring::published::{self, Place};
use crate::ring::Entry;
use crate::sys::fd::{send_some, Fd};
use crate::sys::listen::{shutdown_write, PeerCred, READABLE, WRITABLE};
use crate::sys::watch::read_some;
use crate::text::frames::FramesAs;
use crate::text::json::{put_json_string, render_json_framed};
use crate::text::line::render_line_framed;
use crate::text::time::Clock;

/// The longest request line.
pub const REQUEST_MAX: usize = 4096;
/// How long a client has to send its request.
pub const REQUEST_MS: u64 = 5000;
/// How long a reply may wait for a client that takes none of it.
pub const STALL_MS: u64 = 10_000;
/// How much of the ring one part of a dump reads; a part is read only
/// when less than this is waiting to be sent.
const PART: u64 = 64 * 1024;
/// How many parts one round reads for all its connections together: the
/// server's lock, which a fork and a configuration call may wait for while
/// they hold the logger's, is held for a few parts' rendering (about 3 ms a
/// MiB of ring) at most, not for every client's dump at once.
pub const ROUND_PARTS: u32 = 4;

/// What a connection is doing.
enum Phase {
    Reading,
    /// Its request was handed to the commands; the reply is coming.
    Running,
    /// Sending a reply, then closing.
    Writing,
    Streaming(Box<Stream>),
    /// Sent; its end of the connection shut, what the client still sends
    /// read and dropped until it closes (or `LINGER_MS` pass), so that
    /// unread input does not turn the close into a reset that loses the
    /// reply (an oversized request's error, say).
    Lingering {
        until_ms: u64,
    },
    Done,
}

/// How long a connection whose reply was sent waits for the client to
/// close it.
const LINGER_MS: u64 = 1000;

/// A dump (the ring as it is, oldest first) or a follow (records as they
/// come), read a part at a time.
pub struct Stream {
    place: Place,
    selection: Selection,
    json: bool,
    frames: FramesAs,
    follow: bool,
    /// A dump ends at the record the ring was about to number when it
    /// began: a ring that fills faster than the client reads never keeps it
    /// going.
    end: u64,
    /// The newest record sent, so that none is sent twice when the ring is
    /// replaced by one that carried records over.
    last: Option<u64>,
    clock: Clock,
}

/// What a part of a stream came to.
#[derive(PartialEq, Eq)]
enum Part {
    /// More is in the ring already.
    More,
    /// Everything so far was read (a follow waits for more).
    CaughtUp,
    Ended,
}

impl Stream {
    pub fn new(
        selection: Selection,
        json: bool,
        frames: FramesAs,
        follow: bool,
        end: u64,
    ) -> Stream {
        let mut stream = Stream {
            place: Place::default(),
            selection,
            json,
            frames,
            follow,
            end,
            last: None,
            clock: Clock::new(),
        };
        if follow {
            // From the newest record on: what is in the ring already is a
            // dump's.
            while published::walk_from(&mut stream.place, u64::MAX, |e| {
                if let Entry::Record(rec) = e {
                    stream.last = Some(rec.seq);
                }
            }) == Some(false)
            {}
        }
        stream
    }

    /// Reads the next part of the ring into `out`.
    fn part(&mut self, out: &mut Vec<u8>) -> Part {
        let mut ended = false;
        let Stream {
            place,
            selection,
            json,
            frames,
            follow,
            end,
            last,
            clock,
        } = self;
        let caught = published::walk_from(place, PART, |entry| match entry {
            Entry::Record(rec) if !*follow && rec.seq >= *end => ended = true,
            Entry::Record(rec) => {
                if ended || last.is_some_and(|l| rec.seq <= l) {
                    return;
                }
                *last = Some(rec.seq);
                if !selection.selects(&rec) {
                    return;
                }
                if *json {
                    let pid = Some(crate::sys::process_id());
                    render_json_framed(&rec, pid, clock, *frames, out);
                } else {
                    render_line_framed(&rec, clock, *frames, out);
                }
            }
            Entry::Overwritten { bytes } => say(
                out,
                *json,
                &format!("{bytes} bytes of records were overwritten before they were read"),
            ),
            Entry::Gap { expected, found } => say(
                out,
                *json,
                &format!(
                    "records {expected} to {} are missing",
                    found.wrapping_sub(1)
                ),
            ),
            Entry::Damaged { seq, damage } => say(
                out,
                *json,
                &format!("record {seq} skipped: {}", damage.describe()),
            ),
            Entry::Skipped { bytes } => say(
                out,
                *json,
                &format!("{bytes} bytes of damaged records passed over"),
            ),
        });
        match caught {
            _ if ended => Part::Ended,
            None if *follow => Part::CaughtUp,
            None => {
                say(out, *json, "there is no ring");
                Part::Ended
            }
            Some(true) if *follow => Part::CaughtUp,
            Some(true) => Part::Ended,
            Some(false) => Part::More,
        }
    }
}

/// A line of vlog's own in a stream: `vlog: ...`, or `{"vlog":"..."}`.
fn say(out: &mut Vec<u8>, json: bool, what: &str) {
    if json {
        out.extend_from_slice(b"{\"vlog\":");
        put_json_string(what.as_bytes(), out);
        out.extend_from_slice(b"}\n");
    } else {
        out.extend_from_slice(b"vlog: ");
        out.extend_from_slice(what.as_bytes());
        out.push(b'\n');
    }
}

pub struct Client {
    pub id: u64,
    fd: Fd,
    pub peer: PeerCred,
    /// What the peer may ask for (see `authority`).
    pub role: Role,
    accepted_ms: u64,
    input: Vec<u8>,
    phase: Phase,
    out: Vec<u8>,
    sent: usize,
    progress_ms: u64,
    /// What it is registered to wait for.
    pub waits_for: u32,
    /// It is told it may not be served, and closed.
    refused: bool,
    /// Its stream has more in the ring than the round's parts let it read
    /// (see `has_more`).
    more: bool,
}

impl Client {
    pub fn new(id: u64, fd: Fd, peer: PeerCred, role: Role, now_ms: u64) -> Client {
        Client {
            id,
            fd,
            peer,
            role,
            accepted_ms: now_ms,
            input: Vec::new(),
            phase: Phase::Reading,
            out: Vec::new(),
            sent: 0,
            progress_ms: now_ms,
            waits_for: READABLE,
            refused: false,
            more: false,
        }
    }

    pub fn fd(&self) -> &Fd {
        &self.fd
    }

    pub fn done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    /// What it should be registered to wait for now.
    pub fn wants(&self) -> u32 {
        if self.sent < self.out.len() {
            WRITABLE | READABLE
        } else {
            READABLE
        }
    }

    /// Whether its stream has more to read that nothing else will wake it
    /// for: its socket took everything sent, and the round's parts ran
    /// out before the stream caught up.
    pub fn has_more(&self) -> bool {
        self.more && self.sent == self.out.len()
    }

    /// Whether it waits for time alone (a request's deadline, a follow).
    pub fn needs_ticks(&self) -> bool {
        !matches!(self.phase, Phase::Running)
    }

    /// The reply to its request: `head` (the status line, and a whole
    /// reply's body), then `stream` if any.
    pub fn reply(&mut self, head: &[u8], stream: Option<Stream>, now_ms: u64, parts: &mut u32) {
        if !matches!(self.phase, Phase::Running) {
            return;
        }
        self.out.extend_from_slice(head);
        self.progress_ms = now_ms;
        self.phase = match stream {
            Some(s) => Phase::Streaming(Box::new(s)),
            None => Phase::Writing,
        };
        self.step(now_ms, parts);
    }

    /// What it can do now without waiting, reading at most `parts` parts
    /// of the ring (and taking them off); its request line, once whole.
    pub fn step(&mut self, now_ms: u64, parts: &mut u32) -> Option<String> {
        // The program may have closed it since the round began (another
        // thread's close_range): never read or write someone else's.
        if !self.fd.is_ours() {
            self.phase = Phase::Done;
            return None;
        }
        let request = match &mut self.phase {
            Phase::Reading => self.read_request(now_ms),
            Phase::Running | Phase::Done => None,
            Phase::Writing => {
                self.flush(now_ms);
                self.finish_if_sent(now_ms);
                None
            }
            Phase::Lingering { until_ms } => {
                let until = *until_ms;
                if self.left() || now_ms >= until {
                    self.phase = Phase::Done;
                }
                None
            }
            Phase::Streaming(stream) => {
                let mut ended = false;
                self.more = true;
                while self.out.len() - self.sent < PART as usize {
                    if *parts == 0 {
                        break;
                    }
                    *parts -= 1;
                    match stream.part(&mut self.out) {
                        Part::More => {}
                        Part::CaughtUp => {
                            self.more = false;
                            break;
                        }
                        Part::Ended => {
                            ended = true;
                            break;
                        }
                    }
                }
                let follow = stream.follow;
                self.flush(now_ms);
                if ended {
                    self.more = false;
                    self.phase = Phase::Writing;
                    self.finish_if_sent(now_ms);
                } else if follow && self.left() {
                    self.phase = Phase::Done;
                }
                None
            }
        };
        let stalled =
            self.sent < self.out.len() && now_ms.saturating_sub(self.progress_ms) > STALL_MS;
        if stalled {
            self.phase = Phase::Done;
        }
        request
    }

    /// Once a reply is all sent: the connection shut for writing, and left
    /// to linger.
    fn finish_if_sent(&mut self, now_ms: u64) {
        if self.sent == self.out.len() {
            if self.fd.is_ours() {
                shutdown_write(&self.fd);
            }
            self.phase = Phase::Lingering {
                until_ms: now_ms + LINGER_MS,
            };
            if self.left() {
                self.phase = Phase::Done;
            }
        }
    }

    fn read_request(&mut self, now_ms: u64) -> Option<String> {
        let mut buf = [0u8; 1024];
        loop {
            match read_some(self.fd.raw(), &mut buf) {
                Ok(0) => {
                    // Gone before a whole line: nothing to answer.
                    self.phase = Phase::Done;
                    return None;
                }
                Ok(n) => {
                    let room = (REQUEST_MAX + 1).saturating_sub(self.input.len());
                    self.input.extend_from_slice(&buf[..n.min(room)]);
                    if let Some(end) = self.input.iter().position(|&b| b == b'\n') {
                        let line = &self.input[..end];
                        let line = line.strip_suffix(b"\r").unwrap_or(line);
                        let line = String::from_utf8_lossy(line).into_owned();
                        self.phase = Phase::Running;
                        return Some(line);
                    }
                    if self.input.len() > REQUEST_MAX {
                        self.fail(
                            &format!("the request is longer than {REQUEST_MAX} bytes"),
                            now_ms,
                        );
                        return None;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    self.phase = Phase::Done;
                    return None;
                }
            }
        }
        if now_ms.saturating_sub(self.accepted_ms) > REQUEST_MS {
            self.fail(
                &format!("no request within {} s", REQUEST_MS / 1000),
                now_ms,
            );
        }
        None
    }

    /// Sends `line` (a refusal) instead of reading a request, and closes.
    pub fn refuse(&mut self, line: &str, now_ms: u64) {
        self.refused = true;
        self.out.extend_from_slice(line.as_bytes());
        self.phase = Phase::Writing;
        self.step(now_ms, &mut 0);
    }

    pub fn refused(&self) -> bool {
        self.refused
    }

    /// Answers with an error line, and closes once it is sent.
    pub fn fail(&mut self, why: &str, now_ms: u64) {
        self.out
            .extend_from_slice(format!("error: {why}\n").as_bytes());
        self.phase = Phase::Writing;
        self.step(now_ms, &mut 0);
    }

    /// Whether a follower (or a lingering client) has left: the end of its
    /// input, or an error. What it sends meanwhile is read and ignored, a
    /// bounded amount per round.
    fn left(&mut self) -> bool {
        let mut buf = [0u8; 4096];
        for _ in 0..64 {
            match read_some(self.fd.raw(), &mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) => return e.kind() != io::ErrorKind::WouldBlock,
            }
        }
        false
    }

    /// Sends what the socket takes now.
    fn flush(&mut self, now_ms: u64) {
        while self.sent < self.out.len() {
            if !self.fd.is_ours() {
                self.phase = Phase::Done;
                return;
            }
            match send_some(self.fd.raw(), &self.out[self.sent..], libc::MSG_DONTWAIT) {
                Ok(n) => {
                    self.sent += n;
                    self.progress_ms = now_ms;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.phase = Phase::Done;
                    return;
                }
            }
        }
        self.out.clear();
        self.sent = 0;
    }
}
