//! The recorded call, top to bottom: the filter, then the ring, then the
//! outputs. One lock acquisition (`enter`), no allocation, the arguments
//! captured once by the boundary and copied once into the ring.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::{enter, note, ticker, Entered, State};
use crate::deferred::{self, Captured};
use crate::fields::{self, Field, Names, Refusal};
use crate::priority::Priority;
use crate::record::{Record, MESSAGE_MAX};
use crate::ring::sites::Site;
use crate::ring::Ring;
use crate::source::{Live, OFF, UNKNOWN};
use crate::text::{Bounded, Sink};
use crate::{diag, stats, sys};

/// What became of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Recorded,
    /// Dropped by the filters (or as a nested call).
    Dropped,
}

/// A deferred call site's names, line and format, as the logger asks for
/// them: only on the site's first record in a ring and when the message is
/// printed.
pub trait CallSite {
    /// The site's file, function, line and format (with an empty source
    /// name: the logger fills it in).
    fn describe(&self) -> Site<'_>;
}

/// What a call hands over, every pointer already made a slice.
pub enum Message<'a> {
    /// A finished message: its text, the length it had before the caller
    /// cut it (at least `text.len()`), and its structured fields, named by
    /// a caller (checked) or by vlog.
    Text {
        file: &'a [u8],
        line: u32,
        func: &'a [u8],
        text: &'a [u8],
        full_len: usize,
        fields: &'a [Field<'a>],
        names: Names,
    },
    /// The raw arguments of a deferred call site that the general path
    /// takes (see [`SiteCall`]); its names, line and format are the site's.
    Args {
        site: &'a dyn CallSite,
        args: &'a [Captured<'a>],
        /// Their size in a record (`deferred::args_len`), None when they do
        /// not fit one or a `*` count is beyond what a record may keep (the
        /// text is then made at the call).
        args_len: Option<usize>,
    },
}

pub struct Call<'a> {
    pub source: Live,
    pub priority: Priority,
    pub message: Message<'a>,
}

/// Records a message: into the ring, and to every output whose priority it
/// meets.
// Inlined into its two callers at the boundary: the recorded call is then
// one function from the C entry to the ring.
#[inline(always)]
pub fn emit(call: &Call) -> Outcome {
    let Some(mut entered) = Entered::new() else {
        stats::add(&stats::NESTED_DROPPED, 1);
        return Outcome::Dropped;
    };
    let outcome = entered.state().record(call);
    entered.leave();
    outcome
}

/// The arguments of a deferred call site, as the C entry hands them over.
#[derive(Clone, Copy)]
pub struct SiteCall<'a> {
    pub source: Live,
    pub priority: Priority,
    pub site: &'a dyn CallSite,
    /// Where the site remembers its dictionary entry (the ring's id in the
    /// high 32 bits, the entry's offset in the low ones), and the address of
    /// the source that entry names; both written under the lock.
    pub entry: &'a AtomicU64,
    pub entry_source: &'a AtomicUsize,
    pub args: &'a [Captured<'a>],
    pub args_len: Option<usize>,
}

impl<'a> SiteCall<'a> {
    fn call(self) -> Call<'a> {
        Call {
            source: self.source,
            priority: self.priority,
            message: Message::Args {
                site: self.site,
                args: self.args,
                args_len: self.args_len,
            },
        }
    }
}

/// [`emit`] for a deferred call site: the flight recorder's call, which
/// builds no [`Call`] unless it leaves the ring-only path.
#[inline(always)]
pub fn emit_site(call: SiteCall) -> Outcome {
    let Some(mut entered) = Entered::new() else {
        stats::add(&stats::NESTED_DROPPED, 1);
        return Outcome::Dropped;
    };
    let outcome = entered.state().record_site_call(call);
    entered.leave();
    outcome
}

/// Registers a source and returns its level (`OFF` when dropped as
/// nested).
pub fn register(source: Live) -> i32 {
    enter(|state| state.register(source)).unwrap_or_else(|| {
        // The message that asked is dropped.
        stats::add(&stats::NESTED_DROPPED, 1);
        OFF
    })
}

impl State {
    #[inline(always)]
    fn record(&mut self, call: &Call) -> Outcome {
        // 1. The filters: the source's cached level (registering a source
        // that is new decides it).
        let mut level = call.source.get().level();
        if level == UNKNOWN {
            level = self.register(call.source);
        }
        if (call.priority as i32) < level {
            return Outcome::Dropped;
        }
        let printed = self.outputs.prints(call.priority);
        // (A deferred call site's message comes through `record_site_call`,
        // which takes step 2 first.)
        self.record_general(call, printed)
    }

    /// Steps 3 to 5, apart from the recorded call's steps 1 and 2 so that
    /// those stay small enough to be one function with the C entry.
    #[inline(never)]
    fn record_general(&mut self, call: &Call, printed: bool) -> Outcome {
        // 3. The message as the ring keeps it: the text (cut with a marker
        // when it is too long) and its fields, or a deferred payload.
        let State {
            ring,
            outputs,
            fields: field_buf,
            message,
            rendered,
            threads,
            ..
        } = self;
        let site;
        let (file, line, func, body, fields, deferred) = match &call.message {
            Message::Text {
                file,
                line,
                func,
                text,
                full_len,
                fields,
                names,
            } => {
                let body = if *full_len > text.len() || text.len() > MESSAGE_MAX {
                    truncated(text, *full_len, message)
                } else {
                    text
                };
                let fields = encode_fields(fields, *names, field_buf);
                (*file, *line, *func, body, fields, false)
            }
            Message::Args {
                site: s,
                args,
                args_len,
                ..
            } => {
                site = s.describe();
                message.clear();
                // No args_len: too long, or a count beyond what is stored.
                if args_len.is_some() && deferred::encode(site.format, args, message) {
                    (
                        site.file,
                        site.line,
                        site.func,
                        &message[..],
                        &b""[..],
                        true,
                    )
                } else {
                    // Not to be kept as arguments: the text, made now by
                    // vlog's printf (the arguments were read once already)
                    // and cut with the marker.
                    message.resize(MESSAGE_MAX, 0);
                    let mut text = Bounded::new(&mut message[..]);
                    // Cannot fail: the site's signature matched the
                    // arguments and its counts were checked.
                    let _ = deferred::render_captured(site.format, args, &mut text);
                    (
                        site.file,
                        site.line,
                        site.func,
                        text.finish(),
                        &b""[..],
                        false,
                    )
                }
            }
        };
        let rec = Record {
            seq: 0,
            time_ns: sys::realtime_ns(),
            tid: sys::thread_id(),
            line,
            priority: call.priority,
            source: call.source.get().name_bytes(),
            file,
            func,
            message: body,
            fields,
        }
        .clipped();

        // 4. The ring. The outputs show the number it gave the record (0
        // without a ring), as vlog-dump does.
        let seq = match ring.as_mut() {
            Some(ring) if deferred => ring.append_deferred(&rec),
            Some(ring) => ring.append(&rec),
            None => 0,
        };
        if !printed {
            return Outcome::Recorded;
        }

        // 5. The outputs, with a deferred message rendered once for all.
        let shown = if deferred {
            rendered.resize(MESSAGE_MAX, 0);
            let mut text = Bounded::new(&mut rendered[..]);
            if deferred::render(rec.message, &mut text).is_err() {
                return Outcome::Recorded;
            }
            Record {
                seq,
                message: text.finish(),
                ..rec
            }
        } else {
            Record { seq, ..rec }
        };
        outputs.print(&shown, |event| note(ring.as_mut(), event));
        ticker::keep(threads, outputs.needs());
        Outcome::Recorded
    }

    /// Steps 1 and 2 for a deferred call site, without a [`Call`] unless
    /// the general path takes the message.
    #[inline(always)]
    fn record_site_call(&mut self, call: SiteCall) -> Outcome {
        // Step 1 as in `record`, written out again: made one helper, it
        // cost this call 10 instructions more (callgrind, vlog-ring-full).
        let mut level = call.source.get().level();
        if level == UNKNOWN {
            level = self.register(call.source);
        }
        if (call.priority as i32) < level {
            return Outcome::Dropped;
        }
        let printed = self.outputs.prints(call.priority);
        if !printed && self.record_site(call).is_some() {
            return Outcome::Recorded;
        }
        self.record_site_printed(call, printed)
    }

    /// The rest of [`State::record_site_call`], apart so that the flight
    /// recorder's path builds no [`SiteCall`] in memory: a message an output
    /// prints (the site's record, then its text), or one the general path
    /// takes.
    #[inline(never)]
    fn record_site_printed(&mut self, call: SiteCall, printed: bool) -> Outcome {
        match self.record_site(call) {
            Some(stamp) => {
                self.print_site(call, stamp);
                Outcome::Recorded
            }
            None => self.record_general(&call.call(), printed),
        }
    }

    /// Step 2: the record of a deferred call site's arguments (its sequence
    /// number and time), or None when there is no ring, its dictionary has no room for
    /// the site or the arguments are not to be kept (the message then takes
    /// the general path).
    #[inline(always)]
    fn record_site(&mut self, call: SiteCall) -> Option<(u64, u64)> {
        let ring = self.ring.as_mut()?;
        let entry = site_entry(ring, call.source, call.site, call.entry, call.entry_source)?;
        // Arguments too long for a record take the general path, which
        // makes their text.
        let args_len = call.args_len?;
        let time_ns = sys::realtime_ns();
        let seq = ring.append_site(
            time_ns,
            sys::thread_id(),
            call.priority,
            entry,
            call.args,
            args_len,
        );
        Some((seq, time_ns))
    }

    /// Step 5 for a deferred call site recorded with `(seq, time)`: its
    /// text, made once from the captured arguments, to every output that
    /// prints it.
    fn print_site(&mut self, call: SiteCall, (seq, time_ns): (u64, u64)) {
        let State {
            ring,
            outputs,
            rendered,
            threads,
            ..
        } = self;
        let site = call.site.describe();
        let message = if call.args.is_empty() && plain(site.format) {
            // A format with no conversion and no `%%` prints as it is.
            site.format
        } else {
            rendered.resize(MESSAGE_MAX, 0);
            let mut text = Bounded::new(&mut rendered[..]);
            // Cannot fail: the site's signature matched the arguments and
            // their counts are ones a record keeps.
            let _ = deferred::render_captured(site.format, call.args, &mut text);
            text.finish()
        };
        let rec = Record {
            seq,
            time_ns,
            tid: sys::thread_id(),
            line: site.line,
            priority: call.priority,
            source: call.source.get().name_bytes(),
            file: site.file,
            func: site.func,
            message,
            fields: b"",
        }
        .clipped();
        outputs.print(&rec, |event| note(ring.as_mut(), event));
        ticker::keep(threads, outputs.needs());
    }
}

/// Whether `format` is its own text: no `%` in it, and short enough to need
/// no truncation marker.
fn plain(format: &[u8]) -> bool {
    format.len() <= MESSAGE_MAX && sys::find_byte(format, b'%').is_none()
}

/// The offset of the site's dictionary entry in `ring`, adding the site on
/// its first record there; None when the dictionary has no room for it.
#[inline]
fn site_entry(
    ring: &mut Ring,
    source: Live,
    site: &dyn CallSite,
    entry: &AtomicU64,
    entry_source: &AtomicUsize,
) -> Option<u32> {
    let cached = entry.load(Ordering::Relaxed);
    if (cached >> 32) as u32 == ring.id() && entry_source.load(Ordering::Relaxed) == source.addr() {
        return Some(cached as u32);
    }
    add_site(ring, source, site, entry, entry_source)
}

/// A site's first record in this ring: its entry is added.
#[cold]
fn add_site(
    ring: &mut Ring,
    source: Live,
    site: &dyn CallSite,
    entry: &AtomicU64,
    entry_source: &AtomicUsize,
) -> Option<u32> {
    let described = Site {
        source: source.get().name_bytes(),
        ..site.describe()
    };
    let offset = ring.add_site(&described)?;
    entry.store(
        u64::from(ring.id()) << 32 | u64::from(offset),
        Ordering::Relaxed,
    );
    entry_source.store(source.addr(), Ordering::Relaxed);
    Some(offset)
}

/// Fills `buf` with as much of `text` as fits in MESSAGE_MAX together with a
/// marker giving the full length, and returns it. `buf` has MESSAGE_MAX
/// bytes of capacity reserved, so this does not allocate.
fn truncated<'b>(text: &[u8], full_len: usize, buf: &'b mut Vec<u8>) -> &'b [u8] {
    buf.resize(MESSAGE_MAX, 0);
    let mut message = Bounded::new(&mut buf[..]);
    message.put(text);
    message.claim(full_len);
    message.finish()
}

/// The fields encoded into `buf` (refused and repeated names resolved, see
/// `fields::encode_checked`), or nothing for none.
fn encode_fields<'b>(list: &[Field], names: Names, buf: &'b mut Vec<u8>) -> &'b [u8] {
    if list.is_empty() {
        return b"";
    }
    buf.clear();
    let report = |name: &[u8], why: Refusal| {
        let why = match why {
            Refusal::Invalid => {
                "is not a valid field name (use A-Z, 0-9 and _, not first _ or \
                                 digit, at most 64)"
            }
            Refusal::Reserved => "is a name journald or vlog gives every entry itself",
        };
        diag::warn(&format!(
            "'{}' {why}: the field is kept as {} (its name as the value); later ones, and \
             names given twice, are counted in vlog_stats.bad_fields",
            String::from_utf8_lossy(name),
            String::from_utf8_lossy(fields::BAD_FIELD)
        ))
    };
    fields::encode_checked(list, names, buf, report);
    // Just encoded from checked names: a count of 0 (no room for any)
    // is the one encoding not to keep.
    if buf.first().is_some_and(|&count| count > 0) {
        buf
    } else {
        b""
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::{self, Entry};

    fn source(name: &'static std::ffi::CStr) -> Live {
        Live::leaked(name)
    }

    fn quiet_state() -> State {
        let mut s = State::new();
        s.initialized = true;
        s.default_outputs = false;
        s.set_buffer_size(ring::layout::MIN_SIZE).unwrap();
        s
    }

    fn text_call<'a>(src: Live, p: Priority, text: &'a [u8], full_len: usize) -> Call<'a> {
        Call {
            source: src,
            priority: p,
            message: Message::Text {
                file: b"f.c",
                line: 1,
                func: b"f",
                text,
                full_len,
                fields: &[],
                names: Names::Caller,
            },
        }
    }

    fn log(s: &mut State, src: Live, p: Priority, text: &str) -> bool {
        s.record(&text_call(src, p, text.as_bytes(), text.len())) == Outcome::Recorded
    }

    fn ring_messages(s: &State) -> Vec<String> {
        let mut v = Vec::new();
        s.ring.as_ref().unwrap().view().read(|e| {
            if let Entry::Record(r) = e {
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
        assert_eq!(qemu.get().level(), 3);
        s.set_filters("1:qemu").unwrap();
        assert_eq!(qemu.get().level(), 1);
        assert!(log(&mut s, qemu, Priority::Debug, "kept"));
        log(&mut s, util, Priority::Info, "dropped");
        assert_eq!(util.get().level(), 3);
        // A change of the default level alone refreshes the caches.
        s.set_level(Priority::Info);
        assert_eq!(util.get().level(), 2);
        assert_eq!(qemu.get().level(), 1);
        assert!(s.set_filters("1:qemu 9:x").is_err());
        assert_eq!(qemu.get().level(), 1, "a rejected string changes nothing");
        s.unregister(qemu.get());
        assert_eq!(qemu.get().level(), UNKNOWN);
        assert_eq!(ring_messages(&s), ["kept"]);
    }

    #[test]
    fn without_ring_outputs_decide() {
        let mut s = quiet_state();
        s.set_buffer_size(0).unwrap();
        let src = source(c"x");
        log(&mut s, src, Priority::Error, "e");
        assert_eq!(src.get().level(), OFF, "nothing reads it");
        s.set_outputs("2:stderr").unwrap();
        assert_eq!(src.get().level(), 3, "default level still filters");
        s.set_level(Priority::Debug);
        assert_eq!(src.get().level(), 2, "stderr prints info and up");
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
        s.record(&text_call(src, Priority::Error, b"short", 100_000));
        assert_eq!(ring_messages(&s)[1], "short [truncated: 100000 bytes]");
    }

    struct TestSite<'f> {
        entry: AtomicU64,
        entry_source: AtomicUsize,
        format: &'f [u8],
    }

    impl TestSite<'_> {
        fn new(format: &[u8]) -> TestSite<'_> {
            TestSite {
                entry: AtomicU64::new(0),
                entry_source: AtomicUsize::new(0),
                format,
            }
        }
    }

    impl CallSite for TestSite<'_> {
        fn describe(&self) -> Site<'_> {
            Site {
                source: b"",
                file: b"f.c",
                func: b"f",
                line: 1,
                format: self.format,
            }
        }
    }

    #[test]
    fn deferred_message_is_rendered_for_outputs_and_kept_raw_otherwise() {
        let mut s = quiet_state();
        let path = std::env::temp_dir().join(format!("vlog-deferred-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&path);
        s.set_outputs(&format!("2:file:{}", path.display()))
            .unwrap();
        s.set_level(Priority::Debug);
        let src = source(c"deferred.out");
        let site = TestSite::new(b"n=%d x=%.2f");
        let args = [Captured::Signed(42), Captured::Double(0.5)];
        let call = |p| SiteCall {
            source: src,
            priority: p,
            site: &site,
            entry: &site.entry,
            entry_source: &site.entry_source,
            args: &args,
            args_len: deferred::args_len(&args),
        };
        // Printed: the site's record in the ring, its text made once for the
        // file.
        assert_eq!(s.record_site_call(call(Priority::Info)), Outcome::Recorded);
        assert_ne!(site.entry.load(Ordering::Relaxed), 0);
        // Not printed: the site's record alone.
        assert_eq!(s.record_site_call(call(Priority::Debug)), Outcome::Recorded);
        // Not to be kept as arguments (too long, or a count past what a
        // record keeps): the text, made now.
        let long_args = [Captured::Signed(1), Captured::Double(2.0)];
        assert_eq!(
            s.record_site_call(SiteCall {
                args: &long_args,
                args_len: None,
                ..call(Priority::Debug)
            }),
            Outcome::Recorded
        );
        let file = std::fs::read_to_string(&path).unwrap();
        assert_eq!(file.lines().count(), 1, "{file}");
        assert!(file.ends_with(" : n=42 x=0.50\n"), "{file}");
        assert_eq!(
            ring_messages(&s),
            ["n=42 x=0.50", "n=42 x=0.50", "n=1 x=2.00"]
        );
        std::fs::remove_file(&path).unwrap();
    }

    /// A format without arguments prints as itself unless it has a `%%` or
    /// is too long for a message (then it is rendered, and cut with the
    /// marker).
    #[test]
    fn formats_without_arguments_print_as_rendered() {
        let mut s = quiet_state();
        let path = std::env::temp_dir().join(format!("vlog-plain-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&path);
        s.set_outputs(&format!("2:file:{}", path.display()))
            .unwrap();
        let src = source(c"plain.out");
        let long = "y".repeat(MESSAGE_MAX + 1);
        for format in [&b"as it is"[..], b"100%% sure", b"", long.as_bytes()] {
            let site = TestSite::new(format);
            let call = SiteCall {
                source: src,
                priority: Priority::Error,
                site: &site,
                entry: &site.entry,
                entry_source: &site.entry_source,
                args: &[],
                args_len: deferred::args_len(&[]),
            };
            assert_eq!(s.record_site_call(call), Outcome::Recorded);
        }
        let file = std::fs::read_to_string(&path).unwrap();
        let messages: Vec<&str> = file
            .lines()
            .map(|l| l.rsplit(" : ").next().unwrap())
            .collect();
        let cut = format!(" [truncated: {} bytes]", MESSAGE_MAX + 1);
        assert_eq!(messages[..3], ["as it is", "100% sure", ""]);
        assert_eq!(messages[3].len(), MESSAGE_MAX);
        assert!(messages[3].ends_with(&cut), "{}", messages[3]);
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
