//! The writer thread as the logger sees it: started with the first line
//! printed (in a forked child too), woken for a record another stage marked,
//! and what a line printed without a ring does instead (see `printer`).

use super::{enter, printer, ticker, State};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Mutex;

use crate::diag;
use crate::priority::Priority;
use crate::record::Record;
use crate::sys;
use crate::sys::watch::Worker;

/// What the flight recorder's call reads before the lock, in a cache line
/// of their own: read on every call by every thread and written only when
/// the configuration changes, they must share no line with what the
/// lock's holders write (the lock's word, the state's fields), or every
/// call fetches them again after each record of another core.
#[repr(align(64))]
pub struct Hints {
    /// The lowest priority of a line that an output prints and its caller
    /// writes (an error, a `?sync` output's, any with the writer off): such
    /// a call's lock holder tries that reservation first
    /// (`State::reserve_marked`). Read before the lock, so possibly
    /// stale; the lock's holder decides (`State::writer_prints`,
    /// `State::caller_writes`), a stale value costs a second take at most.
    /// 0, with `prints_from`, while no record can take the flight
    /// recorder's way (a ring file, no ring): every call goes the general
    /// way at once (`callers_record` false).
    pub caller_writes_from: AtomicU8,
    /// The lowest priority an output prints (`State::lowest`), read as
    /// `caller_writes_from` is.
    pub prints_from: AtomicU8,
    /// Whether a record can take the flight recorder's way at all; read
    /// by a line its caller writes alone (the others learn it from the
    /// two above).
    pub callers_record: AtomicBool,
}

pub static HINTS: Hints = Hints {
    caller_writes_from: AtomicU8::new(u8::MAX),
    prints_from: AtomicU8::new(u8::MAX),
    callers_record: AtomicBool::new(false),
};

impl State {
    /// `VLOG_WRITER` as the environment gives it: `caller` means no writer
    /// thread and no thread of vlog's at all (a fluent output's batches go
    /// with the calls that log, vlog_flush and exit; a collector is named
    /// by address; no control thread), for a program that must stay
    /// single-threaded (`unshare(CLONE_NEWUSER)`, a sandbox). Under
    /// libvlog-syslog.so lines are the callers' by default, and the
    /// threads the outputs need are still started.
    pub(super) fn set_writer(&mut self, caller: Option<bool>, preloaded: bool) {
        self.writer_off = caller.unwrap_or(preloaded);
        self.no_threads = caller == Some(true);
    }

    /// What of `needs` (`output::NEEDS_*`) vlog's threads may serve. With
    /// none allowed, the exit handler still sends a fluent output's batches.
    pub(super) fn threads_for(&self, needs: u8) -> u8 {
        if !self.no_threads {
            return needs;
        }
        if needs != 0 {
            ticker::exit::drain_at_exit_once();
        }
        0
    }

    /// Refuses outputs whose collector is named by a host name when vlog
    /// may start no thread (names are looked up by a thread of vlog's,
    /// never by one that logs nor in a configuration call): before any is
    /// opened, so that a refused string leaves nothing behind.
    pub(super) fn names_without_threads(
        no_threads: bool,
        specs: &[crate::output::spec::Spec],
    ) -> Result<(), crate::error::ConfigError> {
        match specs
            .iter()
            .find(|s| crate::output::address::names_a_host(s))
        {
            Some(s) if no_threads => Err(crate::error::ConfigError::new(format!(
                "the output '{}' names its collector by a host name, which a thread of \
                 vlog's looks up, and VLOG_WRITER=caller starts none: give its IP address",
                s.as_env()
            ))),
            _ => Ok(()),
        }
    }

    /// `VLOG_OUTPUTS` at start without the outputs whose collector is
    /// named by a host name when vlog may start no thread, each said once:
    /// the others are in force (a call that sets outputs is refused whole,
    /// see [`State::names_without_threads`]).
    pub(super) fn without_named(
        &self,
        mut list: Vec<crate::output::Output>,
    ) -> Vec<crate::output::Output> {
        if self.no_threads {
            list.retain(|o| {
                let named = o.named_collector();
                if named {
                    diag::warn(&format!(
                        "ignoring the output '{}' of VLOG_OUTPUTS: its collector is named by a \
                         host name, which a thread of vlog's looks up, and VLOG_WRITER=caller \
                         starts none (give its IP address); the others are in force",
                        o.describe()
                    ));
                }
                !named
            });
        }
        list
    }

    /// `VLOG_CONTROL`: its socket is served by a thread of vlog's, which
    /// `VLOG_WRITER=caller` forbids (the program may serve it itself:
    /// `vlog_control_open`).
    pub(super) fn start_control(&self, spec: &crate::config::ControlSpec) {
        match super::above::get() {
            _ if self.no_threads => diag::warn(
                "ignoring VLOG_CONTROL: its socket is served by a thread of vlog's, and \
                 VLOG_WRITER=caller starts none (the program may serve it with \
                 vlog_control_open and vlog_control_handle)",
            ),
            Some(above) => (above.start_from_env)(spec),
            None => diag::warn(
                "ignoring VLOG_CONTROL: this program has no control socket (vlog was started \
                 from Rust without control::install)",
            ),
        }
    }

    /// For `vlog_control_start`: an error when vlog may start no thread.
    pub fn thread_allowed(&self, what: &str) -> Result<(), crate::error::ConfigError> {
        match self.no_threads {
            true => Err(crate::error::ConfigError::new(format!(
                "{what} needs a thread of vlog's, and VLOG_WRITER=caller starts none"
            ))),
            false => Ok(()),
        }
    }

    /// A configuration call begins or ends: while one is under way, what
    /// may wait for the outputs is bounded (see `config_call`).
    pub(super) fn configuring(&mut self, begins: bool) {
        self.configuring = if begins {
            self.configuring + 1
        } else {
            self.configuring.saturating_sub(1)
        };
        self.bound_unprinted();
    }

    /// A caller made room (`Some(stuck)`), and records again, or it is
    /// done (`None`). Meanwhile it may overwrite lines not yet written if
    /// the outputs are stuck (`evict_ok`), and no bound on what waits for
    /// the outputs holds it back: the bound keeps the backlog from growing
    /// while a configuration call is under way; it does not make one
    /// caller write all of it.
    pub(super) fn room_made(&mut self, stuck: Option<bool>) {
        self.evict_ok = stuck == Some(true);
        match (stuck, self.ring.as_mut()) {
            (Some(_), Some(ring)) => ring.bound_unprinted(false),
            _ => self.bound_unprinted(),
        }
    }

    /// Bounds what may wait for the outputs in the ring in use while a
    /// configuration call is under way (a ring that replaces it too).
    pub(super) fn bound_unprinted(&mut self) {
        let bounded = self.configuring > 0;
        if let Some(ring) = self.ring.as_mut() {
            ring.bound_unprinted(bounded);
        }
    }

    /// Has the outputs write a record vlog marked itself (a note it
    /// announces, a control client's record) or datagrams a caller handed
    /// over: the writer thread, woken, or this thread now when the writer
    /// is off.
    pub(super) fn wake_writer(&mut self) {
        match &self.threads.writer {
            // Under the lock, unlike a call's line (`Next::Wake`): these
            // are rare, and the wake is a system call only when the
            // thread sleeps.
            Some(writer) if writer.is_here() => printer::wake(false),
            _ => {
                if !self.start_writer() {
                    drop(self.printer());
                }
            }
        }
    }

    /// After a caller had the outputs write: what they had to report is
    /// said, and the writer thread woken for datagrams a slow reader had
    /// no room for, which the caller handed to it (`output::slow`).
    pub(super) fn after_writing(&mut self, said: Vec<crate::output::Said>) {
        self.note_all(said);
        if printer::caller::handed_off() {
            self.wake_writer();
        }
    }

    /// After the exit handler wrote what the outputs had: every line from
    /// now on is written by the thread that logs it.
    pub(super) fn after_exit(&mut self) {
        self.writer_off = true;
        self.set_sync_from(0);
    }

    /// Sets the priority from which a line is written by its caller.
    /// Called whenever it or `lowest` changes.
    pub(super) fn set_sync_from(&mut self, from: u8) {
        self.sync_from = from;
        self.writer_changed();
    }

    /// Whether vlog's writer thread, already running in this process,
    /// writes a line of `priority` (not an error or a `?sync` output's, not
    /// with the writer off: those their callers write, after the lock).
    /// The one rule for both ways into the ring (`emit`, `flight`), made
    /// ahead by [`State::writer_changed`]: two compares under the lock. The
    /// process's id is the one cached, which a forked child forgets: a
    /// child forked where its handlers could not take the lock (from a
    /// signal handler that interrupted vlog) still has its parent's thread
    /// here, which is not its own.
    #[inline(always)]
    pub(super) fn writer_prints(&self, priority: Priority) -> bool {
        // From `lowest` (an output prints it) up to `sync_from`: one
        // compare, a priority below `lowest` wrapping past the span.
        (priority as u8).wrapping_sub(self.lowest) < self.writer_span
            && self.writer_pid == sys::cached_process_id()
    }

    /// Whether a line of `priority` is printed and written by its caller
    /// after the lock (an error, a `?sync` output's line, any with the
    /// writer thread off: `sync_from` is 0 then), from the ring, whose
    /// outputs are this process's. The other half of
    /// [`State::writer_prints`]'s rule, for the flight recorder's way
    /// into the ring (the general way decides after its record).
    pub(super) fn caller_writes(&self, priority: Priority) -> bool {
        self.prints(priority)
            && priority as u8 >= self.sync_from
            && self.ring.as_ref().is_some_and(|r| r.prints_here())
    }

    /// Makes [`State::writer_prints`]'s rule again, after `lowest`,
    /// `sync_from`, the ring or the writer thread changed: a line an output
    /// prints below `sync_from`, while the ring's outputs read it in this
    /// process and the writer thread runs here.
    pub(super) fn writer_changed(&mut self) {
        let prints = self.ring.as_ref().is_some_and(|r| r.prints_here());
        let here = self.threads.writer.as_ref().filter(|w| w.is_here());
        (self.writer_span, self.writer_pid) = match here {
            Some(writer) if prints => (self.sync_from.saturating_sub(self.lowest), writer.pid()),
            _ => (0, 0),
        };
        // What the flight recorder's call reads before the lock
        // ([`HINTS`]): the process's logger's alone (a test's own states
        // leave it). No record takes that way into a ring file (written
        // whole under its lock, for the processes that share it) or where
        // there is no ring: every call goes the general way at once.
        if std::ptr::eq(self, super::STATE.as_ptr()) {
            let flight = self
                .ring
                .as_ref()
                .is_some_and(crate::ring::Ring::is_private);
            let (prints, caller) = match flight {
                true => (self.lowest, self.sync_from.max(self.lowest)),
                false => (0, 0),
            };
            HINTS.caller_writes_from.store(caller, Ordering::Relaxed);
            HINTS.prints_from.store(prints, Ordering::Relaxed);
            HINTS.callers_record.store(flight, Ordering::Relaxed);
        }
    }

    /// The writer thread, taken to be stopped (fork, exit, shutdown).
    pub(super) fn take_writer(&mut self) -> Option<Worker> {
        let writer = self.threads.writer.take();
        self.writer_changed();
        writer
    }

    /// Under the lock, for a call's record just marked: whether the ring
    /// is half full of lines not yet written, so that the writer thread,
    /// woken after the lock (`printer::wake`), writes without letting the
    /// burst gather.
    #[inline(always)]
    pub(super) fn urgent(&self) -> bool {
        self.ring.as_ref().is_some_and(crate::ring::Ring::urgent)
    }

    /// Starts the writer thread (the first line printed, or the first in a
    /// forked child, which has none of its parent's threads), with the
    /// threads the outputs need; false when it is off or cannot start (the
    /// caller writes its line then).
    #[cold]
    pub(super) fn start_writer(&mut self) -> bool {
        ticker::keep(&mut self.threads, self.needs);
        if self.writer_off {
            return false;
        }
        ticker::exit::drain_at_exit_once();
        match printer::start(report, failed) {
            Ok(writer) => {
                if let Some(old) = self.threads.writer.replace(writer) {
                    old.stop();
                }
                self.writer_changed();
                true
            }
            Err(e) => {
                self.writer_off = true;
                self.set_sync_from(0);
                diag::warn(&format!(
                    "cannot start vlog's writer thread ({e}): each line is written by the \
                     thread that logs it"
                ));
                false
            }
        }
    }
}

/// Prints `rec` now, to `printer`'s outputs, under the logger's lock:
/// without a ring there is nothing for the writer thread to read (nor
/// anywhere to note what the outputs have to report but stderr).
#[cold]
pub(super) fn print_now(printer: &'static Mutex<printer::Printer>, rec: &Record) {
    let mut printer = printer::lock_of(printer);
    let mut rotated = Vec::new();
    printer.outputs.print(rec, |said| match said.priority {
        Priority::Warning | Priority::Error => diag::warn(&said.text),
        _ => rotated.push(said.text),
    });
    // A file rotated: an info record of vlog's own, printed as this one
    // was (what printing it says goes to stderr).
    for text in rotated {
        let note = crate::record::Record::note(Priority::Info, b"output", text.as_bytes());
        printer
            .outputs
            .print(&note.clipped(), |said| diag::warn(&said.text));
    }
}

/// After a panic in the outputs on the writer thread: the step down of a
/// panic at the C boundary.
fn failed() {
    super::apply::step_down("a panic in vlog's writer thread");
}

/// What the writer thread says the outputs had to report: taken from them
/// under the logger's lock (the lock order), unless another thread took it
/// first.
fn report() {
    enter(|s| {
        let said = printer::lock_of(s.printer).take_said();
        s.note_all(said);
    });
}
