//! The recorded call's general way, top to bottom: the filter, then the
//! ring, then what the outputs need, for what the flight recorder's call
//! (`flight`) leaves to it. One lock acquisition (`enter`) when the call
//! comes here first, no allocation, the arguments captured once by the
//! boundary and copied once into the ring.
//! A record an output prints is marked for it; vlog's writer thread writes
//! it (see `printer`), or, for an error or a `?sync` output, this thread
//! does after letting go of the lock, before the call returns.

use std::sync::atomic::Ordering;

use super::flight::{site_entry, CallSite};
use super::message::with_kept;
use super::message::{encode_call_fields, encode_reporting, site_id, take_suppressed, truncated};
pub use super::message::{Call, Message, SiteCall};
pub use super::pending::Outcome;
use super::pending::{Finished, Pending};
use super::{printer, thread_fields, Entered, State};
use crate::deferred;
use crate::fields::Names;
use crate::priority::Priority;
use crate::record::{Record, MESSAGE_MAX};
use crate::ring::record::Stamp;
use crate::ring::{Blocked, Ring};
use crate::source::UNKNOWN;
use crate::sys::cancel;
use crate::text::Bounded;
use crate::{stats, sys};

/// What is left to do once a message was recorded, after the logger's lock
/// is let go of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Done(Outcome),
    /// Recorded and marked for the outputs: the writer thread is woken
    /// after the lock (`printer::wake`); whether urgently.
    Wake(bool),
    /// The outputs write up to this position (the end of the caller's
    /// record) before the call returns; whether the record is an error.
    Write(u64, bool),
    /// The outputs print the one record at this position (a ring file
    /// shared with another process: see `Ring::prints_here`).
    WriteOne(u64),
    /// The record would overwrite one the outputs have not written: they
    /// write everything, then the message is recorded again.
    MakeRoom,
    /// The record's room is the oldest record's, still in flight: its
    /// writer finishes it (no lock needed), then the message is recorded
    /// again.
    Blocked(Blocked),
}

/// Records a message: into the ring, marked for every output whose
/// priority it meets.
// Inlined into its two callers at the boundary: the recorded call is then
// one function from the C entry to the ring.
#[inline(always)]
pub fn emit(call: &Call) -> Outcome {
    run(|state| state.record(call)).complete()
}

/// [`emit`], leaving its line's write (an error's, `?sync`) to the caller,
/// which makes it once its own frame holds nothing of the call's (a call
/// has 8 KiB of its caller's stack: a list of 32 fields need not be on it
/// while the outputs write).
#[inline(always)]
pub fn emit_then_write(call: &Call) -> Finished {
    run(|state| state.record(call))
}

/// Runs one recorded call: `record` under the lock, then what it left for
/// after ([`finish`]).
#[inline(always)]
fn run(mut record: impl FnMut(&mut State) -> Next) -> Finished {
    let Some(mut entered) = Entered::new() else {
        stats::add(&stats::NESTED_DROPPED, 1);
        return Finished::Done(Outcome::Dropped);
    };
    let next = record(entered.state());
    finish(entered, next, record)
}

/// What a recorded call left for after the lock: nothing, its line written
/// (an error, `?sync`), or room made in a ring full of lines not yet
/// written, and the call recorded again (`record`), as long as the outputs
/// read on (other threads may fill the ring again meanwhile); outputs that
/// cannot read on (a damaged ring) let the record overwrite.
#[inline(always)]
fn finish(
    mut entered: Entered,
    mut next: Next,
    mut record: impl FnMut(&mut State) -> Next,
) -> Finished {
    let mut stalled_tried = false;
    loop {
        match next {
            Next::Done(outcome) => {
                entered.leave();
                return Finished::Done(outcome);
            }
            Next::Wake(urgent) => {
                entered.leave();
                printer::wake(urgent);
                return Finished::Done(Outcome::Recorded);
            }
            Next::Write(upto, error) => {
                return Finished::Write(Pending::upto(entered, upto, error))
            }
            Next::WriteOne(pos) => return Finished::Write(Pending::one(entered, pos)),
            Next::Blocked(at) => {
                let mut committed = false;
                entered.leave_and_write(|| {
                    committed = super::flight::wait_for(at);
                    Vec::new()
                });
                let Some(again) = Entered::new() else {
                    stats::add(&stats::NESTED_DROPPED, 1);
                    return Finished::Done(Outcome::Dropped);
                };
                entered = again;
                if committed {
                    next = record(entered.state());
                    continue;
                }
                // The room is held by a thread stopped in the middle of a
                // record: a line an output prints is printed now, past the
                // ring (`record_general`); any other record is dropped. Once
                // a call: one that comes back here (having had room made
                // meanwhile) is dropped, so the loop ends.
                if !stalled_tried {
                    stalled_tried = true;
                    entered.state().ring_stalled = true;
                    next = record(entered.state());
                    entered.state().ring_stalled = false;
                }
                if let Next::Blocked(_) = next {
                    entered.leave();
                    stats::add(&stats::IN_FLIGHT_DROPPED, 1);
                    return Finished::Done(Outcome::Dropped);
                }
            }
            Next::MakeRoom => {
                stats::add(&stats::CALLER_WROTE, 1);
                let mut stuck = false;
                entered.leave_and_write(|| {
                    let (said, no_further) = printer::caller::make_room();
                    stuck = no_further;
                    said
                });
                let Some(again) = Entered::new() else {
                    stats::add(&stats::NESTED_DROPPED, 1);
                    return Finished::Done(Outcome::Dropped);
                };
                entered = again;
                // Only while this call records again: the flight
                // recorder's path never writes it.
                entered.state().room_made(Some(stuck));
                next = record(entered.state());
                entered.state().room_made(None);
            }
        }
    }
}

/// [`emit`] for a deferred call site: the flight recorder's call, which
/// builds no [`Call`] unless it leaves the ring-only path.
#[inline(always)]
pub fn emit_site(call: SiteCall) -> Outcome {
    let Some(mut entered) = Entered::new() else {
        stats::add(&stats::NESTED_DROPPED, 1);
        return Outcome::Dropped;
    };
    match entered.state().record_site_call(call) {
        Next::Done(outcome) => {
            entered.leave();
            outcome
        }
        Next::Wake(urgent) => {
            entered.leave();
            printer::wake(urgent);
            Outcome::Recorded
        }
        // Apart, with the call by value: the flight recorder's path keeps
        // its arguments in registers (a retry loop here, or a closure
        // that may record again, cost it 33 instructions, callgrind,
        // vlog-ring).
        next => finish_site(entered, next, call),
    }
}

/// [`emit_site`]'s call when it left something for after the lock.
#[cold]
#[inline(never)]
fn finish_site(entered: Entered, next: Next, call: SiteCall) -> Outcome {
    finish(entered, next, |state| state.record_site_call(call)).complete()
}

impl State {
    #[inline(always)]
    fn record(&mut self, call: &Call) -> Next {
        // 1. The filters: the site's cached level, or the source's
        // (learning of a site or source that is new decides it).
        let level = match call.site {
            Some(site) => self.site_level(site),
            None => match call.source.get().level() {
                UNKNOWN => self.register(call.source),
                level => level,
            },
        };
        if (call.priority as i32) < level && !call.fatal {
            return Next::Done(Outcome::Dropped);
        }
        let printed = self.prints(call.priority);
        // (A deferred call site's message comes through `record_site_call`,
        // which takes step 2 first.)
        self.record_general(call, printed)
    }

    /// Steps 3 to 5, apart from the recorded call's steps 1 and 2 so that
    /// those stay small enough to be one function with the C entry.
    #[inline(never)]
    fn record_general(&mut self, call: &Call, printed: bool) -> Next {
        // 3. The message as the ring keeps it: the text (cut with a marker
        // when it is too long) and its fields, or a deferred payload
        // (without a ring, the text: the outputs print it now).
        // What the site's limit left out since its last record, reported
        // in this one (a field, so the text line shows it too).
        let suppressed = call.site.map_or(0, |s| take_suppressed(s.get()));
        // Whether this thread carries fields of its own (read once).
        let thread = thread_fields::active();
        let (printer, stalled) = (self.printer, self.ring_stalled);
        let State {
            ring,
            fields: field_buf,
            message,
            ..
        } = self;
        let site;
        let (file, line, func, body, fields, deferred) = match &call.message {
            Message::Text {
                file,
                line,
                func,
                text,
                full_len,
                fields,
                names,
                dump,
            } => {
                let body = if *full_len > text.len() || text.len() > MESSAGE_MAX {
                    truncated(text, *full_len, message)
                } else {
                    text
                };
                let encoded = if !thread {
                    encode_call_fields(fields, *names, suppressed, 0, field_buf)
                } else {
                    thread_fields::with_added(fields, |all, carried| {
                        encode_call_fields(all, *names, suppressed, carried, field_buf)
                    })
                };
                let fields = match (dump, call.frames) {
                    (None, None) => encoded,
                    (dump, frames) => with_kept(encoded.len(), *dump, frames, field_buf),
                };
                (*file, *line, *func, body, fields, false)
            }
            Message::Args {
                site: s,
                args,
                args_len,
                ..
            } => {
                site = s.get().describe();
                // No args_len: too long, or a count beyond what is stored.
                // A record with fields (a site's report, a thread's own)
                // keeps its text.
                // Nor one that may be printed past a stalled ring, now.
                let as_args = ring.is_some()
                    && args_len.is_some()
                    && call.frames.is_none()
                    && suppressed == 0
                    && !thread
                    && !(printed && stalled);
                if as_args && {
                    message.clear();
                    deferred::encode(site.format, args, message)
                } {
                    (
                        site.file,
                        site.line,
                        site.func,
                        &message[..],
                        &b""[..],
                        true,
                    )
                } else {
                    // Not to be kept as arguments: the text, made now by
                    // vlog's printf (the arguments were read once already)
                    // and cut with the marker.
                    // Zeroed when it was shortened (above), not on every
                    // call that makes its text here: 8 KiB of zeros cost a
                    // thread with fields 9,600 instructions a record.
                    message.resize(MESSAGE_MAX, 0);
                    let mut text = Bounded::new(&mut message[..]);
                    // Cannot fail: the site's signature matched the
                    // arguments and its counts were checked.
                    let _ = deferred::render_captured(site.format, args, &mut text);
                    let fields = match (suppressed, thread) {
                        (0, false) => &b""[..],
                        (n, false) => encode_reporting(&[], Names::Vlog, n, 0, field_buf),
                        // The thread's alone: checked when they were set.
                        (n, true) => thread_fields::with_added(&[], |all, carried| {
                            encode_call_fields(all, Names::Vlog, n, carried, field_buf)
                        }),
                    };
                    let fields = match call.frames {
                        None => fields,
                        frames => with_kept(fields.len(), None, frames, field_buf),
                    };
                    (
                        site.file,
                        site.line,
                        site.func,
                        text.finish(),
                        fields,
                        false,
                    )
                }
            }
        };
        let rec = Record {
            seq: 0,
            time_ns: sys::realtime_ns(),
            tid: sys::thread_id(),
            line,
            priority: call.priority,
            source: call.source.get().name_bytes(),
            file,
            func,
            message: body,
            fields,
            context: false,
            id: site_id(call.site, deferred),
        }
        .clipped();

        // 4. The ring, marked for the outputs when they print it; a record
        // that would overwrite one they have not written waits for them.
        let Some(ring) = ring.as_mut() else {
            if printed {
                super::writer::print_now(self.printer, &rec);
            }
            return Next::Done(Outcome::Recorded);
        };
        if ring.would_overwrite_unprinted(Ring::call_len(&rec, deferred)) && !self.evict_ok {
            return Next::MakeRoom;
        }
        if let Err(at) = ring.append_call(&rec, deferred, printed) {
            if printed && stalled {
                // A second way, past the ring, for this alone: the ring
                // cannot take the line until a stopped thread finishes its
                // record, and a line accepted for the outputs is kept. It
                // is printed under the lock, as without a ring, ahead of
                // lines the writer thread has not written yet.
                super::writer::print_now(printer, &rec);
                return Next::Done(Outcome::Recorded);
            }
            return Next::Blocked(at);
        }
        if !printed {
            return Next::Done(Outcome::Recorded);
        }
        // 5. What the outputs need.
        self.after_printed(call.priority)
    }

    /// A failed check's record (`fatal`), under a lock its caller keeps:
    /// over lines the outputs have not written rather than waiting for
    /// them. Where the outputs are to write to; None when not made.
    pub(super) fn record_fatal(&mut self, call: &Call) -> Result<u64, Option<Blocked>> {
        self.evict_ok = true;
        match self.record(call) {
            Next::Blocked(at) => Err(Some(at)),
            Next::Done(Outcome::Dropped) | Next::MakeRoom => Err(None),
            _ => Ok(self.ring.as_ref().map_or(0, Ring::marked_end)),
        }
    }

    /// Step 5: a record the outputs print was just recorded. An error, a
    /// line of a `?sync` output, or any line while the writer thread is
    /// off is written by this thread before its call returns; the others
    /// by the writer thread, woken if it sleeps (inlined: a call of its own
    /// cost a printed line 28 instructions, callgrind, vlog-file-burst).
    #[inline(always)]
    fn after_printed(&mut self, priority: Priority) -> Next {
        // A printing call is a cancellation point, as stdio's are, whoever
        // writes its line: a pending cancel acts as it returns.
        cancel::passed();
        let Some(ring) = self.ring.as_ref() else {
            return Next::Done(Outcome::Recorded);
        };
        if !ring.prints_here() {
            return Next::WriteOne(ring.last());
        }
        // (The outputs write up to the marked end, or stop where they are
        // if another thread wrote it already.)
        if priority as u8 >= self.sync_from {
            return Next::Write(ring.marked_end(), priority == Priority::Error);
        }
        if self.writer_prints(priority) {
            return Next::Wake(self.urgent());
        }
        if self.start_writer() {
            Next::Done(Outcome::Recorded)
        } else {
            let end = self.ring.as_ref().map_or(0, Ring::marked_end);
            Next::Write(end, priority == Priority::Error)
        }
    }

    /// Steps 1 and 2 for a deferred call site, without a [`Call`] unless
    /// the general path takes the message.
    #[inline(always)]
    fn record_site_call(&mut self, call: SiteCall) -> Next {
        // Step 1 as in `record`, with the site's level.
        let level = self.site_level(call.site);
        if (call.priority as i32) < level {
            return Next::Done(Outcome::Dropped);
        }
        // A record that reports what the site's limit left out has a
        // field, and one of a thread with fields of its own has those: the
        // general path's (which the flight recorder's call, keeping a
        // thread's fields, leaves such a record to only when it cannot
        // take it: a line its caller writes, a ring file, no room).
        if call.site.get().suppressed.load(Ordering::Relaxed) != 0 || thread_fields::active() {
            return self.record_site_general(call, self.prints(call.priority));
        }
        // A line an output prints is the same record, marked (one bit),
        // then what the outputs need (step 5). Written out twice, each with
        // its flag a constant: one call with the flag a variable cost the
        // ring-only path 18 instructions more (callgrind, vlog-ring-burst).
        if !self.prints(call.priority) {
            return match self.record_site(call, false) {
                Some(next) => next,
                None => self.record_site_general(call, false),
            };
        }
        match self.record_site(call, true) {
            Some(Next::Done(_)) => self.after_printed(call.priority),
            Some(next) => next,
            None => self.record_site_general(call, true),
        }
    }

    /// The general path for a deferred call site's message, apart so that
    /// the flight recorder's path builds no [`SiteCall`] in memory.
    #[inline(never)]
    fn record_site_general(&mut self, call: SiteCall, printed: bool) -> Next {
        self.record_general(&call.call(), printed)
    }

    /// Step 2: the record of a deferred call site's arguments, marked for
    /// the outputs when `printed`; None when there is no ring, its
    /// dictionary has no room for the site or the arguments are not to be
    /// kept (the message then takes the general path).
    #[inline(always)]
    fn record_site(&mut self, call: SiteCall, printed: bool) -> Option<Next> {
        // A line printed past a stalled ring needs the record's text.
        if printed && self.ring_stalled {
            return None;
        }
        let ring = self.ring.as_mut()?;
        let entry = site_entry(ring, call.source, call.site.get())?;
        // Arguments too long for a record take the general path, which
        // makes their text.
        let args_len = call.args_len?;
        if ring.would_overwrite_unprinted(Ring::site_len(args_len)) && !self.evict_ok {
            return Some(Next::MakeRoom);
        }
        let stamp = Stamp {
            seq: 0,
            time_ns: sys::realtime_ns(),
            tid: sys::thread_id(),
            priority: call.priority,
            for_outputs: printed,
            tag: sys::process_tag(),
        };
        Some(match ring.append_site(stamp, entry, call.args, args_len) {
            Ok(_) => Next::Done(Outcome::Recorded),
            Err(at) => Next::Blocked(at),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deferred::Captured;
    use crate::ring::{self, Entry};
    use crate::site::LiveSite;
    use crate::source::{Live, OFF};

    fn source(name: &'static std::ffi::CStr) -> Live {
        Live::leaked(name)
    }

    /// A logger of the test's own: its own outputs, no writer thread (the
    /// lines are written by the test, as a caller writes them).
    fn quiet_state() -> State {
        // Kept where a leak checker finds them: a logger's printer lives as
        // long as the process, as the process's own does.
        static KEPT: std::sync::Mutex<Vec<&'static std::sync::Mutex<printer::Printer>>> =
            std::sync::Mutex::new(Vec::new());
        let mut s = State::new();
        s.printer = Box::leak(Box::new(std::sync::Mutex::new(printer::Printer::new())));
        KEPT.lock().unwrap().push(s.printer);
        s.writer_off = true;
        s.sync_from = 0;
        s.initialized = true;
        s.default_outputs = false;
        s.set_buffer_size(ring::layout::MIN_SIZE).unwrap();
        // The tests that are about an error's context ask for one.
        printer::lock_of(s.printer)
            .set_context(crate::config::context::Context::parse("0").unwrap())
            .unwrap();
        s
    }

    /// [`quiet_state`] with one output, a new file of the test's `name`
    /// printing from `priority` (libvirt's number), and the level at
    /// debug; the file's path.
    fn state_with_file(name: &str, priority: u8) -> (State, std::path::PathBuf) {
        let mut s = quiet_state();
        let path = std::env::temp_dir().join(format!("vlog-{name}-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&path);
        s.set_outputs(&format!("{priority}:file:{}", path.display()))
            .unwrap();
        s.set_level(Priority::Debug);
        (s, path)
    }

    /// What `run` does after a call, for a logger of a test's own.
    fn settle(s: &mut State, next: Next) -> Outcome {
        match next {
            Next::Done(outcome) => outcome,
            _ => {
                drop(s.printer());
                Outcome::Recorded
            }
        }
    }

    fn text_call<'a>(src: Live, p: Priority, text: &'a [u8], full_len: usize) -> Call<'a> {
        Call {
            source: src,
            site: None,
            priority: p,
            message: Message::Text {
                file: b"f.c",
                line: 1,
                func: b"f",
                text,
                full_len,
                fields: &[],
                names: Names::Caller,
                dump: None,
            },
            fatal: false,
            frames: None,
        }
    }

    fn log(s: &mut State, src: Live, p: Priority, text: &str) -> bool {
        let next = s.record(&text_call(src, p, text.as_bytes(), text.len()));
        settle(s, next) == Outcome::Recorded
    }

    fn ring_messages(s: &State) -> Vec<String> {
        let mut v = Vec::new();
        s.ring.as_ref().unwrap().view().read(|e| {
            if let Entry::Record(r) = e {
                v.push(String::from_utf8_lossy(r.message).into_owned())
            }
        });
        v
    }

    /// A line vlog's writer thread prints takes the logger's lock once,
    /// as a ring-only record does: reserved and marked in one take, copied
    /// after it (the flight recorder's way), not refused there first and
    /// recorded again the general way. Counted on this thread
    /// (`sys::lock::TAKES`). The writer thread is woken after the lock,
    /// on either way (`printer::WOKEN_HOLDING`). The one test of the
    /// process's own logger.
    #[test]
    fn a_printed_line_takes_the_lock_once() {
        use super::super::flight::{self, Flight, Words};
        use crate::sys::lock::TAKES;
        let path = std::env::temp_dir().join(format!("vlog-takes-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let outputs = format!("2:file:{}", path.display());
        super::super::config_call::configure_writing(|s| {
            s.set_outputs(&outputs)?;
            s.set_level(Priority::Debug);
            Ok(())
        })
        .unwrap();
        let src = source(c"takes");
        let site = LiveSite::leaked(src, b"printed");
        let general = || SiteCall {
            source: src,
            priority: Priority::Info,
            site,
            args: &[],
            args_len: deferred::args_len(&[]),
        };
        // The first line starts the writer thread and adds the site to the
        // ring's dictionary (the general way).
        assert_eq!(emit_site(general()), Outcome::Recorded);
        let woken_holding = || printer::WOKEN_HOLDING.with(|n| n.get());
        // The general way, the writer thread running: woken after the lock.
        assert_eq!(emit_site(general()), Outcome::Recorded);
        assert_eq!(woken_holding(), 0, "woken under a lock, the general way");
        let record = |priority| {
            assert!(flight::enter());
            let before = TAKES.with(|n| n.get());
            let done = flight::record(&Words {
                site: site.get(),
                source: src,
                priority,
                words: &[],
                strings: &[],
                message_len: 0,
            });
            let takes = TAKES.with(|n| n.get()) - before;
            flight::leave();
            (done, takes)
        };
        for i in 0..200 {
            assert_eq!(
                record(Priority::Info),
                (Flight::Recorded, 1),
                "printed line {i}"
            );
            assert_eq!(
                record(Priority::Debug),
                (Flight::Recorded, 1),
                "ring-only record {i}"
            );
        }
        // An error is written by its caller: the same record, marked, and
        // its line in the file as the call returns, with one take.
        let errors_in_file = || {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            text.lines()
                .filter(|l| l.contains(": error : takes :"))
                .count()
        };
        assert_eq!(record(Priority::Error), (Flight::Recorded, 1), "an error");
        assert_eq!(errors_in_file(), 1, "written by its caller");
        assert_eq!(woken_holding(), 0, "woken under a lock, the flight way");
        // A thread with fields of its own: the same, its fields in the
        // record (kind 6).
        thread_fields::set(b"REQUEST_ID", Some(crate::fields::Value::Str(b"r-1"))).unwrap();
        assert_eq!(record(Priority::Info), (Flight::Recorded, 1), "with fields");
        assert_eq!(
            record(Priority::Debug),
            (Flight::Recorded, 1),
            "with fields"
        );
        assert_eq!(
            record(Priority::Error),
            (Flight::Recorded, 1),
            "an error with fields"
        );
        assert_eq!(errors_in_file(), 2, "written by its caller, with fields");
        thread_fields::clear().unwrap();
        // Every printed line reaches the file (the writer thread's).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let lines = loop {
            super::super::apply::flush().unwrap();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let n = text
                .lines()
                .filter(|l| l.contains(": info : takes :"))
                .count();
            if n >= 202 || std::time::Instant::now() > deadline {
                break text;
            }
            std::thread::yield_now();
        };
        // (Each error brings its context: the debug records before it.)
        let printed = lines
            .lines()
            .filter(|l| l.contains(": info : takes :") && l.ends_with(" : printed"))
            .count();
        assert_eq!(printed, 202, "{lines}");
        assert_eq!(errors_in_file(), 2, "{lines}");
        // A ring file takes no record the flight recorder's way (each is
        // written whole under its lock): every call goes the general way
        // before taking the lock, with fields or without.
        let ring_file = path.with_extension("ring");
        let _ = std::fs::remove_file(&ring_file);
        super::super::config_call::configure_writing(|s| {
            assert!(s.use_ring_file(ring_file.clone(), ring::layout::MIN_SIZE));
            Ok(())
        })
        .unwrap();
        for fields in [false, true] {
            if fields {
                thread_fields::set(b"REQUEST_ID", Some(crate::fields::Value::Str(b"r-2"))).unwrap();
            }
            for priority in [Priority::Error, Priority::Info, Priority::Debug] {
                assert_eq!(
                    record(priority),
                    (Flight::General, 0),
                    "a ring file, {priority:?}, fields {fields}"
                );
            }
        }
        thread_fields::clear().unwrap();
        super::super::config_call::configure_writing(|s| s.set_outputs("")).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(&ring_file).unwrap();
    }

    #[test]
    fn levels_follow_filters_and_default_level() {
        let mut s = quiet_state();
        let qemu = source(c"qemu.monitor");
        let util = source(c"util.file");
        assert!(!log(&mut s, qemu, Priority::Debug, "dropped"));
        assert_eq!(qemu.get().level(), 3);
        s.set_filters("1:qemu").unwrap();
        assert_eq!(qemu.get().level(), 1);
        assert!(log(&mut s, qemu, Priority::Debug, "kept"));
        log(&mut s, util, Priority::Info, "dropped");
        assert_eq!(util.get().level(), 3);
        // A change of the default level alone refreshes the caches.
        s.set_level(Priority::Info);
        assert_eq!(util.get().level(), 2);
        assert_eq!(qemu.get().level(), 1);
        assert!(s.set_filters("1:qemu 9:x").is_err());
        assert_eq!(qemu.get().level(), 1, "a rejected string changes nothing");
        s.unregister(qemu.get());
        assert_eq!(qemu.get().level(), OFF, "unloaded: off for good");
        assert_eq!(ring_messages(&s), ["kept"]);
    }

    #[test]
    fn without_ring_outputs_decide() {
        let mut s = quiet_state();
        s.set_buffer_size(0).unwrap();
        let src = source(c"x");
        log(&mut s, src, Priority::Error, "e");
        assert_eq!(src.get().level(), OFF, "nothing reads it");
        s.set_outputs("2:stderr").unwrap();
        assert_eq!(src.get().level(), 3, "default level still filters");
        s.set_level(Priority::Debug);
        assert_eq!(src.get().level(), 2, "stderr prints info and up");
    }

    #[test]
    fn truncation_marks_full_length() {
        let mut s = quiet_state();
        let src = source(c"t");
        let long = "x".repeat(MESSAGE_MAX + 10);
        log(&mut s, src, Priority::Error, &long);
        let got = ring_messages(&s);
        assert_eq!(got[0].len(), MESSAGE_MAX);
        assert!(got[0].ends_with(&format!("x [truncated: {} bytes]", MESSAGE_MAX + 10)));
        let next = s.record(&text_call(src, Priority::Error, b"short", 100_000));
        settle(&mut s, next);
        assert_eq!(ring_messages(&s)[1], "short [truncated: 100000 bytes]");
    }

    #[test]
    fn deferred_message_is_rendered_for_outputs_and_kept_raw_otherwise() {
        let (mut s, path) = state_with_file("deferred", 2);
        let src = source(c"deferred.out");
        let site = LiveSite::leaked(src, b"n=%d x=%.2f");
        let args = [Captured::Signed(42), Captured::Double(0.5)];
        let call = |p| SiteCall {
            source: src,
            priority: p,
            site,
            args: &args,
            args_len: deferred::args_len(&args),
        };
        // Printed: the site's record in the ring, its text made once for the
        // file.
        let next = s.record_site_call(call(Priority::Info));
        assert_eq!(settle(&mut s, next), Outcome::Recorded);
        assert_ne!(site.get().entry.load(Ordering::Relaxed), 0);
        // Not printed: the site's record alone.
        let next = s.record_site_call(call(Priority::Debug));
        assert_eq!(settle(&mut s, next), Outcome::Recorded);
        // Not to be kept as arguments (too long, or a count past what a
        // record keeps): the text, made now.
        let long_args = [Captured::Signed(1), Captured::Double(2.0)];
        let next = s.record_site_call(SiteCall {
            args: &long_args,
            args_len: None,
            ..call(Priority::Debug)
        });
        assert_eq!(settle(&mut s, next), Outcome::Recorded);
        let file = std::fs::read_to_string(&path).unwrap();
        assert_eq!(file.lines().count(), 1, "{file}");
        assert!(file.ends_with(" : n=42 x=0.50\n"), "{file}");
        assert_eq!(
            ring_messages(&s),
            ["n=42 x=0.50", "n=42 x=0.50", "n=1 x=2.00"]
        );
        std::fs::remove_file(&path).unwrap();
    }

    /// A format without arguments prints as itself unless it has a `%%` or
    /// is too long for a message (then it is rendered, and cut with the
    /// marker).
    #[test]
    fn formats_without_arguments_print_as_rendered() {
        let (mut s, path) = state_with_file("plain", 2);
        let src = source(c"plain.out");
        let long = "y".repeat(MESSAGE_MAX + 1);
        for format in [&b"as it is"[..], b"100%% sure", b"", long.as_bytes()] {
            let site = LiveSite::leaked(src, format);
            let call = SiteCall {
                source: src,
                priority: Priority::Error,
                site,
                args: &[],
                args_len: deferred::args_len(&[]),
            };
            let next = s.record_site_call(call);
            assert_eq!(settle(&mut s, next), Outcome::Recorded);
        }
        let file = std::fs::read_to_string(&path).unwrap();
        let messages: Vec<&str> = file
            .lines()
            .map(|l| l.rsplit(" : ").next().unwrap())
            .collect();
        let cut = format!(" [truncated: {} bytes]", MESSAGE_MAX + 1);
        assert_eq!(messages[..3], ["as it is", "100% sure", ""]);
        assert_eq!(messages[3].len(), MESSAGE_MAX);
        assert!(messages[3].ends_with(&cut), "{}", messages[3]);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn resize_keeps_records() {
        let mut s = quiet_state();
        let src = source(c"r");
        for i in 0..10 {
            log(&mut s, src, Priority::Error, &format!("m{i}"));
        }
        s.set_buffer_size(1 << 20).unwrap();
        assert_eq!(ring_messages(&s).len(), 10);
        assert!(s.set_buffer_size(10).is_err());
        assert_eq!(s.stats().size, 1 << 20);
    }

    /// A record in flight whose thread stopped (here: reserved, never
    /// copied) holds the room the ring needs: once the wait for it failed
    /// (`ring_stalled`), a line an output prints is printed past the ring,
    /// as text, and a record no output prints is refused (dropped by the
    /// caller, counted).
    #[test]
    fn a_line_whose_room_a_stopped_thread_holds_is_printed_past_the_ring() {
        let (mut s, path) = state_with_file("stalled", 2);
        let src = source(c"stalled");
        let stuck = s
            .ring
            .as_mut()
            .unwrap()
            .reserve_slot(crate::ring::record::HEADER_LEN, false)
            .unwrap();
        let site = LiveSite::leaked(src, b"n=%d");
        let call = |p, n: &'static [Captured<'static>]| SiteCall {
            source: src,
            priority: p,
            site,
            args: n,
            args_len: deferred::args_len(n),
        };
        // Debug records until the ring needs the stuck record's room.
        static ARGS: [Captured; 1] = [Captured::Signed(7)];
        let blocked =
            (0..100_000).find_map(|_| match s.record_site_call(call(Priority::Debug, &ARGS)) {
                Next::Blocked(at) => Some(at),
                _ => None,
            });
        assert!(
            blocked.is_some(),
            "the ring never needed the stuck record's room"
        );
        s.ring_stalled = true;
        let printed = s.record_site_call(call(Priority::Info, &ARGS));
        let ring_only = s.record_site_call(call(Priority::Debug, &ARGS));
        s.ring_stalled = false;
        assert_eq!(printed, Next::Done(Outcome::Recorded));
        assert!(matches!(ring_only, Next::Blocked(_)), "{ring_only:?}");
        let file = std::fs::read_to_string(&path).unwrap();
        assert_eq!(file.lines().count(), 1, "{file}");
        assert!(file.ends_with(": info : stalled : f:1 : n=7\n"), "{file}");
        drop(stuck);
        std::fs::remove_file(&path).unwrap();
    }

    /// A line whose thread stalls in the middle of its copy, for longer
    /// than the outputs wait for it, is passed over by their walk (which
    /// says so in the output) and marked so in the ring: its thread finds
    /// the mark as it commits and has it printed then, out of turn, not
    /// lost (`flight::print_passed_over`, `ring::record::PASSED_OVER`).
    #[test]
    fn a_line_passed_over_while_its_thread_copies_it_is_printed_as_it_commits() {
        use crate::ring::record::{align8, HEADER_LEN};
        use crate::ring::slot::WordsHead;
        let (mut s, path) = state_with_file("passed", 2);
        let src = source(c"passed");
        let site = LiveSite::leaked(src, b"n=%d");
        let ring = s.ring.as_mut().unwrap();
        let entry = super::super::flight::site_entry(ring, src, site.get()).unwrap();
        // Reserved as a line its caller writes is, then stalled.
        let len = align8(HEADER_LEN + 8);
        let stuck = ring.reserve_slot(len, true).unwrap();
        let (pos, seq) = (stuck.pos(), stuck.seq());
        // Another thread's line: its walk waits for the stalled one, then
        // passes it over.
        assert!(log(&mut s, src, Priority::Info, "after it"));
        let file = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = file.lines().collect();
        assert_eq!(lines.len(), 2, "{file}");
        assert!(
            lines[0].contains("1 lines were still being copied")
                && lines[0].contains("follows, out of turn"),
            "{file}"
        );
        assert!(
            lines[1].ends_with(": info : passed : f:1 : after it"),
            "{file}"
        );
        // The stalled thread commits: it learns it was passed over, and
        // has its line printed (under the logger's lock, which the test's
        // state stands for), then commits.
        let head = WordsHead {
            len: len as u32,
            seq,
            time_ns: 1,
            tid: 2,
            entry,
            priority: Priority::Info,
            for_outputs: true,
            message_len: 8,
            with_fields: false,
            tag: sys::process_tag(),
        };
        let passed = stuck
            .commit_marked_words(&head, &[7], &[], &[])
            .unwrap_err();
        s.print_passed_over(passed);
        let view = s.ring.as_ref().unwrap().view();
        // A number that is not the record's (the ring reused its room
        // first): not printed, said lost and counted.
        let lost = crate::stats::get(&crate::stats::LINES_LOST);
        printer::lock_of(s.printer).print_at(&view, pos, Some(seq + 1));
        let file = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = file.lines().collect();
        assert_eq!(lines.len(), 4, "{file}");
        assert!(lines[2].ends_with(": info : passed : f:1 : n=7"), "{file}");
        assert!(
            lines[3].contains("overwritten in the ring before its thread could have it printed"),
            "{file}"
        );
        assert!(crate::stats::get(&crate::stats::LINES_LOST) > lost);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn file_output_gets_lines_at_its_priority() {
        let (mut s, path) = state_with_file("logger", 3);
        let src = source(c"file.test");
        log(&mut s, src, Priority::Info, "info line");
        log(&mut s, src, Priority::Error, "error\nline");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.ends_with(": error : file.test : f:1 : error\\nline\n"),
            "{text}"
        );
        assert_eq!(ring_messages(&s), ["info line", "error\nline"]);
        std::fs::remove_file(&path).unwrap();
    }
}
