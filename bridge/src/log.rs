//! The `log` backend: each record that passes vlog's level for its target
//! is recorded as a C call with fields is, its key-values as fields.
//!
//! ```
//! # use vlog as _;
//! vlog_bridge::log::init().expect("the log backend");
//! log::warn!(target: "net::conn", peer = "10.0.0.7", port = 22; "slow peer");
//! // Filtered out at vlog's default level (warn): `log`'s max level says
//! // so before anything is formatted.
//! log::info!("not recorded");
//! assert_eq!(log::max_level(), log::LevelFilter::Warn);
//! ```

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

use log::kv::{Key, Value, VisitSource};
use log::{Level, LevelFilter, Log, Metadata, Record};

use crate::fields::Parts;
use crate::record::{record, Call};
use crate::target::{enabled, named};
use crate::{levels, sys, Error};

/// The logger [`init`] installs; public so that a program that installs
/// its own (a logger that also hands records to vlog's) can call it.
pub struct Logger;

/// The one logger.
pub static LOGGER: Logger = Logger;

/// Whether [`LOGGER`] is `log`'s logger (and so keeps its max level).
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Installs the backend as `log`'s logger, with `log`'s max level kept
/// equal to the lowest priority vlog keeps from any source, now and at each
/// change of vlog's levels. Errors: another logger is installed already
/// (`log` takes one per program), or vlog refused to tell its levels.
pub fn init() -> Result<(), Error> {
    levels::watch()?;
    log::set_logger(&LOGGER)
        .map_err(|_| Error("another logger is already installed for `log`".to_owned()))?;
    // Against a change told meanwhile (its watcher sets the max level once
    // it sees INSTALLED, this sets it once it reads the newest value): both
    // SeqCst, so one of the two sees the other's; and set again until what
    // was read is what is in force.
    INSTALLED.store(true, Ordering::SeqCst);
    loop {
        let lowest = levels::lowest();
        log::set_max_level(level_filter(lowest));
        if levels::lowest() == lowest {
            return Ok(());
        }
    }
}

/// `log`'s filter for vlog's lowest priority kept (`trace` is debug).
pub fn level_filter(lowest: c_int) -> LevelFilter {
    match lowest {
        sys::UNKNOWN | sys::DEBUG => LevelFilter::Trace,
        sys::INFO => LevelFilter::Info,
        sys::WARN => LevelFilter::Warn,
        sys::ERROR => LevelFilter::Error,
        _ => LevelFilter::Off,
    }
}

/// vlog's priority of a `log` level.
pub fn priority(level: Level) -> c_int {
    match level {
        Level::Error => sys::ERROR,
        Level::Warn => sys::WARN,
        Level::Info => sys::INFO,
        Level::Debug | Level::Trace => sys::DEBUG,
    }
}

/// vlog's levels changed.
pub(crate) fn levels_changed(lowest: c_int) {
    if INSTALLED.load(Ordering::SeqCst) {
        log::set_max_level(level_filter(lowest));
    }
}

/// The key-values as fields.
struct Fields<'p>(&'p mut Parts);

impl<'kvs> VisitSource<'kvs> for Fields<'_> {
    fn visit_pair(&mut self, key: Key<'kvs>, value: Value<'kvs>) -> Result<(), log::kv::Error> {
        match value.to_i64() {
            Some(n) => self.0.num(key.as_str(), n),
            None => self.0.text(key.as_str(), |w| {
                let _ = write!(w, "{value}");
            }),
        }
        Ok(())
    }
}

impl Log for Logger {
    fn enabled(&self, metadata: &Metadata) -> bool {
        enabled(named(metadata.target()).source, priority(metadata.level()))
    }

    fn log(&self, r: &Record) {
        let named = named(r.target());
        let prio = priority(r.level());
        if !enabled(named.source, prio) {
            return;
        }
        let call = Call {
            target: r.target(),
            prio,
            file: r.file(),
            line: r.line(),
            module: r.module_path(),
        };
        record(named, &call, |p| {
            p.message(|w| {
                let _ = write!(w, "{}", r.args());
            });
            let _ = r.key_values().visit(&mut Fields(p));
        });
    }

    /// vlog_flush: what waits for the outputs is written, files synced.
    fn flush(&self) {
        // SAFETY: takes no pointer.
        unsafe { sys::vlog_flush() };
    }
}
