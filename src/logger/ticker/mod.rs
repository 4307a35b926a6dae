//! vlog's threads for its outputs.
//!
//! - The ticker: while an output batches (`fluent`), a thread of vlog's
//!   takes the lock every so often so that the output can send a batch
//!   that is old enough, read acknowledgements and connect again; a batch
//!   never waits for the next message.
//! - The resolver: while a collector's name is still to be looked up, a
//!   thread of vlog's looks it up (getaddrinfo, which can wait as long as
//!   the name servers take) without the lock, and takes the lock only to
//!   hand the address to the output and write what waited for it, as the
//!   new connection takes it (see `output::address`). No thread that logs,
//!   and no configuration call, ever waits for a name.
//!
//! Each is started when the configuration needs it (and in a forked child,
//! which has none of its parent's threads, by its first message printed),
//! told to stop when it is not needed and at shutdown, and never waited for
//! there: it may be waiting for the lock held by the thread that stops it
//! (or for a name server), and ends once it sees it was stopped. At exit
//! the batching outputs send what they hold, waiting while their receivers
//! take it (see [`Drain`]), and the ticker is
//! stopped and joined without the lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use std::net::SocketAddr;

pub mod exit;

use super::printer::caller::Walk;
use super::printer::{self, Printer};
use super::{enter, State};
use crate::output::{Lookups, Said, NEEDS_RESOLVER, NEEDS_TICKER};
use crate::sys::connection;
use crate::sys::watch::{self, Waker, Worker};
use crate::{diag, sys};

/// Whose flush [`drain`] is, which says how long it waits without
/// progress (bytes written, or batches acknowledged), five seconds in all.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Drain {
    /// `vlog_flush` and `vlog_shutdown`, which the program asked for: a
    /// second without progress, which lets a connection that broke (a
    /// receiver restarted) be made again once.
    Asked,
    /// At exit, which every process that logged passes (a daemon may fork
    /// a worker per request): 200 ms without progress, and none at all
    /// where nothing can move (no connection: refused, or not made yet).
    Exit,
}

impl Drain {
    fn idle_ms(self) -> u64 {
        match self {
            Drain::Asked => 1000,
            Drain::Exit => 200,
        }
    }
}

/// The most any flush waits in all.
pub const DRAIN_TOTAL_MS: u64 = 5000;

/// The ticker's and the resolver's threads, as the outputs need them.
#[derive(Debug, Default)]
pub struct Threads {
    /// The outputs' writer (see `printer`).
    pub writer: Option<Worker>,
    ticker: Option<Worker>,
    resolver: Option<Worker>,
    /// The resolver found nothing left to look up and ended (said under
    /// the lock, so that names set after that start a new one).
    resolver_gone: bool,
}

impl Threads {
    pub const fn new() -> Threads {
        Threads {
            writer: None,
            ticker: None,
            resolver: None,
            resolver_gone: false,
        }
    }

    /// Which of them run in this process (`output::NEEDS_*`).
    #[inline(always)]
    fn running(&self) -> u8 {
        let ticker = self.ticker.as_ref().is_some_and(Worker::is_here);
        let resolver = !self.resolver_gone && self.resolver.as_ref().is_some_and(Worker::is_here);
        (u8::from(ticker) * NEEDS_TICKER) | (u8::from(resolver) * NEEDS_RESOLVER)
    }
}

impl State {
    /// Starts the threads the outputs need and that do not run in this
    /// process; stops those they do not need. After every configuration
    /// call.
    pub fn keep_ticker(&mut self) {
        let needs = self.needs;
        keep(&mut self.threads, needs);
        // New names to look up: the resolver, idle, looks now.
        if needs & NEEDS_RESOLVER != 0 {
            if let Some(resolver) = &self.threads.resolver {
                resolver.wake();
            }
        }
    }

    /// At shutdown: the threads told to stop.
    pub fn stop_ticker(&mut self) {
        let threads = [
            self.take_writer(),
            self.threads.ticker.take(),
            self.threads.resolver.take(),
        ];
        threads.into_iter().flatten().for_each(Worker::stop);
    }

    /// The collectors' names due, as the resolver takes them; None when
    /// none is left to look up, and then the resolver ends, which is noted
    /// under this lock (see `Threads::resolver_gone`).
    fn lookups(&mut self) -> Option<Lookups> {
        let mut printer = printer::lock_of(self.printer);
        let lookups = printer.outputs.lookups(now_ms());
        self.needs = printer.outputs.needs();
        drop(printer);
        if lookups.due.is_empty() && lookups.next_ms.is_none() {
            self.threads.resolver_gone = true;
            return None;
        }
        Some(lookups)
    }

    /// What the resolver found.
    fn looked_up(&mut self, generation: u64, results: Vec<(usize, Result<SocketAddr, String>)>) {
        let mut said = Vec::new();
        let mut printer = printer::lock_of(self.printer);
        printer
            .outputs
            .looked_up(generation, results, now_ms(), &mut said);
        self.needs = printer.outputs.needs();
        drop(printer);
        self.note_all(said);
    }
}

impl Printer {
    /// One tick of the outputs; how soon the next is needed (ms).
    fn tick(&mut self, said: &mut Vec<Said>) -> Option<u64> {
        self.outputs.tick(said)
    }

    /// One step of [`drain`] under the printer's lock: each batching
    /// output's, and what it still waits for (None: nothing left
    /// anywhere, or the outputs were replaced since the flush began).
    fn drain_step(
        &mut self,
        first: bool,
        generation: &mut Option<u64>,
        said: &mut Vec<Said>,
    ) -> Option<Step> {
        let now = self.outputs.generation();
        if generation.replace(now).is_some_and(|g| g != now) {
            return None;
        }
        let mut step = Step::default();
        for out in self.outputs.iter_mut() {
            if let Some(w) = out.drain_step(first, said) {
                step.progress += w.progress;
                step.waits.extend(w.fd.map(|fd| (fd, w.to_write)));
                step.resolving |= w.resolving;
                step.events += w.events;
            }
        }
        (step.events > 0).then_some(step)
    }

    /// What a flush that gave up says of each output still holding events.
    fn say_not_sent(&mut self, said: &mut Vec<Said>) {
        for out in self.outputs.iter_mut() {
            if let Some(w) = out.drain_step(false, said) {
                said.push(out.not_sent(w.events).into());
            }
        }
    }
}

/// Runs `f` on the outputs under the printer's lock alone, and says what
/// they had to report afterwards under the logger's. The thread is marked
/// inside vlog meanwhile, as every holder of the printer's lock is: a
/// signal handler that logs on it is dropped, never left waiting for a
/// lock its own thread holds.
fn with_printer<R>(f: impl FnOnce(&mut Printer, &mut Vec<Said>) -> R) -> R {
    let _marked = super::mark_inside();
    let mut said = Vec::new();
    let result = f(&mut printer::lock(), &mut said);
    if !said.is_empty() {
        super::relock(|s| s.note_all(said));
    }
    result
}

fn now_ms() -> u64 {
    sys::monotonic_ns() / 1_000_000
}

/// [`State::keep_ticker`] on the parts of the state it needs: also after a
/// message was printed, for a forked child's first. The ticker runs only
/// while it is needed; the resolver until no name is left to look up (it
/// ends then by itself), and one stuck in a name server's time is woken
/// for new names, never joined nor doubled.
#[inline(always)]
pub fn keep(threads: &mut Threads, needs: u8) {
    let running = threads.running();
    if needs & !running != 0 || running & !needs & NEEDS_TICKER != 0 {
        restart(threads, needs);
    }
}

#[cold]
fn restart(threads: &mut Threads, needs: u8) {
    let running = threads.running();
    if running & NEEDS_TICKER != needs & NEEDS_TICKER {
        if let Some(old) = threads.ticker.take() {
            old.stop();
        }
        if needs & NEEDS_TICKER != 0 {
            match start("vlog-ticker", run) {
                Ok(started) => threads.ticker = Some(started),
                Err(e) => diag::warn(&format!(
                    "cannot start vlog's ticker thread ({e}): a fluent output sends its \
                     batches when full, with the next message after they are old enough, and \
                     on vlog_flush"
                )),
            }
        }
    }
    if needs & !running & NEEDS_RESOLVER != 0 {
        // One that ended, or a forked child's copy of its parent's (not in
        // the child): let go of.
        if let Some(old) = threads.resolver.take() {
            old.stop();
        }
        {
            match start("vlog-resolver", resolve) {
                Ok(started) => {
                    threads.resolver = Some(started);
                    threads.resolver_gone = false;
                }
                Err(e) => diag::warn(&format!(
                    "cannot start vlog's resolver thread ({e}): a collector named by a host \
                     name gets nothing until it can start"
                )),
            }
        }
    }
}

/// What a flush waits on between steps.
#[derive(Default)]
struct Step {
    progress: usize,
    waits: Vec<(i32, bool)>,
    events: u64,
    /// A receiver's name is being looked up for the first time.
    resolving: bool,
}

/// Sends what the batching outputs hold (`vlog_flush`, `vlog_shutdown`,
/// exit), waiting while their receivers take it: at most `why`'s idle time
/// without progress, `DRAIN_TOTAL_MS` in all. Called without the lock: each
/// step takes it, writes what the sockets take and lets it go, and the waits
/// on the sockets are made without it, so that no logging thread waits for
/// a slow receiver. From inside vlog on this thread (a signal handler), it
/// does nothing.
pub fn drain(why: Drain) {
    let start = sys::monotonic_ns();
    let mut last_progress = start;
    let mut seen = None;
    let mut generation = None;
    let mut first = true;
    if super::inside() {
        return;
    }
    // Every line recorded for the outputs first, and what they hold for
    // slow readers, whose room is waited for with no lock held, as long as
    // they take something (a reader that takes nothing for 5 s is stalled,
    // and its lines counted lost: `output::slow`).
    loop {
        match with_printer(|p, said| {
            let walk = p.walk_step(u64::MAX);
            said.extend(p.take_said());
            walk
        }) {
            Walk::Wait(fd, _) => {
                sys::room::wait_writable(fd, 100);
            }
            Walk::Again => {}
            Walk::Done => break,
        }
    }
    loop {
        let Some(step) = with_printer(|p, said| p.drain_step(first, &mut generation, said)) else {
            return;
        };
        first = false;
        let now = sys::monotonic_ns();
        if seen != Some(step.progress) {
            seen = Some(step.progress);
            last_progress = now;
        }
        let deadline =
            (last_progress + why.idle_ms() * 1_000_000).min(start + DRAIN_TOTAL_MS * 1_000_000);
        // At exit, nothing can move where there is no connection (refused,
        // or not made yet): the next try is a second away. A name looked up
        // for the first time may come within the wait.
        let stuck = step.waits.is_empty() && !step.resolving;
        if now >= deadline || (why == Drain::Exit && stuck) {
            with_printer(|p, said| p.say_not_sent(said));
            return;
        }
        // One receiver at a time, a little at a time: every step looks at
        // all of them.
        let left = (deadline - now).div_ceil(1_000_000).min(50);
        match step.waits.first() {
            Some(&(fd, to_write)) => connection::wait(fd, left, to_write),
            // A connection is tried once a second: the next try.
            None => sys::nap(left),
        }
    }
}

fn start(name: &str, run: fn(&AtomicBool, &Waker)) -> std::io::Result<Worker> {
    exit::drain_at_exit_once();
    // Its start is over before this returns: a program's messages after
    // the configuration call never meet it. Never joined under the lock
    // (see the overview).
    Worker::spawn(name, Arc::new(Waker::new()?), run)
}

/// The resolver: the names due looked up without the lock, one at a time,
/// their addresses handed over under it; then a wait until the next is
/// due, or until it is woken (new names, or a stop). It ends when no name
/// is left to look up (its thread's resolver state goes with it). It never
/// holds the lock while it waits for a name server.
fn resolve(stop: &AtomicBool, waker: &Waker) {
    loop {
        let Ok(Some(Some(lookups))) = crate::panic::catch(|| enter(|s| s.lookups())) else {
            return;
        };
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let results: Vec<_> = lookups
            .due
            .iter()
            .map(|(i, name)| match sys::lookup_refused() {
                Some(why) => (*i, Err(why)),
                None => (*i, sys::net::lookup(name)),
            })
            .collect();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if !results.is_empty() {
            let done = crate::panic::catch(|| enter(|s| s.looked_up(lookups.generation, results)));
            if done.is_err() {
                return;
            }
        }
        let wait = lookups
            .next_ms
            .map_or(1, |t| t.saturating_sub(now_ms()).clamp(1, 60_000));
        if watch::sleep(waker, wait) {
            waker.drain();
        }
        if stop.load(Ordering::SeqCst) {
            return;
        }
    }
}

fn run(stop: &AtomicBool, waker: &Waker) {
    let mut period = 100;
    loop {
        if watch::sleep(waker, period) || stop.load(Ordering::SeqCst) {
            return;
        }
        // Under the printer's lock alone: a batch sent to a slow receiver
        // never holds up a thread that logs.
        let next = crate::panic::catch(|| {
            with_printer(|p, said| {
                if stop.load(Ordering::SeqCst) {
                    None
                } else {
                    p.tick(said)
                }
            })
        });
        match next {
            Ok(Some(ms)) => period = ms.clamp(1, 1000),
            _ => return,
        }
    }
}
