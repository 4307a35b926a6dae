//! The outputs (`VLOG_OUTPUTS`): where recorded messages are printed, each
//! an object with its own minimum priority and one call that prints a record
//! (`Output::print`). A new kind of output is a module here, a variant of
//! [`Target`] and its token in `spec`; nothing outside this folder changes.
//!
//! An output that fails (a full disk, a reader gone, a full pipe, fd 2
//! closed) never stops logging: the line is dropped and counted, the ring and
//! the other outputs go on, and the failure is reported once, then its end
//! once with the number of lines lost. Writes never raise SIGPIPE and never
//! wait for a full pipe.
//!
//! Imports the text stage and the bottom of the crate.

pub mod file;
pub mod fluent;
pub mod journald;
pub mod spec;
pub mod syslog;

use std::io;

use crate::diag;
use crate::error::ConfigError;
use crate::priority::Priority;
use crate::record::Record;
use crate::stats;
use crate::sys;
use crate::sys::cancel;
use crate::text::json::{render_json, JSON_LINE_MAX};
use crate::text::line::{render_line, LINE_MAX};
use crate::text::time::Clock;
use file::FileOutput;
use fluent::Fluent;
pub use fluent::Waiting;
use journald::Journald;
use spec::{Dest, Form, Spec};
use syslog::Syslog;

/// Where an output's bytes go.
#[derive(Debug)]
enum Target {
    /// fd 2, while it is still the stderr vlog adopted (see `diag`).
    Stderr,
    File(FileOutput),
    Journald(Journald),
    Syslog(Syslog),
    Fluent(Fluent),
}

/// One output.
#[derive(Debug)]
pub struct Output {
    pub priority: Priority,
    /// The token it was opened from, for `show` on the control socket.
    spec: Spec,
    /// The text line or JSON, for stderr and files.
    form: Form,
    target: Target,
    /// Lines lost since the output started failing; None while it works.
    /// The failure is reported when this becomes Some, the recovery when it
    /// becomes None again.
    failing: Option<u64>,
}

/// What every output that prints a record shares: the text and JSON lines,
/// each made at most once per record, and a buffer for the forms made per
/// output. Reserved once, so printing never allocates.
#[derive(Debug, Default)]
pub struct Lines {
    clock: Clock,
    text: Vec<u8>,
    json: Vec<u8>,
    entry: Vec<u8>,
    text_made: bool,
    json_made: bool,
}

impl Lines {
    /// Reserves the buffers once, so that printing never allocates.
    fn reserve(&mut self) -> Result<(), std::collections::TryReserveError> {
        self.text.try_reserve(LINE_MAX)?;
        self.json.try_reserve(JSON_LINE_MAX)?;
        self.entry.try_reserve(LINE_MAX)
    }

    fn line(&mut self, form: Form, rec: &Record) -> &[u8] {
        if form == Form::Json {
            if !self.json_made {
                self.json.clear();
                render_json(
                    rec,
                    Some(sys::process_id()),
                    &mut self.clock,
                    &mut self.json,
                );
                self.json_made = true;
            }
            &self.json
        } else {
            if !self.text_made {
                self.text.clear();
                render_line(rec, &mut self.clock, &mut self.text);
                self.text_made = true;
            }
            &self.text
        }
    }
}

impl Output {
    pub fn stderr(priority: Priority) -> Output {
        let spec = Spec {
            priority,
            dest: Dest::Stderr,
            form: Form::Text,
        };
        Output::new(spec, Target::Stderr)
    }

    fn new(spec: Spec, target: Target) -> Output {
        Output {
            priority: spec.priority,
            form: spec.form,
            spec,
            target,
            failing: None,
        }
    }

    /// Opens the output a token names: its file, its socket, its collector
    /// connection.
    pub fn open(spec: &Spec) -> Result<Output, ConfigError> {
        let target = match &spec.dest {
            Dest::Stderr => Target::Stderr,
            Dest::File(path) => Target::File(FileOutput::open(path.clone())?),
            Dest::Journald => Target::Journald(Journald::open()?),
            Dest::Syslog { transport, ident } => Target::Syslog(Syslog::open(transport, ident)?),
            Dest::Fluent { peer, tag, options } => {
                Target::Fluent(Fluent::open(peer, tag, *options)?)
            }
        };
        Ok(Output::new(spec.clone(), target))
    }

    /// Prints `rec` (text: a deferred message is rendered before). Returns
    /// what to report, if anything: a rotation noticed, the start of a
    /// failure, its end.
    pub fn print(&mut self, rec: &Record, lines: &mut Lines) -> Option<String> {
        let form = self.form;
        let (rotated, result) = match &mut self.target {
            Target::Stderr => (None, write_stderr(lines.line(form, rec))),
            Target::File(file) => file.write(lines.line(form, rec)),
            Target::Journald(journald) => {
                let result = journald.send(rec, &mut lines.entry);
                (
                    replaced(journald.take_replaced(), || "journald".into()),
                    result,
                )
            }
            Target::Syslog(syslog) => {
                let result = syslog.send(rec, &mut lines.entry);
                let replaced = replaced(syslog.take_replaced(), || syslog.describe());
                // Frames a collector connection had queued when it broke.
                let dropped = syslog.take_dropped();
                stats::add(&stats::LINES_LOST, dropped);
                if let Some(lost) = &mut self.failing {
                    *lost += dropped;
                }
                (replaced, result)
            }
            Target::Fluent(fluent) => {
                let result = fluent.send(rec);
                (
                    replaced(fluent.take_replaced(), || fluent.describe()),
                    result,
                )
            }
        };
        let event = self.account(result);
        match (rotated, event) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        }
    }

    /// Counts a failed line, and says when failing starts or ends.
    fn account(&mut self, result: io::Result<()>) -> Option<String> {
        match (result, &mut self.failing) {
            (Ok(()), failing) => failing.take().map(|lost| {
                format!(
                    "{} works again; {lost} line{} could not be written to it",
                    self.describe(),
                    if lost == 1 { "" } else { "s" }
                )
            }),
            (Err(_), Some(lost)) => {
                *lost += 1;
                stats::add(&stats::LINES_LOST, 1);
                None
            }
            (Err(e), failing) => {
                *failing = Some(1);
                stats::add(&stats::LINES_LOST, 1);
                let why = match &self.target {
                    Target::Fluent(fluent) => fluent.why(&e),
                    _ => e.to_string(),
                };
                Some(format!(
                    "cannot write to {}: {why}; logging goes on, and this is not \
                     reported again until it works",
                    self.describe()
                ))
            }
        }
    }

    /// In a forked child: lets go of a collector connection it shares with
    /// the parent (the next message opens the child's own).
    pub fn after_fork(&mut self) {
        match &mut self.target {
            Target::Syslog(syslog) => syslog.after_fork(),
            Target::Fluent(fluent) => fluent.after_fork(),
            _ => {}
        }
    }

    /// One step of a flush of a batching output (see `Fluent::drain_step`);
    /// None when it has nothing left to send (or does not batch).
    pub fn drain_step(&mut self, first: bool, said: &mut Vec<String>) -> Option<Waiting> {
        let Target::Fluent(fluent) = &mut self.target else {
            return None;
        };
        let waiting = fluent.drain_step(first);
        said.extend(replaced(fluent.take_replaced(), || fluent.describe()));
        waiting
    }

    /// What is said when a flush gave up on `events` events.
    pub fn not_sent(&self, events: u64) -> String {
        format!(
            "{}: {events} event{} not sent: the receiver did not take them",
            self.describe(),
            if events == 1 { "" } else { "s" }
        )
    }

    /// What a batching output needs every so often (sealing a batch that is
    /// old enough, writing, reading acknowledgements; everything, when
    /// `all`), and how soon it needs it again (ms); None for the others.
    /// What is to be reported goes to `said`.
    pub fn tick(&mut self, all: bool, said: &mut Vec<String>) -> Option<u64> {
        match &mut self.target {
            Target::Fluent(fluent) => {
                fluent.tick(all);
                said.extend(replaced(fluent.take_replaced(), || fluent.describe()));
                Some(fluent.tick_ms())
            }
            _ => None,
        }
    }

    /// For a configuration refused after this output was opened: a file
    /// that opening it created is removed again.
    fn undo(self) {
        if let Target::File(file) = self.target {
            file.undo();
        }
    }

    /// Starts an output the configuration accepted: a collector connection
    /// is made now, not before the whole configuration is known to be good.
    fn start(&mut self) {
        match &mut self.target {
            Target::Syslog(syslog) => syslog.start(),
            Target::Fluent(fluent) => fluent.start(),
            _ => {}
        }
    }

    /// Reopens a file output by its path (after logrotate moved it). The old
    /// file stays in use if the new one cannot be opened.
    pub fn reopen(&mut self) -> io::Result<()> {
        match &mut self.target {
            Target::File(file) => file.reopen(),
            _ => Ok(()),
        }
    }

    pub fn sync(&self) -> io::Result<()> {
        match &self.target {
            Target::File(file) => file.sync(),
            _ => Ok(()),
        }
    }

    pub fn describe(&self) -> String {
        match &self.target {
            Target::Stderr => "stderr".to_owned(),
            Target::File(file) => file.describe(),
            Target::Journald(_) => "journald".to_owned(),
            Target::Syslog(syslog) => syslog.describe(),
            Target::Fluent(fluent) => fluent.describe(),
        }
    }
}

/// What to report when an output's socket was closed by the program and
/// vlog made a new one.
fn replaced(replaced: bool, what: impl FnOnce() -> String) -> Option<String> {
    // The name is made only then: printing a message allocates nothing.
    replaced.then(|| {
        format!(
            "the socket of {} was closed by the program (close_range?): made a new one",
            what()
        )
    })
}

fn write_stderr(line: &[u8]) -> io::Result<()> {
    match diag::stderr() {
        Some(kind) => sys::write_no_signal(2, line, kind),
        None => Err(io::Error::other(
            "fd 2 is closed, or is no longer the file it was when vlog started \
             (call vlog_adopt_stderr() after redirecting it)",
        )),
    }
}

/// `Outputs::lowest` when no output prints anything.
const NONE_PRINTED: u8 = 5;

/// The outputs in force, in the order they print.
#[derive(Debug)]
pub struct Outputs {
    list: Vec<Output>,
    /// The lowest priority any of them prints (5 when there are none): the
    /// recorded call asks on every message.
    lowest: u8,
    /// Whether one of them batches (see `batching`).
    batching: bool,
    /// Counts the lists set (see `generation`).
    generation: u64,
    lines: Lines,
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
            lowest: NONE_PRINTED,
            batching: false,
            generation: 0,
            lines: Lines {
                clock: Clock::new(),
                text: Vec::new(),
                json: Vec::new(),
                entry: Vec::new(),
                text_made: false,
                json_made: false,
            },
        }
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

    /// Replaces the outputs in force, and starts the new ones. Without the
    /// memory for the lines they print, the list is refused as a whole (and
    /// nothing is left of it) and the outputs in force stay.
    pub fn set(&mut self, mut list: Vec<Output>) -> Result<(), ConfigError> {
        if let Err(e) = self.lines.reserve() {
            list.into_iter().for_each(Output::undo);
            return Err(ConfigError::new(format!(
                "not enough memory for the outputs' lines: {e}"
            )));
        }
        list.iter_mut().for_each(Output::start);
        self.list = list;
        self.lowest = self.lowest().map_or(NONE_PRINTED, |p| p as u8);
        self.batching = self
            .list
            .iter()
            .any(|o| matches!(o.target, Target::Fluent(_)));
        self.generation += 1;
        Ok(())
    }

    /// The outputs in force as `VLOG_OUTPUTS` writes them.
    pub fn as_env(&self) -> String {
        let tokens: Vec<String> = self.list.iter().map(|o| o.spec.as_env()).collect();
        tokens.join(" ")
    }

    pub fn clear(&mut self) {
        self.list.clear();
        self.lowest = NONE_PRINTED;
        self.batching = false;
        self.generation += 1;
    }

    /// The lowest priority any output prints.
    pub fn lowest(&self) -> Option<Priority> {
        self.list.iter().map(|o| o.priority).min()
    }

    /// Whether some output prints a message of priority `p`.
    #[inline(always)]
    pub fn prints(&self, p: Priority) -> bool {
        p as u8 >= self.lowest
    }

    /// Prints `rec` to every output whose priority it meets, each form made
    /// once; `report` gets what is to be reported.
    pub fn print(&mut self, rec: &Record, mut report: impl FnMut(&str)) {
        self.lines.text_made = false;
        self.lines.json_made = false;
        // Writes and sends are cancellation points: no cancel acts inside
        // them (see `sys::cancel`; this thread's is not asynchronous, or it
        // is off already).
        let cancelability = cancel::off();
        for out in self.list.iter_mut().filter(|o| rec.priority >= o.priority) {
            if let Some(event) = out.print(rec, &mut self.lines) {
                report(&event);
            }
        }
        cancel::restore(cancelability);
    }

    /// Ticks every batching output (see [`Output::tick`]): how soon the
    /// next tick is needed (ms), None when no output batches.
    pub fn tick(&mut self, said: &mut Vec<String>) -> Option<u64> {
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

    /// Whether an output batches, and so needs the logger's ticker.
    #[inline(always)]
    pub fn batching(&self) -> bool {
        self.batching
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Output> {
        self.list.iter_mut()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Output> {
        self.list.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vlog-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    fn open(s: &str) -> Result<Vec<Output>, ConfigError> {
        Outputs::open(&spec::parse_list(s)?)
    }

    #[test]
    fn files_are_opened_private_and_in_order() {
        let path = tmp("a.log");
        let o = open(&format!(
            "3:stderr  1:file:{}  debug:stderr",
            path.display()
        ))
        .unwrap();
        assert_eq!(o.len(), 2);
        assert!(matches!(o[0].target, Target::File(_)));
        assert!(matches!(o[1].target, Target::Stderr));
        assert_eq!(o[1].priority, Priority::Debug);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let json = tmp("a.json");
        let o = open(&format!("3:stderr 1:json:{} 2:json:stderr", json.display())).unwrap();
        assert!(o[0].form == Form::Json && matches!(o[0].target, Target::File(_)));
        assert!(o[1].form == Form::Json && matches!(o[1].target, Target::Stderr));
    }

    #[test]
    fn what_cannot_be_opened_refuses_the_list() {
        for (spec, want) in [
            ("1:file:/nonexistent-dir/x.log", "cannot open"),
            (
                "1:syslog:d@udp://no.such.host.invalid:514",
                "cannot resolve",
            ),
        ] {
            let err = open(spec).unwrap_err();
            assert!(err.message.contains(want), "{spec}: {}", err.message);
        }
    }
}
