//! A relay reading a descriptor on a thread of vlog's own: for a daemon
//! without an event loop of its own, or one that would rather not feed.
//! The thread reads a duplicate of the descriptor (so the caller may close
//! its own at once), with every signal blocked, until end of file, a read
//! error, or `stop`, which first takes what can be read without waiting (at
//! most 1 MiB, so a child that goes on writing cannot keep it).

use std::io;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::Relay;
use crate::logger;
use crate::sys::fd::Fd;
use crate::sys::watch::{self, Ready, Waker};

/// How much one read takes (allocated once, by the thread).
const CHUNK: usize = 64 * 1024;
/// The most `stop` takes before the thread ends: more than a pipe holds (64
/// KiB by default, 1 MiB at most for an unprivileged process).
const DRAIN_MAX: usize = 1 << 20;

pub struct Watch {
    thread: Option<JoinHandle<()>>,
    waker: Arc<Waker>,
}

impl Watch {
    /// Starts reading `fd` into `relay`.
    pub fn start(relay: Arc<Mutex<Relay>>, fd: std::ffi::c_int) -> io::Result<Watch> {
        let file = watch::duplicate(fd)?;
        let waker = Arc::new(Waker::new()?);
        let woken = Arc::clone(&waker);
        let thread = watch::spawn_quiet("vlog-relay", move || {
            if let Err(message) = crate::panic::catch(|| run(&relay, &file, &woken)) {
                logger::apply::step_down(&message);
            }
        })?;
        Ok(Watch {
            thread: Some(thread),
            waker,
        })
    }

    /// Stops the thread once it has taken what the descriptor has now, and
    /// waits for it.
    pub fn stop(mut self) {
        self.waker.wake();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// In a forked child, where the thread does not exist: forgets it
    /// without a call into pthreads about it.
    pub fn abandon(mut self) {
        std::mem::forget(self.thread.take());
    }
}

fn run(relay: &Mutex<Relay>, file: &Fd, waker: &Waker) {
    let mut buf = vec![0u8; CHUNK];
    let feed = |bytes: &[u8]| relay.lock().unwrap_or_else(|p| p.into_inner()).feed(bytes);
    let fd = file.raw();
    loop {
        match watch::wait(fd, waker) {
            Ok(Ready::Data) => match watch::read_some(fd, &mut buf) {
                Ok(0) => break,
                Ok(n) => feed(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => break,
            },
            Ok(Ready::Woken) => {
                // What the descriptor had when the stop came, and no more:
                // a child that goes on writing must not keep the thread.
                let mut taken = 0;
                while taken < DRAIN_MAX && watch::readable_now(fd) {
                    match watch::read_some(fd, &mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            feed(&buf[..n]);
                            taken += n;
                        }
                    }
                }
                break;
            }
            Err(_) => break,
        }
    }
    relay.lock().unwrap_or_else(|p| p.into_inner()).finish();
}
