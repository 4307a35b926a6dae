//! The threads that have the outputs write their own lines, not vlog's
//! writer thread: an error's caller, `?sync`, every caller when there is no
//! writer thread, a caller whose record needs room. None waits for a slow
//! reader under a lock (`output::slow`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::MutexGuard;

use super::{lock, Printer, READ_STEP};
use crate::output::Said;
use crate::ring::published;

/// Has the outputs read the current ring up to `upto` (see
/// [`Printer::catch_up`]), from a thread that does not hold the logger's
/// lock; returns what they had to report. What a slow reader has no room
/// for (`output::slow`) is left to vlog's writer thread, woken for it; a
/// caller with no writer thread here waits for it, with no lock held.
pub fn write_upto(upto: u64) -> Vec<Said> {
    walk_to(upto, !writer_here())
}

/// Has the outputs write what waits for them now, as far as they take it
/// without waiting for a reader: for a configuration call, before it takes
/// the logger's lock (see `logger::config_call::configure_writing`). What is recorded meanwhile
/// is left for the lock: walking to a tail that moves could go on forever.
pub fn write_pending() -> Vec<Said> {
    match published::read(|view| view.map(|v| v.marked_end())) {
        Some(end) => walk_to(end, false),
        None => Vec::new(),
    }
}

/// [`write_upto`] by a thread that must not wait for long (a failed
/// check's, which aborts next, holding the logger's lock): the printer's
/// lock tried, and each step taken, only until `deadline` (monotonic ns);
/// what is left then is the crash handler's to write. (A step that blocks
/// on a descriptor left blocking, stderr on a pipe nobody reads, blocks
/// this thread as it blocks vlog's writer thread.)
pub fn write_upto_by(upto: u64, deadline: u64) {
    while crate::sys::monotonic_ns() < deadline {
        let mut printer = match super::PRINTER.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            }
        };
        match printer.walk_step(upto) {
            Walk::Done => return,
            Walk::Again => {}
            Walk::Wait(fd, _) => {
                drop(printer);
                crate::sys::room::wait_writable(fd, 100);
            }
        }
    }
}

/// Walks the outputs to `upto` one step at a time (`Printer::walk_step`),
/// letting go of the printer's lock between steps: a thread that needs it
/// (an error's caller, one that needs room) waits for one step at most,
/// not for a backlog as large as the ring. `wait`: wait (with no lock
/// held) for a slow reader's room rather than leave its lines to the
/// writer thread.
fn walk_to(upto: u64, wait: bool) -> Vec<Said> {
    let mut said = Vec::new();
    loop {
        let mut printer = lock_for_caller();
        let walk = printer.walk_step(upto);
        // (Moved, not taken: the printer's vector keeps its room.)
        said.append(&mut printer.said);
        match walk {
            Walk::Wait(fd, _) if wait => {
                drop(printer);
                crate::sys::room::wait_writable(fd, 100);
            }
            Walk::Again => {
                drop(printer);
                super::make_way();
            }
            _ => {
                printer.hand_off_held();
                said.append(&mut printer.said);
                return said;
            }
        }
    }
}

/// What a walk that a slow reader may hold up does next (see
/// [`Printer::walk_step`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Walk {
    /// An output holds lines for the reader on this descriptor: wait for
    /// its room, with no lock held; true when it holds so much that the
    /// walk stops before the next line.
    Wait(i32, bool),
    /// Something moved, and lines are left: walk on.
    Again,
    /// Every line is written, or nothing moves (a damaged ring, a crash).
    Done,
}

/// Where a step from `printed` towards `upto` ends (see
/// [`Printer::walk_step`]).
pub(super) fn step_end(printed: Option<u64>, upto: u64) -> u64 {
    printed.map_or(upto, |p| upto.min(p.saturating_add(READ_STEP)))
}

/// Where the outputs have read the current ring to.
pub fn printed_now() -> Option<u64> {
    published::read(|view| view.map(|v| v.printed()))
}

/// The printer's lock for a thread that writes its own line (not vlog's
/// writer thread). While a crash is dumped the outputs write nothing: the
/// caller waits with them (a ring full of lines they have not written
/// overwrites none; see `crash::pending`).
fn lock_for_caller() -> MutexGuard<'static, Printer> {
    crate::crash::pending::wait_while_dumped();
    lock()
}

/// Lets go of the printer's lock while a slow reader on `fd` has no room
/// (100 ms at most), and takes it again: nothing waits under a lock.
fn wait_for_room(printer: MutexGuard<'static, Printer>, fd: i32) -> MutexGuard<'static, Printer> {
    drop(printer);
    crate::sys::room::wait_writable(fd, 100);
    lock()
}

/// Lines a caller left to the writer thread (a slow reader had no room),
/// which it writes before it sleeps: set by the caller, taken by the writer
/// thread, both under the printer's lock.
pub(super) static HANDED_OFF: AtomicBool = AtomicBool::new(false);

/// The pid of the process whose writer thread runs (0: none): a forked
/// child has none of its parent's.
pub(super) static WRITER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Whether vlog's writer thread runs in this process.
fn writer_here() -> bool {
    WRITER.load(Ordering::SeqCst) == crate::sys::process_id()
}

impl Printer {
    /// One step of a walk that a slow reader may hold up: the outputs read
    /// the ring towards `upto`, one read step (`READ_STEP`) at most, and
    /// what they hold is sent as far as its reader takes it now; never
    /// waits.
    pub fn walk_step(&mut self, upto: u64) -> Walk {
        // A walk that starts held stops at once, and the batch written at
        // its end may be what frees it: that is a move too.
        let held = self.outputs.waiting().is_some();
        // One look at the ring for the whole step (where the outputs were,
        // the walk, where they are, whether that is far enough), not one
        // for each: a caller's step is often one line.
        let (moved, written) = published::read(|view| {
            let Some(view) = view else {
                return (false, true);
            };
            let before = view.printed();
            if published::prints_here() {
                let private = published::private(&view);
                self.catch_up(&view.trusting(private), step_end(Some(before), upto));
            }
            let after = view.printed();
            (after != before, after >= upto.min(view.marked_end()))
        });
        let held = held || self.outputs.waiting().is_some();
        self.send_held();
        match self.outputs.waiting() {
            Some((fd, blocked)) => Walk::Wait(fd, blocked),
            None if !written && (held || moved) => Walk::Again,
            None => Walk::Done,
        }
    }

    /// A caller's walk is over: what the outputs had to report, and the
    /// writer thread told of what was left to it.
    fn done_for_caller(&mut self) -> Vec<Said> {
        self.hand_off_held();
        self.take_said()
    }

    /// What a slow reader had no room for is left to the writer thread.
    fn hand_off_held(&mut self) {
        // (The walk stops only where an output waits for a slow reader.)
        if self.outputs.waiting().is_some() {
            HANDED_OFF.store(true, Ordering::SeqCst);
        }
    }

    /// Sends what the outputs hold for slow readers, as far as they take it
    /// now; never waits. As busy as a walk (`at_crash::while_busy`): a crash
    /// waits for it to end, so that what it counts as held was not sent,
    /// and after a crash nothing more is.
    pub fn send_held(&mut self) {
        // Most walks: nothing held, nothing to send (a caller's walk of
        // one line would pay a cancellation point and the crash flags).
        if !self.outputs.holding() {
            crate::output::at_crash::publish_holding(false);
            return;
        }
        let Printer { outputs, said, .. } = self;
        crate::output::at_crash::while_busy(|| {
            outputs.print_all(|outputs| outputs.send_held(said));
            crate::output::at_crash::publish_holding(outputs.waiting().is_some());
        });
    }
}

/// Whether a caller left lines to the writer thread since it last wrote:
/// it is woken for them.
pub fn handed_off() -> bool {
    HANDED_OFF.load(Ordering::SeqCst)
}

/// Has the outputs read one step (`READ_STEP`) of the current ring, for a
/// caller whose record would overwrite what they have not: what they had
/// to report, and whether they are stuck (lines are left that they could
/// not read on to: a damaged ring). One step, not everything: the caller
/// needs room for one record, and waits for 64 KiB of lines to be written,
/// not for a ring's worth (8 MiB of them took 20 ms). An output blocked by
/// a slow reader is waited for, with no lock held (the ring holds the
/// lines meanwhile).
pub fn make_room() -> (Vec<Said>, bool) {
    let mut printer = lock_for_caller();
    let place = || published::read(|view| view.map(|v| (v.printed(), v.marked_end())));
    let before = place();
    let upto = step_end(before.map(|(printed, _)| printed), u64::MAX);
    // A step that found the output blocked moves nothing, and what it then
    // sends may unblock it: holding but not blocked, the walk reads on. It
    // is over when two steps in a row move nothing; "stuck" (let the
    // record overwrite) only then, never because a step began blocked.
    let mut idle = false;
    loop {
        let from = place();
        match printer.walk_step(upto) {
            Walk::Wait(fd, true) => {
                idle = false;
                printer = wait_for_room(printer, fd);
            }
            Walk::Again => idle = false,
            Walk::Wait(_, false) => {
                let moved = place() != from;
                if !moved && idle {
                    break;
                }
                idle = !moved;
            }
            Walk::Done => break,
        }
    }
    let after = place();
    let said = printer.done_for_caller();
    if crate::output::at_crash::frozen() && crate::crash::pending::dumped_elsewhere() {
        // Nothing moved because a crash another thread dumps stopped the
        // outputs, not because they cannot read on: overwriting the line
        // they stopped at would lose it before the crash handler wrote
        // it. The caller waits for the dump, then tries again. (On the
        // dumping thread itself, a handler of the program's that logs,
        // or once the dump is over, waiting would be for ever.)
        drop(printer);
        crate::crash::pending::wait_while_dumped();
        return (said, false);
    }
    let stuck = after == before && after.is_some_and(|(printed, end)| printed < end);
    (said, stuck)
}

/// [`Printer::print_at`] on the current ring, from a thread that does not
/// hold the logger's lock.
pub fn write_one(pos: u64) -> Vec<Said> {
    let mut printer = lock_for_caller();
    published::read(|view| {
        if let Some(view) = view {
            printer.print_at(&view, pos, None);
        }
    });
    // What a slow reader had no room for: sent, waited for with no lock
    // held when no writer thread here would.
    let alone = !writer_here();
    loop {
        printer.send_held();
        match printer.outputs.waiting() {
            Some((fd, _)) if alone => printer = wait_for_room(printer, fd),
            _ => return printer.done_for_caller(),
        }
    }
}
