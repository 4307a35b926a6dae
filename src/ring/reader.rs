//! Reading rings: the lock-free record walk shared by `vlog_dump`, the crash
//! handler and `vlog-dump`, over a live ring in this process or over bytes
//! read from a ring file, a dump or a core file.

use std::sync::atomic::{fence, Ordering};

pub use super::cursor::{Buffers, Cursor};
use super::record::{self, Damage, Kind, Stored, HEADER_LEN, RECORD_MAX};
pub use super::region::Region;
use super::sites;
use crate::deferred;
use crate::record::Record;
use crate::site::message_id;
use crate::text::Bounded;

/// How often a walk of this process's ring reads its head and tail again
/// while an append moves them (see `read_with`).
const APPEND_TRIES: u32 = 64;

/// What a reader finds, oldest first.
#[derive(Debug)]
pub enum Entry<'a> {
    Record(Record<'a>),
    /// An intact record whose sequence number is not the one expected: the
    /// records from `expected` to `found - 1` are missing (written by another
    /// process sharing the ring file, say).
    Gap {
        expected: u64,
        found: u64,
    },
    /// A record that failed validation; `seq` is what was expected there.
    Damaged {
        seq: u64,
        damage: Damage,
    },
    /// The writer overwrote this many bytes of records while they were being
    /// read; the reader skipped to the oldest record still held.
    Overwritten {
        bytes: u64,
    },
    /// After a record that failed validation (reported as [`Entry::Damaged`]),
    /// this many bytes were passed over to the next place where a record
    /// (or the pad before the end of the data area) validates whole: the
    /// damaged span, of any size. The walk goes on from there.
    Skipped {
        bytes: u64,
    },
}

/// Visits every record from oldest to newest without taking any lock and
/// without allocating: safe to call from a signal handler. Each record is
/// copied to the stack and validated before `visit` sees it. The walk is
/// bounded by the data size, whatever the region says: each step moves at
/// least 8 bytes forward, positions never overflow, and a walk that took
/// more steps than the data area has words ends, reported as damage.
///
/// Damage of any size (a crash that scribbled over the ring) costs only
/// the records it touched: the ring is self-describing, so after a record
/// that fails validation the walk moves 8 bytes at a time to the next
/// place where a record validates whole (its length within the data, its
/// commit word its sequence number's, its checksum, a number not below
/// the one expected) or where the pad to the end of the data area is, and
/// goes on from there ([`Entry::Skipped`] says how far it went).
pub fn read(region: &(impl Region + ?Sized), visit: impl FnMut(Entry)) {
    read_from(region, Cursor::default(), u64::MAX, visit);
}

/// [`read`] from `from`, and only so far: the walk ends at the first record
/// boundary at least `budget` bytes of the ring past where it began (so a
/// part is at most `budget` plus one record). Records overwritten since
/// `from` are reported as [`Entry::Overwritten`]; a cursor from a
/// different ring (beyond its tail) starts again at the oldest record.
pub fn read_from(
    region: &(impl Region + ?Sized),
    from: Cursor,
    budget: u64,
    mut visit: impl FnMut(Entry),
) -> Cursor {
    read_marked(region, from, budget, |entry, _| visit(entry))
}

/// [`read_from`], saying of each record whether it is marked for the
/// outputs (see `record::FOR_OUTPUTS`): the outputs' walk, and a reader
/// that tells which records they had not printed yet.
#[inline(never)]
pub fn read_marked(
    region: &(impl Region + ?Sized),
    from: Cursor,
    budget: u64,
    mut visit: impl FnMut(Entry, bool),
) -> Cursor {
    let mut buffers = Buffers::new();
    read_with(
        region,
        from,
        budget,
        &mut buffers,
        false,
        |entry, marked| {
            visit(entry, marked);
            true
        },
    )
}

/// [`read_marked`] into `buffers`, passing over the records not marked
/// for the outputs when `marked_only` (each passed over on what its header
/// says, neither checked nor rendered: a daemon's debug records in the ring
/// cost the outputs' walk to its next line little), ending before a record
/// for which `visit` returns false: the cursor returned is at that record,
/// for the next walk to read it again (the outputs stop before an error to
/// print its context).
/// (Inlined: a walk's buffers and the rest of its locals share one frame,
/// as a thread with a small stack needs.)
#[inline(always)]
pub fn read_with(
    region: &(impl Region + ?Sized),
    from: Cursor,
    budget: u64,
    buffers: &mut Buffers,
    marked_only: bool,
    mut visit: impl FnMut(Entry, bool) -> bool,
) -> Cursor {
    let size = region.data_size();
    let ended = |pos: u64| Cursor {
        pos: Some(pos),
        expected: None,
        resync: false,
    };
    if size < 8 {
        return from;
    }
    // Head before tail: both only grow, so the pair is ordered, though the
    // writer may have lapped the ring in between; but a writer that makes
    // room for a record moves the head first ([W2]), past the old tail when
    // the record needs more room than the records there took, and the tail
    // after ([W1]). In this process's own ring (`whole`) that is an append
    // under way, read again a few times, then left for the next walk:
    // never damage, which would say lines were lost. From outside, a head
    // past the tail is damage (a file or core is not being written).
    let Some((head, tail)) = ends(region) else {
        return from;
    };
    if tail < head {
        visit(
            Entry::Damaged {
                seq: 0,
                damage: Damage::Malformed,
            },
            false,
        );
        return ended(tail);
    }
    let (mut pos, mut expected, mut resync) = match from.pos {
        Some(p) if p > tail => (head, None, false),
        Some(p) => (p, from.expected, from.resync),
        None => (head, None, false),
    };
    if pos < head || tail - pos > size {
        let head = region.head();
        visit(
            Entry::Overwritten {
                bytes: head.saturating_sub(pos),
            },
            false,
        );
        pos = head;
        expected = None;
        resync = false;
        if tail < pos || tail - pos > size {
            return ended(tail);
        }
    }
    let start = pos;
    let Buffers {
        record: buf,
        text,
        signatures,
    } = buffers;
    // The dictionary as published when the walk began (read again for an
    // entry added since), and the last entry decoded: entries never change
    // once published, and a burst's records mostly share a few sites.
    let mut dict = region.dict();
    let mut last_site = None;
    let whole = region.whole();
    // Every step but a jump to a moved head goes 8 bytes forward or more
    // within at most `size` bytes; a live ring's writer may lap the reader a
    // few times. More than this is not a ring's walk.
    let mut steps_left = 4 * (size / 8) + 64;
    // Where the damage being passed over began, while the walk looks for
    // the next record that validates whole.
    let mut damaged_from: Option<u64> = resync.then_some(pos);
    let mut search_left = 4 * size + RECORD_MAX as u64;
    while pos < tail {
        if pos - start >= budget && damaged_from.is_none() {
            break;
        }
        if steps_left == 0 {
            visit(
                Entry::Damaged {
                    seq: expected.unwrap_or(0),
                    damage: Damage::Malformed,
                },
                false,
            );
            return ended(tail);
        }
        steps_left -= 1;
        let off = (pos % size) as usize;
        region.copy(off, &mut buf[..8]);
        // What the first word says this is: a pad to the end of the data
        // area, or a record of a plausible length, or neither.
        let pad = record::pad_len(&buf[..8]);
        let is_pad = pad.is_some();
        let mut len = match pad {
            Some(pad) => Some(pad).filter(|&pad| pad == size as usize - off),
            None => record::peek_len(&buf[..]).filter(|&n| off + n <= size as usize),
        };
        if let (Some(n), false, Some(_)) = (len, is_pad, damaged_from) {
            // Past damage, a place is read whole only when its header is
            // a committed record's, and within a bound on what the
            // search copies (a forged ring could make every place look
            // like a record's length).
            region.copy(off, &mut buf[..HEADER_LEN]);
            if record::peek_head(&buf[..HEADER_LEN]).is_none() || search_left < n as u64 {
                len = None;
            } else {
                search_left -= n as u64;
            }
        }
        let mut unmarked = None;
        // A record for the outputs still in flight after the wait.
        let mut unfinished = false;
        if let (Some(len), false) = (len, is_pad) {
            let mut commit = record::u32_at(buf, 0);
            if record::in_flight(commit) && damaged_from.is_none() {
                // In flight: its mark was written when it was reserved
                // (`Ring::slot_at`), so the outputs wait only for theirs,
                // and pass over one still in flight after the wait, which
                // its thread then has printed as it commits it.
                region.copy(off + 8, &mut buf[8..HEADER_LEN]);
                if marked_only && buf[record::PRIORITY_AT] & record::FOR_OUTPUTS == 0 {
                    unmarked = Some(record::u64_at(buf, 8));
                } else {
                    commit = region.wait_committed(off);
                    if marked_only && commit == 0 {
                        commit = region.pass_over(off);
                        unfinished = commit == 0;
                    }
                }
            }
            // [R7] Acquire fence after the commit word was read: pairs with
            // [W7] in Slot::commit; a record seen committed is read whole.
            fence(Ordering::Acquire);
            region.copy(off, &mut buf[..len]);
            // As it was before the fence: a record committed only since
            // then may have been copied before its bytes were all there.
            buf[..4].copy_from_slice(&commit.to_ne_bytes());
            // A record not marked for the outputs, when only those are
            // wanted: its header is enough, nothing is checked or rendered.
            // (A damaged one whose mark this hides would have failed its
            // checksum, and been passed over all the same.) Not past
            // damage: there every record is checked whole.
            if marked_only && unmarked.is_none() && damaged_from.is_none() {
                unmarked = record::peek_head(&buf[..HEADER_LEN])
                    .filter(|h| h.len == len && !h.for_outputs)
                    .map(|h| h.seq);
            }
        }
        // [R2] Acquire fence, then head: pairs with [W2] in Ring::evict. If
        // the copy saw any bytes of a newer lap, this load sees the head
        // that was moved past them.
        fence(Ordering::Acquire);
        let head = region.head();
        if head > pos {
            visit(Entry::Overwritten { bytes: head - pos }, false);
            pos = head;
            expected = None;
            damaged_from = None;
            resync = false;
            continue;
        }
        if let Some(from) = damaged_from {
            // Past damage: on 8 bytes unless a record (or the pad to the
            // end) validates here whole.
            let found = match len {
                Some(_) if is_pad => true,
                Some(len) => {
                    pos + len as u64 <= tail
                        && Stored::decode_checking(&buf[..len], true)
                            .is_ok_and(|s| expected.is_none_or(|want| s.rec.seq >= want))
                }
                None => false,
            };
            if !found {
                pos += 8;
                continue;
            }
            damaged_from = None;
            if !std::mem::replace(&mut resync, false) {
                visit(Entry::Skipped { bytes: pos - from }, false);
            }
        }
        let Some(len) = len else {
            // Not overwritten, yet no trustworthy length: damage, passed
            // over to the next record that validates.
            visit(
                Entry::Damaged {
                    seq: expected.unwrap_or(0),
                    damage: Damage::Malformed,
                },
                false,
            );
            expected = expected.map(|want| want.wrapping_add(1));
            damaged_from = Some(pos);
            pos += 8;
            continue;
        };
        let Some(next) = pos.checked_add(len as u64) else {
            return ended(tail);
        };
        if is_pad {
            pos = next;
            continue;
        }
        if let Some(seq) = unmarked {
            expected = Some(seq.wrapping_add(1));
            pos = next;
            continue;
        }
        match Stored::decode_checking(&buf[..len], !whole) {
            Ok(Stored {
                rec,
                kind,
                for_outputs,
                ..
            }) => {
                // An intact record out of sequence: say what is missing, then
                // go on from it rather than reject everything after.
                if let Some(want) = expected.filter(|&want| want != rec.seq) {
                    visit(
                        Entry::Gap {
                            expected: want,
                            found: rec.seq,
                        },
                        false,
                    );
                }
                expected = Some(rec.seq.wrapping_add(1));
                // Deferred messages are made into text here, so every reader
                // sees them exactly as printf would have written them at the call.
                let mut message = Bounded::new(&mut text[..]);
                let rendered = match kind {
                    Kind::Text => Some((rec, false)),
                    Kind::Deferred => {
                        deferred::render(rec.message, &mut message)
                            .ok()
                            .and_then(|()| {
                                let format = deferred::format_of(rec.message)?;
                                let id = message_id(rec.source, format);
                                Some((Record { id, ..rec }, true))
                            })
                    }
                    Kind::Site(entry) | Kind::Words(entry) => {
                        sites::entry_of(region, &mut dict, &mut last_site, entry).and_then(|site| {
                            let words = matches!(kind, Kind::Words(_));
                            if words {
                                match signatures {
                                    Some(kept) => {
                                        kept.render_words(site.format, rec.message, &mut message)
                                    }
                                    None => deferred::render_words(
                                        site.format,
                                        rec.message,
                                        &mut message,
                                    ),
                                }
                            } else {
                                deferred::render_args(site.format, rec.message, &mut message)
                            }
                            .ok()?;
                            let named = Record {
                                source: site.source,
                                file: site.file,
                                func: site.func,
                                line: site.line,
                                // Entries of older versions have none stored.
                                id: match site.id {
                                    0 => message_id(site.source, site.format),
                                    id => id,
                                },
                                ..rec
                            };
                            Some((named, true))
                        })
                    }
                };
                let go_on = match rendered {
                    Some((rec, false)) => visit(Entry::Record(rec), for_outputs),
                    Some((rec, true)) => visit(
                        Entry::Record(Record {
                            message: message.finish(),
                            ..rec
                        }),
                        for_outputs,
                    ),
                    None => visit(
                        Entry::Damaged {
                            seq: rec.seq,
                            damage: Damage::Malformed,
                        },
                        false,
                    ),
                };
                if !go_on {
                    return Cursor {
                        pos: Some(pos),
                        expected: Some(rec.seq),
                        resync: false,
                    };
                }
            }
            Err(damage) => {
                let damage = if unfinished {
                    Damage::Unfinished
                } else {
                    damage
                };
                // A record in flight has its number (written at its reservation).
                let in_flight = matches!(damage, Damage::Uncommitted | Damage::Unfinished)
                    .then(|| record::u64_at(buf, 8));
                let seq = expected.or(in_flight).unwrap_or(0);
                expected = expected.map(|want| want.wrapping_add(1));
                visit(Entry::Damaged { seq, damage }, false);
                if !matches!(damage, Damage::Uncommitted | Damage::Unfinished) {
                    // Its length is as damaged as the rest may be: the next
                    // record is the next place one validates.
                    damaged_from = Some(pos);
                    pos += 8;
                    continue;
                }
            }
        }
        pos = next;
    }
    if let Some(from) = damaged_from {
        // No record validated after the damage: all of it to the tail.
        visit(Entry::Skipped { bytes: pos - from }, false);
    }
    Cursor {
        pos: Some(pos),
        expected,
        resync: false,
    }
}

/// The head and the tail, read in that order (see `read_with`); None while
/// an append in this process's ring has moved the head past the tail and
/// not yet the tail, after reading them again a few times.
#[inline(always)]
fn ends(region: &(impl Region + ?Sized)) -> Option<(u64, u64)> {
    let (head, tail) = (region.head(), region.tail());
    if tail >= head || !region.whole() {
        return Some((head, tail));
    }
    ends_after_append(region)
}

/// [`ends`] while an append moves them: out of line, so that the walk's
/// own code stays as small as the compiler inlines it.
#[cold]
#[inline(never)]
fn ends_after_append(region: &(impl Region + ?Sized)) -> Option<(u64, u64)> {
    for _ in 0..APPEND_TRIES {
        std::hint::spin_loop();
        let (head, tail) = (region.head(), region.tail());
        if tail >= head {
            return Some((head, tail));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::scan::scan;

    /// A region whose head and tail a forger chose, over data of repeated
    /// plausible record headers (a length of 4096 everywhere).
    struct Forged {
        head: u64,
        tail: u64,
    }

    impl Region for Forged {
        fn data_size(&self) -> u64 {
            64 * 1024
        }
        fn head(&self) -> u64 {
            self.head
        }
        fn tail(&self) -> u64 {
            self.tail
        }
        fn dict(&self) -> &[u8] {
            b""
        }
        fn copy(&self, _off: usize, dst: &mut [u8]) {
            dst.fill(0);
            // A record header's `len` field (at 4): 4096, plausible everywhere.
            dst[4..8].copy_from_slice(&4096u32.to_ne_bytes());
        }
    }

    #[test]
    fn a_scan_ends_whatever_the_positions_say() {
        for (head, tail) in [
            (u64::MAX - 4096, u64::MAX - 8),
            (u64::MAX - 65536, u64::MAX),
            (0, 64 * 1024),
        ] {
            let mut steps = 0u64;
            scan(&Forged { head, tail }, 0, u64::MAX, |_, _, _| steps += 1);
            // (The forged headers are never committed: nothing is visited.)
            assert_eq!(steps, 0, "{head} {tail}");
        }
    }

    /// A ring of this process read while an append has moved the head
    /// past the tail and not yet the tail ([W2] before [W1]): the records
    /// are read once the tail is stored, and nothing is called damaged. A
    /// ring from outside whose head stays past its tail is damaged.
    #[test]
    fn a_head_past_the_tail_is_an_append_under_way_in_this_process() {
        use crate::record::Record;
        use crate::ring::image::Image;
        use crate::ring::Ring;
        use std::cell::Cell;
        struct Appending<'a> {
            image: Image<'a>,
            /// Head reads left that find it past the tail.
            early: Cell<u32>,
            whole: bool,
        }
        impl Region for Appending<'_> {
            fn data_size(&self) -> u64 {
                self.image.data_size()
            }
            fn head(&self) -> u64 {
                let past = self.early.get() > 0;
                self.early.set(self.early.get().saturating_sub(1));
                self.image.head() + if past { self.image.tail() + 64 } else { 0 }
            }
            fn tail(&self) -> u64 {
                self.image.tail()
            }
            fn dict(&self) -> &[u8] {
                self.image.dict()
            }
            fn copy(&self, off: usize, dst: &mut [u8]) {
                self.image.copy(off, dst)
            }
            fn whole(&self) -> bool {
                self.whole
            }
        }
        let mut ring = Ring::new(crate::ring::layout::MIN_SIZE).unwrap();
        for msg in [&b"one"[..], b"two"] {
            ring.append(&Record::sample(msg)).unwrap();
        }
        let read_all = |early, whole| {
            let region = Appending {
                image: Image::parse(ring.image_bytes()).unwrap(),
                early: Cell::new(early),
                whole,
            };
            let mut seen = Vec::new();
            read(&region, |e| {
                seen.push(match e {
                    Entry::Record(r) => String::from_utf8_lossy(r.message).into_owned(),
                    other => format!("{other:?}"),
                })
            });
            seen
        };
        assert_eq!(read_all(3, true), ["one", "two"]);
        assert_eq!(
            read_all(u32::MAX, true),
            Vec::<String>::new(),
            "left for later"
        );
        let outside = read_all(u32::MAX, false);
        assert!(
            outside.len() == 1 && outside[0].contains("Damaged"),
            "{outside:?}"
        );
    }

    #[test]
    fn a_walk_ends_whatever_the_positions_say() {
        for (head, tail) in [
            (u64::MAX - 4096, u64::MAX - 8),
            (u64::MAX - 65536, u64::MAX),
            (0, 64 * 1024),
        ] {
            let mut steps = 0u64;
            read(&Forged { head, tail }, |_| steps += 1);
            assert!(steps <= 4 * 8192 + 64, "{head} {tail}: {steps}");
        }
    }
}
