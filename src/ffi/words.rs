//! Internal: the flight recorder's capture, behind `vlog__record` (see
//! `site`). A call site's plan, decided once when it is prepared, says how
//! its calls' arguments are kept; a call whose plan keeps the macro's words
//! hands them to `logger::flight` as they are, its strings measured.

use std::ffi::{c_char, c_int};
use std::mem::MaybeUninit;
use std::sync::atomic::Ordering;

use super::guarded;
use super::sites::site_source;
use crate::deferred::{self, kind, MAX_ARGS};
use crate::logger::flight::{self, Flight, Words};
use crate::priority::Priority;
use crate::site::vlog__site;

/// `vlog__site.plan`: the general way, each argument captured apart (a
/// `%m`, a `*` count; and every site until it is prepared).
pub(super) const PLAN_GENERAL: u8 = 0;
/// Numbers and pointers only: the record keeps the macro's words as they are.
pub(super) const PLAN_WORDS: u8 = 1;
/// Strings too, each measured and copied after the words.
pub(super) const PLAN_STRINGS: u8 = 2;
/// The low bits: one of the above.
pub(super) const PLAN_WAY: u8 = 0x3;
/// The format has a `%m`.
pub(super) const PLAN_ERRNO: u8 = 0x80;

/// How a site's calls record their arguments, from its format's kinds and
/// string precisions (see `vlog__site.plan`).
pub(super) fn plan_of(kinds: &[u8], precision: &[u16]) -> u8 {
    let errno = if kinds.contains(&kind::ERRNO) {
        PLAN_ERRNO
    } else {
        0
    };
    let way = if !deferred::words_suffice(kinds, precision) {
        PLAN_GENERAL
    } else if kinds.contains(&kind::STRING) {
        PLAN_STRINGS
    } else {
        PLAN_WORDS
    };
    errno | way
}

/// The flight recorder's call (see `logger::flight`): a prepared site whose
/// plan keeps the macro's words, called with exactly the words and classes
/// its format takes, recorded as a kind-4 record. None when the general
/// way takes the call (anything else, or a message an output prints). On a
/// thread marked inside vlog (`flight::enter`), for a site whose state is
/// VLOG__SITE_DEFERRED (loaded with Acquire: its plan, word count and
/// classes were written before it).
#[inline(always)]
pub(super) fn record_words(
    site: &vlog__site,
    prio: c_int,
    words: *const u64,
    nwords: c_int,
    classes: u64,
) -> Option<c_int> {
    let n = site.nwords as usize;
    let way = site.plan & PLAN_WAY;
    if way == PLAN_GENERAL
        || nwords as usize != n
        || classes != site.classes
        || (n > 0 && words.is_null())
    {
        return None;
    }
    let priority = Priority::clamped(prio);
    // The macro checked the level; a call made as it changed is decided
    // here (and one the library does not know yet takes the general way,
    // which learns of it).
    match site.level() {
        crate::source::UNKNOWN => return None,
        level if (priority as i32) < level => return Some(0),
        _ => {}
    }
    // A record that reports what the site's limit left out has a field.
    if site.suppressed.load(Ordering::Relaxed) != 0 {
        return None;
    }
    let words: &[u64] = if n == 0 {
        &[]
    } else {
        // SAFETY: the caller passes `nwords` (== n) initialised words.
        unsafe { std::slice::from_raw_parts(words, n) }
    };
    // No keeping_errno: the flight recorder's path keeps errno itself,
    // where it makes a system call that may change it.
    guarded(Some(-1), || {
        let flight = if way == PLAN_WORDS {
            flight::record(&Words {
                site,
                source: site_source(site),
                priority,
                words,
                strings: &[],
                message_len: 8 * n,
            })
        } else {
            record_strings(site, priority, words)
        };
        match flight {
            Flight::Recorded => {
                site.recorded.fetch_add(1, Ordering::Relaxed);
                Some(1)
            }
            Flight::Dropped => Some(0),
            Flight::General => None,
        }
    })
}

/// [`record_words`] for a site with strings: each measured (no further than
/// its precision) and its word replaced by its length in the record.
#[inline(never)]
fn record_strings(site: &vlog__site, priority: Priority, words: &[u64]) -> Flight {
    let n = words.len();
    if n > MAX_ARGS {
        return Flight::General;
    }
    // Only what the call has is written (clearing 32 slots of each cost
    // more than the rest of the capture).
    let mut lengths = [const { MaybeUninit::<u64>::uninit() }; MAX_ARGS];
    let mut strings = [const { MaybeUninit::<&[u8]>::uninit() }; MAX_ARGS];
    let mut count = 0;
    let mut total = 8 * n;
    for (i, (&word, slot)) in words.iter().zip(lengths.iter_mut()).enumerate() {
        if site.kinds[i] != kind::STRING {
            slot.write(word);
            continue;
        }
        if word == 0 {
            slot.write(deferred::WORD_NULL);
            continue;
        }
        let bound = match site.precision[i] {
            deferred::PRECISION_NONE => None,
            // Written in the format: the plan has no `*`.
            precision => Some(usize::from(precision)),
        };
        // SAFETY: a string argument of the call, non-NULL, with the
        // precision its format gives it.
        let bytes = unsafe { string_arg(word, bound) };
        slot.write(bytes.len() as u64);
        // At most one string a word: `count` stays below `n`.
        strings[count].write(bytes);
        count += 1;
        total = total.saturating_add(bytes.len());
    }
    // SAFETY: the loop wrote the first `n` lengths (n <= MAX_ARGS) and the
    // first `count` strings.
    let (lengths, strings) = unsafe {
        (
            std::slice::from_raw_parts(lengths.as_ptr().cast::<u64>(), n),
            std::slice::from_raw_parts(strings.as_ptr().cast::<&[u8]>(), count),
        )
    };
    flight::record(&Words {
        site,
        source: site_source(site),
        priority,
        words: lengths,
        strings,
        message_len: total,
    })
}

/// A `%s` argument as printf may read it: up to its NUL, or with a
/// precision (`bound`), up to that many bytes at most; strnlen reads no
/// further.
///
/// # Safety
/// `word` is the address of a string readable that far, what printf
/// requires of a `%s` argument (non-NULL), and the bytes outlive the
/// result.
pub(super) unsafe fn string_arg<'a>(word: u64, bound: Option<usize>) -> &'a [u8] {
    let ptr = word as usize as *const c_char;
    // SAFETY: per the caller.
    unsafe {
        let len = match bound {
            None => libc::strlen(ptr),
            Some(max) => libc::strnlen(ptr, max),
        };
        std::slice::from_raw_parts(ptr.cast::<u8>(), len)
    }
}
