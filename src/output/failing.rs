//! An output's failures and slow readers: a failure counted and said once
//! (its start and its end), what it lost said in the output itself when it
//! works again, and what it holds for a reader slow for a moment
//! (`slow`).

use std::io;

use super::lines::Lines;
use super::print::{Output, Target};
use super::said::Said;
use super::slow::Pace;
use crate::priority::Priority;
use crate::record::Record;
use crate::stats;
use crate::sys;

impl Output {
    /// Says in this output what it lost while it failed, once it works
    /// again: a warning of source `vlog` with the count, before its next
    /// line. Returns what to report, as [`Output::add`] does.
    #[inline]
    pub(super) fn settle_owed(&mut self, lines: &mut Lines) -> Option<String> {
        // Asked before every line and after every batch: inline, the rest
        // out of line.
        if self.owed == 0 {
            return None;
        }
        self.say_owed(lines)
    }

    #[cold]
    #[inline(never)]
    fn say_owed(&mut self, lines: &mut Lines) -> Option<String> {
        let lost = std::mem::take(&mut self.owed);
        let text = format!(
            "{lost} line{} could not be written to this output while it failed",
            if lost == 1 { "" } else { "s" }
        );
        let rec = Record::note(Priority::Warning, b"output", text.as_bytes());
        lines.forget();
        let event = self.add(&rec, lines);
        lines.forget();
        event
    }

    /// Datagrams a stalled reader made this output drop (what it held for
    /// the writer thread): counted lost, and in the failure being reported.
    pub(super) fn lost_to_stall(&mut self, dropped: u64) {
        stats::add(&stats::LINES_LOST, dropped);
        if let Some(lost) = &mut self.failing {
            *lost += dropped;
        }
    }

    /// Whether this output holds what a slow reader had no room for: a
    /// datagram output's held datagrams, a pipe's unwritten bytes (see
    /// `slow`).
    pub fn holding(&mut self) -> bool {
        match self.pace() {
            Some((pace, _)) => pace.holding(),
            None => self.refused_since.is_some() && self.batched > 0,
        }
    }

    /// The descriptor a slow reader's room is waited for on, while this
    /// output holds something; and whether it holds so much that the
    /// outputs' walk stops before its next line (a pipe: anything).
    pub fn waiting(&mut self) -> Option<(i32, bool)> {
        if !self.holding() {
            return None;
        }
        match self.pace() {
            Some((pace, socket)) => Some((socket.raw(), pace.blocked())),
            None => match &self.target {
                Target::Stderr => Some((2, true)),
                Target::File(file) => file.descriptor().map(|(fd, _)| (fd, true)),
                _ => None,
            },
        }
    }

    /// Sends what this output holds, as far as its reader takes it now
    /// (never waits); what is to be reported goes to `said`.
    pub fn send_held(&mut self, said: &mut Vec<Said>) {
        if !self.holding() {
            return;
        }
        let Some((pace, socket)) = self.pace() else {
            said.extend(self.flush().map(Said::from));
            return;
        };
        let result = pace.send_held(socket);
        pace.tell_crash_handler(socket, None);
        let dropped = pace.take_dropped();
        // A stall (or a reader gone) is this output's failure, said once.
        if let Some(event) = self.account(result, 0) {
            said.push(event.into());
        }
        self.lost_to_stall(dropped);
    }

    pub(super) fn pace(&mut self) -> Option<(&mut Pace, &mut sys::net::DatagramTarget)> {
        match &mut self.target {
            Target::Journald(journald) => Some(journald.pace()),
            Target::Syslog(syslog) => syslog.pace(),
            _ => None,
        }
    }

    /// Whether what a pipe did not take, with `e`, stays in the batch for
    /// when it takes more: a full pipe (EAGAIN) that has not taken nothing
    /// for `ROOM_WAIT_MS` (then it is stalled: the lines are lost, said
    /// once, and none stays until a write goes through again).
    pub(super) fn keeps_for_a_slow_reader(&mut self, e: &io::Error) -> bool {
        if e.kind() != io::ErrorKind::WouldBlock || self.failing.is_some() {
            return false;
        }
        let now = sys::monotonic_ns();
        let since = *self.refused_since.get_or_insert(now);
        if now.saturating_sub(since) >= sys::room::ROOM_WAIT_MS * 1_000_000 {
            self.refused_since = None;
            return false;
        }
        true
    }

    /// Counts `lines` failed lines, and says when failing starts or ends.
    pub(super) fn account(&mut self, result: io::Result<()>, lines: u64) -> Option<String> {
        if result.is_ok() && self.failing.is_some() {
            // A fluent queue that was full works again only once it has
            // drained well below full (see `Fluent::may_say_recovered`).
            if let Target::Fluent(fluent) = &mut self.target {
                if !fluent.may_say_recovered() {
                    return None;
                }
            }
        }
        match (result, &mut self.failing) {
            (Ok(()), failing) => failing.take().map(|lost| {
                self.owed += lost;
                format!(
                    "{} works again; {lost} line{} could not be written to it",
                    self.describe(),
                    if lost == 1 { "" } else { "s" }
                )
            }),
            (Err(_), Some(lost)) => {
                *lost += lines;
                stats::add(&stats::LINES_LOST, lines);
                None
            }
            (Err(e), failing) => {
                *failing = Some(lines);
                stats::add(&stats::LINES_LOST, lines);
                let why = match &self.target {
                    Target::Fluent(fluent) => fluent.why(&e),
                    Target::Syslog(syslog)
                        if syslog.address().is_some_and(|a| a.get().is_none()) =>
                    {
                        syslog.why(&e)
                    }
                    // A reader slow past every wait (`slow`, `sys::room`).
                    _ if e.kind() == io::ErrorKind::WouldBlock => format!(
                        "it took nothing for {} s (its queue stayed full)",
                        sys::room::ROOM_WAIT_MS / 1000
                    ),
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
}
