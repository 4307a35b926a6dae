//! The ticker: while an output batches (`fluent`), a thread of vlog's takes
//! the lock every so often so that the output can send a batch that is old
//! enough, read acknowledgements and connect again; a batch never waits for
//! the next message. Started when the configuration has such an output (and
//! in a forked child, which has none of its parent's threads, by its first
//! message printed), told to stop when none is left and at shutdown, and
//! never waited for there: it may be waiting for the lock held by the thread
//! that stops it, and ends once it has the lock and sees it was stopped. At
//! exit the batching outputs send what they hold, waiting while their
//! receivers take it (a second without progress, five in all), and the
//! ticker is stopped and joined without the lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};

use super::{enter, note, State};
use crate::sys::connection;
use crate::sys::watch::{self, Waker, Worker};
use crate::{diag, sys};

/// How long a batching output waits at `vlog_flush`, `vlog_shutdown` and
/// exit for its receiver to take what it holds: while the receiver makes
/// progress, at most a second without any, five in all.
pub const DRAIN_IDLE_MS: u64 = 1000;
pub const DRAIN_TOTAL_MS: u64 = 5000;

/// The ticker's thread.
pub type Ticker = Worker;

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

    /// One step of [`drain`] under the lock: each batching output's, and
    /// what it still waits for (None: nothing left anywhere, or the
    /// outputs were replaced since the flush began).
    fn drain_step(&mut self, first: bool, generation: &mut Option<u64>) -> Option<Step> {
        let now = self.outputs.generation();
        if generation.replace(now).is_some_and(|g| g != now) {
            return None;
        }
        let mut said = Vec::new();
        let mut step = Step::default();
        for out in self.outputs.iter_mut() {
            if let Some(w) = out.drain_step(first, &mut said) {
                step.progress += w.progress;
                step.waits.extend(w.fd.map(|fd| (fd, w.to_write)));
                step.events += w.events;
            }
        }
        for event in said {
            note(self.ring.as_mut(), &event);
        }
        (step.events > 0).then_some(step)
    }

    /// What a flush that gave up says of each output still holding events.
    fn say_not_sent(&mut self) {
        let mut said = Vec::new();
        for out in self.outputs.iter_mut() {
            if let Some(w) = out.drain_step(false, &mut said) {
                said.push(out.not_sent(w.events));
            }
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
    let running = ticker.as_ref().is_some_and(Worker::is_here);
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

/// What a flush waits on between steps.
#[derive(Default)]
struct Step {
    progress: usize,
    waits: Vec<(i32, bool)>,
    events: u64,
}

/// Sends what the batching outputs hold (`vlog_flush`, `vlog_shutdown`,
/// exit), waiting while their receivers take it: at most `DRAIN_IDLE_MS`
/// without progress, `DRAIN_TOTAL_MS` in all. Called without the lock: each
/// step takes it, writes what the sockets take and lets it go, and the waits
/// on the sockets are made without it, so that no logging thread waits for
/// a slow receiver. From inside vlog on this thread (a signal handler), it
/// does nothing.
pub fn drain() {
    let start = sys::monotonic_ns();
    let mut last_progress = start;
    let mut seen = None;
    let mut generation = None;
    let mut first = true;
    loop {
        let Some(Some(step)) = enter(|s| s.drain_step(first, &mut generation)) else {
            return;
        };
        first = false;
        let now = sys::monotonic_ns();
        if seen != Some(step.progress) {
            seen = Some(step.progress);
            last_progress = now;
        }
        let deadline =
            (last_progress + DRAIN_IDLE_MS * 1_000_000).min(start + DRAIN_TOTAL_MS * 1_000_000);
        if now >= deadline {
            enter(|s| s.say_not_sent());
            return;
        }
        // One receiver at a time, a little at a time: every step looks at
        // all of them.
        let left = (deadline - now).div_ceil(1_000_000).min(50);
        match step.waits.first() {
            Some(&(fd, to_write)) => connection::wait(fd, left, to_write),
            // A connection is tried once a second: the next try.
            None => std::thread::sleep(std::time::Duration::from_millis(left)),
        }
    }
}

fn start() -> std::io::Result<Ticker> {
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        if !sys::at_exit(drain_at_exit) {
            diag::warn("cannot register vlog's exit handler: a fluent output's last batch may be lost at exit");
        }
    });
    // Its start is over before this returns: a program's messages after
    // the configuration call never meet it. Never joined under the lock
    // (see the overview).
    Worker::spawn("vlog-ticker", Arc::new(Waker::new()?), run)
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
        drain();
        if let Some(Some(ticker)) = enter(|s| s.ticker.take()) {
            ticker.stop_and_join();
        }
    });
}
