//! The syslog(3) calls libvlog-syslog.so takes over, as records: each
//! ident is a source (so `VLOG_FILTERS="1:sshd"` selects sshd's messages),
//! the call's facility and severity are fields, and the severity's vlog
//! priority is the one table's (`Priority::from_syslog_severity`).
//!
//! glibc's own state (the ident pointer, options, facility) is
//! `sys::syslog`; the mask and the current source are the boundary's,
//! which the library's C part reads before it formats anything.

use std::sync::Mutex;

use crate::fields::{Field, Names, Value};
use crate::logger::emit::{self, Call, Message, Outcome};
use crate::priority::Priority;
use crate::source::{Live, OwnedSource};
use crate::sys::syslog::{FACILITY_FIELD, FACILITY_MASK, SEVERITY_FIELD, SEVERITY_MASK};

/// The sources made for idents so far, kept for ever: a source's name must
/// outlive every record and filter that names it, and daemons use few
/// idents. Beyond `IDENTS_MAX` (a program that makes up an ident per
/// message), the messages of new idents take the program's source.
static SOURCES: Mutex<Vec<OwnedSource>> = Mutex::new(Vec::new());
const IDENTS_MAX: usize = 64;

/// The source for messages under `ident`: the one made for that name
/// before (found under a try-lock, with no allocation), or a new one. None when the list is busy (this call interrupted
/// another on the same thread, from a signal handler: nothing waits) or
/// full, or memory is short.
pub fn source_for(ident: &[u8]) -> Option<Live> {
    let mut sources = SOURCES.try_lock().ok()?;
    if let Some(found) = sources
        .iter()
        .find(|s| s.live().get().name_bytes() == ident)
    {
        return Some(found.live());
    }
    if sources.len() >= IDENTS_MAX || sources.try_reserve(1).is_err() {
        return None;
    }
    let source = OwnedSource::new(ident);
    let live = source.live();
    sources.push(source);
    Some(live)
}

/// vlog's priority for each syslog severity, 0 (emergency) to 7 (debug),
/// which the C part's filter reads.
pub const PRIORITIES: [i32; 8] = {
    let mut table = [0; 8];
    let mut severity = 0;
    while severity < 8 {
        table[severity] = Priority::from_syslog_severity(severity as u8) as i32;
        severity += 1;
    }
    table
};

/// Records one syslog(3) message, already formatted, for `source`: `pri`
/// is the call's facility and severity (the facility openlog set when the
/// call named none), `text` the message (cut to at most the record's
/// message when longer; `full_len` its length).
pub fn record(source: Live, pri: i32, text: &[u8], full_len: usize) -> Outcome {
    let severity = pri & SEVERITY_MASK;
    let fields = [
        Field {
            name: FACILITY_FIELD,
            value: Value::Int(i64::from((pri & FACILITY_MASK) >> 3)),
        },
        Field {
            name: SEVERITY_FIELD,
            value: Value::Int(i64::from(severity)),
        },
    ];
    let call = Call {
        source,
        site: None,
        priority: Priority::from_syslog_severity(severity as u8),
        message: Message::Text {
            file: b"",
            line: 0,
            func: b"syslog",
            text,
            full_len: full_len.max(text.len()),
            fields: &fields,
            // SYSLOG_FACILITY: the call's own, as journald's would be.
            names: Names::Vlog,
            dump: None,
        },
        fatal: false,
        frames: None,
    };
    emit::emit(&call)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_severities_onto_four_priorities() {
        // emerg, alert, crit, err: error; warning; notice, info: info; debug.
        assert_eq!(PRIORITIES, [4, 4, 4, 4, 3, 2, 2, 1]);
    }

    #[test]
    fn one_source_per_ident() {
        let a = source_for(b"preload-test-a").unwrap();
        let b = source_for(b"preload-test-b").unwrap();
        assert!(!std::ptr::eq(a.get(), b.get()));
        assert!(std::ptr::eq(
            source_for(b"preload-test-a").unwrap().get(),
            a.get()
        ));
        assert_eq!(a.get().name_bytes(), b"preload-test-a");
    }
}
