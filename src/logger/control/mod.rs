//! The control socket: a running daemon's filters, outputs and level
//! changed, its configuration shown, its ring streamed back, through a Unix
//! socket that only the daemon's own user, root and a group it names may
//! use (`VLOG_CONTROL`, `vlog_control_start`; `vlog-ctl` speaks to it).
//!
//! - `server`: the socket, the connections, and one round of serving them
//!   without waiting (`Server::round`).
//! - `client`: one connection: its request read (bounded in size and
//!   time), its reply written as the socket takes it, a dump or a follow
//!   read from the ring a part at a time.
//! - `command`: the requests, and what each does.
//!
//! Served by a thread of vlog's (`Thread`, started by `VLOG_CONTROL` or
//! `vlog_control_start`), or by the program's own event loop: it polls one
//! descriptor (`vlog_control_open`) and calls `vlog_control_handle` when it
//! is readable. Both serve through [`serve`].
//!
//! # Locks
//!
//! The server's state is behind `SERVER`, the logger's behind its own lock
//! (`STATE`). The lock order is STATE, then SERVER (a server is started by
//! the first configuration, which holds STATE), and nothing takes STATE
//! while it holds SERVER: a round collects the requests under SERVER, lets
//! it go, runs each command under STATE (for as long as a configuration
//! call takes), and takes SERVER again to hand the replies over. So no
//! client, however slow, makes a logging thread wait: the logger's lock is
//! never held while a client is read or written to, and a dump reads the
//! ring without any lock. A fork takes both, in that order
//! (`logger::fork`). While clients read fast, rounds follow each other
//! closely, and a thread that wants SERVER while it holds STATE (a fork,
//! a configuration call) is let in first (`URGENT`): it waits for the round
//! in progress at most, and a round reads at most `ROUND_PARTS` parts.
//!
//! A call that would nest on one thread (a signal handler that interrupted
//! a round and calls in again) is refused, never left waiting for its own
//! thread.

mod client;
mod command;
mod server;

pub use command::COMMANDS;

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};

use super::{configure, note, State};
use crate::config::ControlSpec;
use crate::error::ConfigError;
use crate::sys::watch::{self, Waker, Worker};
use crate::{diag, sys};
use server::Server;

static SERVER: Mutex<Option<Server>> = Mutex::new(None);

thread_local! {
    /// This thread holds SERVER (a signal handler that calls in is refused).
    static SERVING: Cell<bool> = const { Cell::new(false) };
}

/// How long the thread waits between looks at its descriptors (a program
/// that closed them all is noticed this soon).
const LOOK_MS: u64 = 1000;

/// The thread that serves the socket, kept in the logger's state; stopped
/// and joined without the lock (it may be waiting for it).
pub type Thread = Worker;

/// SERVER, taken by a thread that does not hold it already.
pub struct Serving(MutexGuard<'static, Option<Server>>);

/// Threads waiting for SERVER that hold the logger's lock, or are about to
/// fork (which holds it): a round, which may take SERVER again and again
/// while clients read fast, lets them have it first, so that a fork or a
/// configuration call (and every logging thread behind it) never waits
/// for more than the round in progress.
static URGENT: AtomicUsize = AtomicUsize::new(0);

impl Serving {
    /// SERVER for a caller that must not be kept waiting (see `URGENT`).
    fn take() -> Option<Serving> {
        if SERVING.with(|s| s.replace(true)) {
            return None;
        }
        URGENT.fetch_add(1, Ordering::SeqCst);
        let guard = SERVER.lock().unwrap_or_else(|p| p.into_inner());
        URGENT.fetch_sub(1, Ordering::SeqCst);
        Some(Serving(guard))
    }

    /// SERVER for a round: after every urgent caller waiting for it.
    fn take_in_turn() -> Option<Serving> {
        if SERVING.with(Cell::get) {
            return None;
        }
        while URGENT.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(std::time::Duration::from_micros(50));
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
fn with_server<R>(f: impl FnOnce(&mut Server) -> R) -> Option<R> {
    on_server(Serving::take()?, f)
}

/// [`with_server`] for a round: after the urgent callers.
fn in_turn<R>(f: impl FnOnce(&mut Server) -> R) -> Option<R> {
    on_server(Serving::take_in_turn()?, f)
}

fn on_server<R>(mut serving: Serving, f: impl FnOnce(&mut Server) -> R) -> Option<R> {
    if serving.0.as_ref().is_some_and(|s| !s.is_this_process()) {
        *serving.0 = None;
    }
    serving.0.as_mut().map(f)
}

fn nested() -> ConfigError {
    ConfigError::new(
        "called while this thread was already serving the control socket (from a signal \
         handler that interrupted it?): nothing was done",
    )
}

/// One round: what the connections and the socket have now, the commands
/// they asked for run, the replies handed over; never waits. What the
/// server has to say of itself (a descriptor the program closed) is said
/// as a vlog record.
pub fn serve() -> Result<(), ConfigError> {
    let (requests, said) = in_turn(|s| s.round()).ok_or_else(no_server)?;
    let replies: Vec<_> = requests.into_iter().map(command::run).collect();
    if !said.is_empty() {
        let _ = super::enter(|s| said.iter().for_each(|e| note(s.ring.as_mut(), e)));
    }
    if !replies.is_empty() {
        in_turn(|s| s.deliver(replies)).ok_or_else(no_server)?;
    }
    Ok(())
}

fn no_server() -> ConfigError {
    if SERVING.with(Cell::get) {
        nested()
    } else {
        ConfigError::new("no control socket is open (see vlog_control_open)")
    }
}

/// The descriptor a program's event loop polls for the server (readable
/// when a round has something to do).
pub fn poll_fd() -> Result<c_int, ConfigError> {
    with_server(|s| s.poll_fd()).ok_or_else(no_server)
}

impl State {
    /// Opens the control socket `spec` names, served by a thread of vlog's
    /// (`thread`) or by the program's loop. A socket open already is
    /// closed first (its thread returned, to be joined without the lock).
    /// Nothing is left of a socket that cannot be made.
    pub fn start_control(
        &mut self,
        spec: &ControlSpec,
        thread: bool,
    ) -> Result<(c_int, Option<Thread>), ConfigError> {
        if SERVING.with(Cell::get) {
            return Err(nested());
        }
        self.ensure_init();
        let path = Server::resolve(spec)?;
        // What can fail is made before anything in force is touched.
        let waker = match thread {
            true => Some(Arc::new(Waker::new().map_err(|e| {
                ConfigError::new(format!("cannot start the control thread: {e}"))
            })?)),
            false => None,
        };
        // A socket of ours already at that path is closed first, or the
        // new one would find it in use (if the new one then cannot be
        // made, none is open).
        let mut old = None;
        if with_server(|s| s.is_at(&path)) == Some(true) {
            old = self.stop_control();
        }
        let mut server = Server::open(spec, path)?;
        let old = old.or_else(|| self.stop_control());
        let fd = server.poll_fd();
        if let Some(waker) = &waker {
            server.set_waker(Arc::clone(waker));
        }
        register_at_exit();
        // In place before the thread starts: it serves what it finds.
        let mut serving = Serving::take().ok_or_else(nested)?;
        *serving.0 = Some(server);
        drop(serving);
        if let Some(waker) = waker {
            match spawn(waker) {
                Ok(started) => self.control = Some(started),
                Err(e) => {
                    if let Some(mut serving) = Serving::take() {
                        *serving.0 = None;
                    }
                    return Err(e);
                }
            }
        }
        Ok((fd, old))
    }

    /// Closes the control socket (its file removed) and tells its thread
    /// to stop; the thread is returned, to be joined without the lock.
    pub fn stop_control(&mut self) -> Option<Thread> {
        if let Some(mut serving) = Serving::take() {
            *serving.0 = None;
        }
        let thread = self.control.take();
        if let Some(t) = &thread {
            t.tell_stop();
        }
        thread
    }

    /// The control socket as `VLOG_CONTROL` writes it, if one is open.
    pub fn control_env(&self) -> Option<String> {
        // Taken under STATE: the lock order allows it.
        with_server(|s| s.spec_env())
    }
}

/// Stops the control socket from outside the logger's lock, and waits for
/// its thread (`vlog_control_stop`, `vlog_shutdown`, exit). Refused from a
/// signal handler that interrupted a round on this thread: the thread to
/// be waited for could be waiting for the SERVER this thread holds.
pub fn stop() -> Result<(), ConfigError> {
    if SERVING.with(Cell::get) {
        return Err(nested());
    }
    match super::enter(|s| s.stop_control()) {
        Some(thread) => {
            if let Some(thread) = thread {
                thread.stop_and_join();
            }
            Ok(())
        }
        None => Err(ConfigError::new(
            "called while this thread was already inside vlog (from a signal handler that \
             interrupted it?): nothing was done",
        )),
    }
}

/// Starts the control socket from a configuration call: the thread of a
/// socket it replaced is joined after the lock is let go.
pub fn start(spec: &ControlSpec, thread: bool) -> Result<c_int, ConfigError> {
    let (fd, old) = configure(|s| s.start_control(spec, thread))?;
    if let Some(old) = old {
        old.stop_and_join();
    }
    Ok(fd)
}

fn register_at_exit() {
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        if !sys::at_exit(stop_at_exit) {
            diag::warn(
                "cannot register vlog's exit handler: the control socket's file stays after exit",
            );
        }
    });
}

extern "C" fn stop_at_exit() {
    let _ = crate::panic::catch(stop);
}

fn spawn(waker: Arc<Waker>) -> Result<Thread, ConfigError> {
    Worker::spawn("vlog-control", waker, run)
        .map_err(|e| ConfigError::new(format!("cannot start the control thread: {e}")))
}

/// The thread: waits on the server's descriptor without any lock, then
/// serves a round.
fn run(stop: &AtomicBool, _waker: &Waker) {
    loop {
        let fd = match in_turn(|s| s.poll_fd()) {
            Some(fd) if !stop.load(Ordering::SeqCst) => fd,
            _ => return,
        };
        sys::listen::wait_on(fd, LOOK_MS);
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if let Err(message) = crate::panic::catch(serve) {
            // A bug in vlog: said, and the socket served no more (as the
            // ticker stops on one).
            diag::warn(&format!(
                "internal error in the control thread ({message}): the control socket is \
                 not served any more"
            ));
            return;
        }
    }
}

/// In `logger::fork`'s prepare, after the logger's lock: SERVER, held
/// across fork unless this thread holds it already (a fork from a signal
/// handler that interrupted a round).
pub fn before_fork() -> Option<Serving> {
    Serving::take()
}

/// In a forked child, with SERVER held across the fork: the parent's
/// server is the parent's. Its descriptors are closed here (so that the
/// child, which has no server thread, does not keep the parent's socket
/// open), its socket file left as it is; the thread's handle in the
/// logger's state is kept, untouched.
pub fn after_fork_child(held: Option<Serving>, state: &mut State) {
    if let Some(mut serving) = held {
        *serving.0 = None;
    }
    if let Some(thread) = state.control.take() {
        watch::keep_parents(thread);
    }
}
