//! The outputs as readers of the ring.
//!
//! A message an output prints is recorded once, as a ring-only one is, and
//! marked for the outputs (`ring::record::FOR_OUTPUTS`). The outputs read
//! the ring from where they stopped (the ring header's `printed`), render
//! each marked record once per form and write in batches: one write(2) per
//! batch and file, the identity and file size checks made once per batch.
//! They are behind a lock of their own, the printer's, never the logger's:
//! a thread that logs while a batch is written waits for nothing.
//!
//! Who reads for them:
//! - vlog's writer thread (`run`), woken by the first marked record after
//!   it went idle; it then lets a burst gather for `GATHER_MS` before it
//!   writes, so a burst costs the threads that log no system call but the
//!   one wake-up. A caller that finds the ring half full of lines not yet
//!   written wakes it at once.
//! - The thread that logs an error, or a line an output asked to have
//!   synchronously (`?sync`), or any line when vlog's thread is off
//!   (`VLOG_WRITER=caller`): after letting go of the logger's lock, it has
//!   the outputs read up to and including its own record, in ring order,
//!   before its call returns.
//! - A thread whose record would overwrite one the outputs have not read
//!   (a ring too small for the burst): it has them read everything first,
//!   without the logger's lock, and then records (counted in
//!   `stats::CALLER_WROTE`).
//! - Configuration calls that replace the outputs or the ring, fork, flush,
//!   shutdown and exit: everything, first.
//! - At a crash, the crash handler, after the dump (`crash::pending`).
//!
//! Lock order: the logger's, then the printer's. A thread that holds the
//! printer's lock never waits for the logger's; what the outputs have to
//! report is said afterwards.
//!
//! [W6]/[R6], the writer thread's sleep: a caller stores the ring's tail and
//! `marked_end` (under the logger's lock), then, after letting go of it, a
//! SeqCst fence, then loads `ASLEEP`; the writer thread marks itself
//! asleep in `ASLEEP` (a compare-and-swap that only the thread that owns
//! the word wins: see `Sleep`), then a SeqCst fence, then loads
//! `marked_end`. One of the two sees the
//! other's store, so a marked record never waits for a thread that went to
//! sleep without seeing it. The caller wakes it by ringing `BELL` (a futex
//! word, `sys::bell`), which needs no handle of the thread: so the wake,
//! a system call when the thread sleeps, is made after the lock.

use std::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::Duration;

mod at;
pub mod caller;
mod lost;
mod sleep;

use super::context::{self, Contexts};
use crate::config::context::Context;
use crate::error::ConfigError;
use crate::output::{at_crash, Outputs, Said};
use crate::ring::published;
use crate::ring::reader::{self, Cursor, Entry};
use crate::ring::view::View;
use crate::sys::bell::Bell;
use crate::sys::watch::{Waker, Worker};
use lost::Lost;
use sleep::Sleep;

/// The outputs, behind the printer's lock.
pub struct Printer {
    pub outputs: Outputs,
    /// What the outputs had to report, said once the lock is let go of.
    said: Vec<Said>,
    /// What an error's context is (`VLOG_CONTEXT`), and what printing one
    /// needs (see `context`).
    contexts: Contexts,
    /// Whether the walk stops before a line when an output holds so much
    /// for a slow reader that it is blocked (`output::slow`): not for a
    /// holder of the logger's lock, whose outputs hold on instead.
    stops_when_blocked: bool,
}

/// The process's outputs (a logger made for a unit test has its own).
pub static PRINTER: Mutex<Printer> = Mutex::new(Printer::new());

/// The writer thread's sleep ([W6]/[R6], see [`Sleep`]).
static ASLEEP: Sleep = Sleep::new();
/// What the writer thread waits on, asleep or letting a burst gather: rung
/// by a caller that found it asleep or the ring half full, and when it is
/// told to stop.
static BELL: Bell = Bell::new();
/// A caller found the ring half full of lines not yet written: the writer
/// thread writes without waiting for the burst to gather.
static URGENT: AtomicBool = AtomicBool::new(false);

/// How long the writer thread lets a burst gather once woken: the most a
/// line (not an error) waits before it is written, apart from the write.
pub const GATHER_MS: u64 = 5;

/// How much of the ring the outputs read before they write what they have.
const READ_STEP: u64 = 64 * 1024;

/// Takes the process's printer's lock (see [`lock_of`]).
pub fn lock() -> MutexGuard<'static, Printer> {
    lock_of(&PRINTER)
}

/// Takes a printer's lock. A panic while it was held (caught at the C
/// boundary) leaves the outputs usable, so poisoning is ignored.
pub fn lock_of(printer: &'static Mutex<Printer>) -> MutexGuard<'static, Printer> {
    match printer.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => {
            WAITING.fetch_add(1, Ordering::SeqCst);
            let guard = printer
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            WAITING.fetch_sub(1, Ordering::SeqCst);
            guard
        }
    }
}

/// Threads waiting for a printer's lock (see [`make_way`]).
static WAITING: AtomicU32 = AtomicU32::new(0);

/// In a forked child: the threads of the parent's that waited for the
/// printer's lock are not here (each step would make way for them).
pub fn after_fork() {
    WAITING.store(0, Ordering::SeqCst);
}

/// Between two steps of a walk that lets go of the printer's lock: a
/// thread that waits for it takes it first, for a millisecond at most.
/// std's lock is not fair: the walker would take it back before the waiter
/// woke, and a caller that needs room would wait for the whole walk (8 MiB
/// of lines took 5-15 ms, `bench-c/resolve.sh`), not for one step.
pub fn make_way() {
    if WAITING.load(Ordering::SeqCst) == 0 {
        return;
    }
    let start = std::time::Instant::now();
    while WAITING.load(Ordering::SeqCst) > 0 && start.elapsed().as_micros() < 1000 {
        std::thread::yield_now();
    }
}

impl Printer {
    pub const fn new() -> Printer {
        Printer {
            outputs: Outputs::new(),
            said: Vec::new(),
            contexts: Contexts::new(),
            stops_when_blocked: true,
        }
    }

    /// Sets what an error's context is (see `Contexts::set`).
    pub fn set_context(&mut self, context: Context) -> Result<(), ConfigError> {
        // The walk's buffers, even with no context: off the stack of a
        // caller that writes its line (see `catch_up_with`).
        if self.contexts.buffers.is_none() {
            self.contexts.buffers = reader::Buffers::on_heap();
        }
        self.contexts.set(context, &mut self.outputs)
    }

    pub fn context(&self) -> &Context {
        self.contexts.setting()
    }

    /// The outputs or the ring were replaced (see `Contexts::restart`).
    pub fn restart_contexts(&mut self, next_seq: u64) {
        self.contexts.restart(&mut self.outputs, next_seq);
    }

    /// Hands the outputs every record marked for them from where they
    /// stopped in `view`'s ring to at least `upto` (a position; u64::MAX:
    /// everything recorded now), writing after each step, and moves
    /// `printed` past what they were handed.
    pub fn catch_up(&mut self, view: &View, upto: u64) {
        let Printer {
            outputs,
            said,
            contexts,
            stops_when_blocked,
        } = self;
        let stops = *stops_when_blocked;
        outputs.print_all(|outputs| {
            Printer::catch_up_with(outputs, said, contexts, view, upto, stops)
        });
    }

    /// [`Printer::catch_up`] of everything, for a holder of the logger's
    /// lock (a configuration call, fork): nothing waits for a slow reader
    /// under it, nor is a line left behind; what a slow reader has no room
    /// for now its output holds, for the writer thread, a flush or exit.
    pub fn catch_up_under_lock(&mut self, view: &View) {
        self.stops_when_blocked = false;
        self.catch_up(view, u64::MAX);
        self.stops_when_blocked = true;
    }

    /// [`Printer::catch_up`], with no cancel acting inside. The walk stops
    /// before an error that brings a context (`logger::context`), has the
    /// outputs print the context, and goes on from the error.
    fn catch_up_with(
        outputs: &mut Outputs,
        said: &mut Vec<Said>,
        contexts: &mut Contexts,
        view: &View,
        upto: u64,
        stops_when_blocked: bool,
    ) {
        let end = upto.min(reader::Region::tail(view));
        let mut cursor = Cursor::at(view.printed());
        // The error whose context was printed last: printed itself next.
        let mut done = None;
        let mut blocked = false;
        while cursor.pos().is_some_and(|pos| pos < end) && !blocked {
            let from = cursor.pos();
            let mut stopped = None;
            if let Some(pos) = from {
                contexts.passed(pos);
            }
            // After a crash, the crash handler writes what is left.
            at_crash::while_busy(|| {
                let mut lost = Lost::default();
                // The records are read into the contexts' buffers, on the
                // heap: a thread with a small stack writes its own line.
                let mut heap = contexts.buffers.take();
                let walk = |buffers: &mut reader::Buffers| {
                    reader::read_with(view, cursor, READ_STEP, buffers, true, |entry, marked| {
                        match (entry, marked) {
                            (Entry::Record(rec), true) => {
                                // An output that holds all it may for a slow
                                // reader: the line waits in the ring.
                                if stops_when_blocked && outputs.blocked() {
                                    blocked = true;
                                    return false;
                                }
                                lost.say(outputs, rec.time_ns, said);
                                if done != Some(rec.seq) {
                                    stopped = context::due(contexts, outputs, &rec);
                                    if stopped.is_some() {
                                        return false;
                                    }
                                }
                                outputs.add(&rec, |event| said.push(event));
                            }
                            (Entry::Record(_), false) => {}
                            (other, _) => lost.see(&other),
                        }
                        true
                    })
                };
                cursor = reader::Buffers::with(heap.as_deref_mut(), walk);
                contexts.buffers = heap;
                lost.say(outputs, crate::sys::realtime_ns(), said);
                if let (Some(due), Some(at)) = (&stopped, cursor.pos()) {
                    let mut report = |event: Said| said.push(event);
                    context::print(contexts, outputs, view, at, due, &mut report);
                    done = Some(due.seq());
                }
                outputs.flush(|event| said.push(event));
                // Before `printed` moves past them: lines held are in a
                // crash dump (`crash::dump::records`).
                at_crash::publish_holding(outputs.waiting().is_some());
                if let Some(pos) = cursor.pos().filter(|&pos| Some(pos) != from) {
                    view.set_printed(pos);
                }
            });
            if cursor.pos() == from && stopped.is_none() {
                // A walk that did not move (a damaged ring, a crash): no
                // further.
                break;
            }
        }
    }

    /// [`Printer::catch_up`] on the ring readers find now, if this
    /// process's outputs read it.
    pub fn catch_up_published(&mut self, upto: u64) {
        if !published::prints_here() {
            return;
        }
        published::read(|view| {
            if let Some(view) = view {
                let private = published::private(&view);
                self.catch_up(&view.trusting(private), upto);
            }
        });
    }

    /// What the outputs had to report since the last call.
    pub fn take_said(&mut self) -> Vec<Said> {
        std::mem::take(&mut self.said)
    }
}

/// Wakes the writer thread for a marked record just recorded, after the
/// logger's lock is let go of: if it sleeps, or, when the ring was half
/// full of lines not yet written (`urgent`, decided under the lock), if it
/// lets a burst gather. Costs no system call while the thread is awake;
/// one futex(2) wake otherwise. A writer thread stopped or replaced
/// meanwhile is no matter: a new one writes what is pending first, and
/// the mark a caller clears is the running thread's (see [`Sleep`]).
#[inline(always)]
pub fn wake(urgent: bool) {
    #[cfg(test)]
    crate::sys::lock::HELD.with(|held| {
        if held.get() > 0 {
            WOKEN_HOLDING.with(|n| n.set(n.get() + 1));
        }
    });
    // [W6] the record's tail and marked_end were stored; then ASLEEP.
    fence(Ordering::SeqCst);
    // Asleep: woken. Awake and the ring half full: the burst is not let
    // gather (once, until the thread takes the flag).
    if ASLEEP.wake()
        || (urgent && !URGENT.load(Ordering::Relaxed) && !URGENT.swap(true, Ordering::SeqCst))
    {
        BELL.ring();
    }
}

// How often this thread woke the writer thread while it held a lock: what
// the test of the wake counts.
#[cfg(test)]
thread_local! {
    pub static WOKEN_HOLDING: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Starts the writer thread; `report` says what the outputs had to report
/// (it takes the logger's lock, then the printer's, to take it: what the
/// outputs report stays with them until then, so a flush that takes it
/// first says it before it returns); `failed` steps down after a panic in
/// the outputs, as the C boundary does after one of its own.
pub fn start(report: fn(), failed: fn()) -> std::io::Result<Worker> {
    let me = ASLEEP.own();
    Worker::spawn(
        "vlog-writer",
        std::sync::Arc::new(Waker::new()?),
        move |stop, _| run(me, stop, report, failed),
    )
    .map(|worker| worker.waiting_on(&BELL))
}

/// Whether the current ring holds records marked for the outputs that
/// they have not read, or a caller handed datagrams over.
fn pending() -> bool {
    caller::handed_off()
        || published::read(|view| view.is_some_and(|v| v.printed() < v.marked_end()))
}

/// The writer thread: writes what is pending, sleeps until a caller wakes
/// it, lets the burst gather, and writes again; ends when told to stop
/// (after writing what was pending then).
fn run(me: u32, stop: &AtomicBool, report: fn(), failed: fn()) {
    let tid = crate::sys::process_id();
    caller::WRITER.store(tid, Ordering::SeqCst);
    run_until_stopped(me, stop, report, failed);
    let _ = caller::WRITER.compare_exchange(tid, 0, Ordering::SeqCst, Ordering::SeqCst);
}

fn run_until_stopped(me: u32, stop: &AtomicBool, report: fn(), failed: fn()) {
    loop {
        // One read step per hold of the printer's lock, so that a thread
        // that needs it (an error's caller, a configuration call) waits for
        // a step, not for a backlog as large as the ring; the loop comes
        // back while lines are pending. Told to stop: everything.
        let upto = if stop.load(Ordering::SeqCst) {
            u64::MAX
        } else {
            caller::step_end(caller::printed_now(), u64::MAX)
        };
        let said = crate::panic::catch(|| {
            let mut printer = lock();
            caller::HANDED_OFF.store(false, Ordering::SeqCst);
            printer.catch_up_published(upto);
            printer.send_held();
            (!printer.said.is_empty(), printer.outputs.waiting())
        });
        make_way();
        let waiting = match said {
            Ok((true, waiting)) => {
                let _ = crate::panic::catch(report);
                waiting
            }
            Ok((false, waiting)) => waiting,
            // A panic in the outputs: vlog steps down (outputs off, the
            // ring goes on), and the thread goes on with what is left.
            Err(_) => {
                let _ = crate::panic::catch(failed);
                None
            }
        };
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if let Some((fd, _)) = waiting.filter(|_| !at_crash::frozen()) {
            // A slow reader: its room waited for with no lock held, then
            // what it was left sent, and the walk goes on.
            crate::sys::room::wait_writable(fd, 100);
            continue;
        }
        if at_crash::frozen() {
            // A crash is being dumped: the crash handler writes, and this
            // thread waits for the process to end or go on.
            std::thread::park_timeout(Duration::from_millis(GATHER_MS));
            continue;
        }
        if !ASLEEP.fall_asleep(me) {
            // Replaced: this thread is told to stop at once. (Waited for,
            // so as not to spin meanwhile.)
            BELL.wait(BELL.count(), Some(Duration::from_millis(GATHER_MS)));
            continue;
        }
        // [R6] ASLEEP, then marked_end (read in `pending`).
        fence(Ordering::SeqCst);
        if pending() {
            ASLEEP.stay_awake(me);
            continue;
        }
        loop {
            let rung = BELL.count();
            if !ASLEEP.sleeps(me) || stop.load(Ordering::SeqCst) {
                break;
            }
            BELL.wait(rung, None);
        }
        if stop.load(Ordering::SeqCst) {
            continue;
        }
        let rung = BELL.count();
        if !URGENT.swap(false, Ordering::SeqCst) {
            BELL.wait(rung, Some(Duration::from_millis(GATHER_MS)));
        }
        URGENT.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::spec::parse_list;
    use crate::priority::Priority;
    use crate::record::Record;
    use crate::ring::Ring;

    /// Records damaged in the ring before the outputs read them are said
    /// in every output, with their count, before its next line; the lines
    /// after the damage are printed.
    #[test]
    fn lines_lost_to_damage_are_said_in_every_output() {
        let dir = std::env::temp_dir().join(format!("vlog-printer-lost-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (ring_path, errors, all) = (
            dir.join("ring"),
            dir.join("errors.log"),
            dir.join("all.log"),
        );
        let mut ring = Ring::create_file(&ring_path, 64 * 1024, None, false).unwrap();
        for i in 0..100 {
            let msg = format!("line {i}");
            let rec = Record {
                priority: if i % 10 == 9 {
                    Priority::Error
                } else {
                    Priority::Info
                },
                message: msg.as_bytes(),
                ..Record::sample(b"")
            };
            ring.append_call(&rec, false, true).unwrap();
        }
        // 200 bytes of zeros in the middle of the records the outputs have
        // not read: through the file, which the ring maps.
        let data = std::fs::metadata(&ring_path).unwrap().len() as usize - 64 * 1024;
        let mut bytes = std::fs::read(&ring_path).unwrap();
        bytes[data + 2000..data + 2200].fill(0);
        std::fs::write(&ring_path, &bytes).unwrap();
        let specs = format!("4:file:{} 2:file:{}", errors.display(), all.display());
        let mut printer = Printer::new();
        let list = Outputs::open(&parse_list(&specs).unwrap()).unwrap();
        printer.outputs.set(list).unwrap();
        printer.set_context(Context::parse("0").unwrap()).unwrap();
        printer.catch_up(&ring.view(), u64::MAX);
        drop(printer);
        let all = std::fs::read_to_string(&all).unwrap();
        let errors = std::fs::read_to_string(&errors).unwrap();
        for (name, text) in [("all", &all), ("errors", &errors)] {
            let said: Vec<&str> = text
                .lines()
                .filter(|l| l.contains(" were damaged "))
                .collect();
            assert_eq!(said.len(), 1, "{name}:\n{text}");
            assert!(
                said[0].contains(" : vlog : output")
                    && said[0].contains("the lines among them are lost"),
                "{name}: {}",
                said[0]
            );
        }
        // The records after the damage are printed.
        assert!(
            all.contains(" : line 99\n") && errors.contains(" : line 99\n"),
            "{all}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
