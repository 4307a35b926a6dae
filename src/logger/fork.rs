//! fork: the lock is taken before fork and released on both sides, so a
//! child forked while another thread logs can log at once (its copy of the
//! lock is not held by a thread the child does not have).

use std::cell::RefCell;
use std::sync::{MutexGuard, Once};

use super::printer::Printer;
use super::{above, lock, State, INSIDE};
use crate::crash;
use crate::ring::published;
use crate::sys::lock::Guard;
use crate::{diag, panic, sys};

thread_local! {
    /// The lock, held by the forking thread from `prepare` until the parent
    /// or child handler releases it.
    static FORK_GUARD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// The logger's lock, then the printer's (the lock order).
type Held = (Guard<'static, State>, MutexGuard<'static, Printer>);

// A panic must not unwind into libc's fork; these run in the middle of it,
// so they only swallow one.
//
// While it holds the lock across fork the thread is marked inside vlog,
// like every other holder: a signal handler that runs in between (SIGCHLD
// from the child just made, say) and logs is dropped, not left waiting for
// its own thread. A fork from a signal handler that interrupted vlog on
// this thread finds the mark set and the lock already this thread's: it
// takes nothing, and the interrupted call releases the lock on both sides.
extern "C-unwind" fn prepare() {
    sys::cancel::callback!(|| panic::swallow(|| {
        if INSIDE.with(|inside| inside.replace(true)) {
            return;
        }
        // FORK_GUARD has a destructor: a fork from a thread that is
        // exiting (a pthread_key destructor) finds it gone, and forks
        // without holding the lock, as before vlog took it.
        if FORK_GUARD.try_with(|_| ()).is_err() {
            INSIDE.with(|inside| inside.set(false));
            return;
        }
        // The writer thread ends before the fork (the next line printed in
        // the parent starts another): a child has no copy of a thread it
        // does not have, whose memory a leak checker there could not
        // account for. Stopped and joined without the lock, which it may
        // be waiting for to say what the outputs reported.
        let writer = lock().take_writer();
        if let Some(writer) = writer {
            writer.stop_and_join();
        }
        let mut guard = lock();
        // The outputs write every line recorded for them: a parent that
        // exits at once (daemon(3)) loses none, and the child, whose copy
        // of the ring then has none pending, writes none twice.
        let printer = guard.printer();
        FORK_GUARD.with(|slot| *slot.borrow_mut() = Some((guard, printer)));
        // The control socket's lock, after the logger's (its lock order).
        if let Some(above) = above::get() {
            (above.before_fork)();
        }
    }))
}

/// Releases what `prepare` took, if it took anything.
fn release() -> Option<Held> {
    let guard = FORK_GUARD
        .try_with(|slot| slot.borrow_mut().take())
        .ok()
        .flatten();
    if guard.is_some() {
        INSIDE.with(|inside| inside.set(false));
    }
    guard
}

extern "C-unwind" fn parent() {
    sys::cancel::callback!(|| panic::swallow(|| {
        if let Some(above) = above::get() {
            (above.after_fork_parent)();
        }
        drop(release());
    }))
}

extern "C-unwind" fn child() {
    sys::cancel::callback!(|| panic::swallow(|| {
        // The child has only this thread: no reader can be inside the ring,
        // and the cached thread id belongs to the parent.
        published::forget_readers_after_fork();
        // A thread of the parent's that walked ahead is not here.
        crate::ring::ahead::after_fork();
        sys::forget_ids_after_fork();
        super::ticker::exit::after_fork();
        super::printer::after_fork();
        super::watchers::after_fork_child();
        sys::alloc::after_fork();
        crash::after_fork();
        // The control socket is the parent's; the child opens its own if
        // it asks.
        if let Some(above) = above::get() {
            (above.after_fork_child)();
        }
        if let Some((mut state, mut printer)) = release() {
            // A TCP connection to a collector is the parent's: two processes
            // writing one stream could interleave frames. The child makes
            // its own.
            printer.outputs.iter_mut().for_each(|o| o.after_fork());
            // Its own memory of error contexts, from its own records on:
            // the parent's outputs, on the files the child shares, showed
            // what came before.
            let next_seq = state.stats().recorded;
            printer.restart_contexts(next_seq);
            // A configuration call another thread was making is not the
            // child's: what may wait for the outputs is not bounded for it.
            state.configuring = 0;
            state.bound_unprinted();
            // Replaced rings too: one a record was in flight in when it
            // was replaced is kept until the record is done, which in the
            // child it never is.
            let State { ring, retired, .. } = &mut *state;
            for ring in ring.iter_mut().chain(retired.iter_mut()) {
                ring.after_fork();
            }
            // Readers find at once that the ring is not the child's to
            // print from (its exit handler may run before it logs).
            published::after_fork(state.ring.as_ref());
            state.writer_changed();
        } else if let Some(mut state) = super::STATE.try_lock() {
            // Forked from a signal handler that interrupted vlog on this
            // thread while it copied a record (holding no lock): the other
            // threads' records in flight are abandoned all the same (this
            // thread's own is finished when the handler returns).
            let State { ring, retired, .. } = &mut *state;
            for ring in ring.iter_mut().chain(retired.iter_mut()) {
                if ring.is_private() {
                    ring.after_fork();
                }
            }
        }
    }))
}

/// Installs the handlers once per process.
pub fn register_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The process's tag, drawn at vlog's start: a seccomp filter the
        // program installs later need not allow getrandom(2), and a
        // forked child's is made from it (`sys::forget_ids_after_fork`).
        sys::process_tag();
        if !sys::at_fork(prepare, parent, child) {
            diag::warn(
                "cannot register fork handlers: a child forked while another thread logs may block",
            );
        }
    });
}
