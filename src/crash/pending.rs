//! At a crash, after the dump: the lines vlog's writer thread had not
//! written yet, written to the files and stderr that print them (see
//! `output::at_crash`), so that a crash loses no line an output accepted.
//! No allocation and no lock: the ring is read lock-free from where the
//! outputs stopped, each descriptor used only while it is still the file
//! the output opened.

use crate::output::at_crash;
use crate::ring::reader::{self, Cursor};
use crate::ring::{published, Entry, Region};
use crate::sys;
use crate::text::json::render_json;
use crate::text::line::render_line;
use crate::text::time::Clock;

/// How long the crash handler waits for the outputs to finish the batch
/// they are writing (then it writes, and a line may appear twice).
const BUSY_WAIT_MS: u64 = 200;

/// Before the dump: the outputs write nothing more (the batch being
/// written is given a moment to finish), so that the lines pending now are
/// written once, by [`write`], after the dump. Async-signal-safe.
pub fn freeze() {
    for _ in 0..BUSY_WAIT_MS {
        if !at_crash::busy() {
            break;
        }
        sys::nap(1);
    }
    at_crash::crashed();
}

/// Writes the lines pending at a crash (after [`freeze`]), and marks them
/// printed when every output got them: if the program recovers from the
/// fault, they are not written again. Only in a process whose outputs read the ring (not one sharing
/// another's ring file). Async-signal-safe.
pub fn write() {
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
        at_crash::targets(|target| {
            let same = sys::fd_info(target.fd)
                .is_ok_and(|info| (info.dev, info.ino) == (target.dev, target.ino));
            if !same {
                return;
            }
            let pid = Some(sys::process_id());
            super::dump::with_fd_sink(target.fd, |sink| {
                let mut clock = Clock::new();
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
                        _ => {}
                    },
                );
            });
        });
        // If the program recovers, the outputs go on from here; unless some
        // output did not get these lines here (journald, syslog, fluent):
        // then they go on from where they were, and a file may get a line
        // twice rather than another output none.
        if at_crash::complete() {
            view.set_printed(end);
        }
    });
}

/// The program handles the signal itself and may go on: the outputs write
/// again.
pub fn thaw() {
    at_crash::thawed();
}
