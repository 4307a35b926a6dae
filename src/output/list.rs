//! The outputs in force, as one list: opened from a parsed string, set
//! (all or nothing), printed to in order, ticked, and their collectors'
//! names handed to the resolver thread and back.

use std::net::SocketAddr;

use super::at_crash;
use super::context::Memory;
use super::lines::Lines;
use super::print::{Output, Target};
use super::said::Said;
use super::spec::Spec;
use crate::error::ConfigError;
use crate::priority::Priority;
use crate::record::Record;
use crate::sys::cancel;
use crate::text::time::Clock;

/// `Outputs::sync_from` when no output asked for synchronous lines.
const NONE_PRINTED: u8 = 5;

/// What the outputs in force need of vlog's threads (`logger::ticker`).
pub const NEEDS_TICKER: u8 = 1;
pub const NEEDS_RESOLVER: u8 = 2;

/// How soon the resolver comes back to write what a collector kept while
/// its name was looked up, while its connection is being made.
const FLUSH_AGAIN_MS: u64 = 50;

/// The names the outputs want looked up now, by the list they belong to.
pub struct Lookups {
    pub generation: u64,
    /// Each output's index in the list, and its collector's HOST:PORT.
    pub due: Vec<(usize, String)>,
    /// When the next look-up not due yet will be (ms), if one is.
    pub next_ms: Option<u64>,
}

/// The outputs in force, in the order they print.
#[derive(Debug)]
pub struct Outputs {
    list: Vec<Output>,
    /// The lowest priority an output that asked for synchronous lines
    /// (`?sync`) prints (5 when none did).
    sync_from: u8,
    /// What they need of vlog's threads (see `needs`).
    needs: u8,
    /// Counts the lists set (see `generation`).
    generation: u64,
    lines: Lines,
    /// Outputs replaced while they held what a slow reader had no room for
    /// (see `slow`): kept until it is sent, or the reader stalls.
    retired: Vec<Output>,
}

impl Default for Outputs {
    fn default() -> Outputs {
        Outputs::new()
    }
}

impl Outputs {
    pub const fn new() -> Outputs {
        Outputs {
            list: Vec::new(),
            sync_from: NONE_PRINTED,
            needs: 0,
            generation: 0,
            lines: Lines {
                clock: Clock::new(),
                text: Vec::new(),
                json: Vec::new(),
                entry: Vec::new(),
                text_made: false,
                json_made: false,
            },
            retired: Vec::new(),
        }
    }

    /// The descriptor of a slow reader some output (or one replaced) holds
    /// lines for, to wait on for room with no lock held, and whether it
    /// holds so much that the outputs' walk stops before the next line
    /// (see `slow`).
    pub fn waiting(&mut self) -> Option<(i32, bool)> {
        let mut found = None;
        for out in self.list.iter_mut().chain(self.retired.iter_mut()) {
            match (out.waiting(), found) {
                (Some((fd, true)), _) => return Some((fd, true)),
                (Some(w), None) => found = Some(w),
                _ => {}
            }
        }
        found
    }

    /// Whether an output holds so much for a slow reader that the walk
    /// stops before the next line.
    pub fn blocked(&mut self) -> bool {
        self.waiting().is_some_and(|(_, blocked)| blocked)
    }

    /// Whether an output (or one replaced) holds lines for a slow reader:
    /// what [`Outputs::send_held`] would send.
    pub fn holding(&mut self) -> bool {
        !self.retired.is_empty() || self.list.iter_mut().any(Output::holding)
    }

    /// Sends what the outputs (and those replaced) hold for slow readers,
    /// as far as they take it now; never waits. A replaced one goes once
    /// it holds nothing.
    pub fn send_held(&mut self, said: &mut Vec<Said>) {
        for out in self.list.iter_mut().chain(self.retired.iter_mut()) {
            out.send_held(said);
        }
        self.retired.retain_mut(Output::holding);
    }

    /// Opens every output of a parsed list. One that cannot be opened
    /// refuses the whole list, and nothing is left of it: what was opened is
    /// closed, files it created are removed, and no collector was connected
    /// to (that waits for [`Outputs::set`]).
    pub fn open(specs: &[Spec]) -> Result<Vec<Output>, ConfigError> {
        let mut list = Vec::with_capacity(specs.len());
        for spec in specs {
            match Output::open(spec) {
                Ok(out) => list.push(out),
                Err(e) => {
                    list.into_iter().for_each(Output::undo);
                    return Err(e);
                }
            }
        }
        Ok(list)
    }

    /// Opens every output of a parsed list that can be opened, for the
    /// environment at start-up: one that cannot (a file refused, a socket
    /// not to be had) is left out and said through `refused`, with its
    /// token; the rest are in force. A daemon's outputs do not all go
    /// because one file is refused.
    pub fn open_each(specs: &[Spec], mut refused: impl FnMut(&str, &ConfigError)) -> Vec<Output> {
        let mut list = Vec::with_capacity(specs.len());
        for spec in specs {
            match Output::open(spec) {
                Ok(out) => list.push(out),
                Err(e) => refused(&spec.as_env(), &e),
            }
        }
        list
    }

    /// Replaces the outputs in force, and starts the new ones. Without the
    /// memory for the lines they print, the list is refused as a whole (and
    /// nothing is left of it) and the outputs in force stay.
    pub fn set(&mut self, mut list: Vec<Output>) -> Result<(), ConfigError> {
        let reserved = self
            .lines
            .reserve()
            .and_then(|()| list.iter_mut().try_for_each(Output::reserve));
        if let Err(e) = reserved {
            list.into_iter().for_each(Output::undo);
            return Err(ConfigError::new(format!(
                "not enough memory for the outputs' lines: {e}"
            )));
        }
        list.iter_mut().for_each(Output::start);
        // An output that stays (the same destination) remembers the error
        // contexts it printed: none is printed twice.
        for out in list.iter_mut() {
            if let Some(old) = self.list.iter().find(|old| old.spec.dest == out.spec.dest) {
                out.context = old.context.clone();
            }
        }
        let old = std::mem::replace(&mut self.list, list);
        self.retire(old);
        self.publish_for_crash();
        self.sync_from = self
            .list
            .iter()
            .filter(|o| o.sync())
            .map(|o| o.priority as u8)
            .min()
            .unwrap_or(NONE_PRINTED);
        self.generation += 1;
        self.count_needs();
        Ok(())
    }

    /// Outputs replaced: what they hold for a slow reader is sent as far as
    /// it goes now, and one that still holds some is kept until the rest
    /// is (the writer thread, a flush, exit), never waited for here.
    fn retire(&mut self, old: Vec<Output>) {
        for mut out in old {
            out.send_held(&mut Vec::new());
            if out.holding() {
                self.retired.push(out);
            }
        }
    }

    /// Tells the crash handler which files and stderr the outputs print to
    /// now (see `at_crash`).
    pub fn publish_for_crash(&mut self) {
        let all =
            self.list.len() <= at_crash::SLOTS && self.list.iter().all(|o| o.for_crash().is_some());
        at_crash::publish(self.list.iter().filter_map(Output::for_crash), all);
        let notes: Vec<_> = self
            .list
            .iter_mut()
            .filter_map(Output::for_crash_note)
            .collect();
        // (Past the crash handler's slots, an output's lines are unseen.)
        let files = self.list.iter().filter(|o| o.for_crash().is_some()).count();
        let seen = files.min(at_crash::SLOTS) + notes.len().min(at_crash::SLOTS);
        at_crash::publish_unseen(seen < self.list.len());
        at_crash::publish_notes(notes.into_iter(), &crate::sys::program_name());
    }

    /// The outputs in force as `VLOG_OUTPUTS` writes them.
    pub fn as_env(&self) -> String {
        let tokens: Vec<String> = self.list.iter().map(|o| o.spec.as_env()).collect();
        tokens.join(" ")
    }

    pub fn clear(&mut self) {
        let old = std::mem::take(&mut self.list);
        self.retire(old);
        self.publish_for_crash();
        self.sync_from = NONE_PRINTED;
        self.needs = 0;
        self.generation += 1;
    }

    /// The lowest priority any output prints.
    pub fn lowest(&self) -> Option<Priority> {
        self.list.iter().map(|o| o.priority).min()
    }

    /// The lowest priority an output that asked for synchronous lines
    /// prints, as a number (5 when none asked).
    #[inline(always)]
    pub fn sync_from(&self) -> u8 {
        self.sync_from
    }

    /// Hands `rec` to every output whose priority it meets, each form made
    /// once: a file or stderr keeps its line for the batch, the others send
    /// it now (see [`Output::add`]); `report` gets what is to be reported.
    ///
    /// Writes and sends are cancellation points: the caller makes sure no
    /// cancel acts inside them ([`Outputs::print`], `logger::printer`).
    pub fn add(&mut self, rec: &Record, mut report: impl FnMut(Said)) {
        self.lines.text_made = false;
        self.lines.json_made = false;
        let mut moved = false;
        for out in self.list.iter_mut().filter(|o| rec.priority >= o.priority) {
            if let Some(event) = out.settle_owed(&mut self.lines) {
                report(event.into());
            }
            if let Some(event) = out.add(rec, &mut self.lines) {
                report(event.into());
                // (A socket the program closed, made anew.)
                moved = true;
            }
            moved |= out.take_notices(&mut report);
        }
        // A file rotated, or followed to where another process rotated it.
        if moved {
            self.publish_for_crash();
        }
    }

    /// Hands `rec` to output `i` alone (a record of an error's context,
    /// `logger::context`), as [`Outputs::add`] does.
    pub fn add_to(&mut self, i: usize, rec: &Record, mut report: impl FnMut(Said)) {
        self.lines.text_made = false;
        self.lines.json_made = false;
        if let Some(out) = self.list.get_mut(i) {
            if let Some(event) = out.add(rec, &mut self.lines) {
                report(event.into());
            }
            if out.take_notices(&mut report) {
                self.publish_for_crash();
            }
        }
        // The next record's lines are made anew.
        self.lines.text_made = false;
        self.lines.json_made = false;
    }

    /// Hands `rec` to every output, whatever its priority: vlog's word to
    /// each about lines it lost (one that prints errors alone lost its
    /// errors among them).
    pub fn add_to_every(&mut self, rec: &Record, mut report: impl FnMut(Said)) {
        for i in 0..self.list.len() {
            self.add_to(i, rec, &mut report);
        }
    }

    /// How many outputs there are.
    pub fn count(&self) -> usize {
        self.list.len()
    }

    /// See `context::Memory::restart`.
    pub fn restart_contexts(&mut self, next_seq: Option<u64>) {
        self.list
            .iter_mut()
            .for_each(|o| o.context.restart(next_seq));
    }

    /// Output `i`'s priority and its memory of error contexts.
    pub fn context_of(&mut self, i: usize) -> Option<(Priority, &mut Memory)> {
        self.list.get_mut(i).map(|o| (o.priority, &mut o.context))
    }

    /// Writes every output's batch (see [`Output::flush`]); as for
    /// [`Outputs::add`], a cancellation point.
    pub fn flush(&mut self, mut report: impl FnMut(Said)) {
        let mut said = false;
        for out in self.list.iter_mut() {
            if let Some(event) = out.flush() {
                report(event.into());
                said = true;
            }
            // What it lost, said in it as soon as it works again.
            if let Some(event) = out.settle_owed(&mut self.lines) {
                report(event.into());
            }
            if let Some(event) = out.flush() {
                report(event.into());
            }
            said |= out.take_notices(&mut report);
        }
        // A file opened again (rotated, or its descriptor lost) is said.
        if said {
            self.publish_for_crash();
        }
    }

    /// Prints `rec` now to every output whose priority it meets.
    pub fn print(&mut self, rec: &Record, mut report: impl FnMut(Said)) {
        self.print_all(|outputs| {
            outputs.add(rec, &mut report);
            outputs.flush(report);
        });
    }

    /// Runs `f`, which prints, with no cancel acting inside it (see
    /// `sys::cancel`; this thread's is not asynchronous, or it is off
    /// already): a pending one acts as the call that printed returns.
    pub fn print_all<R>(&mut self, f: impl FnOnce(&mut Outputs) -> R) -> R {
        let cancelability = cancel::point();
        let result = f(self);
        cancel::restore(cancelability);
        result
    }

    /// Ticks every batching output (see [`Output::tick`]): how soon the
    /// next tick is needed (ms), None when no output batches.
    pub fn tick(&mut self, said: &mut Vec<Said>) -> Option<u64> {
        self.list
            .iter_mut()
            .filter_map(|o| o.tick(false, said))
            .min()
    }

    /// Which list of outputs this is: a flush that waits between steps
    /// stops when the list changed under it.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// What the outputs need of vlog's threads: the ticker
    /// (`NEEDS_TICKER`: an output batches, or is a collector), the resolver
    /// (`NEEDS_RESOLVER`: a collector's name is still to be looked up).
    #[inline(always)]
    pub fn needs(&self) -> u8 {
        self.needs
    }

    fn count_needs(&mut self) {
        let ticked = self
            .list
            .iter()
            .any(|o| matches!(o.target, Target::Fluent(_)));
        let names = self.list.iter().any(|o| {
            o.address().is_some_and(|a| a.get().is_none())
                || matches!(&o.target, Target::Syslog(s) if s.has_waiting())
        });
        self.needs = (u8::from(ticked) * NEEDS_TICKER) | (u8::from(names) * NEEDS_RESOLVER);
    }

    /// The collectors' names to look up now (see `address`), taken under the
    /// logger's lock and looked up without it; what collectors kept while
    /// their names were looked up is written now as far as their
    /// connections take it, and the resolver comes back for the rest.
    pub fn lookups(&mut self, now_ms: u64) -> Lookups {
        let mut due = Vec::new();
        let mut next_ms = None::<u64>;
        if self
            .list
            .iter_mut()
            .fold(false, |w, o| o.flush_waiting() | w)
        {
            next_ms = Some(now_ms + FLUSH_AGAIN_MS);
        }
        for (i, out) in self.list.iter().enumerate() {
            let Some(address) = out.address() else {
                continue;
            };
            match address.due(now_ms) {
                Some(name) => due.push((i, name.to_owned())),
                None => {
                    if let Some(t) = address.next_due() {
                        next_ms = Some(next_ms.map_or(t, |n| n.min(t)));
                    }
                }
            }
        }
        self.count_needs();
        Lookups {
            generation: self.generation,
            due,
            next_ms,
        }
    }

    /// What the look-ups of [`Outputs::lookups`] came to; ignored when the
    /// outputs were replaced meanwhile. What is to be said goes to `said`.
    pub fn looked_up(
        &mut self,
        generation: u64,
        results: Vec<(usize, Result<SocketAddr, String>)>,
        now_ms: u64,
        said: &mut Vec<Said>,
    ) {
        if generation != self.generation {
            return;
        }
        for (i, result) in results {
            if let Some(out) = self.list.get_mut(i) {
                said.extend(out.looked_up(result, now_ms).map(Said::from));
            }
        }
        self.count_needs();
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Output> {
        self.list.iter_mut()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Output> {
        self.list.iter()
    }
}
