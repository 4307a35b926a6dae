//! The logger: the global state (configuration, the registry of sources, the
//! ring) behind one lock, the outputs behind one of their own (`printer`,
//! read and written by vlog's writer thread, `writer`), and the calls that
//! use them. The recorded call reads top to bottom in `emit` (its message
//! made as the ring keeps it in `message`); configuration is `apply`; the
//! sources' cached levels are `levels`; fork handling is `fork`; what the
//! control socket, a stage above with a lock of its own, does at the
//! logger's moments is `above`.
//!
//! The lock is a bare futex word (`sys::lock`, std's Mutex without its
//! poisoning, which the logger takes no notice of). parking_lot keeps a
//! process-wide table of parked threads whose bucket locks a fork can leave
//! held by a thread that does not exist in the child, so a child forked
//! while other threads log could hang on its first contended lock
//! (parking_lot issue 515); a futex word has no such table, and the atfork
//! handlers make it safe to fork at any moment.
//!
//! A thread inside the logger is marked (`enter`), so that a signal handler
//! that interrupts it and logs is dropped, counted, never waits for a lock.
//!
//! Imports every stage below it; `control`, `relay`, `preload` and `ffi`
//! import it.

pub mod above;
pub mod apply;
pub mod config_call;
mod config_file;
pub mod context;
pub mod emit;
pub mod fatal;
pub mod flight;
pub mod fork;
pub mod levels;
mod message;
pub mod pending;
pub mod printer;
pub mod thread_fields;
pub mod ticker;
pub mod watchers;
mod writer;

use std::cell::Cell;
use std::ffi::c_int;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

use crate::config::filter::Filters;
use crate::config::limit::RateLimit;
use crate::config::DEFAULT_LEVEL;
use crate::crash;
use crate::crash::target::{DumpFiles, DumpTarget};
use crate::diag;
use crate::output::{Outputs, Said};
use crate::priority::Priority;
use crate::record::Record;
use crate::ring::{published, Ring};
use crate::site::Catalog;
use crate::source::Registry;
use crate::sys::lock::{Guard, Lock};
use printer::Printer;

pub struct State {
    initialized: bool,
    level: Priority,
    filters: Filters,
    /// The outputs, behind a lock of their own (see `printer`).
    printer: &'static Mutex<Printer>,
    /// What the outputs print: the lowest priority any prints, and the
    /// lowest whose lines are written before the call returns (an error's,
    /// `?sync`, every line with the writer thread off); 5 for none. The
    /// `writer_span` priorities from `lowest` on (0: none), the writer
    /// thread process `writer_pid` started writes (`State::writer_changed`).
    lowest: u8,
    sync_from: u8,
    writer_span: u8,
    writer_pid: u32,
    /// True while no output string was given: then the one output is stderr
    /// at the default level, following later level changes.
    default_outputs: bool,
    /// `VLOG_WRITER=caller`, or the writer thread could not start: the
    /// thread that logs a line writes it.
    writer_off: bool,
    /// `VLOG_WRITER=caller` set: vlog starts no thread (`writer::State::set_writer`).
    no_threads: bool,
    /// A caller had the outputs write everything to make room, and may now
    /// overwrite what is still unwritten (see `emit`).
    evict_ok: bool,
    /// The room a call needs is held by a record in flight past the wait (a
    /// thread stopped in the middle of one): its line, if an output prints
    /// it, is printed now, past the ring (see `emit::finish`).
    ring_stalled: bool,
    /// Configuration calls that write under way (see
    /// `config_call::configure_writing`).
    configuring: u32,
    /// What the outputs need of vlog's threads (`output::NEEDS_*`).
    needs: u8,
    ring: Option<Ring>,
    /// Rings replaced, freed once no lock-free reader is inside any ring
    /// (a `vlog_dump` blocked on a full pipe must not make the logger wait).
    retired: Vec<Ring>,
    sources: Registry,
    /// Every call site of the loaded objects (see `site`).
    catalog: Catalog,
    /// `VLOG_RATELIMIT` (None: off), in force in `site`'s statics.
    ratelimit: Option<RateLimit>,
    /// Preallocated buffers, so recording never allocates once running: the
    /// encoded fields, the message as stored (cut, or a deferred payload),
    /// and a deferred message rendered for the outputs.
    fields: Vec<u8>,
    message: Vec<u8>,
    rendered: Vec<u8>,
    /// Where crash dumps go, and the signal that asks for one (environment).
    dump: DumpTarget,
    dump_signal: Option<c_int>,
    /// The dump files opened for `dump`, published to the crash handler;
    /// None until the handler is installed.
    dump_files: Option<DumpFiles>,
    /// The file the ring lives in (`VLOG_BUFFER_FILE`), if any.
    buffer_file: Option<PathBuf>,
    /// The process's root when the ring file was configured: a ring made
    /// anew at its path after a chroot would be made in the jail.
    buffer_root: Option<(u64, u64)>,
    /// The threads the outputs need (see `ticker`).
    threads: ticker::Threads,
}

static STATE: Lock<State> = Lock::new(State::new());

/// `State::lowest` when no output prints anything.
const NONE_PRINTED: u8 = 5;

/// How far vlog has stepped down after internal errors (panics caught at
/// the C boundary): NORMAL, RING_ONLY (outputs off: the code that prints may
/// be what failed) or SILENT (every source off: nothing more is recorded).
static SAFE_MODE: AtomicU8 = AtomicU8::new(NORMAL);
const NORMAL: u8 = 0;
const RING_ONLY: u8 = 1;
const SILENT: u8 = 2;

thread_local! {
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

impl State {
    pub const fn new() -> State {
        State {
            initialized: false,
            level: DEFAULT_LEVEL,
            filters: Filters(Vec::new()),
            printer: &printer::PRINTER,
            lowest: NONE_PRINTED,
            sync_from: NONE_PRINTED,
            writer_span: 0,
            writer_pid: 0,
            default_outputs: true,
            writer_off: false,
            no_threads: false,
            evict_ok: false,
            ring_stalled: false,
            configuring: 0,
            needs: 0,
            ring: None,
            retired: Vec::new(),
            sources: Registry::new(),
            catalog: Catalog::new(),
            ratelimit: None,
            fields: Vec::new(),
            message: Vec::new(),
            rendered: Vec::new(),
            dump: DumpTarget::Stderr,
            dump_signal: None,
            dump_files: None,
            buffer_file: None,
            buffer_root: None,
            threads: ticker::Threads::new(),
        }
    }
}

impl Default for State {
    fn default() -> State {
        State::new()
    }
}

/// Takes the lock. (A panic while it was held, caught at the C boundary,
/// leaves the state usable: the lock knows no poisoning.)
fn lock() -> Guard<'static, State> {
    STATE.lock()
}

/// What every holder of the lock does before letting go of it: readers find
/// the ring as it is now, and rings replaced are freed once no reader uses
/// them, never waited for. (A call that panics skips this; the next one
/// does it.)
#[inline(always)]
fn publish(state: &mut State) {
    published::publish(state.ring.as_ref());
    if !state.retired.is_empty() {
        published::free_unread(&mut state.retired);
    }
}

/// Marks the calling thread as inside the logger until dropped, even if
/// what runs inside panics.
struct Inside;

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|inside| inside.set(false));
    }
}

/// The state, locked by a thread marked inside the logger.
pub struct Entered {
    // Dropped in this order: the lock, then the mark.
    guard: Guard<'static, State>,
    _inside: Inside,
}

impl Entered {
    /// The lock, unless this thread is already inside the logger (a signal
    /// handler that interrupted a logging call): then the lock is held by
    /// this very thread and waiting would deadlock, so `None` is returned
    /// (and a message is dropped and counted by its caller).
    #[inline(always)]
    pub fn new() -> Option<Entered> {
        if INSIDE.with(|inside| inside.replace(true)) {
            return None;
        }
        let inside = Inside;
        let mut entered = Entered {
            guard: lock(),
            _inside: inside,
        };
        if crash::on_entry() {
            entered.guard.after_signal();
        }
        Some(entered)
    }

    pub fn state(&mut self) -> &mut State {
        &mut self.guard
    }

    /// Publishes (see `with_state`), unlocks, and leaves.
    #[inline(always)]
    pub fn leave(mut self) {
        publish(&mut self.guard);
    }

    /// Publishes and unlocks, then, still marked inside vlog, has the
    /// outputs write what `write` says (see `printer`), and says what they
    /// had to report.
    #[cold]
    #[inline(never)]
    pub fn leave_and_write(mut self, write: impl FnOnce() -> Vec<Said>) {
        publish(&mut self.guard);
        let Entered { guard, _inside } = self;
        drop(guard);
        let said = write();
        if !said.is_empty() || printer::caller::handed_off() {
            relock(|s| s.after_writing(said));
        }
    }
}

/// For a thread marked inside vlog that does not hold the logger's lock
/// (it let go of it to write, or holds the printer's no longer): takes the
/// lock for `f`. (`enter` would take the mark for a nested call.)
fn relock<R>(f: impl FnOnce(&mut State) -> R) -> R {
    debug_assert!(inside());
    let mut guard = lock();
    let result = f(&mut guard);
    publish(&mut guard);
    result
}

/// Runs `f` under the lock unless this thread is already inside the logger
/// (see [`Entered::new`]); `None` when the call was dropped as nested. Every
/// call that takes the lock goes through here (or `Entered`), so a signal
/// handler that interrupts any of them and logs is dropped, never waits for
/// its own thread. After `f`, readers find the ring as it is now and a ring
/// replaced is freed once no reader uses it.
pub fn enter<R>(f: impl FnOnce(&mut State) -> R) -> Option<R> {
    let mut entered = Entered::new()?;
    let result = f(entered.state());
    entered.leave();
    Some(result)
}

/// True while this thread is inside the logger (so a call now would nest).
pub fn inside() -> bool {
    INSIDE.with(Cell::get)
}

/// This thread marked inside vlog while held (what it was is put back):
/// for a stage above that holds a lock of its own which a forking thread,
/// holding the logger's lock, may be waiting for (the control socket's). A
/// signal handler that logs on this thread meanwhile is dropped and
/// counted: waiting for the logger's lock, it would wait for the forking
/// thread, which waits for this one.
pub struct Marked(bool);

pub fn mark_inside() -> Marked {
    Marked(INSIDE.with(|inside| inside.replace(true)))
}

impl Drop for Marked {
    fn drop(&mut self) {
        INSIDE.with(|inside| inside.set(self.0));
    }
}

/// Reports an event of vlog's own (an output failing, recovering, rotated;
/// a step down): on fd 2 (when it is still stderr) and as a warning record
/// from source `vlog` in the ring, so a dump shows it whatever became of
/// fd 2.
fn note(ring: Option<&mut Ring>, event: &str) {
    let event = &*crate::error::for_people(event.to_owned().into());
    diag::warn(event);
    if let Some(ring) = ring {
        append_note(
            ring,
            &Record::note(Priority::Warning, b"output", event.as_bytes()).clipped(),
            false,
        );
    }
}

/// Appends a record of vlog's own, made under the lock: when the oldest
/// record, whose room it needs, is still in flight, its writer (which needs
/// no lock to finish) is waited for here, a few times at most, and the
/// record dropped and counted if it stays.
fn append_note(ring: &mut Ring, rec: &Record, printed: bool) {
    // A millisecond in all at most: this is under the lock, where nobody
    // waits for long (a record in flight is normally done in well under a
    // microsecond).
    for _ in 0..2 {
        match ring.append_call(rec, false, printed) {
            Ok(_) => return,
            Err(at) => {
                let off = (at.pos % ring.data_size() as u64) as usize;
                ring.view().wait_committed_within(off, 500_000);
            }
        }
    }
    crate::stats::add(&crate::stats::IN_FLIGHT_DROPPED, 1);
}

impl State {
    /// Reports an event of vlog's own (see [`note`]), for a stage above
    /// the logger (the control socket's server).
    pub fn note(&mut self, event: &str) {
        note(self.ring.as_mut(), event);
    }

    /// Reports what the outputs had to report: a warning as [`note`]
    /// does, information (a file rotated) as [`State::announce`] does.
    pub fn note_all(&mut self, said: Vec<Said>) {
        for event in said {
            match event.priority {
                Priority::Warning | Priority::Error => note(self.ring.as_mut(), &event.text),
                _ => self.announce(b"output", &event.text, &[]),
            }
        }
    }

    /// The outputs, for a call that holds the logger's lock (the lock
    /// order: the logger's, then the printer's), with every line recorded
    /// so far written first: outputs replaced, reopened or forked never
    /// skip a line recorded before.
    pub fn printer(&mut self) -> std::sync::MutexGuard<'static, Printer> {
        let mut printer = printer::lock_of(self.printer);
        if let Some(ring) = self.ring.as_ref().filter(|r| r.prints_here()) {
            printer.catch_up_under_lock(&ring.view());
        }
        let said = printer.take_said();
        self.note_all(said);
        printer
    }

    /// Takes in what the outputs print, after they changed.
    fn outputs_changed(&mut self, outputs: &Outputs) {
        self.lowest = outputs.lowest().map_or(NONE_PRINTED, |p| p as u8);
        self.set_sync_from(if self.writer_off {
            0
        } else {
            outputs.sync_from().min(Priority::Error as u8)
        });
        self.needs = self.threads_for(outputs.needs());
    }

    /// The ring file in force from now on, by its path.
    fn set_buffer_file(&mut self, path: PathBuf) {
        self.buffer_file = Some(path);
        self.buffer_root = crate::sys::dir::root_id();
    }

    /// An error when the ring file's path no longer means what it did: the
    /// process's root moved since (chroot).
    fn ring_file_here(&self) -> Result<(), crate::error::ConfigError> {
        match crate::sys::dir::root_id() == self.buffer_root {
            true => Ok(()),
            false => Err(crate::error::ConfigError::new(
                "the process's root moved since the ring file was configured (chroot): a \
                 new ring file at its path would be made in the new root; the ring stays \
                 as it is",
            )),
        }
    }

    /// Whether some output prints a message of priority `p`.
    #[inline(always)]
    fn prints(&self, p: Priority) -> bool {
        p as u8 >= self.lowest
    }

    /// The configuration in force, as the environment variables that make
    /// it (each parses back to the same value); `VLOG_OUTPUTS` is "" while
    /// the outputs are the default.
    pub fn as_env(&self) -> Vec<(&'static str, String)> {
        let signal = self.dump_signal.map_or_else(String::new, |sig| match sig {
            libc::SIGUSR1 => "USR1".to_owned(),
            libc::SIGUSR2 => "USR2".to_owned(),
            n => n.to_string(),
        });
        vec![
            ("VLOG_LEVEL", (self.level as u8).to_string()),
            ("VLOG_FILTERS", self.filters.as_env()),
            ("VLOG_OUTPUTS", self.outputs_env()),
            ("VLOG_BUFFER_SIZE", self.stats().size.to_string()),
            (
                "VLOG_BUFFER_FILE",
                self.buffer_file
                    .as_ref()
                    .map_or_else(String::new, |p| p.display().to_string()),
            ),
            ("VLOG_DUMP", self.dump.as_env()),
            ("VLOG_DUMP_SIGNAL", signal),
            ("VLOG_CONTEXT", self.context_env()),
            ("VLOG_RATELIMIT", self.ratelimit_env()),
        ]
    }

    /// The filters in force, as `VLOG_FILTERS` writes them.
    pub fn filters_env(&self) -> String {
        self.filters.as_env()
    }

    /// The outputs in force as `VLOG_OUTPUTS` writes them: "" while they
    /// are the default (stderr at the default level).
    pub fn outputs_env(&self) -> String {
        if self.default_outputs {
            String::new()
        } else {
            printer::lock_of(self.printer).outputs.as_env()
        }
    }

    /// The default level.
    pub fn level(&self) -> Priority {
        self.level
    }

    /// Reports a change an operator made (through the control socket): an
    /// info record of source `vlog` with `fields`, kept in the ring whatever
    /// the filters say, and printed by the outputs that print info.
    pub fn announce(&mut self, func: &[u8], message: &str, fields: &[crate::fields::Field]) {
        let mut encoded = Vec::new();
        crate::fields::encode(fields.iter().copied(), &mut encoded);
        let rec = Record {
            fields: &encoded,
            ..Record::note(Priority::Info, func, message.as_bytes())
        }
        .clipped();
        let printed = self.prints(rec.priority);
        match self.ring.as_mut() {
            Some(ring) => {
                append_note(ring, &rec, printed);
                if printed {
                    self.wake_writer();
                }
            }
            None if printed => {
                let mut said = Vec::new();
                printer::lock_of(self.printer)
                    .outputs
                    .print(&rec, |e| said.push(e));
                self.note_all(said);
            }
            None => {}
        }
    }
}

fn safe_mode() -> u8 {
    SAFE_MODE.load(Ordering::Relaxed)
}
