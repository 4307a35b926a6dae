//! A record in flight: reserved under the logger's lock (its commit word 0,
//! its length and sequence number written, the tail moved past it), then
//! copied and committed by its writer after the lock is let go of, so that
//! threads queue on the lock only for the reservation.
//!
//! What makes this safe for readers is the commit word (see the overview,
//! [W7]/[R7]): a record is trusted only once its commit word is the value
//! its sequence number gives, stored last with Release. Until then readers
//! wait for it briefly or report it as never committed; the writer that
//! needs its space waits for it outside the lock (`Ring::reserve`), and a
//! ring is not unmapped while a record in it is in flight.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::checksum::Mixer;
use super::record::{self, commit_value, pack, HEADER_LEN};
use super::writer::{Blocked, Ring};
use crate::priority::Priority;

/// The header of a kind-4 record (a call site's captured words), as the
/// copy outside the lock writes it: word by word from registers, and its
/// checksum the same hash over the same bytes as [`checksum`].
#[derive(Clone, Copy, Debug)]
pub struct WordsHead {
    /// The whole record's length (written under the lock already).
    pub len: u32,
    pub seq: u64,
    pub time_ns: u64,
    pub tid: u32,
    /// The offset of the call site's dictionary entry.
    pub entry: u32,
    pub priority: Priority,
    pub for_outputs: bool,
    /// The words and the strings' bytes (and with fields, the fields'
    /// length word and the fields), without the padding.
    pub message_len: u32,
    /// Kind 6: the record carries fields.
    pub with_fields: bool,
    /// The process that makes it (`sys::process_tag`).
    pub tag: u32,
}

impl WordsHead {
    /// Words 2 to 4 of the header (bytes 16..40): time, thread and entry,
    /// priority and kind (the names' lengths are 0: they are in the
    /// dictionary).
    #[inline(always)]
    pub fn middle(&self) -> [u64; 3] {
        [
            self.time_ns,
            pack(self.tid, self.entry),
            record::words_kind(self.priority, self.for_outputs, self.tag, self.with_fields),
        ]
    }

    /// The record's checksum, `body` being its message part as 64-bit words
    /// (the last one padded with zeros), as `decode` computes it.
    #[inline(always)]
    pub fn checksum(&self, middle: &[u64; 3], body: impl Iterator<Item = u64>) -> u32 {
        let mut sum = Mixer::new(u64::from(self.len));
        sum.mix(u64::from(self.len));
        sum.mix(self.seq);
        for w in middle {
            sum.mix(*w);
        }
        sum.mix(u64::from(record::message_len_field(
            self.message_len,
            self.tag,
        )));
        for w in body {
            sum.mix(w);
        }
        sum.finish()
    }

    /// The last header word (bytes 40..48): the message length and the
    /// checksum.
    #[inline(always)]
    pub fn last(&self, checksum: u32) -> u64 {
        pack(
            record::message_len_field(self.message_len, self.tag),
            checksum,
        )
    }
}

/// A record reserved in the ring and not committed yet. Dropped without
/// being committed (a panic caught in the middle of the copy), it is
/// marked abandoned: readers report it as never committed, and the ring
/// evicts it without waiting for a writer that will not come back.
#[must_use]
pub struct Slot {
    /// The record's first byte, inside the ring's data area, 8-aligned,
    /// `len` bytes long, reserved for this writer alone.
    at: NonNull<u8>,
    len: usize,
    seq: u64,
    /// The record's position (see `ring`): where a line the outputs
    /// passed over is printed from.
    pos: u64,
}

impl Slot {
    /// # Safety
    /// `at` is the 8-aligned start of `len` bytes of a ring's data area
    /// (at least `HEADER_LEN`), reserved for the holder of this Slot: no
    /// other writer touches them and the ring stays mapped until the
    /// record is committed (or, if it never is, forever).
    pub(super) unsafe fn new(at: NonNull<u8>, len: usize, seq: u64, pos: u64) -> Slot {
        debug_assert!(len >= HEADER_LEN && len % 8 == 0);
        Slot { at, len, seq, pos }
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The record's position in the ring.
    pub fn pos(&self) -> u64 {
        self.pos
    }

    /// Where the record ends in the ring.
    pub fn end(&self) -> u64 {
        self.pos + self.len as u64
    }

    /// Writes the 64-bit word `w` at byte `off` of the record.
    #[inline(always)]
    fn put(&mut self, off: usize, w: u64) {
        debug_assert!(off + 8 <= self.len && off % 8 == 0);
        // SAFETY: in bounds (callers write inside `len`) and aligned; the
        // bytes are this writer's alone (`new`). Readers may copy them at
        // the same time (atomically, `View::copy`); they trust nothing
        // before the commit word. A relaxed atomic store: a plain store's
        // cost, and what a store readers may race with must be.
        unsafe { AtomicU64::from_ptr(self.at.as_ptr().add(off).cast::<u64>()) }
            .store(w, Ordering::Relaxed)
    }

    /// Fills the record as kind 4 from `head` and its message part, the
    /// `words` and then the `strings` one after the other, and commits it;
    /// as kind 6 with `fields` (encoded, see `crate::fields`) when there
    /// are any: their length in a word before the words, the fields after
    /// the strings. `head.len`, `head.seq`, `head.message_len` and
    /// `head.with_fields` must be the slot's and the parts'.
    #[inline(always)]
    pub fn commit_words(
        mut self,
        head: &WordsHead,
        words: &[u64],
        strings: &[&[u8]],
        fields: &[u8],
    ) {
        self.fill_words(head, words, strings, fields);
        self.commit();
    }

    /// [`Slot::commit_words`] for a record marked for the outputs: Err
    /// when their walk passed it over meanwhile ([`record::PASSED_OVER`]),
    /// the record whole but still in flight, for its writer to commit and
    /// have printed while it holds the logger's lock ([`PassedOver`]). (Apart: a record no
    /// output prints is never passed over, and its commit stays a plain
    /// store.)
    #[inline(always)]
    pub fn commit_marked_words(
        mut self,
        head: &WordsHead,
        words: &[u64],
        strings: &[&[u8]],
        fields: &[u8],
    ) -> Result<(), PassedOver> {
        self.fill_words(head, words, strings, fields);
        self.commit_marked()
    }

    /// Writes everything of a kind-4 (or 6) record but its commit word.
    #[inline(always)]
    fn fill_words(&mut self, head: &WordsHead, words: &[u64], strings: &[&[u8]], fields: &[u8]) {
        debug_assert_eq!(head.seq, self.seq);
        debug_assert_eq!(head.len as usize, self.len);
        debug_assert_eq!(head.with_fields, !fields.is_empty());
        if !strings.is_empty() || !fields.is_empty() {
            // The padding first: the words and strings then cover its start.
            self.put(self.len - 8, 0);
        }
        let middle = head.middle();
        for (i, w) in middle.iter().enumerate() {
            self.put(16 + 8 * i, *w);
        }
        let mut off = HEADER_LEN;
        if !fields.is_empty() {
            self.put(off, fields.len() as u64);
            off += 8;
        }
        for w in words {
            self.put(off, *w);
            off += 8;
        }
        let sum = if strings.is_empty() && fields.is_empty() {
            head.checksum(&middle, words.iter().copied())
        } else {
            let end = self.copy_strings(off, strings);
            if !fields.is_empty() {
                self.copy_strings(end, &[fields]);
            }
            self.checksum_written(head, &middle)
        };
        self.put(40, head.last(sum));
    }

    /// Copies the strings from `off` on; returns where they end.
    #[inline(never)]
    fn copy_strings(&mut self, mut off: usize, strings: &[&[u8]]) -> usize {
        for s in strings {
            assert!(off + s.len() <= self.len);
            // SAFETY: in bounds (asserted) and this writer's; `s` is a
            // slice, readable for its length, and cannot overlap the ring's
            // reserved bytes (nobody else has them).
            unsafe {
                std::ptr::copy_nonoverlapping(s.as_ptr(), self.at.as_ptr().add(off), s.len())
            };
            off += s.len();
        }
        off
    }

    /// The checksum over the message part as written. (Inlined: a call of
    /// its own cost a record with strings 30 instructions, callgrind,
    /// vlog-ring-burst.)
    #[inline(always)]
    fn checksum_written(&self, head: &WordsHead, middle: &[u64; 3]) -> u32 {
        let words = (HEADER_LEN..self.len).step_by(8).map(|off| {
            // SAFETY: in bounds and aligned; bytes this writer wrote.
            unsafe { self.at.as_ptr().add(off).cast::<u64>().read_volatile() }
        });
        head.checksum(middle, words)
    }

    /// Publishes the record: its commit word, last.
    #[inline(always)]
    fn commit(self) {
        let commit = self.at.as_ptr().cast::<u32>();
        // SAFETY: the record's first word, 8-aligned and inside the mapping
        // (`new`); readers and the writer's eviction load it atomically.
        let word = unsafe { AtomicU32::from_ptr(commit) };
        // [W7] commit Release: pairs with [R7], the Acquire load of the
        // commit word in `View::wait_committed_within` and in eviction: the
        // record's bytes are written before it counts as committed.
        word.store(commit_value(self.seq), Ordering::Release);
        // Committed: nothing for Drop to do.
        std::mem::forget(self);
    }

    /// [`Slot::commit`] for a record the outputs' walk may have passed
    /// over: Err, the record left in flight, when it did.
    #[inline(always)]
    fn commit_marked(self) -> Result<(), PassedOver> {
        // SAFETY: as in `commit`.
        let word = unsafe { AtomicU32::from_ptr(self.at.as_ptr().cast::<u32>()) };
        // [W7] as in `commit`; [P2] the compare-and-swap: pairs with [P1]
        // in `View::pass_over`, which either sees the record committed or
        // left its mark for this one to fail on. Only the walk changes the
        // word meanwhile, and only to its mark.
        match word.compare_exchange(
            0,
            commit_value(self.seq),
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => {
                std::mem::forget(self);
                Ok(())
            }
            Err(_) => Err(PassedOver(self)),
        }
    }
}

/// A record the outputs' walk passed over while its writer was copying it
/// ([`record::PASSED_OVER`]): whole, and still in flight, so that it is
/// neither evicted nor its ring unmapped until its writer holds the
/// logger's lock (under which alone records are evicted and rings
/// unmapped), then commits it and has it printed before letting go.
/// Dropped uncommitted, it is abandoned, as a slot is.
#[must_use]
pub struct PassedOver(Slot);

impl PassedOver {
    pub fn pos(&self) -> u64 {
        self.0.pos
    }

    pub fn seq(&self) -> u64 {
        self.0.seq
    }

    /// Whether the record lies in `ring`'s data area: which ring, of the
    /// one in use and those replaced but still mapped, holds it.
    pub fn is_in(&self, ring: &Ring) -> bool {
        let data = ring.data_ptr() as usize;
        (data..data + ring.data_size()).contains(&(self.0.at.as_ptr() as usize))
    }

    /// Publishes the record for every reader (see [`Slot::commit`]).
    pub fn commit(self) {
        self.0.commit()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // SAFETY: the record's first word, as in `commit`.
        unsafe { AtomicU32::from_ptr(self.at.as_ptr().cast::<u32>()) }
            .store(record::ABANDONED, Ordering::Release);
    }
}

impl Ring {
    /// Reserves a record of `len` bytes (a multiple of 8, at most
    /// `RECORD_MAX`) for its writer to copy after letting go of the lock:
    /// its commit word 0, its length and sequence number written, the tail
    /// moved past it. For a ring in this process's private memory only: a
    /// ring file's records are written whole under its lock (a process
    /// killed in the middle of a copy would leave a record nobody could
    /// tell from one still being written). Err when the oldest record,
    /// whose space this one needs, is itself still in flight.
    /// `marked`: for the outputs, which wait for it (see `slot_at`).
    #[inline(always)]
    pub fn reserve_slot(&mut self, len: usize, marked: bool) -> Result<Slot, Blocked> {
        debug_assert!(!self.shared && len % 8 == 0);
        let (tail, off) = self.reserve(len)?;
        Ok(self.slot_at(tail, off, len, marked))
    }

    /// [`Ring::reserve_slot`] of an unmarked record when nothing has to be
    /// made room for: the record fits before the data area's end and
    /// before the head (no record is evicted). None otherwise, and for a
    /// ring file. The common case, decided with two compares.
    #[inline(always)]
    pub fn reserve_slot_in_room(&mut self, len: usize) -> Option<Slot> {
        let (tail, off) = self.in_room(len)?;
        // SAFETY: `in_room` checked the bounds.
        Some(unsafe { self.slot_in_bounds(tail, off, len, false) })
    }

    /// [`Ring::reserve_slot_in_room`] of a record marked for the outputs,
    /// and whether it is urgent ([`Ring::urgent`]). None also while what
    /// waits for the outputs is bounded and this record would pass the
    /// bound (`Ring::would_overwrite_unprinted`). Both are decided with one
    /// more compare while less than half the limit waits: the bound is
    /// never nearer than that. (Unbounded, a record that evicts nothing
    /// overwrites no line: the records between `printed` and the head were
    /// evicted only while none waited for the outputs.)
    #[inline(always)]
    pub fn reserve_marked_in_room(&mut self, len: usize) -> Option<(Slot, bool)> {
        let (tail, off) = self.in_room(len)?;
        let end = tail + len as u64;
        // (Relaxed: only a hint of how much waits; the bound's test loads
        // it as [R5]. Wrapping: a `printed` past the tail takes the exact
        // test.)
        let printed = self.header().printed.load(Ordering::Relaxed);
        let urgent = end.wrapping_sub(printed) > self.urgent_over && self.urgent_in_room(len)?;
        // SAFETY: `in_room` checked the bounds.
        Some((unsafe { self.slot_in_bounds(tail, off, len, true) }, urgent))
    }

    /// The tail and its data offset, when a record of `len` bytes fits
    /// there without evicting (a ring file's `room_end` is 0: never).
    #[inline(always)]
    fn in_room(&self, len: usize) -> Option<(u64, usize)> {
        debug_assert!(len % 8 == 0);
        let tail = self.header().tail.load(Ordering::Relaxed);
        let off = self.tail_off;
        (off + len <= self.data_size && tail + len as u64 <= self.room_end).then_some((tail, off))
    }

    /// [`Ring::reserve_marked_in_room`] past half the limit: None when the
    /// record would pass the bound, else whether it is urgent, exactly.
    #[cold]
    #[inline(never)]
    fn urgent_in_room(&self, len: usize) -> Option<bool> {
        if self.unprinted_limit < self.data_size as u64 && self.would_overwrite_unprinted(len) {
            return None;
        }
        // What waits once this record is in, as `Ring::urgent` counts it
        // after an append.
        let h = self.header();
        let end = h.tail.load(Ordering::Relaxed) + len as u64;
        Some(end.saturating_sub(h.printed.load(Ordering::Relaxed)) > self.urgent_over)
    }

    /// The record of `len` bytes at position `tail`, data offset `off`,
    /// whose room is made: reserved. A `marked` one (the outputs print it,
    /// and this process's outputs read the ring) has its priority byte's
    /// mark written now and `marked_end` moved past it: the outputs go up
    /// to it at once, and find from the mark, before its commit, that it is
    /// theirs to wait for (`reader::read_with`). Every reserved record has
    /// that byte written, so a stale mark from an earlier lap is never
    /// read as this one's.
    #[inline(always)]
    fn slot_at(&mut self, tail: u64, off: usize, len: usize, marked: bool) -> Slot {
        assert!(off + len <= self.data_size);
        // SAFETY: in bounds, asserted.
        unsafe { self.slot_in_bounds(tail, off, len, marked) }
    }

    /// [`Ring::slot_at`], for a caller that has just checked the bounds.
    ///
    /// # Safety
    /// `off + len <= self.data_size`.
    #[inline(always)]
    unsafe fn slot_in_bounds(&mut self, tail: u64, off: usize, len: usize, marked: bool) -> Slot {
        debug_assert!(off + len <= self.data_size);
        let h = self.header();
        let seq = h.next_seq.load(Ordering::Relaxed);
        // SAFETY: in bounds of the data area (the caller's promise).
        let at = unsafe { NonNull::new_unchecked(self.data_ptr().add(off)) };
        // SAFETY: the record's first word, 8-aligned, inside the mapping;
        // readers load it atomically.
        unsafe { AtomicU32::from_ptr(at.as_ptr().add(record::COMMIT_AT).cast()) }
            .store(0, Ordering::Relaxed);
        // SAFETY: inside the record (at least HEADER_LEN bytes) and aligned;
        // readers take nothing from a record before its commit word.
        unsafe {
            at.as_ptr()
                .add(record::LEN_AT)
                .cast::<u32>()
                .write_volatile(len as u32);
            at.as_ptr()
                .add(record::SEQ_AT)
                .cast::<u64>()
                .write_volatile(seq);
            at.as_ptr()
                .add(record::PRIORITY_AT)
                .write_volatile(u8::from(marked) * record::FOR_OUTPUTS);
        }
        self.moved_tail(tail, off, len);
        let h = self.header();
        h.next_seq.store(seq + 1, Ordering::Relaxed);
        // [W1] tail Release: pairs with [R1]; readers that go up to this tail
        // find the record's commit word 0, its length, number and mark.
        h.tail.store(tail + len as u64, Ordering::Release);
        if marked {
            // [W6] before the writer thread is woken (`printer::wake`).
            h.marked_end.store(tail + len as u64, Ordering::Release);
        }
        // SAFETY: the `len` bytes at `at` were reserved above for this
        // record alone; the ring is unmapped only once none of its records
        // is in flight (`Ring::copies_in_flight`).
        unsafe { Slot::new(at, len, seq, tail) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;
    use crate::ring::image::Image;
    use crate::ring::layout::MIN_SIZE;
    use crate::ring::reader::{self, Entry};
    use crate::ring::record::Damage;

    fn text(msg: &[u8]) -> Record<'_> {
        Record::sample(msg)
    }

    fn head(slot: &Slot, entry: u32, words: usize) -> WordsHead {
        WordsHead {
            len: slot.len as u32,
            seq: slot.seq,
            time_ns: 5,
            tid: 6,
            entry,
            priority: Priority::Info,
            for_outputs: false,
            message_len: 8 * words as u32,
            with_fields: false,
            tag: 0x0102_0304,
        }
    }

    /// What a reader of the ring's bytes (a file, a core: nothing to wait
    /// for) makes of it.
    fn entries(ring: &Ring) -> Vec<String> {
        let image = Image::parse(ring.image_bytes()).unwrap();
        let mut seen = Vec::new();
        reader::read(&image, |e| {
            seen.push(match e {
                Entry::Record(r) => format!("{} {}", r.seq, String::from_utf8_lossy(r.message)),
                Entry::Damaged { seq, damage } => format!("{seq} {damage:?}"),
                other => format!("{other:?}"),
            })
        });
        seen
    }

    /// A small ring with one call site of `format` in its dictionary, and
    /// that site's entry.
    fn ring_with_site(format: &[u8]) -> (Ring, u32) {
        let mut ring = Ring::new(MIN_SIZE).unwrap();
        let entry = ring
            .add_site(&super::super::sites::Site {
                source: b"s",
                file: b"f.c",
                func: b"f",
                line: 3,
                format,
                id: 0,
            })
            .unwrap();
        (ring, entry)
    }

    #[test]
    fn a_record_in_flight_is_reported_with_its_number_then_read_once_committed() {
        let (mut ring, entry) = ring_with_site(b"n=%d m=%u");
        ring.append(&text(b"before")).unwrap();
        let slot = ring.reserve_slot(HEADER_LEN + 16, false).unwrap();
        ring.append(&text(b"after")).unwrap();
        assert_eq!(entries(&ring), ["0 before", "1 Uncommitted", "2 after"]);
        let h = head(&slot, entry, 2);
        slot.commit_words(&h, &[(-5i64) as u64, 7], &[], &[]);
        assert_eq!(entries(&ring), ["0 before", "1 n=-5 m=7", "2 after"]);
    }

    /// Kind 6: a call site's words and strings with fields after them,
    /// read back as the rendered message and the fields, as the outputs
    /// and a dump see them; a damaged length word is damage, never a
    /// message cut elsewhere.
    #[test]
    fn words_with_fields_read_back_as_their_message_and_fields() {
        let (mut ring, entry) = ring_with_site(b"n=%d s=%s");
        let mut fields = Vec::new();
        crate::fields::encode(
            [
                crate::fields::Field {
                    name: b"REQUEST",
                    value: crate::fields::Value::Str(b"r-17"),
                },
                crate::fields::Field {
                    name: b"TRY",
                    value: crate::fields::Value::Int(2),
                },
            ]
            .into_iter(),
            &mut fields,
        );
        let message_len = 8 + 16 + 3 + fields.len();
        let len = crate::ring::record::align8(HEADER_LEN + message_len);
        let slot = ring.reserve_slot(len, false).unwrap();
        let h = WordsHead {
            message_len: message_len as u32,
            with_fields: true,
            ..head(&slot, entry, 0)
        };
        slot.commit_words(&h, &[7, 3], &[b"abc"], &fields);
        let image = Image::parse(ring.image_bytes()).unwrap();
        let mut seen = Vec::new();
        reader::read(&image, |e| match e {
            Entry::Record(r) => {
                let mut line = Vec::new();
                crate::text::line::put_fields_text(r.fields, &mut line);
                seen.push(format!(
                    "{}{}",
                    String::from_utf8_lossy(r.message),
                    String::from_utf8_lossy(&line)
                ));
            }
            other => seen.push(format!("{other:?}")),
        });
        assert_eq!(seen, ["n=7 s=abc [REQUEST=r-17 TRY=2]"]);
        // The length word says more than the message part holds: damaged.
        let mut bytes = ring.image_bytes().to_vec();
        let data = bytes.len() - ring.data_size();
        let at = data + HEADER_LEN;
        bytes[at..at + 8].copy_from_slice(&(message_len as u64).to_ne_bytes());
        let image = Image::parse(&bytes).unwrap();
        let mut seen = Vec::new();
        reader::read(&image, |e| seen.push(format!("{e:?}")));
        assert!(
            seen.first().is_some_and(|e| e.contains("Damaged")),
            "{seen:?}"
        );
    }

    /// The ring's live view, whose writer of the marked record in flight
    /// commits it when a reader first waits for it (as the thread copying
    /// it would meanwhile), counting the waits.
    struct Committing<'a> {
        view: crate::ring::view::View<'a>,
        slot: std::cell::RefCell<Option<(Slot, WordsHead)>>,
        waits: std::cell::Cell<u32>,
    }

    impl crate::ring::Region for Committing<'_> {
        fn data_size(&self) -> u64 {
            self.view.data_size()
        }
        fn head(&self) -> u64 {
            self.view.head()
        }
        fn tail(&self) -> u64 {
            self.view.tail()
        }
        fn dict(&self) -> &[u8] {
            self.view.dict()
        }
        fn copy(&self, off: usize, dst: &mut [u8]) {
            self.view.copy(off, dst)
        }
        fn whole(&self) -> bool {
            self.view.whole()
        }
        fn wait_committed(&self, off: usize) -> u32 {
            self.waits.set(self.waits.get() + 1);
            if let Some((slot, head)) = self.slot.borrow_mut().take() {
                slot.commit_words(&head, &[42], &[], &[]);
            }
            self.view.wait_committed_within(off, 0)
        }
    }

    /// The outputs' walk (records marked for them only) waits for one of
    /// theirs in flight and prints it once committed; one not theirs in
    /// flight is passed over without a wait (a daemon's debug records cost
    /// the walk nothing); one of theirs whose writer never finishes is
    /// `Unfinished` after the wait, which the outputs say they lost.
    #[test]
    fn the_outputs_wait_for_their_own_records_in_flight_and_no_others() {
        let (mut ring, entry) = ring_with_site(b"n=%d");
        ring.append(&text(b"before")).unwrap();
        let unmarked = ring.reserve_slot(HEADER_LEN + 8, false).unwrap();
        let marked = ring.reserve_slot(HEADER_LEN + 8, true).unwrap();
        let h = ring.header();
        let tail = h.tail.load(Ordering::Relaxed);
        assert_eq!(
            h.marked_end.load(Ordering::Relaxed),
            tail,
            "marked at its reservation"
        );
        let marked_head = WordsHead {
            for_outputs: true,
            ..head(&marked, entry, 1)
        };
        let region = Committing {
            view: ring.view(),
            slot: std::cell::RefCell::new(Some((marked, marked_head))),
            waits: std::cell::Cell::new(0),
        };
        let mut seen = Vec::new();
        let mut buffers = reader::Buffers::on_heap().unwrap();
        {
            reader::read_with(
                &region,
                Default::default(),
                u64::MAX,
                &mut buffers,
                true,
                |e, m| {
                    if let Entry::Record(r) = e {
                        if m {
                            seen.push(String::from_utf8_lossy(r.message).into_owned());
                        }
                    }
                    true
                },
            );
        }
        assert_eq!(seen, ["n=42"], "the marked record in flight, waited for");
        assert_eq!(region.waits.get(), 1, "waited for the marked record alone");
        drop(region);
        drop(unmarked);

        // Never committed: after the wait, passed over as unfinished.
        let stuck = ring.reserve_slot(HEADER_LEN + 8, true).unwrap();
        let mut damage = Vec::new();
        let view = ring.view();
        reader::read_with(
            &view,
            Default::default(),
            u64::MAX,
            &mut buffers,
            true,
            |e, _| {
                if let Entry::Damaged { seq, damage: d } = e {
                    damage.push((seq, d));
                }
                true
            },
        );
        // (The unmarked one, dropped, was abandoned: never the outputs'.)
        assert_eq!(
            damage,
            [(1, Damage::Uncommitted), (stuck.seq(), Damage::Unfinished)],
            "the marked record never finished is unfinished"
        );
        // Its writer learns it was passed over as it commits; the record
        // is then whole for every reader. One the walk did not pass over
        // is not said to be.
        let stuck_head = WordsHead {
            for_outputs: true,
            ..head(&stuck, entry, 1)
        };
        let stuck_seq = stuck.seq();
        let passed = stuck
            .commit_marked_words(&stuck_head, &[9], &[], &[])
            .unwrap_err();
        assert!(passed.is_in(&ring) && passed.seq() == stuck_seq);
        let seen = entries(&ring);
        assert!(
            !seen.iter().any(|e| e.contains("n=9")),
            "still in flight once passed over: {seen:?}"
        );
        passed.commit();
        let seen = entries(&ring);
        assert!(
            seen.contains(&format!("{stuck_seq} n=9")),
            "committed after it was passed over: {seen:?}"
        );
        let next = ring.reserve_slot(HEADER_LEN + 8, true).unwrap();
        let next_head = WordsHead {
            for_outputs: true,
            ..head(&next, entry, 1)
        };
        assert!(next
            .commit_marked_words(&next_head, &[10], &[], &[])
            .is_ok());
    }

    #[test]
    fn a_record_in_flight_is_never_evicted_and_an_abandoned_one_is() {
        // Committed; abandoned in a forked child; dropped uncommitted (a
        // panic caught in the middle of the copy); passed over by the
        // outputs' walk (still in flight), then committed.
        for way in ["commit", "fork", "drop", "passed over"] {
            let mut ring = Ring::new(MIN_SIZE).unwrap();
            let slot = ring.reserve_slot(HEADER_LEN, way == "passed over").unwrap();
            let at = slot.seq();
            if way == "passed over" {
                use crate::ring::Region;
                assert_eq!(ring.view().pass_over(0), 0, "still in flight");
                assert_eq!(ring.view().wait_committed_within(0, 0), 0);
                assert!(!ring.view().is_committed(0));
            }
            // Fill the ring until an append needs the record's room.
            let blocked = (0..10_000)
                .find_map(|i| ring.append(&text(format!("filler {i}").as_bytes())).err());
            let Some(Blocked { pos, .. }) = blocked else {
                panic!("nothing blocked: {:?}", entries(&ring));
            };
            assert_eq!(pos, 0, "the record in flight is the oldest");
            assert!(ring.copies_in_flight());
            assert!(ring.copies_in_flight(), "asked again");
            match way {
                "commit" => {
                    let h = head(&slot, 0, 0);
                    slot.commit_words(&h, &[], &[], &[]);
                }
                "passed over" => {
                    // A forked child's abandon covers it too.
                    let mut copy = ring.view().wait_committed_within(0, 0);
                    assert_eq!(copy, 0);
                    let h = WordsHead {
                        for_outputs: true,
                        ..head(&slot, 0, 0)
                    };
                    let passed = slot.commit_marked_words(&h, &[], &[], &[]).unwrap_err();
                    // Still in flight until its writer commits it.
                    assert!(ring.copies_in_flight());
                    assert_eq!(ring.view().wait_committed_within(0, 0), 0);
                    passed.commit();
                    copy = ring.view().wait_committed_within(0, 0);
                    assert_eq!(copy, record::commit_value(at));
                }
                "fork" => {
                    // As in a forked child: nobody finishes it there.
                    ring.abandon_in_flight();
                    std::mem::forget(slot);
                }
                _ => drop(slot),
            }
            assert!(!ring.copies_in_flight());
            ring.append(&text(b"now there is room")).unwrap();
            let seen = entries(&ring);
            assert!(
                !seen.iter().any(|e| e.starts_with(&format!("{at} "))),
                "{seen:?}"
            );
            assert_eq!(
                seen.last().unwrap().split_once(' ').unwrap().1,
                "now there is room"
            );
            assert!(!seen.iter().any(|e| e.contains("Uncommitted")), "{seen:?}");
        }
    }

    #[test]
    fn records_in_flight_in_a_ring_image_are_damage_not_guesses() {
        let mut ring = Ring::new(MIN_SIZE).unwrap();
        let _slot = ring.reserve_slot(HEADER_LEN + 8, false).unwrap();
        assert!(Damage::Uncommitted.describe().contains("still writing"));
        assert_eq!(entries(&ring), ["0 Uncommitted"]);
    }
}
