//! At exit: the handlers that write what the outputs still have, however
//! many threads call exit() at once (see `drain_at_exit_once`).

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::Once;

use super::{drain, with_printer, Drain, DRAIN_TOTAL_MS};
use crate::logger::{enter, State};
use crate::{diag, sys};

/// Registers the exit handlers that write what the outputs still have
/// (the writer thread's lines, a fluent output's batches), once, with the
/// first thread of vlog's.
///
/// Several threads may call exit() at once (a worker pool ending on a
/// fatal condition, err(3) from threads). glibc (before 2.41) lets each run
/// the handlers left in its list, one handler per thread, and a thread that
/// finds the list empty ends the process at once, while another may still
/// be writing. So vlog's handler is in the list `EXIT_HANDLERS` times: each
/// thread that runs one writes every line recorded so far (the first of
/// them does all the rest: batches, threads) or waits for the thread doing
/// so, and while that lasts each puts another in the list (64 at most), so
/// the threads that come later find one too. Once the drain is over the
/// copies left do nothing. quick_exit(3)'s list gets the same; `_exit` none
/// (the ring has the lines, a ring file keeps them for `vlog-dump
/// --unprinted`).
pub fn drain_at_exit_once() {
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        let registered = (0..EXIT_HANDLERS)
            .all(|_| sys::at_exit(drain_at_exit) && sys::at_quick_exit(drain_at_quick_exit));
        if !registered {
            diag::warn(
                "cannot register vlog's exit handlers: the lines vlog's threads have not written \
                 yet when the program exits are lost (call vlog_flush before exit)",
            );
        }
    });
}

/// How many times vlog's exit handler is in glibc's lists (see
/// `drain_at_exit_once`): as many threads calling exit() at once, and more
/// while a drain goes on.
const EXIT_HANDLERS: usize = 8;
/// How many more copies a drain may put in the lists: bounded, whatever
/// befalls the exits.
const EXIT_HANDLERS_ADDED_MAX: u32 = 64;

/// The exit drain's state: none begun, one going on, over.
static EXIT_DRAIN: AtomicU8 = AtomicU8::new(NOT_BEGUN);
const NOT_BEGUN: u8 = 0;
const DRAINING: u8 = 1;
const DRAINED: u8 = 2;
static EXIT_HANDLERS_ADDED: AtomicU32 = AtomicU32::new(0);

extern "C-unwind" fn drain_at_exit() {
    drain_at(|| sys::at_exit(drain_at_exit));
}

extern "C-unwind" fn drain_at_quick_exit() {
    drain_at(|| sys::at_quick_exit(drain_at_quick_exit));
}

/// One copy of the exit handler (see `drain_at_exit_once`); `again` puts
/// another in its list.
fn drain_at(again: impl Fn() -> bool) {
    // Cancellation off while the drain waits in poll for a receiver: a
    // cancel the program left pending when it called exit() must not act
    // in vlog's frames (a thread-key destructor, which runs while a cancel
    // unwinds, must not turn it back on: only here).
    let state = crate::sys::cancel::off();
    drain_callback(again);
    crate::sys::cancel::restore(state);
}

fn drain_callback(again: impl Fn() -> bool) {
    crate::sys::cancel::callback!(|| {
        let _ = crate::panic::catch(|| {
            let one_more = || {
                if EXIT_HANDLERS_ADDED.fetch_add(1, Ordering::SeqCst) < EXIT_HANDLERS_ADDED_MAX {
                    again();
                }
            };
            match EXIT_DRAIN.compare_exchange(
                NOT_BEGUN,
                DRAINING,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => {
                    one_more();
                    drain_all_at_exit();
                    EXIT_DRAIN.store(DRAINED, Ordering::SeqCst);
                }
                Err(DRAINING) => {
                    // Another thread's exit drains: one more copy for a
                    // thread after this one, this one's lines written, and
                    // the rest waited for.
                    one_more();
                    with_printer(|p, said| {
                        p.catch_up_published(u64::MAX);
                        said.extend(p.take_said());
                    });
                    let start = sys::monotonic_ns();
                    while EXIT_DRAIN.load(Ordering::SeqCst) == DRAINING
                        && sys::monotonic_ns() - start < 2 * DRAIN_TOTAL_MS * 1_000_000
                    {
                        sys::nap(1);
                    }
                }
                Err(_) => {}
            }
        });
    })
}

/// In a forked child: an exit drain its parent had begun is the parent's.
pub fn after_fork() {
    EXIT_DRAIN.store(NOT_BEGUN, Ordering::SeqCst);
}

/// The first exit handler's drain: every line, what the batching outputs
/// hold, then every line by its caller, the threads joined.
fn drain_all_at_exit() {
    drain(Drain::Exit);
    // Exit handlers registered before this one, and destructors, run after
    // it: their lines are written by their callers (the writer thread may
    // not live to write them).
    enter(State::after_exit);
    // Joined, as the ticker is: a thread of vlog's still running at exit
    // would be one more thing a leak checker cannot stop.
    let threads = enter(|s| [s.threads.ticker.take(), s.take_writer()]);
    for worker in threads.into_iter().flatten().flatten() {
        worker.stop_and_join();
    }
}
