//! Applying configuration: the environment at the first call, then each
//! `vlog_set_*` call, all or nothing; the ring made, resized or kept in a
//! file; the crash handler installed; and the step down after an internal
//! error.

use std::sync::atomic::Ordering;

use super::{enter, note, printer, safe_mode, State, NORMAL, RING_ONLY, SAFE_MODE, SILENT};
use crate::config::context::Context;
use crate::config::filter::Filters;
use crate::config::{self, DEFAULT_BUFFER_SIZE, DEFAULT_LEVEL};
use crate::crash::{self, target::DumpFiles, target::DumpTarget};
use crate::error::ConfigError;
use crate::fields;
use crate::output::{spec, Output, Outputs};
use crate::priority::Priority;
use crate::record::MESSAGE_MAX;
use crate::ring::{self, Region, Ring};
use crate::source::{vlog_default_source, Live, UNKNOWN};
use crate::sys::cancel;
use crate::{diag, sys};

impl State {
    /// Reads the environment once (unless the process is setuid/setgid) and
    /// sets up the ring and outputs. Explicit setters called later override
    /// it.
    pub fn ensure_init(&mut self) {
        if self.initialized {
            return;
        }
        // Files are opened here, on a logging thread's first call too:
        // cancellation points, which a recording call reaches nowhere else.
        let cancelability = cancel::point();
        diag::while_starting(|| self.initialize());
        cancel::restore(cancelability);
    }

    fn initialize(&mut self) {
        cancel::learn();
        sys::backtrace::learn_program(); // before a chroot hides it
        self.initialized = true;
        diag::adopt_stderr();
        super::fork::register_handlers();
        let env = if sys::secure_mode() {
            config::EnvConfig::default()
        } else {
            super::config_file::at_start()
        };
        // A daemon whose syslog(3) calls vlog took over (libvlog-syslog.so)
        // records every message its mask lets through and sends each where
        // glibc would (`PRIO:syslog`) before the call returns (its children
        // _exit; it never calls vlog_flush), unless the variables say not.
        let preloaded = sys::syslog::preloaded();
        let default_level = if preloaded {
            Priority::Debug
        } else {
            DEFAULT_LEVEL
        };
        self.level = env.level.unwrap_or(default_level);
        self.filters = env.filters.unwrap_or_default();
        let default_specs = || preloaded.then(|| spec::parse_list("1:syslog").unwrap_or_default());
        // An output that cannot be opened (a file another user planted)
        // is left out with one warning; the others are in force.
        let outputs = env
            .outputs
            .filter(|specs| !specs.is_empty())
            .or_else(default_specs)
            .map(|specs| {
                Outputs::open_each(&specs, |token, e| {
                    diag::warn(&format!(
                        "ignoring the output '{token}' of VLOG_OUTPUTS: {e}; the others are \
                         in force"
                    ))
                })
            })
            .filter(|list| !list.is_empty());
        self.set_writer(env.writer_off, preloaded);
        self.apply_ratelimit(env.ratelimit.unwrap_or(None));
        let context = env.context.unwrap_or_default();
        if let Err(e) = printer::lock_of(self.printer).set_context(context) {
            diag::warn(&format!("{e}; errors are printed without their context"));
        }
        let set = match outputs {
            Some(list) => self
                .set_output_list(self.without_named(list))
                .map(|()| self.default_outputs = false),
            None => self.use_default_outputs(),
        };
        if let Err(e) = set {
            diag::warn(&format!("{e}; recording in the ring only"));
        }
        if safe_mode() != NORMAL {
            // After an internal error, a restart (vlog_shutdown) keeps them
            // off.
            self.clear_outputs();
        }
        self.dump = env.dump.unwrap_or_default();
        self.dump_signal = env.dump_signal;
        let size = env.buffer_size.unwrap_or(DEFAULT_BUFFER_SIZE);
        let file = env.buffer_file.filter(|_| size > 0);
        let in_file = file.is_some_and(|path| self.use_ring_file(path, size));
        if !in_file {
            if let Err(e) = self.resize(size) {
                diag::warn(&format!("running without a ring: {e}"));
            }
        }
        let reserved = self
            .fields
            .try_reserve(fields::WITH_BYTES_MAX)
            .and_then(|()| self.message.try_reserve(MESSAGE_MAX))
            .and_then(|()| self.rendered.try_reserve(MESSAGE_MAX));
        if let Err(e) = reserved {
            diag::say(&format!(
                "cannot reserve vlog's message buffers ({e}); they are made when first needed"
            ));
        }
        self.register_site_sources();
        self.refresh_sources();
        // What vlog_init does, the first call of any kind does too: a user
        // who sets VLOG_DUMP or VLOG_DUMP_SIGNAL gets what it says whether
        // or not the program calls vlog_init (crash dumps to stderr unless
        // VLOG_DUMP=off).
        if let Err(e) = self.install_crash_handler(false) {
            diag::warn(&format!("no crash dumps: {e}"));
        }
        if let Some(spec) = env.control {
            self.start_control(&spec);
        }
    }

    /// What a signal handler left for the logger (see `crash::on_entry`):
    /// a ring file another process truncated under the mapping, which the
    /// SIGBUS handler moved to private memory (`ring::guard`). The ring
    /// goes on in memory, with the records that could be read, and this is
    /// said once.
    #[cold]
    pub fn after_signal(&mut self) {
        if !self.ring.as_ref().is_some_and(Ring::was_repaired) {
            return;
        }
        let path = self.buffer_file.take();
        let size = self.ring.as_ref().map_or(0, |r| r.stats().size as usize);
        // The outputs write what the old ring holds for them first: the new
        // one carries records over as printed.
        drop(self.printer());
        if let Ok(mut ring) = Ring::new(size) {
            if let Some(old) = &self.ring {
                ring.migrate_from(old);
            }
            let old = self.ring.replace(ring);
            self.retire(old);
            self.ring_replaced();
        }
        let path = path.map_or_else(String::new, |p| format!(" '{}'", p.display()));
        note(
            self.ring.as_mut(),
            &format!(
                "the ring file{path} was truncated by another process while in use; \
                 the ring goes on in memory (records in the part cut off are lost)"
            ),
        );
    }

    /// What every configuration call does last: says once that malloc
    /// failed and vlog's emergency reserve served (see `sys::alloc`).
    pub fn after_configuration(&mut self) {
        self.keep_ticker();
        if sys::alloc::take_reserve_used() {
            note(
                self.ring.as_mut(),
                "memory ran out (malloc failed): vlog went on with its emergency reserve, \
                 and what it could not reserve is off (see the warnings before)",
            );
        }
    }

    /// A ring file is in use: SIGBUS from its mapping is repaired even
    /// without a crash handler (see `ring::guard`).
    fn guard_ring_file(&self) {
        if let Err(e) = crash::guard_ring_files() {
            diag::warn(&format!(
                "cannot guard the ring file against truncation: {e}"
            ));
        }
    }

    /// Keeps a ring that was replaced until no reader is inside it (see
    /// `publish`).
    fn retire(&mut self, old: Option<Ring>) {
        self.retired.extend(old);
    }

    fn use_default_outputs(&mut self) -> Result<(), ConfigError> {
        self.set_output_list(vec![Output::stderr(self.level)])?;
        self.default_outputs = true;
        Ok(())
    }

    /// Replaces the outputs, once they have written every line recorded
    /// for them (see `State::printer`).
    fn set_output_list(&mut self, list: Vec<Output>) -> Result<(), ConfigError> {
        let next_seq = self.stats().recorded;
        let mut printer = self.printer();
        printer.outputs.set(list)?;
        printer.restart_contexts(next_seq);
        self.outputs_changed(&printer.outputs);
        Ok(())
    }

    /// The ring in the file at `path` (`VLOG_BUFFER_FILE`), made `size`
    /// bytes or joined as it is; false, said, when it cannot be.
    pub(super) fn use_ring_file(&mut self, path: std::path::PathBuf, size: usize) -> bool {
        match Ring::open_file(&path, size) {
            Ok(ring) => {
                self.guard_ring_file();
                let joined = ring.stats().size as usize;
                if joined != size {
                    diag::warn(&format!(
                        "ring file '{}' is in use by another process with a ring of \
                         {joined} bytes: joined it as it is (VLOG_BUFFER_SIZE asked for {size})",
                        path.display()
                    ));
                }
                let old = self.ring.replace(ring);
                self.retire(old);
                self.ring_replaced();
                self.set_buffer_file(path);
                true
            }
            Err(e) => {
                diag::warn(&format!("{e}; keeping the ring in memory"));
                false
            }
        }
    }

    /// The ring was replaced: no error's context takes a record from
    /// before (see `Contexts::restart`).
    fn ring_replaced(&mut self) {
        self.bound_unprinted();
        self.writer_changed();
        let next_seq = self.stats().recorded;
        printer::lock_of(self.printer).restart_contexts(next_seq);
    }

    /// No outputs (after an internal error): what was recorded for them is
    /// written first, as far as they still can.
    fn clear_outputs(&mut self) {
        let mut printer = self.printer();
        printer.outputs.clear();
        self.outputs_changed(&printer.outputs);
        self.default_outputs = false;
    }

    /// Registers `source` if it is new and returns its level. Initialises
    /// vlog first if nothing has yet.
    pub fn register(&mut self, source: Live) -> i32 {
        self.ensure_init();
        if self.sources.add(source) {
            let level = self.resolve(source.get().name_bytes());
            source.get().set_level(level);
        }
        source.get().level()
    }

    /// Installs the crash handler as `VLOG_DUMP` and `VLOG_DUMP_SIGNAL` say;
    /// `VLOG_DUMP=off` is obeyed unless `explicit` (an API call asked).
    pub fn install_crash_handler(&mut self, explicit: bool) -> Result<(), ConfigError> {
        self.ensure_init();
        if self.dump == DumpTarget::Off && !explicit {
            return Ok(());
        }
        if self.dump_files.is_none() {
            // A dump file that cannot be opened is a bad VLOG_DUMP like any
            // other: said once, and the default (stderr) kept.
            let mut files = self.dump.open().unwrap_or_else(|e| {
                diag::warn(&format!(
                    "ignoring VLOG_DUMP={}: {e}; crash dumps go to stderr",
                    self.dump.as_env()
                ));
                self.dump = DumpTarget::Stderr;
                DumpFiles::default()
            });
            files.publish();
            self.dump_files = Some(files);
        }
        crash::install()
            .map_err(|e| ConfigError::new(format!("cannot install the crash handler: {e}")))?;
        if let Some(sig) = self.dump_signal {
            crash::requested::install_dump_signal(sig)?;
        }
        Ok(())
    }

    pub fn set_level(&mut self, level: Priority) {
        self.ensure_init();
        self.level = level;
        if self.default_outputs {
            if let Err(e) = self.use_default_outputs() {
                diag::warn(&format!("{e}; the outputs in force stay"));
            }
        }
        self.refresh_sources();
    }

    pub fn set_filters(&mut self, spec: &str) -> Result<(), ConfigError> {
        let filters = Filters::parse(spec)?;
        self.ensure_init();
        self.filters = filters;
        self.refresh_sources();
        Ok(())
    }

    /// Sets what an error's context is (`VLOG_CONTEXT`'s syntax), after the
    /// outputs wrote what was pending under the one in force.
    pub fn set_context(&mut self, spec: &str) -> Result<(), ConfigError> {
        let context = Context::parse(spec)?;
        self.ensure_init();
        self.printer().set_context(context)
    }

    /// The error context in force, as `VLOG_CONTEXT` writes it.
    pub fn context_env(&self) -> String {
        printer::lock_of(self.printer).context().as_env()
    }

    pub fn set_outputs(&mut self, text: &str) -> Result<(), ConfigError> {
        if safe_mode() != NORMAL {
            return Err(ConfigError::new(
                "outputs stay off after an internal error in vlog (see its report)".to_string(),
            ));
        }
        let specs = spec::parse_list(text)?;
        Self::names_without_threads(self.no_threads, &specs)?;
        let list = Outputs::open(&specs)?;
        self.ensure_init();
        if list.is_empty() {
            self.use_default_outputs()?;
        } else {
            self.set_output_list(list)?;
            self.default_outputs = false;
        }
        self.refresh_sources();
        Ok(())
    }

    pub fn set_buffer_size(&mut self, size: usize) -> Result<(), ConfigError> {
        let size = ring::check_size(size)?;
        self.ensure_init();
        self.resize(size)?;
        self.refresh_sources();
        Ok(())
    }

    /// Replaces the ring by one of `size` bytes (0: none), carrying over the
    /// newest records that fit. With a ring file, the new ring replaces the
    /// file.
    fn resize(&mut self, size: usize) -> Result<(), ConfigError> {
        if self.ring.as_ref().map_or(0, |r| r.stats().size as usize) == size {
            return Ok(());
        }
        let failed = |e: std::io::Error| {
            ConfigError::new(format!("cannot make a ring of {size} bytes: {e}"))
        };
        let shared =
            self.buffer_file.is_some() && self.ring.as_ref().is_some_and(Ring::shared_with_others);
        if size > 0 && shared {
            return Err(ConfigError::new(
                "the ring file is in use by another process as well: its size cannot change \
                 while they share it"
                    .to_string(),
            ));
        }
        // The outputs write what the old ring holds for them first: the new
        // one carries records over as printed.
        drop(self.printer());
        let new = match (size, &self.buffer_file) {
            (0, _) => None,
            (_, Some(path)) => {
                self.ring_file_here()?;
                let previous = self.ring.as_ref().map(|r| (r.view(), r.stats()));
                let previous = previous.as_ref().map(|(v, s)| (v as &dyn Region, *s));
                Some(Ring::create_file(path, size, previous, true).map_err(failed)?)
            }
            (_, None) => {
                let mut ring = Ring::new(size).map_err(failed)?;
                if let Some(old) = &self.ring {
                    ring.migrate_from(old);
                }
                Some(ring)
            }
        };
        let old = std::mem::replace(&mut self.ring, new);
        self.retire(old);
        self.ring_replaced();
        Ok(())
    }

    /// Takes fd 2 as it is now for stderr (see `diag`).
    pub fn adopt_stderr(&mut self) {
        self.ensure_init();
        diag::adopt_stderr();
    }

    pub fn reopen(&mut self) -> Result<(), ConfigError> {
        self.ensure_init();
        let mut first_error = None;
        let mut printer = self.printer();
        for out in printer.outputs.iter_mut() {
            if let Err(e) = out.reopen() {
                first_error.get_or_insert(ConfigError::new(format!(
                    "cannot reopen {}: {e}",
                    out.describe()
                )));
            }
        }
        printer.outputs.publish_for_crash();
        first_error.map_or(Ok(()), Err)
    }

    /// Descriptors of the file outputs, for [`flush`] to make their data
    /// durable without the lock; each with its output's name.
    fn files_to_sync(&mut self) -> Vec<(std::io::Result<sys::Fd>, String)> {
        self.printer()
            .outputs
            .iter()
            .filter_map(|out| out.for_sync().map(|fd| (fd, out.describe())))
            .collect()
    }

    /// Back to the state before the first call: outputs closed, ring freed,
    /// sources forgotten (their data made durable before: [`flush`]).
    pub fn shutdown(&mut self) {
        self.stop_ticker();
        drop(self.printer());
        printer::lock_of(self.printer).outputs.clear();
        self.sources.clear();
        vlog_default_source.set_level(UNKNOWN);
        self.forget_site_levels();
        let old = self.ring.take();
        self.retire(old);
        *self = State {
            retired: std::mem::take(&mut self.retired),
            catalog: std::mem::take(&mut self.catalog),
            printer: self.printer,
            ..State::new()
        };
    }

    pub fn stats(&self) -> ring::Stats {
        self.ring.as_ref().map(Ring::stats).unwrap_or_default()
    }
}

/// The file outputs' data to disk (`vlog_flush`, `vlog_shutdown`). The
/// disk may take its time: the descriptors are taken under the lock, and
/// synced without it, so no logging thread waits for the disk. (A batching
/// output's queue is sent before, without the lock too: `ticker::drain`.)
pub fn flush() -> Result<(), ConfigError> {
    let files = super::config_call::configure(|s| Ok(s.files_to_sync()))?;
    let mut first_error = None;
    for (fd, name) in files {
        if let Err(e) = fd.and_then(|fd| crate::output::file::sync(&fd)) {
            first_error.get_or_insert(ConfigError::new(format!("cannot flush {name}: {e}")));
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Steps down after a panic was caught at the C boundary, and says so once
/// per step: the first panic turns the outputs off (the ring keeps
/// recording), a second one turns every source off. `what` is the panic's
/// message. Never panics itself.
pub fn step_down(what: &str) {
    let step = SAFE_MODE
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |m| {
            (m < SILENT).then_some(m + 1)
        })
        .map_or(SILENT + 1, |old| old + 1);
    let text = match step {
        RING_ONLY => {
            format!("internal error ({what}); going on with the ring only: outputs are off")
        }
        SILENT => format!("internal error again ({what}); logging is off"),
        _ => return,
    };
    let _ = crate::panic::catch(|| {
        let done = enter(|s| {
            s.clear_outputs();
            note(s.ring.as_mut(), &text);
            s.refresh_sources();
        });
        if done.is_none() {
            // The lock is this thread's (the panic was inside vlog): say it
            // without the ring. The next call that takes the lock sees the
            // step in `safe_mode`.
            diag::warn(&text);
        }
    });
}
