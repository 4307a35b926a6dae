//! A message's text and fields as the ring keeps them: cut with a marker
//! when too long, fields encoded with bad names resolved (`emit`'s step 3).

use crate::diag;
use crate::fields::{self, Field, Names, Refusal};
use crate::record::MESSAGE_MAX;
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
