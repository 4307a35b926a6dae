//! The control socket's lock (SERVER): the server in force and its
//! thread, taken in turn by rounds and first by callers that must not wait
//! (`URGENT`), never twice on one thread, and held across a fork.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::server::Server;
use crate::error::ConfigError;
use crate::logger;
use crate::sys::watch::{self, Worker};

/// The thread that serves the socket; stopped and joined without any lock
/// (it may be waiting for one).
pub type Thread = Worker;

/// The server in force and the thread that serves it, and which
/// putting-in-force this is (a thread that makes its own socket puts it in
/// force only if nothing replaced it meanwhile).
pub struct Control {
    pub server: Option<Server>,
    pub thread: Option<Thread>,
    pub generation: u64,
}

static SERVER: Mutex<Control> = Mutex::new(Control {
    server: None,
    thread: None,
    generation: 0,
});

thread_local! {
    /// This thread holds SERVER (a signal handler that calls in is refused).
    pub static SERVING: Cell<bool> = const { Cell::new(false) };
    /// SERVER, held by a forking thread from the fork's prepare until its
    /// parent or child handler.
    static ACROSS_FORK: RefCell<Option<Serving>> = const { RefCell::new(None) };
}

/// SERVER, taken by a thread that does not hold it already, which is
/// marked inside vlog while it holds it (see `logger::Marked`). Dropped in
/// that order: the lock, then the mark.
pub struct Serving {
    pub guard: MutexGuard<'static, Control>,
    _marked: logger::Marked,
}

/// Threads waiting for SERVER that hold the logger's lock, or are about to
/// fork (which holds it): a round, which may take SERVER again and again
/// while clients read fast, lets them have it first, so that a fork (and
/// every logging thread behind it) never waits for more than the round in
/// progress.
static URGENT: AtomicUsize = AtomicUsize::new(0);

impl Serving {
    /// SERVER for a caller that must not be kept waiting (see `URGENT`).
    pub fn take() -> Option<Serving> {
        if SERVING.with(|s| s.replace(true)) {
            return None;
        }
        let marked = logger::mark_inside();
        URGENT.fetch_add(1, Ordering::SeqCst);
        let guard = SERVER.lock().unwrap_or_else(|p| p.into_inner());
        URGENT.fetch_sub(1, Ordering::SeqCst);
        Some(Serving {
            guard,
            _marked: marked,
        })
    }

    /// SERVER for a round: after every urgent caller waiting for it.
    pub fn take_in_turn() -> Option<Serving> {
        if SERVING.with(Cell::get) {
            return None;
        }
        // Yielded, not slept: a thread whose signal handlers keep running
        // (a storm of them) would never finish a sleep, which counts only
        // the time slept between them, and would wait here for ever.
        while URGENT.load(Ordering::SeqCst) > 0 {
            std::thread::yield_now();
        }
        Serving::take()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        SERVING.with(|s| s.set(false));
    }
}

/// Runs `f` on this process's server under SERVER; None without one (or
/// when this thread holds SERVER already). A server copied from a parent
/// by fork is dropped here first: its descriptors closed, its socket file
/// left to the parent.
pub fn with_server<R>(f: impl FnOnce(&mut Server) -> R) -> Option<R> {
    on_server(Serving::take()?, f)
}

/// [`with_server`] for a round: after the urgent callers.
pub fn in_turn<R>(f: impl FnOnce(&mut Server) -> R) -> Option<R> {
    on_server(Serving::take_in_turn()?, f)
}

fn on_server<R>(mut serving: Serving, f: impl FnOnce(&mut Server) -> R) -> Option<R> {
    if serving
        .guard
        .server
        .as_ref()
        .is_some_and(|s| !s.is_this_process())
    {
        serving.guard.server = None;
    }
    serving.guard.server.as_mut().map(f)
}

pub fn nested() -> ConfigError {
    ConfigError::new(
        "called while this thread was already serving the control socket (from a signal \
         handler that interrupted it?): nothing was done",
    )
}

pub fn nested_in_vlog() -> ConfigError {
    ConfigError::new(
        "called while this thread was already inside vlog (from a signal handler that \
         interrupted it?): nothing was done",
    )
}

/// Puts `server` (and `thread`, which serves it) in force; what was in
/// force before is returned, to be stopped.
pub fn put_in_force(
    serving: &mut Serving,
    server: Option<Server>,
    thread: Option<Thread>,
) -> Option<Thread> {
    serving.guard.server = server;
    serving.guard.generation += 1;
    let old = std::mem::replace(&mut serving.guard.thread, thread);
    if let Some(t) = &old {
        t.tell_stop();
    }
    old
}

/// In a fork's prepare, after the logger's lock: SERVER, held across the
/// fork, unless this thread holds it already (a fork from a signal handler
/// that interrupted a round).
pub fn before_fork() {
    let serving = Serving::take();
    let _ = ACROSS_FORK.try_with(|slot| *slot.borrow_mut() = serving);
}

fn held_across_fork() -> Option<Serving> {
    ACROSS_FORK
        .try_with(|slot| slot.borrow_mut().take())
        .ok()
        .flatten()
}

pub fn after_fork_parent() {
    drop(held_across_fork());
}

/// In a forked child: the parent's server is the parent's. Its descriptors
/// are closed here (so that the child, which has no server thread, does
/// not keep the parent's socket open), its socket file left as it is; the
/// thread's handle is kept, untouched (the thread is not in the child).
pub fn after_fork_child() {
    // Threads that waited for SERVER when the parent forked are not in the
    // child: counted on, they would keep every round of the child's waiting.
    URGENT.store(0, Ordering::SeqCst);
    if let Some(mut serving) = held_across_fork() {
        serving.guard.server = None;
        if let Some(thread) = serving.guard.thread.take() {
            watch::keep_parents(thread);
        }
    }
}
