//! A call as the boundary hands it to the logger, and its text and fields
//! as the ring keeps them: cut with a marker when too long, fields encoded
//! with bad names resolved (`emit`'s step 3).

use std::sync::atomic::Ordering;

use crate::deferred::Captured;
use crate::diag;
use crate::fields::{self, Dump, Field, Kept, Names, Refusal};
use crate::priority::Priority;
use crate::record::MESSAGE_MAX;
use crate::site::{vlog__site, LiveSite};
use crate::source::Live;
use crate::text::{Bounded, Sink};

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
        /// Bytes kept as bytes (`VLOG_HEXDUMP`), after the fields.
        dump: Option<Dump<'a>>,
    },
    /// The raw arguments of a deferred call site that the general path
    /// takes (see [`SiteCall`]); its names, line and format are the site's.
    Args {
        site: LiveSite,
        args: &'a [Captured<'a>],
        /// Their size in a record (`deferred::args_len`), None when they do
        /// not fit one or a `*` count is beyond what a record may keep (the
        /// text is then made at the call).
        args_len: Option<usize>,
    },
}

pub struct Call<'a> {
    pub source: Live,
    /// The macro's call site, whose level decides instead of the source's
    /// (a filter may name the site), and whose record reports what its
    /// limit left out.
    pub site: Option<LiveSite>,
    pub priority: Priority,
    pub message: Message<'a>,
    /// A failed check's record (`fatal`): made whatever the filters say.
    pub fatal: bool,
    /// The call's backtrace (`fields::frames`' encoding), kept after the
    /// fields.
    pub frames: Option<&'a [u8]>,
}

/// The arguments of a deferred call site, as the C entry hands them over.
/// The site remembers its dictionary entry (`vlog__site.entry`: the
/// ring's id in the high 32 bits, the entry's offset in the low ones) and
/// the address of the source that entry names; both written under the
/// lock.
#[derive(Clone, Copy)]
pub struct SiteCall<'a> {
    pub source: Live,
    pub priority: Priority,
    pub site: LiveSite,
    pub args: &'a [Captured<'a>],
    pub args_len: Option<usize>,
}

impl<'a> SiteCall<'a> {
    /// The call, for the general way.
    pub fn call(self) -> Call<'a> {
        Call {
            source: self.source,
            site: Some(self.site),
            priority: self.priority,
            message: Message::Args {
                site: self.site,
                args: self.args,
                args_len: self.args_len,
            },
            fatal: false,
            frames: None,
        }
    }
}

/// Fills `buf` with as much of `text` as fits in MESSAGE_MAX together with a
/// marker giving the full length, and returns it. `buf` has MESSAGE_MAX
/// bytes of capacity reserved, so this does not allocate.
pub(super) fn truncated<'b>(text: &[u8], full_len: usize, buf: &'b mut Vec<u8>) -> &'b [u8] {
    buf.resize(MESSAGE_MAX, 0);
    let mut message = Bounded::new(&mut buf[..]);
    message.put(text);
    message.claim(full_len);
    message.finish()
}

/// The fields encoded into `buf` (refused and repeated names resolved and
/// the budget kept, see `fields::encode_checked`), or nothing for none.
pub(super) fn encode_fields<'b>(
    list: &[Field],
    names: Names,
    kept: Kept,
    buf: &'b mut Vec<u8>,
) -> &'b [u8] {
    if list.is_empty() {
        return b"";
    }
    buf.clear();
    let report = |name: &[u8], why: Refusal| {
        let name = String::from_utf8_lossy(name);
        let why = match why {
            Refusal::Invalid => {
                "is not a valid field name (1 to 64 of letters, digits, _ and ., as HTTP_METHOD \
                 or http.method, starting with a letter, a dot never last nor beside another)"
            }
            Refusal::Reserved => "is a name journald or vlog gives every entry itself",
            Refusal::TooLarge(len) => {
                return diag::warn(&format!(
                    "field '{name}' ({len} bytes) does not fit in the {} bytes a record's \
                     fields take beside vlog's and the thread's own: its value is cut, ending \
                     in \"[truncated: {len} bytes]\" (or the field left out when not even that \
                     fits); later ones are counted in vlog_stats.bad_fields",
                    fields::ENCODED_MAX
                ));
            }
        };
        diag::warn(&format!(
            "'{name}' {why}: the field is kept as {} (its name as the value); later ones, and \
             names given twice, are counted in vlog_stats.bad_fields",
            String::from_utf8_lossy(fields::BAD_FIELD)
        ))
    };
    fields::encode_checked(list, names, kept, buf, report);
    // Just encoded from checked names: a count of 0 (no room for any)
    // is the one encoding not to keep.
    if buf.first().is_some_and(|&count| count > 0) {
        buf
    } else {
        b""
    }
}

/// A record's fields encoded: the call's, the report of what its site's
/// limit left out first when it left out any, and the `carried` last of
/// `fields` (a thread's own) keeping their room.
pub(super) fn encode_call_fields<'b>(
    fields: &[Field],
    names: Names,
    suppressed: u64,
    carried: usize,
    buf: &'b mut Vec<u8>,
) -> &'b [u8] {
    if suppressed == 0 {
        let kept = Kept {
            first: names.kept_first(),
            last: carried,
        };
        encode_fields(fields, names, kept, buf)
    } else {
        encode_reporting(fields, names, suppressed, carried, buf)
    }
}

/// The fields `encoded` (`encoded_len` bytes at the start of `buf`, which
/// holds them when there are any) with `dump` and `frames` after them.
pub(super) fn with_kept<'b>(
    encoded_len: usize,
    dump: Option<Dump>,
    frames: Option<&[u8]>,
    buf: &'b mut Vec<u8>,
) -> &'b [u8] {
    buf.truncate(encoded_len);
    if let Some(dump) = dump {
        fields::bytes_after(dump, buf);
    }
    if let Some(frames) = frames {
        fields::frames_after(frames, buf);
    }
    buf
}

/// The name of the field that reports what a call site's limit left out
/// since its last record (the field comes first and keeps its room, so 32
/// of a caller's own cannot push it out; the 32nd gives way to it, counted
/// in bad_fields).
pub const SUPPRESSED_FIELD: &[u8] = b"VLOG_SUPPRESSED";

/// The id a record of `site` carries: a call site's text carries it as
/// its words would (a deferred payload's is worked out from its format
/// when read).
pub(super) fn site_id(site: Option<LiveSite>, deferred: bool) -> u32 {
    match (site, deferred) {
        (Some(site), false) => site.get().id.load(Ordering::Relaxed),
        _ => 0,
    }
}

/// What `site`'s limit left out since its last record, taken (so the next
/// record does not report it again).
pub(super) fn take_suppressed(site: &vlog__site) -> u64 {
    if site.suppressed.load(Ordering::Relaxed) == 0 {
        return 0;
    }
    site.suppressed.swap(0, Ordering::Relaxed)
}

/// `encode_fields` with [`SUPPRESSED_FIELD`] first: `n` calls left out.
#[cold]
pub(super) fn encode_reporting<'b>(
    list: &[Field],
    names: Names,
    n: u64,
    carried: usize,
    buf: &'b mut Vec<u8>,
) -> &'b [u8] {
    let mut all = [Field {
        name: b"",
        value: fields::Value::Int(0),
    }; 1 + fields::MAX_FIELDS + super::thread_fields::MAX];
    all[0] = Field {
        name: SUPPRESSED_FIELD,
        value: fields::Value::Int(i64::try_from(n).unwrap_or(i64::MAX)),
    };
    let given = list.len().min(all.len() - 1);
    all[1..=given].copy_from_slice(&list[..given]);
    let kept = Kept {
        first: 1 + names.kept_first(),
        last: carried,
    };
    let names = match names {
        Names::Caller => Names::VlogFirst,
        other => other,
    };
    encode_fields(&all[..=given], names, kept, buf)
}
