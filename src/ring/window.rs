//! Records reserved without the logger's lock: a *window* of room the
//! lock's holder made at the tail of a ring in this process's private
//! memory, which threads then take records from by one compare-and-swap
//! each, the lock untouched. Threads that log at once share one cache line
//! for the reservation (and the tail's) instead of queueing on the lock.
//!
//! The window is one 64-bit word and what its opener wrote beside it:
//!
//! ```text
//! | closed (1) | records taken (23) | tail (40, in 8-byte units) |
//! ```
//! The holder opens a window after making room (`open`): where it begins
//! (position, data offset, sequence number), how many bytes it holds (no
//! eviction, no pad, no record the outputs still need inside), which ring,
//! and the lowest priority an output prints; then the word, with Release.
//! A thread takes a record by adding its length and one record to the word
//! (`reserve`), and stamps it (commit word 0, length, number) at once. The
//! lock's holder closes the window (`close`) before anything else it does:
//! from then on nothing is taken from it, and what was taken is the ring's
//! (its end, its next number).
//!
//! The word's tail never repeats (it grows with every record and every
//! opening, modulo 2^40 units: 8 TiB), so a compare-and-swap that succeeds
//! proves that no window was closed since the word was loaded: what the
//! thread read beside it was that window's.
//!
//! The tail readers go up to (`Header::tail`) is moved past a record only
//! once it is stamped, in order: a thread whose record is next moves it,
//! then looks at the record after its own and moves the tail past that one
//! too if it is stamped (and so on); a thread whose record is not next yet
//! leaves it to the one before. So readers still find every record below
//! the tail stamped, and wait for its commit word as before ([W7]/[R7]).
//! The holder adds a record only once the tail is the window's end (all it
//! took published); otherwise it lets go of the lock and waits, as for a
//! record in flight (`Blocked`).
//!
//! Orderings, in ring/'s overview: [W9]/[R9] (the word and what was
//! written beside it), [W10]/[R10] (a record stamped, the tail moved past
//! it).

use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering};

use super::layout::Header;
use super::reader::Region;
use super::record::{self, HEADER_LEN};
use super::slot::Slot;
use super::writer::{Blocked, Ring};

const TAIL_BITS: u32 = 40;
const TAIL_MASK: u64 = (1 << TAIL_BITS) - 1;
const ONE_RECORD: u64 = 1 << TAIL_BITS;
const CLOSED: u64 = 1 << 63;
const COUNT_MASK: u64 = (CLOSED - 1) >> TAIL_BITS;
/// The most a window holds: its records fit the word's 23-bit count (a
/// record takes `HEADER_LEN` bytes at least).
const LIMIT_MAX: u64 = 64 << 20;
const _: () = assert!(LIMIT_MAX / HEADER_LEN as u64 <= COUNT_MASK);

/// The window and what its opener wrote beside it, on a cache line of
/// their own. The logger has one ([`WINDOW`]).
#[repr(C, align(64))]
pub struct Window {
    word: AtomicU64,
    /// The word's tail when opened.
    base_units: AtomicU64,
    /// Where the window begins: position, sequence number, first byte.
    pos: AtomicU64,
    seq: AtomicU64,
    start: AtomicPtr<u8>,
    header: AtomicPtr<Header>,
    /// The bytes it holds.
    limit: AtomicU64,
    /// The ring's id (`Ring::id`), for the call site's dictionary entry.
    ring: AtomicU32,
    /// The lowest priority an output prints (`logger::State::lowest`).
    lowest: AtomicU8,
}

/// The logger's window.
pub static WINDOW: Window = Window::new();

impl Window {
    pub const fn new() -> Window {
        Window {
            word: AtomicU64::new(CLOSED),
            base_units: AtomicU64::new(0),
            pos: AtomicU64::new(0),
            seq: AtomicU64::new(0),
            start: AtomicPtr::new(std::ptr::null_mut()),
            header: AtomicPtr::new(std::ptr::null_mut()),
            limit: AtomicU64::new(0),
            ring: AtomicU32::new(0),
            lowest: AtomicU8::new(0),
        }
    }
}

/// A record taken from the window, not stamped yet: where it is, and
/// what publishing it needs.
struct Taken {
    at: NonNull<u8>,
    pos: u64,
    seq: u64,
    header: *const Header,
    /// Its offset in the window, and the window's bytes.
    taken: u64,
    limit: u64,
}

fn units(word: u64) -> u64 {
    word & TAIL_MASK
}

fn count(word: u64) -> u64 {
    (word >> TAIL_BITS) & COUNT_MASK
}

impl Window {
    /// Takes a record of `len` bytes (a multiple of 8, at most
    /// `RECORD_MAX`) of `priority` from the open window, stamped and
    /// published, if the window is open, has room, and no output prints
    /// `priority`; `entry` gives the call site's dictionary entry in the
    /// window's ring (by id), if it has one. None sends the caller to the
    /// lock. Makes no system call and takes no lock.
    #[inline(always)]
    pub fn reserve(
        &self,
        len: usize,
        priority: u8,
        entry: impl Fn(u32) -> Option<u32>,
    ) -> Option<(Slot, u32)> {
        let (taken, found) = self.take(len, priority, entry)?;
        // SAFETY: `take`'s record, this thread's alone, in a ring mapped
        // while it is not published and committed.
        unsafe {
            let slot = stamp(taken.at, len, taken.seq);
            publish(&taken, len);
            Some((slot, found))
        }
    }

    #[inline(always)]
    fn take(
        &self,
        len: usize,
        priority: u8,
        entry: impl Fn(u32) -> Option<u32>,
    ) -> Option<(Taken, u32)> {
        // [R9] Acquire: pairs with [W9] in `open`; what the opener wrote
        // beside the word is read after it.
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            if word & CLOSED != 0 || priority >= self.lowest.load(Ordering::Relaxed) {
                return None;
            }
            let found = entry(self.ring.load(Ordering::Relaxed))?;
            let taken = self.taken(word);
            let limit = self.limit.load(Ordering::Relaxed);
            if taken + len as u64 > limit {
                return None;
            }
            let next =
                ((word & !TAIL_MASK) + ONE_RECORD) | ((units(word) + len as u64 / 8) & TAIL_MASK);
            let (start, header, pos, seq) = (
                self.start.load(Ordering::Relaxed),
                self.header.load(Ordering::Relaxed),
                self.pos.load(Ordering::Relaxed),
                self.seq.load(Ordering::Relaxed),
            );
            // AcqRel: Release pairs with `close`'s Acquire (a closer reads
            // what was taken after this thread's reads of the fields
            // above); Acquire as [R9] again, for the retry.
            match self
                .word
                .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    // SAFETY: the swap succeeded on the word this thread
                    // loaded, so no window was closed since: `start` is
                    // the open window's first byte in its ring, which
                    // stays mapped while a record taken from it is not
                    // published and committed (`Ring::copies_in_flight`),
                    // and the `len` bytes from `taken` lie inside the
                    // window's room, taken by this thread alone.
                    let at = unsafe { NonNull::new_unchecked(start.add(taken as usize)) };
                    let taken = Taken {
                        at,
                        pos: pos + taken,
                        seq: seq + count(word),
                        header,
                        taken,
                        limit,
                    };
                    return Some((taken, found));
                }
                Err(now) => word = now,
            }
        }
    }

    /// The bytes taken from the window by `word`.
    fn taken(&self, word: u64) -> u64 {
        (units(word).wrapping_sub(self.base_units.load(Ordering::Relaxed)) & TAIL_MASK) * 8
    }
}

/// Stamps the record at `at`: commit word 0, its length, then its number,
/// which marks it stamped ([W10]).
///
/// # Safety
/// `at` is the 8-aligned start of `len` bytes of a ring's data area,
/// reserved for the caller alone, mapped until the record is committed.
#[inline(always)]
unsafe fn stamp(at: NonNull<u8>, len: usize, seq: u64) -> Slot {
    let p = at.as_ptr();
    // SAFETY: the record's first words, inside its bytes, aligned; readers
    // and helpers load them atomically.
    unsafe {
        AtomicU32::from_ptr(p.add(record::COMMIT_AT).cast()).store(0, Ordering::Relaxed);
        AtomicU32::from_ptr(p.add(record::LEN_AT).cast()).store(len as u32, Ordering::Relaxed);
        // [W10] Release: the record stamped, before this thread's
        // read-modify-write of the tail (`publish`).
        AtomicU64::from_ptr(p.add(record::SEQ_AT).cast()).store(seq, Ordering::Release);
        Slot::new(at, len, seq)
    }
}

/// Moves the tail past the stamped record `taken` (`len` bytes) if it is
/// next, and past each stamped record after it in the window; leaves it
/// otherwise to the thread whose record comes before.
///
/// # Safety
/// `taken` was taken from a window of a live ring, and stamped.
#[inline(always)]
unsafe fn publish(taken: &Taken, len: usize) {
    // SAFETY: the ring is live (the caller's).
    let header = unsafe { &*taken.header };
    let (mut from, mut len, mut seq) = (taken.pos, len as u64, taken.seq);
    let (mut at, mut off) = (taken.at.as_ptr(), taken.taken);
    loop {
        let to = from + len;
        // [W10]/[R10]: every look at the tail is a read-modify-write,
        // Release after the stamp and Acquire before the next record's
        // stamp is read. Of a thread that stamped its record and finds the
        // tail short of it, and the thread before it that moves the tail
        // there and then looks at that record, one always comes after the
        // other in the tail's order of changes: it moves the tail on
        // itself, or sees the stamp.
        match header
            .tail
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => {}
            // Past it already: a thread after it moved the tail.
            Err(now) if now > from => return,
            Err(_) => {
                // Not next yet: the thread before moves the tail past
                // this record, having seen its stamp, unless it moved the
                // tail to it meanwhile.
                if header.tail.fetch_add(0, Ordering::AcqRel) != from {
                    return;
                }
                continue;
            }
        }
        // The next record, if the window has room for one there (it ends
        // before the data area's end: no pad inside it).
        off += len;
        if off + HEADER_LEN as u64 > taken.limit {
            return;
        }
        // SAFETY: `len` bytes on from a record inside the window, still
        // inside it (checked above), 8-aligned.
        let (next_seq, next_len) = unsafe {
            at = at.add(len as usize);
            (
                AtomicU64::from_ptr(at.add(record::SEQ_AT).cast()).load(Ordering::Acquire),
                AtomicU32::from_ptr(at.add(record::LEN_AT).cast()).load(Ordering::Relaxed),
            )
        };
        // Stamped: its number follows (stale bytes of an older lap carry
        // older numbers), and its length fits the window.
        let next_len = u64::from(next_len);
        if next_seq != seq + 1
            || next_len < HEADER_LEN as u64
            || !next_len.is_multiple_of(8)
            || off + next_len > taken.limit
        {
            return;
        }
        (from, len, seq) = (to, next_len, seq + 1);
    }
}

impl Window {
    /// Closes the window, by the lock's holder before it does anything else:
    /// nothing more is taken from it, and what was is `ring`'s (the ring it
    /// was opened in: the state's, which changes only under the lock).
    pub fn close(&self, ring: Option<&mut Ring>) {
        let w = self;
        // [W9]/[R9] back the other way: Acquire, so the fields a taker read
        // were read before the opener writes them again.
        let word = w.word.fetch_or(CLOSED, Ordering::AcqRel);
        if word & CLOSED != 0 || count(word) == 0 {
            return;
        }
        let Some(ring) = ring.filter(|r| r.id() == w.ring.load(Ordering::Relaxed)) else {
            return;
        };
        let taken = w.taken(word);
        ring.taken_from_window(taken, w.seq.load(Ordering::Relaxed) + count(word));
    }

    /// Opens a window in `ring` after its holder made room (closed, as every
    /// holder of the lock leaves it until then): the room before the head and
    /// the data area's end. Not for a ring file (other processes append to
    /// it), nor while a record taken is not published yet, nor with too little
    /// room to take anything.
    pub fn open(&self, ring: &Ring, lowest: u8) {
        let w = self;
        let Some((pos, off, limit)) = ring.window_room() else {
            return;
        };
        let limit = limit.min(LIMIT_MAX);
        if limit < HEADER_LEN as u64 {
            return;
        }
        let header = ring.as_raw();
        // The word's tail moves on at every opening: a word loaded before it
        // never matches a later one.
        let units = (units(w.word.load(Ordering::Relaxed)) + 1) & TAIL_MASK;
        w.base_units.store(units, Ordering::Relaxed);
        w.pos.store(pos, Ordering::Relaxed);
        // SAFETY: `header` is the ring's, live.
        w.seq.store(
            unsafe { &*header }.next_seq.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        // SAFETY: `off` is inside the data area (`window_room`).
        w.start
            .store(unsafe { ring.data_ptr().add(off) }, Ordering::Relaxed);
        w.header.store(header.cast_mut(), Ordering::Relaxed);
        w.limit.store(limit, Ordering::Relaxed);
        w.ring.store(ring.id(), Ordering::Relaxed);
        w.lowest.store(lowest, Ordering::Relaxed);
        // [W9] Release: pairs with [R9] in `reserve`; a taker that finds the
        // window open finds what was written above.
        w.word.store(units, Ordering::Release);
    }

    /// Where the last window opened in the ring `id` began: its position and
    /// sequence number (None: it was opened in another ring).
    pub(super) fn last_opened(&self, id: u32) -> Option<(u64, u64)> {
        let w = self;
        (w.ring.load(Ordering::Relaxed) == id)
            .then(|| (w.pos.load(Ordering::Relaxed), w.seq.load(Ordering::Relaxed)))
    }
}

impl Ring {
    /// The room a window opened now would hold: where it begins (position,
    /// data offset) and its bytes, before the head and the data area's end.
    /// None for a ring file, and while a record taken from the last window
    /// is not published yet (the window would begin at the wrong place for
    /// readers).
    fn window_room(&self) -> Option<(u64, usize, u64)> {
        if self.shared || self.tail_off >= self.data_size || !self.all_published() {
            return None;
        }
        let room = self.room_end.saturating_sub(self.end);
        Some((
            self.end,
            self.tail_off,
            room.min((self.data_size - self.tail_off) as u64),
        ))
    }

    /// `taken` bytes of records were taken from the window, up to number
    /// `next_seq`: the ring's end and numbering go on after them.
    fn taken_from_window(&mut self, taken: u64, next_seq: u64) {
        self.end += taken;
        self.tail_off += taken as usize;
        self.header().next_seq.store(next_seq, Ordering::Relaxed);
    }

    /// Whether every record taken is published: the tail readers go up to
    /// is the ring's end. (Always for a ring file, whose records are
    /// written whole under its lock.)
    #[inline(always)]
    pub(super) fn all_published(&self) -> bool {
        // [R10] Acquire: the records below it are stamped.
        self.shared || self.header().tail.load(Ordering::Acquire) == self.end
    }

    /// Before the lock's holder appends: Err (the first record taken and
    /// not published, to wait for) unless every record taken is published.
    #[cold]
    pub(super) fn unpublished(&mut self) -> Result<(), Blocked> {
        let tail = self.header().tail.load(Ordering::Acquire);
        if tail < self.end {
            return Err(Blocked {
                pos: tail,
                ring: self.as_raw().addr(),
            });
        }
        if tail > self.end {
            self.adopt_published(tail);
        }
        Ok(())
    }

    /// Past the end: a record a forked child forgot (`forget_unpublished`)
    /// and its thread published after all, the child's one thread back
    /// from the signal handler that forked. It is the ring's: the end and
    /// the numbering go on after it.
    #[cold]
    fn adopt_published(&mut self, tail: u64) {
        let mut pos = self.end;
        let mut next_seq = None;
        // Bounded by the bytes: each record is 8 bytes or more.
        while pos < tail {
            let mut words = [0u8; 16];
            self.view()
                .copy((pos % self.data_size as u64) as usize, &mut words);
            let Some(len) = record::peek_len(&words) else {
                break;
            };
            next_seq = Some(record::u64_at(&words, record::SEQ_AT) + 1);
            self.last = pos;
            pos += len as u64;
        }
        // Inside the last window: never past the data area's end.
        self.tail_off += (tail - self.end) as usize;
        self.end = tail;
        if let Some(next) = next_seq {
            let h = self.header();
            h.next_seq.store(
                next.max(h.next_seq.load(Ordering::Relaxed)),
                Ordering::Relaxed,
            );
        }
    }

    /// In a forked child's copy of a private ring: the records the
    /// parent's other threads took from the window and had not published
    /// are never stamped here. They are forgotten: their bytes cleared (a
    /// stamp left there would pass for a later record of the child's
    /// numbering), the end and the numbering moved back to the tail.
    pub(super) fn forget_unpublished(&mut self, window: &Window) {
        let tail = self.header().tail.load(Ordering::Relaxed);
        if self.shared || tail >= self.end {
            return;
        }
        // They lie in the last window, which never crosses the data
        // area's end; records published in it are counted from its start.
        let pending = (self.end - tail) as usize;
        let off = self.tail_off - pending;
        self.data_mut(off, pending).fill(0);
        self.end = tail;
        self.tail_off = off;
        // (A replaced ring's numbering matters no more.)
        let Some((start, seq)) = window.last_opened(self.id()) else {
            return;
        };
        let mut published = 0;
        let mut pos = start;
        // Bounded by the window: each record is 8 bytes or more.
        while pos < tail && published < COUNT_MASK {
            let mut word = [0u8; 8];
            self.view()
                .copy((pos % self.data_size as u64) as usize, &mut word);
            let Some(len) = record::peek_len(&word) else {
                break;
            };
            self.last = pos;
            pos += len as u64;
            published += 1;
        }
        self.header()
            .next_seq
            .store(seq + published, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority::Priority;
    use crate::ring::image::Image;
    use crate::ring::layout::MIN_SIZE;
    use crate::ring::reader::{self, Entry};
    use crate::ring::sites::Site;
    use crate::ring::slot::WordsHead;
    use std::sync::Mutex;

    const LEN: usize = HEADER_LEN + 16;

    fn ring_with_site() -> (Ring, u32) {
        let mut ring = Ring::new(MIN_SIZE).unwrap();
        let entry = ring
            .add_site(&Site {
                source: b"s",
                file: b"f.c",
                func: b"f",
                line: 3,
                format: b"t=%d i=%d",
                id: 0,
            })
            .unwrap();
        (ring, entry)
    }

    fn commit(slot: Slot, entry: u32, words: [u64; 2]) {
        let head = WordsHead {
            len: LEN as u32,
            seq: slot.seq(),
            time_ns: 1,
            tid: 2,
            entry,
            priority: Priority::Debug,
            for_outputs: false,
            message_len: 16,
        };
        slot.commit_words(&head, &words, &[]);
    }

    /// What `reserve` does after `take`, for a record taken apart.
    fn stamp_and_publish(taken: &Taken) -> Slot {
        // SAFETY: taken from a window of a ring every test keeps until
        // its end.
        unsafe {
            let slot = stamp(taken.at, LEN, taken.seq);
            publish(taken, LEN);
            slot
        }
    }

    /// The ring's records as a reader of its bytes finds them: numbers and
    /// messages, or what was wrong.
    fn read(ring: &Ring) -> Vec<(u64, String)> {
        let image = Image::parse(ring.image_bytes()).unwrap();
        let mut seen = Vec::new();
        reader::read(&image, |e| match e {
            Entry::Record(r) => seen.push((r.seq, String::from_utf8_lossy(r.message).into())),
            other => seen.push((u64::MAX, format!("{other:?}"))),
        });
        seen
    }

    #[test]
    fn records_taken_by_threads_while_the_holder_makes_room_are_each_read_once() {
        let (ring, entry) = ring_with_site();
        let window = Window::new();
        let lock = Mutex::new(ring);
        window.open(&lock.lock().unwrap(), 5);
        const THREADS: u64 = 4;
        const EACH: u64 = 20_000;
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (window, lock) = (&window, &lock);
                s.spawn(move || {
                    for i in 0..EACH {
                        if let Some((slot, e)) = window.reserve(LEN, 1, |_| Some(entry)) {
                            commit(slot, e, [t, i]);
                            continue;
                        }
                        // The holder's way: close, make room, open again.
                        loop {
                            let mut ring = lock.lock().unwrap();
                            window.close(Some(&mut ring));
                            match ring.reserve_slot(LEN) {
                                Ok(slot) => {
                                    window.open(&ring, 5);
                                    drop(ring);
                                    commit(slot, entry, [t, i]);
                                    break;
                                }
                                Err(at) => {
                                    // Waited for without the lock, as the
                                    // logger does (its writer publishes it).
                                    drop(ring);
                                    let settled = (0..1_000_000).any(|_| {
                                        std::thread::yield_now();
                                        lock.lock().unwrap().view().is_settled(at.pos)
                                    });
                                    assert!(settled, "{at:?} never published");
                                }
                            }
                        }
                    }
                });
            }
        });
        let mut ring = lock.into_inner().unwrap();
        window.close(Some(&mut ring));
        assert!(ring.all_published());
        let stats = ring.stats();
        assert_eq!(stats.recorded, THREADS * EACH, "{stats:?}");
        let seen = read(&ring);
        assert_eq!(seen.len() as u64, stats.recorded - stats.lost, "{stats:?}");
        let first = seen[0].0;
        let mut last_of = [None; THREADS as usize];
        for (k, (seq, msg)) in seen.iter().enumerate() {
            assert_eq!(
                *seq,
                first + k as u64,
                "numbers in order, none missing: {msg}"
            );
            let (t, i) = msg
                .strip_prefix("t=")
                .and_then(|m| m.split_once(" i="))
                .unwrap_or_else(|| panic!("record {seq}: {msg}"));
            let (t, i): (usize, u64) = (t.parse().unwrap(), i.parse().unwrap());
            // Each thread's records in its own order.
            assert!(
                last_of[t].is_none_or(|l| l < i),
                "thread {t}: {i} after {last_of:?}"
            );
            last_of[t] = Some(i);
        }
        assert_eq!(
            seen.last().map(|s| s.0),
            Some(stats.recorded - 1),
            "the newest is there"
        );
        assert!(last_of.contains(&Some(EACH - 1)), "{last_of:?}");
    }

    #[test]
    fn a_record_published_before_the_one_taken_before_it_waits_for_that_one() {
        let (mut ring, entry) = ring_with_site();
        let window = Window::new();
        window.open(&ring, 5);
        let start = ring.header().tail.load(Ordering::Relaxed);
        let (a, _) = window.take(LEN, 1, |_| Some(entry)).unwrap();
        let (b, _) = window.take(LEN, 1, |_| Some(entry)).unwrap();
        assert_eq!((b.pos, b.seq), (a.pos + LEN as u64, a.seq + 1));
        let tail = |ring: &Ring| ring.header().tail.load(Ordering::Relaxed);
        let b_slot = stamp_and_publish(&b);
        assert_eq!(tail(&ring), start, "not published before the one before it");
        // The holder waits for it, as for a record in flight.
        window.close(Some(&mut ring));
        assert!(!ring.all_published());
        let blocked = ring.reserve_slot(LEN).err();
        assert_eq!(blocked.map(|b| b.pos), Some(start));
        assert!(!ring.view().is_settled(start));
        assert!(
            ring.copies_in_flight(),
            "kept mapped while one is unpublished"
        );
        let a_slot = stamp_and_publish(&a);
        assert_eq!(
            tail(&ring),
            start + 2 * LEN as u64,
            "both, by the one before"
        );
        assert!(ring.all_published());
        commit(a_slot, entry, [0, 1]);
        commit(b_slot, entry, [0, 2]);
        assert!(ring.view().is_settled(start));
        let slot = ring.reserve_slot(LEN).unwrap();
        commit(slot, entry, [0, 3]);
        let msgs: Vec<_> = read(&ring).into_iter().map(|(_, m)| m).collect();
        assert_eq!(msgs, ["t=0 i=1", "t=0 i=2", "t=0 i=3"]);
    }

    #[test]
    fn a_forked_child_forgets_the_records_it_will_never_see_published() {
        let (mut ring, entry) = ring_with_site();
        let slot = ring.reserve_slot(LEN).unwrap();
        commit(slot, entry, [0, 0]);
        let window = Window::new();
        window.open(&ring, 5);
        let (slot, _) = window.reserve(LEN, 1, |_| Some(entry)).unwrap();
        commit(slot, entry, [0, 1]);
        // Two more taken by other threads of the parent: one not stamped
        // yet, one stamped but behind it.
        let (_a, _) = window.take(LEN, 1, |_| Some(entry)).unwrap();
        let (b, _) = window.take(LEN, 1, |_| Some(entry)).unwrap();
        let b_slot = stamp_and_publish(&b);
        std::mem::forget(b_slot);
        window.close(Some(&mut ring));
        assert_eq!(ring.stats().recorded, 4);
        // In the child:
        ring.forget_unpublished(&window);
        assert!(ring.all_published());
        assert_eq!(
            ring.stats().recorded,
            2,
            "the numbering goes on after the last published"
        );
        assert!(!ring.copies_in_flight());
        for i in 2..4 {
            let slot = ring.reserve_slot(LEN).unwrap();
            commit(slot, entry, [1, i]);
        }
        window.open(&ring, 5);
        let (slot, _) = window.reserve(LEN, 1, |_| Some(entry)).unwrap();
        commit(slot, entry, [1, 4]);
        window.close(Some(&mut ring));
        let seen = read(&ring);
        let want: Vec<(u64, String)> = [
            (0, "t=0 i=0"),
            (1, "t=0 i=1"),
            (2, "t=1 i=2"),
            (3, "t=1 i=3"),
            (4, "t=1 i=4"),
        ]
        .iter()
        .map(|(s, m)| (*s, m.to_string()))
        .collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn a_forgotten_record_its_thread_publishes_after_all_is_adopted() {
        // A child forked by a signal handler that interrupted the thread
        // between taking its record and publishing it: the thread goes on
        // once the handler returns.
        let (mut ring, entry) = ring_with_site();
        let window = Window::new();
        window.open(&ring, 5);
        let (slot, _) = window.reserve(LEN, 1, |_| Some(entry)).unwrap();
        commit(slot, entry, [0, 0]);
        let (a, _) = window.take(LEN, 1, |_| Some(entry)).unwrap();
        let (_b, _) = window.take(LEN, 1, |_| Some(entry)).unwrap();
        window.close(Some(&mut ring));
        ring.forget_unpublished(&window);
        let a_slot = stamp_and_publish(&a);
        commit(a_slot, entry, [0, 1]);
        let slot = ring.reserve_slot(LEN).unwrap();
        commit(slot, entry, [1, 2]);
        let seen = read(&ring);
        let want: Vec<(u64, String)> = [(0, "t=0 i=0"), (1, "t=0 i=1"), (2, "t=1 i=2")]
            .iter()
            .map(|(s, m)| (*s, m.to_string()))
            .collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn a_closed_window_and_a_printed_priority_are_never_taken_from() {
        let (mut ring, entry) = ring_with_site();
        let window = Window::new();
        assert!(
            window.reserve(LEN, 1, |_| Some(entry)).is_none(),
            "closed at first"
        );
        window.open(&ring, 3);
        assert!(
            window.reserve(LEN, 3, |_| Some(entry)).is_none(),
            "an output prints it"
        );
        assert!(
            window.reserve(LEN, 1, |_| None).is_none(),
            "site not in this ring"
        );
        let (slot, _) = window
            .reserve(LEN, 2, |id| (id == ring.id()).then_some(entry))
            .unwrap();
        commit(slot, entry, [0, 0]);
        window.close(Some(&mut ring));
        assert!(window.reserve(LEN, 1, |_| Some(entry)).is_none(), "closed");
        // A window holds what is left before the data area's end, no more.
        window.open(&ring, 5);
        let room = (MIN_SIZE - LEN) / LEN;
        for _ in 0..room {
            let (slot, _) = window.reserve(LEN, 1, |_| Some(entry)).unwrap();
            commit(slot, entry, [0, 0]);
        }
        assert!(window.reserve(LEN, 1, |_| Some(entry)).is_none());
        window.close(Some(&mut ring));
        assert_eq!(ring.stats().recorded, 1 + room as u64);
        assert!(read(&ring).iter().all(|(_, m)| m == "t=0 i=0"));
    }
}
