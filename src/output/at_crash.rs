//! What the crash handler needs of the outputs, without a lock: the files
//! (and stderr) that print lines, published whenever the outputs change,
//! so that at a crash it writes the lines vlog's writer thread had not
//! written yet (`crash::pending`). Journald, syslog and fluent outputs are
//! left out: their lines pending at a crash are in the dump.
//!
//! [W7]/[R7]: a slot's fields are stored, then its `fd` with Release; the
//! crash handler loads `fd` with Acquire, then the fields. A slot is
//! emptied (`fd` -1) before its fields change.
//!
//! `BUSY` is set while the outputs read the ring and write a batch; the
//! crash handler sets `CRASHED`, after which the outputs start nothing,
//! then waits a moment for `BUSY` to clear (a step under way): a line is
//! not written twice, once by them and once by the crash handler. Both
//! SeqCst: the outputs store `BUSY` then load `CRASHED`, the handler stores
//! `CRASHED` then loads `BUSY`, so one of them sees the other.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, Ordering};

use super::spec::Form;
use crate::priority::Priority;
use crate::sys::FdInfo;

/// The most outputs the crash handler writes to.
pub const SLOTS: usize = 8;

pub struct Slot {
    fd: AtomicI32,
    dev: AtomicU64,
    ino: AtomicU64,
    priority: AtomicU8,
    json: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    fd: AtomicI32::new(-1),
    dev: AtomicU64::new(0),
    ino: AtomicU64::new(0),
    priority: AtomicU8::new(0),
    json: AtomicBool::new(false),
};

static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
static BUSY: AtomicBool = AtomicBool::new(false);
/// Every output in force is in the table: the crash handler's writes are
/// all the outputs' (see `complete`).
static COMPLETE: AtomicBool = AtomicBool::new(true);
static CRASHED: AtomicBool = AtomicBool::new(false);

/// One output as the crash handler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub fd: i32,
    pub dev: u64,
    pub ino: u64,
    pub priority: Priority,
    pub json: bool,
}

/// Publishes the outputs the crash handler writes to (at most SLOTS), and
/// whether they are all the outputs in force.
pub fn publish(targets: impl Iterator<Item = (i32, FdInfo, Priority, Form)>, all: bool) {
    COMPLETE.store(all, Ordering::SeqCst);
    let mut n = 0;
    for (fd, info, priority, form) in targets.take(SLOTS) {
        let slot = &TABLE[n];
        slot.fd.store(-1, Ordering::Release);
        slot.dev.store(info.dev, Ordering::Relaxed);
        slot.ino.store(info.ino, Ordering::Relaxed);
        slot.priority.store(priority as u8, Ordering::Relaxed);
        slot.json.store(form == Form::Json, Ordering::Relaxed);
        // [W7] the fields, then the descriptor.
        slot.fd.store(fd, Ordering::Release);
        n += 1;
    }
    for slot in &TABLE[n..] {
        slot.fd.store(-1, Ordering::Release);
    }
}

/// The outputs published, for the crash handler. Async-signal-safe.
pub fn targets(mut visit: impl FnMut(Target)) {
    for slot in &TABLE {
        // [R7] the descriptor, then the fields.
        let fd = slot.fd.load(Ordering::Acquire);
        if fd < 0 {
            continue;
        }
        let Some(priority) = Priority::from_number(slot.priority.load(Ordering::Relaxed) as u64)
        else {
            continue;
        };
        visit(Target {
            fd,
            dev: slot.dev.load(Ordering::Relaxed),
            ino: slot.ino.load(Ordering::Relaxed),
            priority,
            json: slot.json.load(Ordering::Relaxed),
        });
    }
}

/// Marks the outputs busy reading and writing while `f` runs; after a
/// crash, `f` does not run (the crash handler writes what is left).
pub fn while_busy(f: impl FnOnce()) {
    BUSY.store(true, Ordering::SeqCst);
    if !CRASHED.load(Ordering::SeqCst) {
        f();
    }
    BUSY.store(false, Ordering::SeqCst);
}

/// Whether the outputs the crash handler writes to are all of them: only
/// then may it count the lines it wrote as printed (a program that recovers
/// from the fault would otherwise never see them on the others).
pub fn complete() -> bool {
    COMPLETE.load(Ordering::SeqCst)
}

/// Whether a crash stopped the outputs (see [`crashed`]).
pub fn frozen() -> bool {
    CRASHED.load(Ordering::SeqCst)
}

/// For the crash handler: whether the outputs are busy now.
pub fn busy() -> bool {
    BUSY.load(Ordering::SeqCst)
}

/// For the crash handler, before it writes: the outputs write nothing more.
pub fn crashed() {
    CRASHED.store(true, Ordering::SeqCst);
}

/// For the crash handler, when the program handles the signal itself and
/// may go on: the outputs write again.
pub fn thawed() {
    CRASHED.store(false, Ordering::SeqCst);
}

/// What a datagram output (journald, the syslog daemon) gets at a crash:
/// not its pending lines, which the dump has (their sockets' state and
/// what they hold for the writer thread are the outputs', behind a lock a
/// crashing process cannot take), but one entry that says how many there
/// are and where they went. Published with the files, read the same way.
pub struct Note {
    fd: AtomicI32,
    dev: AtomicU64,
    ino: AtomicU64,
    priority: AtomicU8,
    journald: AtomicBool,
    /// Datagrams the output holds while its reader's queue is full
    /// (`slow`): lines the outputs' walk passed, not sent.
    held: AtomicU64,
    /// One past the sequence number of the newest record handed to the
    /// output (sent, held or counted lost): the walk marks the ring
    /// printed a step at a time, and a step the crash cut short has sent
    /// lines the ring does not say are printed.
    handed: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const NO_NOTE: Note = Note {
    fd: AtomicI32::new(-1),
    dev: AtomicU64::new(0),
    ino: AtomicU64::new(0),
    priority: AtomicU8::new(0),
    journald: AtomicBool::new(false),
    held: AtomicU64::new(0),
    handed: AtomicU64::new(0),
};

/// How many datagrams the output whose socket is `fd` holds now, and the
/// newest record handed to it (its `seq`), for the crash handler's count.
pub fn note_held(fd: i32, held: u64, seq: Option<u64>) {
    if let Some(slot) = NOTES.iter().find(|s| s.fd.load(Ordering::Relaxed) == fd) {
        slot.held.store(held, Ordering::Relaxed);
        if let Some(seq) = seq {
            slot.handed.fetch_max(seq + 1, Ordering::Relaxed);
        }
    }
}

static NOTES: [Note; SLOTS] = [NO_NOTE; SLOTS];

/// The program's name as journald and syslog get it, for the crash
/// handler, which cannot allocate: at most 64 bytes.
static IDENT: [AtomicU8; 64] = [const { AtomicU8::new(0) }; 64];
static IDENT_LEN: AtomicU8 = AtomicU8::new(0);

/// A datagram output as the crash handler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoteTarget {
    pub fd: i32,
    pub dev: u64,
    pub ino: u64,
    pub priority: Priority,
    /// journald's native protocol, else a syslog line.
    pub journald: bool,
    /// Datagrams it holds, not sent (see `Note`).
    pub held: u64,
    /// One past the newest record handed to it (see `Note`).
    pub handed: u64,
}

/// Publishes the datagram outputs the crash handler tells of what they
/// lost (at most SLOTS), and the program's name.
pub fn publish_notes(
    targets: impl Iterator<Item = (i32, FdInfo, Priority, bool, u64)>,
    ident: &[u8],
) {
    let ident = &ident[..ident.len().min(IDENT.len())];
    IDENT_LEN.store(0, Ordering::Release);
    for (slot, &b) in IDENT.iter().zip(ident) {
        slot.store(b, Ordering::Relaxed);
    }
    IDENT_LEN.store(ident.len() as u8, Ordering::Release);
    let mut n = 0;
    for (fd, info, priority, journald, held) in targets.take(SLOTS) {
        let slot = &NOTES[n];
        slot.fd.store(-1, Ordering::Release);
        slot.dev.store(info.dev, Ordering::Relaxed);
        slot.ino.store(info.ino, Ordering::Relaxed);
        slot.priority.store(priority as u8, Ordering::Relaxed);
        slot.journald.store(journald, Ordering::Relaxed);
        slot.held.store(held, Ordering::Relaxed);
        slot.handed.store(0, Ordering::Relaxed);
        // [W7] as for the files: the fields, then the descriptor.
        slot.fd.store(fd, Ordering::Release);
        n += 1;
    }
    for slot in &NOTES[n..] {
        slot.fd.store(-1, Ordering::Release);
    }
}

/// Some output in force keeps lines the crash handler sees nothing of (a
/// remote syslog or fluent output's queue): see [`all_lines_seen`].
static UNSEEN: AtomicBool = AtomicBool::new(false);

/// Some output (or one replaced) holds lines it was handed for a slow
/// reader (a pipe, a socket, a full datagram queue): see [`all_lines_seen`].
static HOLDING: AtomicBool = AtomicBool::new(false);

/// Publishes whether some output holds lines for a slow reader, after each
/// step of the outputs' walk and each send of what they hold, while they
/// are busy (so the crash handler, which waits for a step to end, sees
/// what that step left held).
pub fn publish_holding(holding: bool) {
    HOLDING.store(holding, Ordering::SeqCst);
}

/// Publishes whether some output in force queues lines that are neither a
/// file's nor a datagram output's (see [`all_lines_seen`]).
pub fn publish_unseen(unseen: bool) {
    UNSEEN.store(unseen, Ordering::SeqCst);
}

/// Whether every line the outputs were handed before `printed` has left
/// the process: no output queues lines the crash handler cannot see, and
/// none (nor one replaced) holds any for a slow reader. Only then may a
/// dump leave out records before `printed`, which are the only other copy
/// of lines still held. Async-signal-safe.
pub fn all_lines_seen() -> bool {
    !UNSEEN.load(Ordering::SeqCst)
        && !HOLDING.load(Ordering::SeqCst)
        && NOTES
            .iter()
            .all(|n| n.fd.load(Ordering::Acquire) < 0 || n.held.load(Ordering::Relaxed) == 0)
}

/// The datagram outputs published, for the crash handler, and the
/// program's name (into `ident`; its length returned). Async-signal-safe.
pub fn notes(ident: &mut [u8; 64], mut visit: impl FnMut(NoteTarget, &[u8])) {
    // [R7] the length, then the bytes.
    let len = IDENT_LEN.load(Ordering::Acquire) as usize;
    for (dst, src) in ident.iter_mut().zip(&IDENT).take(len) {
        *dst = src.load(Ordering::Relaxed);
    }
    for slot in &NOTES {
        let fd = slot.fd.load(Ordering::Acquire);
        let Some(priority) = Priority::from_number(slot.priority.load(Ordering::Relaxed) as u64)
        else {
            continue;
        };
        if fd < 0 {
            continue;
        }
        let target = NoteTarget {
            fd,
            dev: slot.dev.load(Ordering::Relaxed),
            ino: slot.ino.load(Ordering::Relaxed),
            priority,
            journald: slot.journald.load(Ordering::Relaxed),
            held: slot.held.load(Ordering::Relaxed),
            handed: slot.handed.load(Ordering::Relaxed),
        };
        visit(target, &ident[..len]);
    }
}
