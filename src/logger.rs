//! The global logger: configuration, the registry of sources, the ring and the
//! outputs behind one lock, and the recording path.
//!
//! A recorded message takes the lock once: the record goes into the ring and,
//! rendered once, to every output whose priority it meets. Readers of the ring
//! (`vlog_dump`, later the crash handler) take no lock; they find the ring
//! through `PUBLISHED` and announce themselves in `READERS`, so a ring that is
//! replaced is freed only after they are done with it.
//!
//! The lock is std's Mutex, a bare futex word on Linux. parking_lot keeps a
//! process-wide table of parked threads whose bucket locks a fork can leave
//! held by a thread that does not exist in the child, so a child forked while
//! other threads log could hang on its first contended lock (parking_lot issue
//! 515); a futex word has no such table, and the atfork handlers below make it
//! safe to fork at any moment.

use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::config::{self, ConfigError, DEFAULT_BUFFER_SIZE, DEFAULT_LEVEL};
use crate::crash::{self, DumpTarget};
use crate::deferred::{self, CapturedArgs};
use crate::filter::Filters;
use crate::format::{self, Bounded, Sink, JSON_LINE_MAX, LINE_MAX};
use crate::output::{Form, Output, OutputSpecs, Target};
use crate::priority::Priority;
use crate::reader::{Image, Region};
use crate::record::{Kind as RecordKind, Record, MESSAGE_MAX};
use crate::ring::{self, Ring, View};
use crate::sites::Site;
use crate::source::{vlog_default_source, vlog_source, Registry, OFF, UNKNOWN};
use crate::sys;

/// A message as it arrives from C, already formatted.
pub struct Message<'a> {
    pub source: &'a vlog_source,
    pub priority: Priority,
    pub file: &'a [u8],
    pub line: u32,
    pub func: &'a [u8],
    pub text: &'a [u8],
    /// The length the text had before the caller cut it (>= `text.len()`).
    pub full_len: usize,
    /// For a deferred message: writes its payload (format and arguments)
    /// into the buffer it is given, false if it does not fit; `text` is then
    /// unused.
    pub encode: Option<&'a Encoder<'a>>,
    /// Writes the message's structured fields, encoded (see `fields`), into
    /// the buffer it is given; None for a message without fields.
    pub fields: Option<&'a FieldWriter<'a>>,
}

/// Writes a deferred payload into the buffer it is given; false if it does
/// not fit.
pub type Encoder<'a> = dyn Fn(&mut Vec<u8>) -> bool + 'a;

/// A deferred call site as the logger sees it.
pub trait CallSite {
    /// The site's file, function, line and format (with an empty source name:
    /// the logger fills it in). Needed only on a site's first record in a ring
    /// and when the message is printed.
    fn describe(&self) -> Site<'_>;
    /// Where the site remembers its dictionary entry: the ring's id in the high
    /// 32 bits, the entry's offset in the low ones. Written under the lock.
    fn entry(&self) -> &AtomicU64;
    /// The address of the source the entry names. Written under the lock.
    fn entry_source(&self) -> &AtomicUsize;
}

/// A message from a deferred call site: the site and the captured arguments.
pub struct SiteMessage<'a, S, A> {
    pub source: &'a vlog_source,
    pub priority: Priority,
    pub site: &'a S,
    pub args: A,
}

/// Writes a message's encoded structured fields into the buffer it is given.
pub type FieldWriter<'a> = dyn Fn(&mut Vec<u8>) + 'a;

/// What became of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Recorded,
    /// Dropped by the filters (or as a nested call).
    Dropped,
    /// A deferred message whose arguments do not fit a record: the caller
    /// formats it and logs the text.
    FormatAtCall,
}

pub struct State {
    initialized: bool,
    level: Priority,
    filters: Filters,
    outputs: Vec<Output>,
    /// True while no output string was given: then the one output is stderr at
    /// the default level, following later level changes.
    default_outputs: bool,
    ring: Option<Ring>,
    /// A ring replaced by the last operation, freed once no reader uses it.
    retired: Option<Ring>,
    sources: Registry,
    /// Preallocated buffers, so recording never allocates once running.
    line: Vec<u8>,
    json_line: Vec<u8>,
    /// The journald output's entry.
    entry: Vec<u8>,
    fields: Vec<u8>,
    message: Vec<u8>,
    rendered: Vec<u8>,
    /// Where crash dumps go, and the signal that asks for one (environment).
    dump: DumpTarget,
    dump_signal: Option<c_int>,
    dump_opened: bool,
    /// The file the ring lives in (`VLOG_BUFFER_FILE`), if any.
    buffer_file: Option<PathBuf>,
}

static STATE: Mutex<State> = Mutex::new(State::new());
static PUBLISHED: AtomicPtr<ring::Header> = AtomicPtr::new(ptr::null_mut());
static READERS: AtomicUsize = AtomicUsize::new(0);
/// Messages logged while the same thread was already inside the logger (from a
/// signal handler, say), dropped instead of deadlocking.
static NESTED_DROPPED: AtomicU64 = AtomicU64::new(0);
/// How far vlog has stepped down after internal errors (panics caught at the
/// C boundary): NORMAL, RING_ONLY (outputs off: the code that prints may be
/// what failed) or SILENT (every source off: nothing more is recorded).
static SAFE_MODE: AtomicU8 = AtomicU8::new(NORMAL);
const NORMAL: u8 = 0;
const RING_ONLY: u8 = 1;
const SILENT: u8 = 2;

thread_local! {
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    /// The lock, held by the forking thread from fork_prepare until the
    /// parent or child handler releases it.
    static FORK_GUARD: RefCell<Option<MutexGuard<'static, State>>> = const { RefCell::new(None) };
}

/// Takes the lock. A panic while it was held (caught at the C boundary) leaves
/// the state usable, so poisoning is ignored.
fn lock() -> MutexGuard<'static, State> {
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub use crate::diag::warn;

pub fn now_ns() -> u64 {
    sys::realtime_ns()
}

impl Default for State {
    fn default() -> State {
        State::new()
    }
}

impl State {
    pub const fn new() -> State {
        State {
            initialized: false,
            level: DEFAULT_LEVEL,
            filters: Filters(Vec::new()),
            outputs: Vec::new(),
            default_outputs: true,
            ring: None,
            retired: None,
            sources: Registry::new(),
            line: Vec::new(),
            json_line: Vec::new(),
            entry: Vec::new(),
            fields: Vec::new(),
            message: Vec::new(),
            rendered: Vec::new(),
            dump: DumpTarget::Stderr,
            dump_signal: None,
            dump_opened: false,
            buffer_file: None,
        }
    }

    /// Reads the environment once (unless the process is setuid/setgid) and sets
    /// up the ring and outputs. Explicit setters called later override it.
    pub fn ensure_init(&mut self) {
        if self.initialized {
            return;
        }
        self.initialized = true;
        crate::diag::adopt_stderr();
        crate::ffi::fork::register_handlers();
        let env = if sys::secure_mode() {
            config::EnvConfig::default()
        } else {
            config::from_env(
                |name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()),
                warn,
            )
        };
        self.level = env.level.unwrap_or(DEFAULT_LEVEL);
        self.filters = env.filters.unwrap_or_default();
        match env.outputs {
            Some(OutputSpecs(outputs)) if !outputs.is_empty() => {
                self.outputs = outputs;
                self.default_outputs = false;
            }
            _ => self.use_default_outputs(),
        }
        if SAFE_MODE.load(Ordering::Relaxed) != NORMAL {
            // After an internal error, a restart (vlog_shutdown) keeps them off.
            self.outputs.clear();
            self.default_outputs = false;
        }
        self.dump = env.dump.unwrap_or_default();
        self.dump_signal = env.dump_signal;
        let size = env.buffer_size.unwrap_or(DEFAULT_BUFFER_SIZE);
        let result = match env.buffer_file {
            Some(path) if size > 0 => self.open_ring_file(&path, size).map(|()| {
                self.buffer_file = Some(path);
            }),
            _ => self.resize(size),
        };
        if let Err(e) = result {
            warn(&format!("{e}; keeping the ring in memory"));
            if let Err(e) = self.resize(size) {
                warn(&format!("running without a ring: {e}"));
            }
        }
        self.line.reserve(LINE_MAX);
        self.json_line.reserve(JSON_LINE_MAX);
        self.entry.reserve(LINE_MAX);
        self.fields.reserve(crate::fields::ENCODED_MAX);
        self.message.reserve(MESSAGE_MAX);
        self.rendered.reserve(MESSAGE_MAX);
        self.refresh_sources();
    }

    fn use_default_outputs(&mut self) {
        self.outputs = vec![Output::stderr(self.level)];
        self.default_outputs = true;
    }

    /// The cached level for a source with this name.
    fn resolve(&self, name: &[u8]) -> i32 {
        if SAFE_MODE.load(Ordering::Relaxed) == SILENT {
            return OFF;
        }
        let wanted = self.filters.lookup(name).unwrap_or(self.level) as i32;
        if self.ring.is_some() {
            return wanted;
        }
        // Without a ring, a message no output prints is read by no one.
        let printed = self.outputs.iter().map(|o| o.priority as i32).min();
        wanted.max(printed.unwrap_or(OFF))
    }

    fn refresh_sources(&self) {
        for source in self.sources.iter() {
            source.set_level(self.resolve(source.name_bytes()));
        }
        let printed = self.outputs.iter().map(|o| o.priority as i32).min();
        crate::source::vlog_print_level.store(printed.unwrap_or(OFF), Ordering::Relaxed);
    }

    /// Registers `source` if it is new and returns its level.
    ///
    /// # Safety
    /// `source` must stay valid until it is unregistered (VLOG_INIT's destructor
    /// does that when its object is unloaded).
    pub unsafe fn register(&mut self, source: &vlog_source) -> i32 {
        self.ensure_init();
        // SAFETY: forwarded from the caller.
        if unsafe { self.sources.add(source) } {
            source.set_level(self.resolve(source.name_bytes()));
        }
        source.level()
    }

    /// Installs the crash handler as `VLOG_DUMP` and `VLOG_DUMP_SIGNAL` say;
    /// `VLOG_DUMP=off` is obeyed unless `explicit` (an API call asked).
    pub fn install_crash_handler(&mut self, explicit: bool) -> Result<(), ConfigError> {
        self.ensure_init();
        if self.dump == DumpTarget::Off && !explicit {
            return Ok(());
        }
        if !self.dump_opened {
            crash::set_dump_fd(self.dump.open()?, self.dump.open_image());
            self.dump_opened = true;
        }
        crash::install()
            .map_err(|e| ConfigError::new(format!("cannot install the crash handler: {e}")))?;
        if let Some(sig) = self.dump_signal {
            crash::install_dump_signal(sig)?;
        }
        Ok(())
    }

    pub fn unregister(&mut self, source: &vlog_source) {
        self.sources.remove(source);
    }

    pub fn set_level(&mut self, level: Priority) {
        self.ensure_init();
        self.level = level;
        if self.default_outputs {
            self.use_default_outputs();
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

    pub fn set_outputs(&mut self, spec: &str) -> Result<(), ConfigError> {
        if SAFE_MODE.load(Ordering::Relaxed) != NORMAL {
            return Err(ConfigError::new(
                "outputs stay off after an internal error in vlog (see its report)".to_string(),
            ));
        }
        let OutputSpecs(outputs) = OutputSpecs::parse(spec)?;
        self.ensure_init();
        if outputs.is_empty() {
            self.use_default_outputs();
        } else {
            self.outputs = outputs;
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
        let new = match (size, &self.buffer_file) {
            (0, _) => None,
            (_, Some(path)) => {
                let previous = self.ring.as_ref().map(|r| (r.view(), r.stats()));
                let previous = previous.as_ref().map(|(v, s)| (v as &dyn Region, *s));
                Some(Ring::create_file(path, size, previous).map_err(failed)?)
            }
            (_, None) => {
                let mut ring = Ring::new(size).map_err(failed)?;
                if let Some(old) = &self.ring {
                    ring.migrate_from(old);
                }
                Some(ring)
            }
        };
        self.retired = std::mem::replace(&mut self.ring, new);
        Ok(())
    }

    /// The first ring of a process whose ring lives in `path`: records an
    /// earlier run left there are carried over (the sequence goes on), and a
    /// file that is not a vlog ring is never overwritten.
    fn open_ring_file(&mut self, path: &Path, size: usize) -> Result<(), ConfigError> {
        let refuse =
            |why: String| ConfigError::new(format!("ring file '{}' {why}", path.display()));
        let old = match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(refuse(format!("cannot be read: {e}"))),
            Ok(m) if !m.file_type().is_file() => {
                return Err(refuse("is not a regular file; not using it".into()))
            }
            Ok(_) => std::fs::read(path).map_err(|e| refuse(format!("cannot be read: {e}")))?,
        };
        if !old.is_empty() && !old.starts_with(&ring::magic()) {
            return Err(refuse(
                "exists and is not a vlog ring; not overwriting it".into(),
            ));
        }
        // A damaged or truncated earlier ring is replaced; what parses is kept.
        let image = Image::parse(&old).ok();
        let previous = image.as_ref().map(|i| (i as &dyn Region, i.stats()));
        let ring = Ring::create_file(path, size, previous)
            .map_err(|e| refuse(format!("cannot be created: {e}")))?;
        self.retired = self.ring.replace(ring);
        Ok(())
    }

    /// Records one message: the ring, then every output whose priority it meets.
    ///
    /// # Safety
    /// As for [`State::register`], for `m.source`.
    pub unsafe fn record(&mut self, m: &Message) -> Outcome {
        let mut level = m.source.level();
        if level == UNKNOWN {
            // SAFETY: forwarded from the caller.
            level = unsafe { self.register(m.source) };
        }
        if (m.priority as i32) < level {
            return Outcome::Dropped;
        }
        let State {
            ring,
            outputs,
            line,
            json_line,
            entry,
            fields,
            message,
            rendered,
            ..
        } = self;
        let text = if let Some(encode) = m.encode {
            message.clear();
            if !encode(message) {
                return Outcome::FormatAtCall;
            }
            &message[..]
        } else if m.full_len > m.text.len() || m.text.len() > MESSAGE_MAX {
            truncate(m.text, m.full_len.max(m.text.len()), message)
        } else {
            m.text
        };
        let rec = Record {
            seq: 0,
            time_ns: now_ns(),
            tid: sys::thread_id(),
            line: m.line,
            priority: m.priority,
            source: m.source.name_bytes(),
            file: m.file,
            func: m.func,
            kind: if m.encode.is_some() {
                RecordKind::Deferred
            } else {
                RecordKind::Text
            },
            message: text,
            fields: match m.fields {
                Some(write) if m.encode.is_none() => {
                    fields.clear();
                    write(fields);
                    if crate::fields::decode(fields).is_some_and(|f| !f.is_empty()) {
                        &fields[..]
                    } else {
                        b""
                    }
                }
                _ => b"",
            },
        }
        .clipped();
        // The outputs show the number the ring gave the record (0 without a
        // ring), as vlog-dump does.
        let rec = match ring {
            Some(ring) => Record {
                seq: ring.append(&rec),
                ..rec
            },
            None => rec,
        };
        if outputs.iter().any(|o| m.priority >= o.priority) {
            // An output prints text: a deferred message is rendered, once.
            let shown = if rec.kind == RecordKind::Deferred {
                rendered.resize(MESSAGE_MAX, 0);
                let mut text = Bounded::new(&mut rendered[..]);
                if crate::deferred::render(rec.message, &mut text).is_err() {
                    return Outcome::Recorded;
                }
                Record {
                    message: text.finish(),
                    kind: RecordKind::Text,
                    ..rec
                }
            } else {
                rec
            };
            // Each form is made once, and only if an output prints it.
            let (mut text_made, mut json_made) = (false, false);
            for out in outputs.iter_mut().filter(|o| m.priority >= o.priority) {
                let bytes = match (out.form, &out.target) {
                    (Form::Json, _) => {
                        if !json_made {
                            json_line.clear();
                            format::render_json(&shown, Some(sys::process_id()), json_line);
                            json_made = true;
                        }
                        &json_line[..]
                    }
                    // One journald output at most: its entry is made for it;
                    // each syslog output's message too (idents differ).
                    (Form::Journal, Target::Journald { ident, .. }) => {
                        entry.clear();
                        crate::journal::render(&shown, ident, entry);
                        &entry[..]
                    }
                    (
                        Form::Syslog,
                        Target::Syslog {
                            ident,
                            hostname,
                            socket,
                            ..
                        },
                    ) => {
                        entry.clear();
                        let pid = sys::process_id();
                        if matches!(socket, crate::output::SyslogSocket::Local(_)) {
                            crate::syslog::render_local(&shown, ident, pid, entry);
                        } else {
                            crate::syslog::render(&shown, ident, hostname, pid, entry);
                        }
                        &entry[..]
                    }
                    _ => {
                        if !text_made {
                            line.clear();
                            format::render_line(&shown, line);
                            text_made = true;
                        }
                        &line[..]
                    }
                };
                if let Some(event) = out.write_line(bytes) {
                    report(ring.as_mut(), &event);
                }
            }
        }
        Outcome::Recorded
    }

    /// Records a message of a deferred call site. When nothing but the ring
    /// wants it (the common case of debug messages), the record carries only the
    /// arguments and refers to the site's dictionary entry; otherwise it takes
    /// the general path of [`State::record`].
    ///
    /// # Safety
    /// As for [`State::register`], for `m.source`.
    pub unsafe fn record_site<'a>(
        &mut self,
        m: &SiteMessage<'a, impl CallSite, impl CapturedArgs<'a>>,
    ) -> Outcome {
        let mut level = m.source.level();
        if level == UNKNOWN {
            // SAFETY: forwarded from the caller.
            level = unsafe { self.register(m.source) };
        }
        if (m.priority as i32) < level {
            return Outcome::Dropped;
        }
        let printed = self.outputs.iter().any(|o| m.priority >= o.priority);
        let entry = match &mut self.ring {
            Some(ring) if !printed => site_entry(ring, m),
            _ => None,
        };
        let (Some(entry), Some(ring)) = (entry, &mut self.ring) else {
            let site = m.site.describe();
            let encode = |out: &mut Vec<u8>| deferred::encode(site.format, m.args.clone(), out);
            let general = Message {
                source: m.source,
                priority: m.priority,
                file: site.file,
                line: site.line,
                func: site.func,
                text: b"",
                full_len: 0,
                encode: Some(&encode),
                fields: None,
            };
            // SAFETY: forwarded from the caller.
            return unsafe { self.record(&general) };
        };
        let Some(args_len) = deferred::args_len(m.args.clone()) else {
            return Outcome::FormatAtCall;
        };
        ring.append_site(
            now_ns(),
            sys::thread_id(),
            m.priority,
            entry,
            m.args.clone(),
            args_len,
        );
        Outcome::Recorded
    }

    pub fn reopen(&mut self) -> Result<(), ConfigError> {
        self.ensure_init();
        // A daemon that redirected stderr on purpose says so by reopening.
        crate::diag::adopt_stderr();
        let mut first_error = None;
        for out in &mut self.outputs {
            if let Err(e) = out.reopen() {
                first_error.get_or_insert(ConfigError::new(format!(
                    "cannot reopen {}: {e}",
                    out.describe()
                )));
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    pub fn flush(&mut self) -> Result<(), ConfigError> {
        for out in &self.outputs {
            out.sync()
                .map_err(|e| ConfigError::new(format!("cannot flush {}: {e}", out.describe())))?;
        }
        Ok(())
    }

    /// Back to the state before the first call: outputs closed, ring freed,
    /// sources forgotten.
    pub fn shutdown(&mut self) {
        let _ = self.flush();
        self.sources.clear();
        vlog_default_source.set_level(UNKNOWN);
        let ring = self.ring.take();
        *self = State {
            retired: ring,
            ..State::new()
        };
    }

    pub fn stats(&self) -> ring::Stats {
        self.ring.as_ref().map(Ring::stats).unwrap_or_default()
    }
}

/// Reports an output's failure, recovery or rotation: on fd 2 (when it is
/// still stderr) and as a warning record from source `vlog` in the ring, so a
/// dump shows it whatever became of fd 2.
fn report(ring: Option<&mut Ring>, event: &str) {
    warn(event);
    if let Some(ring) = ring {
        ring.append(
            &Record {
                seq: 0,
                time_ns: now_ns(),
                tid: sys::thread_id(),
                line: 0,
                priority: Priority::Warning,
                source: b"vlog",
                file: b"",
                func: b"output",
                kind: RecordKind::Text,
                message: event.as_bytes(),
                fields: b"",
            }
            .clipped(),
        );
    }
}

/// Fills `buf` with as much of `text` as fits in MESSAGE_MAX together with a
/// marker giving the full length, and returns it. `buf` has MESSAGE_MAX bytes
/// of capacity reserved, so this does not allocate.
fn truncate<'b>(text: &[u8], full_len: usize, buf: &'b mut Vec<u8>) -> &'b [u8] {
    buf.resize(MESSAGE_MAX, 0);
    let mut message = Bounded::new(&mut buf[..]);
    message.put(text);
    message.claim(full_len);
    message.finish()
}

/// Runs `f` on the global state under its lock, then publishes a ring that was
/// created or replaced and frees a retired one once no reader holds it.
pub fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    let mut state = lock();
    let result = f(&mut state);
    let now = state.ring.as_ref().map_or(ptr::null(), Ring::as_raw);
    if PUBLISHED.load(Ordering::SeqCst).cast_const() != now {
        PUBLISHED.store(now.cast_mut(), Ordering::SeqCst);
    }
    if let Some(old) = state.retired.take() {
        while READERS.load(Ordering::SeqCst) != 0 {
            std::thread::yield_now();
        }
        drop(old);
    }
    result
}

/// Marks the calling thread as inside the logger until dropped, even if what
/// runs inside panics.
struct Inside;

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|inside| inside.set(false));
    }
}

/// Runs `f` under the lock unless this thread is already inside the logger (a
/// signal handler that interrupted a logging call): then the lock is held by
/// this very thread and waiting would deadlock, so the call is dropped, counted,
/// and `None` returned.
pub fn enter<R>(f: impl FnOnce(&mut State) -> R) -> Option<R> {
    if INSIDE.with(|inside| inside.replace(true)) {
        NESTED_DROPPED.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    let _inside = Inside;
    crash::ensure_alt_stack();
    Some(with_state(f))
}

/// Records a message from C.
///
/// # Safety
/// As for [`State::register`], for `m.source`.
pub unsafe fn emit(m: &Message) -> Outcome {
    // SAFETY: forwarded from the caller.
    enter(|state| unsafe { state.record(m) }).unwrap_or(Outcome::Dropped)
}

/// Steps down after a panic was caught at the C boundary, and says so once
/// per step: the first panic turns the outputs off (the ring keeps
/// recording), a second one turns every source off. `what` is the panic's
/// message. Never panics itself.
pub fn after_panic(what: &str) {
    let step = SAFE_MODE
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |m| {
            (m < SILENT).then_some(m + 1)
        })
        .map_or(SILENT + 1, |old| old + 1);
    let note = match step {
        RING_ONLY => {
            format!("internal error ({what}); going on with the ring only: outputs are off")
        }
        SILENT => format!("internal error again ({what}); logging is off"),
        _ => return,
    };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if inside() {
            // The lock may be this thread's: say it without the ring.
            return warn(&note);
        }
        with_state(|s| {
            s.outputs.clear();
            s.default_outputs = false;
            report(s.ring.as_mut(), &note);
            s.refresh_sources();
        })
    }));
}

/// Records a message of a deferred call site from C.
///
/// # Safety
/// As for [`State::register`], for `m.source`.
pub unsafe fn emit_site<'a>(m: &SiteMessage<'a, impl CallSite, impl CapturedArgs<'a>>) -> Outcome {
    // SAFETY: forwarded from the caller.
    enter(|state| unsafe { state.record_site(m) }).unwrap_or(Outcome::Dropped)
}

/// The offset of `m`'s dictionary entry in `ring`, adding the site on its first
/// record there; None when the dictionary has no room for it.
fn site_entry<S: CallSite, A>(ring: &mut Ring, m: &SiteMessage<S, A>) -> Option<u32> {
    let cached = m.site.entry().load(Ordering::Relaxed);
    let source = m.source as *const vlog_source as usize;
    if (cached >> 32) as u32 == ring.id() && m.site.entry_source().load(Ordering::Relaxed) == source
    {
        return Some(cached as u32);
    }
    let site = Site {
        source: m.source.name_bytes(),
        ..m.site.describe()
    };
    let offset = ring.add_site(&site)?;
    m.site.entry().store(
        u64::from(ring.id()) << 32 | u64::from(offset),
        Ordering::Relaxed,
    );
    m.site.entry_source().store(source, Ordering::Relaxed);
    Some(offset)
}

/// Registers a source from C and returns its level (`OFF` when dropped as
/// nested).
///
/// # Safety
/// As for [`State::register`].
pub unsafe fn register(source: &vlog_source) -> i32 {
    // SAFETY: forwarded from the caller.
    enter(|state| unsafe { state.register(source) }).unwrap_or(OFF)
}

/// True while this thread is inside the logger (so a call now would nest).
pub fn inside() -> bool {
    INSIDE.with(Cell::get)
}

pub fn nested_dropped() -> u64 {
    NESTED_DROPPED.load(Ordering::Relaxed)
}

/// Leaves READERS when dropped, even if the reader panics.
struct ReaderGuard;

impl Drop for ReaderGuard {
    fn drop(&mut self) {
        READERS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `f` on a view of the current ring, without the lock. No allocation, no
/// lock: safe in a signal handler.
pub fn read_ring<R>(f: impl FnOnce(Option<View>) -> R) -> R {
    READERS.fetch_add(1, Ordering::SeqCst);
    let _guard = ReaderGuard;
    let header = PUBLISHED.load(Ordering::SeqCst);
    let view = if header.is_null() {
        None
    } else {
        // SAFETY: a published ring is freed only after it is unpublished and
        // READERS, which we joined before loading the pointer, drops to zero.
        Some(unsafe { View::from_raw(header) })
    };
    f(view)
}

/// Fork support: the prepare handler holds the lock across fork, so the child
/// never inherits it held by a thread that does not exist there.
pub fn fork_prepare() {
    let guard = lock();
    FORK_GUARD.with(|slot| *slot.borrow_mut() = Some(guard));
}

pub fn fork_parent() {
    FORK_GUARD.with(|slot| slot.borrow_mut().take());
}

pub fn fork_child() {
    // The child has only this thread: no reader can be inside the ring, and the
    // cached thread id belongs to the parent.
    READERS.store(0, Ordering::SeqCst);
    sys::forget_ids_after_fork();
    FORK_GUARD.with(|slot| {
        // A TCP connection to a collector is the parent's: two processes
        // writing one stream could interleave frames. The child makes its own.
        if let Some(state) = slot.borrow_mut().as_mut() {
            state.outputs.iter_mut().for_each(Output::after_fork);
        }
        slot.borrow_mut().take()
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicI32;

    /// A source that lives as long as the test process, like a C static;
    /// kept reachable so a leak checker does not count it.
    fn source(name: &'static std::ffi::CStr) -> &'static vlog_source {
        static KEEP: Mutex<Vec<&'static vlog_source>> = Mutex::new(Vec::new());
        let source = Box::leak(Box::new(vlog_source {
            level: AtomicI32::new(UNKNOWN),
            name: name.as_ptr(),
            name_len: name.to_bytes().len(),
        }));
        KEEP.lock().unwrap().push(source);
        source
    }

    fn quiet_state() -> State {
        let mut s = State::new();
        s.initialized = true;
        s.outputs = Vec::new();
        s.default_outputs = false;
        s.resize(ring::MIN_SIZE).unwrap();
        s
    }

    fn log(s: &mut State, src: &'static vlog_source, p: Priority, text: &str) -> bool {
        let m = Message {
            source: src,
            priority: p,
            file: b"f.c",
            line: 1,
            func: b"f",
            text: text.as_bytes(),
            full_len: text.len(),
            encode: None,
            fields: None,
        };
        // SAFETY: the source is leaked, so it lives forever.
        unsafe { s.record(&m) == Outcome::Recorded }
    }

    fn ring_messages(s: &State) -> Vec<String> {
        let mut v = Vec::new();
        s.ring.as_ref().unwrap().view().read(|e| {
            if let crate::reader::Entry::Record(r) = e {
                v.push(String::from_utf8_lossy(r.message).into_owned())
            }
        });
        v
    }

    #[test]
    fn levels_follow_filters_and_default_level() {
        let mut s = quiet_state();
        let qemu = source(c"qemu.monitor");
        let util = source(c"util.file");
        assert!(!log(&mut s, qemu, Priority::Debug, "dropped"));
        assert_eq!(qemu.level(), 3);
        s.set_filters("1:qemu").unwrap();
        assert_eq!(qemu.level(), 1);
        assert!(log(&mut s, qemu, Priority::Debug, "kept"));
        log(&mut s, util, Priority::Info, "dropped");
        assert_eq!(util.level(), 3);
        // A change of the default level alone refreshes the caches.
        s.set_level(Priority::Info);
        assert_eq!(util.level(), 2);
        assert_eq!(qemu.level(), 1);
        assert!(s.set_filters("1:qemu 9:x").is_err());
        assert_eq!(qemu.level(), 1, "a rejected string changes nothing");
        s.unregister(qemu);
        assert_eq!(qemu.level(), UNKNOWN);
        assert_eq!(ring_messages(&s), ["kept"]);
    }

    #[test]
    fn without_ring_outputs_decide() {
        let mut s = quiet_state();
        s.set_buffer_size(0).unwrap();
        let src = source(c"x");
        log(&mut s, src, Priority::Error, "e");
        assert_eq!(src.level(), OFF, "nothing reads it");
        s.set_outputs("2:stderr").unwrap();
        assert_eq!(src.level(), 3, "default level still filters");
        s.set_level(Priority::Debug);
        assert_eq!(src.level(), 2, "stderr prints info and up");
    }

    #[test]
    fn truncation_marks_full_length() {
        let mut s = quiet_state();
        let src = source(c"t");
        let long = "x".repeat(MESSAGE_MAX + 10);
        log(&mut s, src, Priority::Error, &long);
        let got = ring_messages(&s);
        assert_eq!(got[0].len(), MESSAGE_MAX);
        assert!(got[0].ends_with(&format!("x [truncated: {} bytes]", MESSAGE_MAX + 10)));
        let m = Message {
            source: src,
            priority: Priority::Error,
            file: b"",
            line: 0,
            func: b"",
            text: b"short",
            full_len: 100_000,
            encode: None,
            fields: None,
        };
        // SAFETY: the source is leaked.
        unsafe { s.record(&m) };
        assert_eq!(ring_messages(&s)[1], "short [truncated: 100000 bytes]");
    }

    #[test]
    fn deferred_message_is_rendered_for_outputs_and_ring() {
        let mut s = quiet_state();
        let path = std::env::temp_dir().join(format!("vlog-deferred-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&path);
        s.set_outputs(&format!("1:file:{}", path.display()))
            .unwrap();
        s.set_level(Priority::Debug);
        let src = source(c"deferred.out");
        let args = [
            crate::deferred::Captured::Signed(42),
            crate::deferred::Captured::Double(0.5),
        ];
        let encode =
            |out: &mut Vec<u8>| crate::deferred::encode(b"n=%d x=%.2f", args.iter().copied(), out);
        let m = Message {
            source: src,
            priority: Priority::Info,
            file: b"f.c",
            line: 1,
            func: b"f",
            text: b"",
            full_len: 0,
            encode: Some(&encode),
            fields: None,
        };
        // SAFETY: the source is leaked.
        assert_eq!(unsafe { s.record(&m) }, Outcome::Recorded);
        let file = std::fs::read_to_string(&path).unwrap();
        assert!(file.ends_with(" : n=42 x=0.50\n"), "{file}");
        assert_eq!(ring_messages(&s), ["n=42 x=0.50"]);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn resize_keeps_records() {
        let mut s = quiet_state();
        let src = source(c"r");
        for i in 0..10 {
            log(&mut s, src, Priority::Error, &format!("m{i}"));
        }
        s.set_buffer_size(1 << 20).unwrap();
        assert_eq!(ring_messages(&s).len(), 10);
        assert!(s.set_buffer_size(10).is_err());
        assert_eq!(s.stats().size, 1 << 20);
    }

    #[test]
    fn file_output_gets_lines_at_its_priority() {
        let mut s = quiet_state();
        let path = std::env::temp_dir().join(format!("vlog-logger-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&path);
        s.set_outputs(&format!("3:file:{}", path.display()))
            .unwrap();
        let src = source(c"file.test");
        s.set_level(Priority::Debug);
        log(&mut s, src, Priority::Info, "info line");
        log(&mut s, src, Priority::Error, "error\nline");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.ends_with(": error : file.test : f:1 : error\\nline\n"),
            "{text}"
        );
        assert_eq!(ring_messages(&s), ["info line", "error\nline"]);
        std::fs::remove_file(&path).unwrap();
    }
}
