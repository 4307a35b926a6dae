//! The ticker: while an output batches (`fluent`), a thread of vlog's takes
//! the lock every so often so that the output can send a batch that is old
//! enough, read acknowledgements and connect again; a batch never waits for
//! the next message. Started when the configuration has such an output (and
//! in a forked child, which has none of its parent's threads, by its first
//! message printed), told to stop when none is left and at shutdown, and
//! never waited for: it may be waiting for the lock held by the thread that
//! stops it, and ends once it has the lock and sees it was stopped. At exit
//! the batching outputs send what they hold, waiting while their receivers
//! take it (a second without progress, five in all).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Once};

use super::{enter, note, State};
use crate::sys::watch::{self, Waker};
use crate::{diag, sys};

/// How long a batching output waits at `vlog_flush`, `vlog_shutdown` and
/// exit for its receiver to take what it holds: while the receiver makes
/// progress, at most a second without any, five in all.
pub const DRAIN_IDLE_MS: u64 = 1000;
pub const DRAIN_TOTAL_MS: u64 = 5000;

pub struct Ticker {
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    /// The process that started it: a forked child has no such thread.
    pid: u32,
}

impl std::fmt::Debug for Ticker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ticker(pid {})", self.pid)
    }
}

impl Ticker {
    fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        if self.pid == sys::process_id() {
            self.waker.wake();
        }
    }
}

impl State {
    /// Starts the ticker if an output batches and none runs in this
    /// process; stops it if no output batches. After every configuration
    /// call.
    pub fn keep_ticker(&mut self) {
        keep(&mut self.ticker, self.outputs.batching());
    }

    /// One tick of the outputs; how soon the next is needed (ms).
    fn tick(&mut self) -> Option<u64> {
        let mut said = Vec::new();
        let next = self.outputs.tick(&mut said);
        for event in said {
            note(self.ring.as_mut(), &event);
        }
        next
    }

    /// Sends what the batching outputs hold, waiting as `DRAIN_IDLE_MS`
    /// and `DRAIN_TOTAL_MS` say for each; what cannot be sent is said.
    pub fn drain_outputs(&mut self) {
        let mut said = Vec::new();
        for out in self.outputs.iter_mut() {
            out.drain(DRAIN_IDLE_MS, DRAIN_TOTAL_MS, &mut said);
        }
        for event in said {
            note(self.ring.as_mut(), &event);
        }
    }

    /// At shutdown: the ticker told to stop.
    pub fn stop_ticker(&mut self) {
        if let Some(old) = self.ticker.take() {
            old.stop();
        }
    }
}

/// [`State::keep_ticker`] on the parts of the state it needs: also after a
/// message was printed, for a forked child's first.
#[inline(always)]
pub fn keep(ticker: &mut Option<Ticker>, batching: bool) {
    let running = ticker.as_ref().is_some_and(|t| t.pid == sys::process_id());
    if batching != running {
        restart(ticker, batching);
    }
}

#[cold]
fn restart(ticker: &mut Option<Ticker>, batching: bool) {
    if let Some(old) = ticker.take() {
        old.stop();
    }
    if !batching {
        return;
    }
    match start() {
        Ok(started) => *ticker = Some(started),
        Err(e) => diag::warn(&format!(
            "cannot start vlog's ticker thread ({e}): a fluent output sends its batches \
             when full, with the next message after they are old enough, and on vlog_flush"
        )),
    }
}

fn start() -> std::io::Result<Ticker> {
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        if !sys::at_exit(drain_at_exit) {
            diag::warn("cannot register vlog's exit handler: a fluent output's last batch may be lost at exit");
        }
    });
    let stop = Arc::new(AtomicBool::new(false));
    let waker = Arc::new(Waker::new()?);
    let (stopped, woken) = (Arc::clone(&stop), Arc::clone(&waker));
    // The thread's start (std's, which allocates) is over before this
    // returns: a program's messages after the configuration call never
    // meet it.
    let started = Arc::new(Barrier::new(2));
    let go = Arc::clone(&started);
    // Detached: never joined (see the overview).
    watch::spawn_quiet("vlog-ticker", move || {
        go.wait();
        run(&stopped, &woken)
    })?;
    started.wait();
    Ok(Ticker {
        stop,
        waker,
        pid: sys::process_id(),
    })
}

fn run(stop: &AtomicBool, waker: &Waker) {
    let mut period = 100;
    loop {
        if watch::sleep(waker, period) || stop.load(Ordering::SeqCst) {
            return;
        }
        let next = crate::panic::catch(|| {
            enter(|s| {
                // Under the lock: a stop from a configuration call that held
                // it is seen here.
                if stop.load(Ordering::SeqCst) {
                    None
                } else {
                    s.tick()
                }
            })
            .flatten()
        });
        match next {
            Ok(Some(ms)) => period = ms.clamp(1, 1000),
            _ => return,
        }
    }
}

extern "C" fn drain_at_exit() {
    let _ = crate::panic::catch(|| {
        enter(|s| {
            s.drain_outputs();
            s.stop_ticker();
        })
    });
}
