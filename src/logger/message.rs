//! A message's text and fields as the ring keeps them: cut with a marker
//! when too long, fields encoded with bad names resolved (`emit`'s step 3).

use std::sync::atomic::Ordering;

use crate::diag;
use crate::fields::{self, Field, Names, Refusal};
use crate::record::MESSAGE_MAX;
use crate::site::vlog__site;
use crate::text::{Bounded, Sink};

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

/// The fields encoded into `buf` (refused and repeated names resolved, see
/// `fields::encode_checked`), or nothing for none.
pub(super) fn encode_fields<'b>(list: &[Field], names: Names, buf: &'b mut Vec<u8>) -> &'b [u8] {
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

/// A record's fields encoded: the call's, with the report
/// of what its site's limit left out first when it left out any.
pub(super) fn encode_call_fields<'b>(
    fields: &[Field],
    names: Names,
    suppressed: u64,
    buf: &'b mut Vec<u8>,
) -> &'b [u8] {
    if suppressed == 0 {
        encode_fields(fields, names, buf)
    } else {
        encode_reporting(fields, names, suppressed, buf)
    }
}

/// The name of the field that reports what a call site's limit left out
/// since its last record (the field comes first, so 32 of a caller's own
/// cannot push it out; the 32nd gives way to it, counted in bad_fields).
pub const SUPPRESSED_FIELD: &[u8] = b"VLOG_SUPPRESSED";

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
    buf: &'b mut Vec<u8>,
) -> &'b [u8] {
    let mut all = [Field {
        name: b"",
        value: fields::Value::Int(0),
    }; fields::MAX_FIELDS];
    all[0] = Field {
        name: SUPPRESSED_FIELD,
        value: fields::Value::Int(i64::try_from(n).unwrap_or(i64::MAX)),
    };
    let given = list.len().min(fields::MAX_FIELDS - 1);
    if list.len() >= fields::MAX_FIELDS {
        // The caller's 32nd gives way to the report: counted, as a field
        // not kept is.
        crate::stats::add(&crate::stats::BAD_FIELDS, 1);
    }
    all[1..=given].copy_from_slice(&list[..given]);
    let names = match names {
        Names::Caller => Names::VlogFirst,
        other => other,
    };
    encode_fields(&all[..=given], names, buf)
}
