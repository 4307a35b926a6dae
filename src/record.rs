//! A record as every reader and every output sees it: a finished message with
//! its stamp (sequence number, time, thread, priority) and its names. The ring
//! keeps records in a binary form (`ring::record`); readers render deferred
//! ones into this form before anyone looks at them.

use crate::priority::Priority;

/// Longer source, file and function names are cut to this many bytes.
pub const NAME_MAX: usize = 255;
/// The longest message kept whole, in bytes; longer ones are cut to this
/// length, ending with a ` [truncated: N bytes]` marker.
pub const MESSAGE_MAX: usize = 8192;

/// A record's contents, borrowed from wherever the bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// Ring-wide sequence number (0 for a message no ring holds).
    pub seq: u64,
    /// CLOCK_REALTIME, nanoseconds since the epoch.
    pub time_ns: u64,
    pub tid: u32,
    pub line: u32,
    pub priority: Priority,
    pub source: &'a [u8],
    pub file: &'a [u8],
    pub func: &'a [u8],
    pub message: &'a [u8],
    /// Encoded structured fields (see `fields`), empty for none.
    pub fields: &'a [u8],
    /// Printed as an error's context (see `logger::context`): a record
    /// made before the error, shown before it, marked as such by every
    /// output. Never stored: the ring's records are false.
    pub context: bool,
    /// The message id of the call site that made it (see `site`), 0 for
    /// none: a message vlog did not get as a literal format and its
    /// arguments (`vlog()`, a formatted call, a relay's line).
    pub id: u32,
}

impl<'a> Record<'a> {
    /// A debug record of source `src`, file `f.c`, function `fn`, line 9,
    /// thread 7, time 1, with `message`: for the ring's tests.
    #[cfg(test)]
    pub fn sample(message: &'a [u8]) -> Record<'a> {
        Record {
            seq: 0,
            time_ns: 1,
            tid: 7,
            line: 9,
            priority: crate::priority::Priority::Debug,
            source: b"src",
            file: b"f.c",
            func: b"fn",
            message,
            fields: b"",
            context: false,
            id: 0,
        }
    }

    /// vlog's own record (source `vlog`, no file, line or fields), stamped
    /// now on this thread: the one shape of every note vlog makes of what
    /// happened to the records it was given.
    pub fn note(priority: Priority, func: &'a [u8], message: &'a [u8]) -> Record<'a> {
        Record {
            seq: 0,
            time_ns: crate::sys::realtime_ns(),
            tid: crate::sys::thread_id(),
            line: 0,
            priority,
            source: b"vlog",
            file: b"",
            func,
            message,
            fields: b"",
            context: false,
            id: 0,
        }
    }

    /// The record, to be printed as an error's context.
    pub fn as_context(self) -> Record<'a> {
        Record {
            context: true,
            ..self
        }
    }

    /// Names longer than [`NAME_MAX`] and messages longer than
    /// [`MESSAGE_MAX`] are cut; the caller marks truncated messages before.
    pub fn clipped(mut self) -> Record<'a> {
        self.source = clip(self.source, NAME_MAX);
        self.file = clip(self.file, NAME_MAX);
        self.func = clip(self.func, NAME_MAX);
        self.message = clip(self.message, MESSAGE_MAX);
        self
    }
}

/// The record the unit tests of the renderers share: 2026-11-30
/// 13:45:12.345 UTC, thread 4242, debug, qemu.monitor.
#[cfg(test)]
pub fn sample() -> Record<'static> {
    Record {
        seq: 0,
        time_ns: 1_796_046_312_345_999_999,
        tid: 4242,
        line: 123,
        priority: Priority::Debug,
        source: b"qemu.monitor",
        file: b"monitor.c",
        func: b"qemuMonitorSend",
        message: b"sent 12 bytes to fd 7",
        fields: b"",
        context: false,
        id: 0,
    }
}

fn clip(s: &[u8], max: usize) -> &[u8] {
    &s[..s.len().min(max)]
}
