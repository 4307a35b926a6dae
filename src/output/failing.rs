//! An output's failures and slow readers: a failure counted and said once
//! (its start and its end), what it lost said in the output itself when it
//! works again, how long a write waits for a reader slow for a moment, and
//! what a datagram output holds for the writer thread (`slow`).

use std::io;

use super::lines::Lines;
use super::print::{Output, Target};
use super::said::Said;
use super::slow::{Pace, Patience};
use crate::priority::Priority;
use crate::record::Record;
use crate::stats;
use crate::sys;

impl Output {
    /// Says in this output what it lost while it failed, once it works
    /// again: a warning of source `vlog` with the count, before its next
    /// line. Returns what to report, as [`Output::add`] does.
    pub(super) fn settle_owed(&mut self, lines: &mut Lines) -> Option<String> {
        let lost = std::mem::take(&mut self.owed);
        if lost == 0 {
            return None;
        }
        let text = format!(
            "{lost} line{} could not be written to this output while it failed",
            if lost == 1 { "" } else { "s" }
        );
        let rec = Record {
            seq: 0,
            time_ns: sys::realtime_ns(),
            tid: sys::thread_id(),
            line: 0,
            priority: Priority::Warning,
            source: b"vlog",
            file: b"",
            func: b"output",
            message: text.as_bytes(),
            fields: b"",
            context: false,
            id: 0,
        };
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

    /// Whether this output holds datagrams for the writer thread (see
    /// `slow`).
    pub fn holding(&mut self) -> bool {
        self.pace().is_some_and(|(pace, _)| pace.holding())
    }

    /// Sends what this output holds for the writer thread, waiting for room
    /// as `patience` says; what is to be reported goes to `said`.
    pub fn send_held(&mut self, patience: Patience, said: &mut Vec<Said>) {
        let Some((pace, socket)) = self.pace() else {
            return;
        };
        let result = pace.send_held(socket, patience);
        let dropped = pace.take_dropped();
        if result.is_err() || dropped > 0 {
            self.lost_to_stall(dropped);
        }
        // A stall (or a reader gone) is this output's failure, said once.
        if let Some(event) = self.account(result.map(|_| ()), 0) {
            said.push(event.into());
        }
    }

    pub(super) fn pace(&mut self) -> Option<(&mut Pace, &mut sys::net::DatagramTarget)> {
        match &mut self.target {
            Target::Journald(journald) => Some(journald.pace()),
            Target::Syslog(syslog) => syslog.pace(),
            _ => None,
        }
    }

    /// How long a write waits for a reader slow for a moment (a full pipe
    /// another process made non-blocking): `sys::room::ROOM_WAIT_MS` without
    /// progress; no wait while the output fails (the reader stalled, or
    /// is gone), until a write goes through again.
    pub(super) fn room_ms(&self) -> u64 {
        match self.failing {
            Some(_) => 0,
            None => sys::room::ROOM_WAIT_MS,
        }
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
