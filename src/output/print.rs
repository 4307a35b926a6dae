//! One output: where its bytes go (`Target`), its priority, its failures
//! counted and said once, and the lines every output shares (`Lines`).

use std::io;
use std::net::SocketAddr;

use super::address::Address;
use super::context::Memory;
use super::file::FileOutput;
use super::fluent::{Fluent, Waiting};
use super::journald::Journald;
use super::lines::Lines;
use super::said::{either, Said};
use super::spec::{Dest, Form, Spec};
use super::syslog::Syslog;
use crate::diag;
use crate::error::ConfigError;
use crate::priority::Priority;
use crate::record::Record;
use crate::sys;
use crate::text::json::JSON_LINE_MAX;
use crate::text::line::LINE_MAX;

/// Where an output's bytes go.
#[derive(Debug)]
pub(super) enum Target {
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
    pub(super) spec: Spec,
    /// The text line or JSON, for stderr and files.
    form: Form,
    pub(super) target: Target,
    /// Lines lost since the output started failing; None while it works.
    /// The failure is reported when this becomes Some, the recovery when it
    /// becomes None again.
    pub(super) failing: Option<u64>,
    /// Lines lost in a failure just over, to be said in this output itself
    /// (the reader of a file or of journald learns there what is missing
    /// there).
    pub(super) owed: u64,
    /// A file's or stderr's lines not written yet, and how many: written
    /// with one write(2) per batch ([`Output::flush`]). What a full pipe
    /// did not take stays, for when it takes more (see `slow`).
    pub(super) batch: Vec<u8>,
    pub(super) batched: u64,
    /// When a full pipe first left part of the batch (monotonic ns), None
    /// while it takes everything.
    pub(super) refused_since: Option<u64>,
    /// What it remembers of the error contexts it printed.
    pub(super) context: Memory,
}

/// The most a batch of lines holds before it is written.
pub const BATCH_MAX: usize = 64 * 1024;

impl Output {
    pub fn stderr(priority: Priority) -> Output {
        let spec = Spec {
            priority,
            dest: Dest::Stderr,
            form: Form::Text,
            rotate: None,
            sync: false,
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
            owed: 0,
            batch: Vec::new(),
            batched: 0,
            refused_since: None,
            context: Memory::new(),
        }
    }

    /// What the crash handler writes to for this output (see `at_crash`):
    /// a file's descriptor or fd 2 with their identity, its priority and
    /// form; None for the others.
    pub(super) fn for_crash(&self) -> Option<(i32, sys::FdInfo, Priority, Form)> {
        let (fd, info) = match &self.target {
            Target::Stderr => (
                2,
                sys::fd_info(2).ok().filter(|_| diag::stderr().is_some())?,
            ),
            Target::File(file) => file.descriptor()?,
            _ => return None,
        };
        Some((fd, info, self.priority, self.form))
    }

    /// A datagram output's connected socket, for the one entry the crash
    /// handler sends it (see `at_crash::Note`): true for journald's form.
    pub(super) fn for_crash_note(&mut self) -> Option<(i32, sys::FdInfo, Priority, bool, u64)> {
        let priority = self.priority;
        let journald = matches!(self.target, Target::Journald(_));
        let held = self.pace().map_or(0, |(pace, _)| pace.held());
        let socket = match &mut self.target {
            Target::Journald(journald) => journald.pace().1,
            Target::Syslog(syslog) => syslog.local_socket()?,
            _ => return None,
        };
        let (fd, info) = socket.for_crash();
        Some((fd, info, priority, journald, held))
    }

    /// Whether this output's lines are written before the call returns:
    /// asked for (`?sync`), or the program's own syslog(3) destination,
    /// whose lines carry the ident, options and facility of the moment of
    /// the call, as glibc's do.
    pub fn sync(&self) -> bool {
        self.spec.sync
            || matches!(
                self.spec.dest,
                Dest::Syslog {
                    transport: super::spec::Transport::Program,
                    ..
                }
            )
    }

    /// Reserves a file's or stderr's batch, so that printing never
    /// allocates.
    pub(super) fn reserve(&mut self) -> Result<(), std::collections::TryReserveError> {
        if matches!(self.target, Target::Stderr | Target::File(_)) {
            self.batch
                .try_reserve(BATCH_MAX + LINE_MAX.max(JSON_LINE_MAX))?;
        }
        Ok(())
    }

    /// Hands `rec` to this output: a file or stderr adds its line to the
    /// batch (writing the batch first when the line would make it larger
    /// than BATCH_MAX); the others send it now. Returns what to report, as
    /// [`Output::print`] does.
    pub fn add(&mut self, rec: &Record, lines: &mut Lines) -> Option<String> {
        if !matches!(self.target, Target::Stderr | Target::File(_)) {
            return self.print(rec, lines);
        }
        let line = lines.line(self.form, rec);
        let mut event = None;
        if self.batched > 0 && self.batch.len() + line.len() > BATCH_MAX {
            event = self.flush();
        }
        self.batch.extend_from_slice(line);
        self.batched += 1;
        event
    }

    /// Writes the batch (see [`Output::add`]): one write(2), the checks of
    /// the descriptor's identity and of the file size limit made once for
    /// the batch. A batch that cannot be written counts all its lines lost;
    /// but what a full pipe did not take stays, and is written first next
    /// time (`slow`), unless the pipe is stalled.
    pub fn flush(&mut self) -> Option<String> {
        if self.batched == 0 {
            return None;
        }
        let (rotated, result) = match &mut self.target {
            Target::Stderr => (None, write_stderr(&self.batch)),
            Target::File(file) => file.write(&self.batch),
            _ => (None, Ok(())),
        };
        let lines_in = |bytes: &[u8]| bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        let (result, lost) = match result {
            Ok(()) => {
                self.refused_since = None;
                (Ok(()), 0)
            }
            Err((e, written)) if self.keeps_for_a_slow_reader(&e) => {
                self.batched -= lines_in(&self.batch[..written]);
                self.batch.drain(..written);
                return rotated;
            }
            // The lines a pipe did not take: those after the bytes it did.
            Err((e, written)) => (Err(e), lines_in(&self.batch[written..])),
        };
        self.batch.clear();
        self.batched = 0;
        let event = self.account(result, lost);
        either(rotated, event)
    }

    /// Opens the output a token names: its file, its socket, its collector
    /// connection.
    pub fn open(spec: &Spec) -> Result<Output, ConfigError> {
        let target = match &spec.dest {
            Dest::Stderr => Target::Stderr,
            Dest::File(path) => Target::File(FileOutput::open(path.clone(), spec.rotate)?),
            Dest::Journald => Target::Journald(Journald::open()?),
            Dest::Syslog {
                transport,
                ident,
                facility,
            } => Target::Syslog(Syslog::open(transport, ident, *facility)?),
            Dest::Fluent { peer, tag, options } => {
                Target::Fluent(Fluent::open(peer, tag, *options)?)
            }
        };
        Ok(Output::new(spec.clone(), target))
    }

    /// Prints `rec` now (text: a deferred message is rendered before).
    /// Returns what to report, if anything: a rotation noticed, the start
    /// of a failure, its end.
    fn print(&mut self, rec: &Record, lines: &mut Lines) -> Option<String> {
        let form = self.form;
        // Lines this output had queued or held and dropped meanwhile.
        let mut dropped = 0;
        let (rotated, result) = match &mut self.target {
            // (Batched: see `add`.)
            Target::Stderr => (
                None,
                write_stderr(lines.line(form, rec)).map_err(|(e, _)| e),
            ),
            Target::File(file) => {
                let (rotated, result) = file.write(lines.line(form, rec));
                (rotated, result.map_err(|(e, _)| e))
            }
            Target::Journald(journald) => {
                let result = journald.send(rec, &mut lines.entry);
                let (pace, socket) = journald.pace();
                pace.tell_crash_handler(socket, Some(rec.seq));
                dropped = pace.take_dropped();
                (
                    replaced(journald.take_replaced(), || "journald".into()),
                    result,
                )
            }
            Target::Syslog(syslog) => {
                let result = syslog.send(rec, &mut lines.entry);
                let replaced = replaced(syslog.take_replaced(), || syslog.describe());
                if let Some((pace, socket)) = syslog.pace() {
                    pace.tell_crash_handler(socket, Some(rec.seq));
                }
                // Frames a collector connection had queued when it broke,
                // datagrams held for the writer thread when the daemon
                // stalled.
                dropped = syslog.take_dropped();
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
        let event = self.account(result, 1);
        self.lost_to_stall(dropped);
        either(rotated, event)
    }

    /// In a forked child: lets go of a collector connection it shares with
    /// the parent (the next message opens the child's own), and starts its
    /// own memory of error contexts.
    pub fn after_fork(&mut self) {
        self.context.forget();
        // What the parent holds for its writer thread is the parent's.
        if let Some((pace, _)) = self.pace() {
            pace.forget();
        }
        match &mut self.target {
            Target::Syslog(syslog) => syslog.after_fork(),
            Target::Fluent(fluent) => fluent.after_fork(),
            _ => {}
        }
    }

    /// Hands what a file output has to tell (its rotations) to `report`:
    /// whether there was any.
    pub(super) fn take_notices(&mut self, report: &mut impl FnMut(Said)) -> bool {
        match &mut self.target {
            Target::File(file) => file.take_notices(|text| report(Said::info(text))),
            _ => false,
        }
    }

    /// One step of a flush of a batching output (see `Fluent::drain_step`);
    /// None when it has nothing left to send (or does not batch).
    pub fn drain_step(&mut self, first: bool, said: &mut Vec<Said>) -> Option<Waiting> {
        let Target::Fluent(fluent) = &mut self.target else {
            return None;
        };
        let waiting = fluent.drain_step(first);
        said.extend(replaced(fluent.take_replaced(), || fluent.describe()).map(Said::from));
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
    pub fn tick(&mut self, all: bool, said: &mut Vec<Said>) -> Option<u64> {
        match &mut self.target {
            Target::Fluent(fluent) => {
                fluent.tick(all);
                said.extend(replaced(fluent.take_replaced(), || fluent.describe()).map(Said::from));
                Some(fluent.tick_ms())
            }
            _ => None,
        }
    }

    /// Writes what a collector kept while its name was looked up, as far as
    /// its connection takes it now: true while some of it still waits (the
    /// resolver comes back for it; see `address`).
    pub(super) fn flush_waiting(&mut self) -> bool {
        match &mut self.target {
            Target::Syslog(syslog) => syslog.flush_waiting(),
            _ => false,
        }
    }

    /// Whether this output's collector is named by a host name not yet
    /// looked up (a thread of vlog's looks it up).
    pub fn named_collector(&self) -> bool {
        self.address().is_some_and(|a| a.get().is_none())
    }

    /// A collector's address, if this output has one (see `address`).
    pub(super) fn address(&self) -> Option<&Address> {
        match &self.target {
            Target::Syslog(syslog) => syslog.address(),
            Target::Fluent(fluent) => fluent.address(),
            _ => None,
        }
    }

    /// The result of looking this output's collector up.
    pub(super) fn looked_up(
        &mut self,
        result: Result<SocketAddr, String>,
        now_ms: u64,
    ) -> Option<String> {
        match &mut self.target {
            Target::Syslog(syslog) => syslog.looked_up(result, now_ms),
            Target::Fluent(fluent) => fluent.looked_up(result, now_ms),
            _ => None,
        }
    }

    /// For a configuration refused after this output was opened: a file
    /// that opening it created is removed again.
    pub(super) fn undo(self) {
        if let Target::File(file) = self.target {
            file.undo();
        }
    }

    /// Starts an output the configuration accepted: a collector connection
    /// is made now, not before the whole configuration is known to be good.
    pub(super) fn start(&mut self) {
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

    /// For a file output, a descriptor to make its lines durable with
    /// (`file::sync`) without the logger's lock; None for the others.
    pub fn for_sync(&self) -> Option<io::Result<sys::Fd>> {
        match &self.target {
            Target::File(file) => file.for_sync(),
            _ => None,
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

fn write_stderr(lines: &[u8]) -> Result<(), (io::Error, usize)> {
    match diag::stderr() {
        Some(kind) => sys::write_lines_no_signal(2, lines, kind),
        None => Err((
            io::Error::other(
                "fd 2 is closed, or is no longer the file it was when vlog started \
                 (call vlog_adopt_stderr() after redirecting it)",
            ),
            0,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{spec, Outputs, NEEDS_RESOLVER, NEEDS_TICKER};
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
        let err = open("1:file:/nonexistent-dir/x.log").unwrap_err();
        assert!(err.message.contains("cannot open"), "{}", err.message);
    }

    #[test]
    fn a_collectors_name_is_looked_up_later_not_when_it_is_opened() {
        let mut outputs = Outputs::new();
        let list =
            open("1:syslog:d@udp://no.such.host.invalid:514 2:fluent:t@tcp://[::1]:1").unwrap();
        outputs.set(list).unwrap();
        assert_eq!(outputs.needs(), NEEDS_TICKER | NEEDS_RESOLVER);
        let lookups = outputs.lookups(0);
        assert_eq!(lookups.due, [(0, "no.such.host.invalid:514".to_owned())]);
        let mut said = Vec::new();
        outputs.looked_up(
            lookups.generation,
            vec![(0, Err("no such name".into()))],
            0,
            &mut said,
        );
        assert!(
            said[0].text.starts_with(
                "cannot resolve syslog collector 'no.such.host.invalid:514': no such name"
            ),
            "{said:?}"
        );
        assert!(outputs.lookups(1).due.is_empty(), "{outputs:?}");
        outputs.looked_up(
            lookups.generation,
            vec![(0, Ok("127.0.0.1:9".parse().unwrap()))],
            2000,
            &mut said,
        );
        assert!(said[1].text.contains("resolved to 127.0.0.1:9"), "{said:?}");
        assert_eq!(outputs.needs(), NEEDS_TICKER);
    }
}
