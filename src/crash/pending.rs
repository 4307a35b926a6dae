//! At a crash, before the dump's text: the lines vlog's writer thread had not
//! written yet, written to the files and stderr that print them (see
//! `output::at_crash`), so that a crash loses no line an output accepted.
//! No allocation and no lock: the ring is read lock-free from where the
//! outputs stopped, each descriptor used only while it is still the file
//! the output opened.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::output::at_crash;
use crate::priority::Priority;
use crate::record::Record;
use crate::ring::reader::{self, Cursor};
use crate::ring::{published, Damage, Entry, Region};
use crate::sys;
use crate::text::json::render_json;
use crate::text::line::render_line;
use crate::text::num::put_decimal;
use crate::text::time::Clock;
use crate::text::{Bounded, Sink};

/// How long the crash handler waits for the outputs to finish the batch
/// they are writing (then it writes, and a line may appear twice).
const BUSY_WAIT_MS: u64 = 200;

/// An output that takes nothing for this long at a crash (a pipe nobody
/// reads) is passed over: its lines stay in the ring and the dump, which
/// come after them and would otherwise never be written.
pub const STUCK_MS: u64 = 1_000;

/// Outputs passed over at this crash, said in the dump.
static STUCK: AtomicU32 = AtomicU32::new(0);

/// The dump's line on the outputs passed over at this crash, if any.
pub fn say_stuck(sink: &mut impl Sink) {
    const _: () = assert!(STUCK_MS == 1_000, "the lines below say 1 s");
    match STUCK.load(Ordering::Relaxed) {
        0 => {}
        1 => sink.put(b"vlog: an output took nothing for 1 s and was passed over: the lines it had not written are among the records below\n"),
        n => {
            sink.put(b"vlog: ");
            put_decimal(n.into(), 1, sink);
            sink.put(b" outputs took nothing for 1 s and were passed over: the lines they had not written are among the records below\n");
        }
    }
}

/// Before the dump: the outputs write nothing more (the batch being
/// written is given a moment to finish), so that the lines pending now are
/// written once, by [`write`], by the crash handler. Async-signal-safe.
pub fn freeze() {
    // Crashed first, so that the outputs start no further step, then the
    // step under way given its moment: waiting for them to be idle first
    // let a writer thread with a backlog go on step after step.
    at_crash::crashed();
    for _ in 0..BUSY_WAIT_MS {
        if !at_crash::busy() {
            break;
        }
        sys::nap(1);
    }
}

/// Writes the lines pending at a crash (after [`freeze`]), and marks them
/// printed when every output got them: if the program recovers from the
/// fault, they are not written again. Only in a process whose outputs read the ring (not one sharing
/// another's ring file). Async-signal-safe.
pub fn write() {
    // This crash's count alone: a program may have recovered from an
    // earlier one whose stuck output works again.
    STUCK.store(0, Ordering::Relaxed);
    if !published::prints_here() {
        return;
    }
    published::read(|view| {
        let Some(view) = view else {
            return;
        };
        let printed = view.printed();
        // Records made while this writes are the writer thread's, if the
        // process goes on.
        let end = Region::tail(&view);
        if printed >= view.marked_end() {
            return;
        }
        // Whether every output took every line (else the dump keeps them).
        let mut all_written = true;
        at_crash::targets(|target| {
            let same = sys::fd_info(target.fd)
                .is_ok_and(|info| (info.dev, info.ino) == (target.dev, target.ino));
            if !same {
                return;
            }
            let pid = Some(sys::process_id());
            // Each piece (at most PIPE_BUF bytes, which a pipe with room
            // takes without blocking) waits for room, never past STUCK_MS.
            // (A signal that ends a wait early is waited past.)
            let stuck = || {
                let until = sys::monotonic_ns() + STUCK_MS * 1_000_000;
                loop {
                    let now = sys::monotonic_ns();
                    if now >= until {
                        STUCK.fetch_add(1, Ordering::Relaxed);
                        return true;
                    }
                    let left = (until - now).div_ceil(1_000_000);
                    if sys::room::wait_writable(target.fd, left) {
                        return false;
                    }
                }
            };
            all_written &= super::dump::with_fd_sink_unless(target.fd, stuck, |sink| {
                let mut clock = Clock::new();
                // What is gone from the ring, said in the output that lost
                // it: records damaged, bytes passed over or overwritten.
                let mut lost = [0u64; 2];
                reader::read_marked(
                    &view,
                    Cursor::at(printed),
                    end - printed,
                    |entry, marked| match entry {
                        Entry::Record(rec) if marked && rec.priority >= target.priority => {
                            if target.json {
                                render_json(&rec, pid, &mut clock, sink);
                            } else {
                                render_line(&rec, &mut clock, sink);
                            }
                        }
                        // As the outputs' walk counts them (`logger::printer`).
                        Entry::Damaged { damage, .. } if damage != Damage::Uncommitted => {
                            lost[0] += 1
                        }
                        Entry::Gap { expected, found } => lost[0] += found.saturating_sub(expected),
                        Entry::Skipped { bytes } => lost[1] += bytes,
                        _ => {}
                    },
                );
                if lost != [0, 0] {
                    say_lost(lost, target.json.then_some(pid), &mut clock, sink);
                }
            });
        });
        // If the program recovers, the outputs go on from here; unless some
        // output did not get these lines here (journald, syslog, fluent):
        // then they go on from where they were, and a file may get a line
        // twice rather than another output none.
        tell_datagram_outputs(&view, printed, end);
        if at_crash::complete() && all_written {
            view.set_printed(end);
        }
    });
}

/// Tells each datagram output (journald, the syslog daemon) in one entry
/// how many of its lines were pending at the crash and where they are:
/// they are not sent from here (what such an output holds for the writer
/// thread, and its socket's state, are behind the outputs' lock), so each
/// that lost lines says so itself. A socket not connected yet is connected
/// first. No allocation: async-signal-safe.
fn tell_datagram_outputs(view: &impl Region, printed: u64, end: u64) {
    let mut ident = [0u8; 64];
    at_crash::notes(&mut ident, |target, ident| {
        // Its pending lines: those of its priority after the newest it was
        // handed (a step the crash cut short sent some the ring does not
        // say are printed), and those it holds.
        let mut pending = 0;
        reader::read_marked(view, Cursor::at(printed), end - printed, |entry, marked| {
            if let (Entry::Record(rec), true) = (entry, marked) {
                if rec.priority >= target.priority && rec.seq >= target.handed {
                    pending += 1;
                }
            }
        });
        let n = pending + target.held;
        let same = sys::fd_info(target.fd)
            .is_ok_and(|info| (info.dev, info.ino) == (target.dev, target.ino));
        if n == 0 || !same {
            return;
        }
        let mut buf = [0u8; 400];
        let mut entry = Bounded::new(&mut buf);
        if target.journald {
            entry.put(b"MESSAGE=");
        } else {
            // LOG_DAEMON | LOG_WARNING, as a syslog(3) line without a time.
            entry.put(b"<28>");
            entry.put(ident);
            entry.put(b": ");
        }
        entry.put(b"vlog: ");
        put_decimal(n, 1, &mut entry);
        entry.put(b" lines for this output were not sent when the process crashed: the crash dump and the ring have them");
        if target.journald {
            entry.put(b"\nPRIORITY=4\nSYSLOG_IDENTIFIER=");
            entry.put(ident);
            entry.put(b"\nVLOG_SOURCE=vlog\n");
        }
        let entry = entry.finish();
        // A queue full of the lines sent before the crash: the reader is
        // given a second to take some (poll(2), async-signal-safe), as the
        // writer thread would have been, within the dump's watchdog.
        let mut sent = sys::fd::send_some(target.fd, entry, libc::MSG_DONTWAIT);
        for _ in 0..10 {
            match &sent {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    sys::room::wait_writable(target.fd, 100);
                    sent = sys::fd::send_some(target.fd, entry, libc::MSG_DONTWAIT);
                }
                _ => break,
            }
        }
        if sent.is_err() {
            let path = if target.journald {
                crate::output::journald::SOCKET
            } else {
                crate::output::syslog::LOCAL_SOCKET
            };
            if let Ok((_, addr, len)) = sys::net::unix_addr(path) {
                // SAFETY: `addr` is a sockaddr of `len` bytes; connect(2) is
                // async-signal-safe.
                if unsafe { libc::connect(target.fd, (&raw const addr).cast(), len) } == 0 {
                    let _ = sys::fd::send_some(target.fd, entry, libc::MSG_DONTWAIT);
                }
            }
        }
    });
}

/// The line that says, in an output, what the crash handler could not
/// write to it: `lost[0]` records damaged, `lost[1]` bytes passed over. No
/// allocation: async-signal-safe.
fn say_lost(lost: [u64; 2], json: Option<Option<u32>>, clock: &mut Clock, sink: &mut impl Sink) {
    let mut buf = [0u8; 200];
    let mut text = Bounded::new(&mut buf);
    put_decimal(lost[0], 1, &mut text);
    text.put(b" records of the ring were damaged (");
    put_decimal(lost[1], 1, &mut text);
    text.put(b" bytes) before this output wrote them: the lines among them are lost");
    let rec = Record::note(Priority::Warning, b"crash", text.finish());
    match json {
        Some(pid) => render_json(&rec, pid, clock, sink),
        None => render_line(&rec, clock, sink),
    }
}

/// The program handles the signal itself and may go on: the outputs write
/// again.
pub fn thaw() {
    at_crash::thawed();
}

/// For a thread about to have the outputs write, or to make room in a ring
/// full of lines they have not written, while another thread dumps a crash
/// (the outputs stopped): waits until the dump is over, so that no line an
/// output has not written is overwritten before the dump and the crash
/// handler's writing have it, nor a line's call returns before. By then the
/// process ends by the signal, or goes on (the program's handler took it,
/// or it was ignored) with the outputs started again. Not the thread that
/// dumps, nor a forked child (which has no dumping thread). Returns at once
/// when no dump runs. No cancel acts inside the wait. Async-signal-safe.
pub fn wait_while_dumped() {
    if !at_crash::frozen() || !dumped_elsewhere() {
        return;
    }
    let cancelability = sys::cancel::off();
    while at_crash::frozen() && dumped_elsewhere() {
        sys::nap(1);
    }
    sys::cancel::restore(cancelability);
}

/// Whether a thread other than the caller is dumping a crash now (it
/// claimed the dump before it stopped the outputs). Async-signal-safe.
pub fn dumped_elsewhere() -> bool {
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    matches!(super::DUMPER.load(std::sync::atomic::Ordering::SeqCst), d if d > 0 && d != me)
}

/// In a forked child, which has only the forking thread: no other thread of
/// it is dumping, whatever the parent's were doing.
pub fn after_fork() {
    use std::sync::atomic::Ordering::SeqCst;
    super::REQUESTED.store(0, SeqCst);
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    let dumper_gone =
        super::DUMPER.fetch_update(SeqCst, SeqCst, |d| (d > 0 && d != me).then_some(0));
    if dumper_gone.is_ok() {
        // The thread that dumped is not in the child: its outputs go on.
        thaw();
    }
}
