//! The control socket's life: opened (by a configuration call, or by
//! vlog's start from `VLOG_CONTROL`), served (by its thread, or a round at
//! a time by the program's loop), stopped; and what the logger calls at
//! its moments (`logger::above`).

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};

use super::command;
use super::server::Server;
use super::serving::{
    after_fork_child, after_fork_parent, before_fork, in_turn, nested, nested_in_vlog,
    put_in_force, with_server, Serving, Thread, SERVING,
};
use crate::config::ControlSpec;
use crate::error::ConfigError;
use crate::logger::{self, above::Above};
use crate::sys::watch::{Waker, Worker};
use crate::{diag, sys};

/// The thread in force is still looking its group up and making its socket
/// (see [`start_from_env`]): a look-up may wait for a directory service as
/// long as it takes, so that thread is let go of, never waited for.
pub static OPENING: AtomicBool = AtomicBool::new(false);

/// How long the thread waits between looks at its descriptors (a program
/// that closed them all is noticed this soon).
const LOOK_MS: u64 = 1000;

/// What the logger calls at its moments (see `logger::above`).
static ABOVE: Above = Above {
    start_from_env,
    before_fork,
    after_fork_parent,
    after_fork_child,
};

/// Installs the control socket's part in vlog's start and in fork (see
/// `logger::above`): every C entry point that can be a program's first
/// call does it first. Later calls cost one load; nothing waits (a `Once`
/// could, for a signal handler on the thread that runs it).
#[inline]
pub fn install() {
    logger::above::install(&ABOVE);
}

/// One round: what the connections and the socket have now, the commands
/// they asked for run, the replies handed over; never waits. What the
/// server has to say of itself (a descriptor the program closed) is said
/// as a vlog record.
pub fn serve() -> Result<(), ConfigError> {
    let (requests, said) = in_turn(|s| s.round()).ok_or_else(no_server)?;
    let replies: Vec<_> = requests.into_iter().map(command::run).collect();
    if !said.is_empty() {
        let _ = logger::enter(|s| said.iter().for_each(|e| s.note(e)));
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

/// Opens the control socket `spec` names (`vlog_control_start`,
/// `vlog_control_open`), served by a thread of vlog's (`thread`) or by the
/// program's loop; returns the descriptor that loop polls. A socket open
/// already is closed first. Nothing is left of a socket that cannot be
/// made. Takes no lock while it looks a group up or makes the socket.
pub fn start(spec: &ControlSpec, thread: bool) -> Result<c_int, ConfigError> {
    if SERVING.with(Cell::get) {
        return Err(nested());
    }
    // vlog started first: a socket the environment asks for is then the
    // one this replaces.
    logger::config_call::configure(|s| {
        s.ensure_init();
        match thread {
            true => s.thread_allowed("a control socket served by vlog (vlog_control_open serves it from the program's loop)"),
            false => Ok(()),
        }
    })?;
    let group = Server::group(spec)?;
    let path = Server::resolve(spec, group)?;
    // What can fail is made before anything in force is touched.
    let waker = match thread {
        true => Some(Arc::new(Waker::new().map_err(|e| {
            ConfigError::new(format!("cannot start the control thread: {e}"))
        })?)),
        false => None,
    };
    // A socket of ours already at that path is closed first, or the new
    // one would find it in use (if the new one then cannot be made, none
    // is open).
    let mut old = None;
    if with_server(|s| s.is_at(&path)) == Some(true) {
        let mut serving = Serving::take().ok_or_else(nested)?;
        old = put_in_force(&mut serving, None, None);
    }
    let made = Server::open(spec, path, group);
    let mut serving = Serving::take().ok_or_else(nested)?;
    let mut server = match made {
        Ok(server) => server,
        Err(e) => {
            drop(serving);
            stop_thread(old);
            return Err(e);
        }
    };
    let fd = server.poll_fd();
    register_at_exit();
    let started = match waker {
        Some(waker) => {
            server.set_waker(Arc::clone(&waker));
            // In place before the thread starts: it serves what it finds.
            match spawn(waker, None) {
                Ok(t) => Some(t),
                Err(e) => {
                    drop(serving);
                    stop_thread(old);
                    return Err(e);
                }
            }
        }
        None => None,
    };
    let replaced = put_in_force(&mut serving, Some(server), started);
    drop(serving);
    stop_thread(old);
    stop_thread(replaced);
    Ok(fd)
}

/// Stops a thread that served a socket: waited for, unless it is still
/// looking a name up (then let go of: it sees it was stopped when the
/// look-up returns, and puts nothing in force).
fn stop_thread(thread: Option<Thread>) {
    match thread {
        Some(t) if OPENING.load(Ordering::SeqCst) => t.stop(),
        Some(t) => t.stop_and_join(),
        None => {}
    }
}

/// `VLOG_CONTROL`, when vlog starts, with the logger's lock held (see
/// `logger::above`): the socket made now, and its thread started; or, for
/// a group given by name, the thread started, which looks the name up and
/// makes the socket, so that no lookup is made under the logger's lock.
/// What goes wrong is said once.
fn start_from_env(spec: &ControlSpec) {
    let said = |e: &ConfigError| diag::warn(&format!("ignoring VLOG_CONTROL: {e}"));
    let Some(mut serving) = Serving::take() else {
        return said(&nested());
    };
    let waker = match Waker::new() {
        Ok(w) => Arc::new(w),
        Err(e) => {
            return said(&ConfigError::new(format!(
                "cannot start the control thread: {e}"
            )))
        }
    };
    register_at_exit();
    let opening = if Server::group_needs_lookup(spec) {
        // The thread opens it, and puts it in force if nothing replaced
        // it meanwhile.
        OPENING.store(true, Ordering::SeqCst);
        Some((spec.clone(), serving.guard.generation + 1))
    } else {
        let made = Server::group(spec).and_then(|group| {
            let path = Server::resolve(spec, group)?;
            Server::open(spec, path, group)
        });
        match made {
            Ok(mut server) => {
                server.set_waker(Arc::clone(&waker));
                // Replaced before the thread is spawned: it serves this.
                let old = put_in_force(&mut serving, Some(server), None);
                if let Some(t) = old {
                    t.stop();
                }
                None
            }
            Err(e) => return said(&e),
        }
    };
    let deferred = opening.is_some();
    match spawn(waker, opening) {
        Ok(thread) if deferred => {
            if let Some(old) = put_in_force(&mut serving, None, Some(thread)) {
                old.stop();
            }
        }
        Ok(thread) => {
            if let Some(old) = serving.guard.thread.replace(thread) {
                old.stop();
            }
        }
        Err(e) => {
            OPENING.store(false, Ordering::SeqCst);
            serving.guard.server = None;
            said(&e);
        }
    }
}

/// Closes the control socket (its file removed) and waits for its thread
/// (`vlog_control_stop`, `vlog_shutdown`, exit). Refused from a signal
/// handler that interrupted a round on this thread, or vlog on this thread:
/// the thread to be waited for could be waiting for a lock this thread
/// holds.
pub fn stop() -> Result<(), ConfigError> {
    if SERVING.with(Cell::get) {
        return Err(nested());
    }
    if logger::inside() {
        return Err(nested_in_vlog());
    }
    let Some(mut serving) = Serving::take() else {
        return Err(nested());
    };
    let thread = put_in_force(&mut serving, None, None);
    drop(serving);
    stop_thread(thread);
    Ok(())
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

extern "C-unwind" fn stop_at_exit() {
    crate::sys::cancel::callback!(|| {
        let _ = crate::panic::catch(stop);
    })
}

/// Starts the thread; with `opening`, it makes the socket first, to put
/// in force as that generation (see [`start_from_env`]).
fn spawn(waker: Arc<Waker>, opening: Option<(ControlSpec, u64)>) -> Result<Thread, ConfigError> {
    let for_server = Arc::clone(&waker);
    Worker::spawn("vlog-control", waker, move |stop, _| {
        if let Some((spec, generation)) = opening {
            let opened = open_here(&spec, &for_server, stop, generation);
            OPENING.store(false, Ordering::SeqCst);
            if !opened {
                return;
            }
        }
        run(stop)
    })
    .map_err(|e| ConfigError::new(format!("cannot start the control thread: {e}")))
}

/// On the control thread: looks the group up, makes the socket and puts it
/// in force, unless this thread was stopped or replaced meanwhile (then
/// the socket is closed again, its file removed); false when it is not in
/// force (said once if it could not be made).
fn open_here(spec: &ControlSpec, waker: &Arc<Waker>, stop: &AtomicBool, generation: u64) -> bool {
    let made = Server::group(spec).and_then(|group| {
        let path = Server::resolve(spec, group)?;
        Server::open(spec, path, group)
    });
    let Some(mut serving) = Serving::take_in_turn() else {
        return false;
    };
    match made {
        Ok(_) if stop.load(Ordering::SeqCst) || serving.guard.generation != generation => false,
        Ok(mut server) => {
            server.set_waker(Arc::clone(waker));
            serving.guard.server = Some(server);
            true
        }
        Err(e) => {
            drop(serving);
            diag::warn(&format!("ignoring VLOG_CONTROL: {e}"));
            false
        }
    }
}

/// The thread: waits on the server's descriptor without any lock, then
/// serves a round.
fn run(stop: &AtomicBool) {
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
