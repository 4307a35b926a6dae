//! The writer: a ring this process owns, appended to under the logger's lock
//! (`&mut self`) and, for a ring file, the file's lock too.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use super::layout::{self, Header, Stats, HEADER_SPACE, LOCK_OFFSET};
use super::lock::{self, SharedLock};
use super::record::{self, Kind, Stamp, Stored};
use super::sites::Site;
use super::view::View;
use crate::deferred::{self, Captured};
use crate::record::Record;
use crate::sys;

/// A ring owned by this process: an anonymous mapping or a shared mapping
/// of a ring file, written only through `&mut self` (the logger's lock).
pub struct Ring {
    base: NonNull<u8>,
    /// Where the data area begins in the mapping.
    data: NonNull<u8>,
    map_len: usize,
    pub(super) data_size: usize,
    dict_size: usize,
    /// Unique among the rings of this process, so a call site can tell
    /// whether its dictionary entry belongs to the current ring.
    id: u32,
    /// A ring file: other processes (forked children) may append to it too,
    /// so appends take the lock at LOCK_OFFSET.
    pub(super) shared: bool,
    /// A ring file's descriptor, kept for the guard (see `guard`).
    file: Option<sys::Fd>,
    /// Whether this process's outputs read the ring through its header's
    /// `printed` (it made the ring): then the records they print are
    /// marked, and kept until printed. A process that joined another's ring
    /// file, or a forked child that shares its parent's, prints its own
    /// records as it makes them, unmarked.
    pub(super) prints_here: bool,
    /// Where the newest record starts.
    pub(super) last: u64,
    /// For a ring only this process writes (not `shared`): the tail's
    /// offset in the data area (the data size itself after a record that
    /// ends there), and where the room before the head ends (head + data
    /// size; 0 for a ring file), kept as they move, so that an append needs
    /// no division and no look at the head while it has room.
    pub(super) tail_off: usize,
    pub(super) room_end: u64,
    /// For a replaced ring: the position before which no record is in
    /// flight (see `copies_in_flight`).
    pub(super) flight_checked: u64,
    /// How far past `printed` a record may end (see
    /// `Ring::bound_unprinted`): the data size, or less while a
    /// configuration call waits; a field, so the check costs what a check
    /// against the data size did.
    pub(super) unprinted_limit: u64,
    /// Half of `unprinted_limit`: more than this waiting for the outputs,
    /// and a printed record is urgent (see `Ring::urgent`).
    pub(super) urgent_over: u64,
}

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// An append that would have to overwrite a record still in flight (its
/// writer copies it outside the lock): the record's position, and the ring
/// (its header's address, as `View::id` says). The caller lets go of the
/// lock, waits for the record's commit (see `View::wait_committed`) and
/// tries again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocked {
    pub pos: u64,
    pub ring: usize,
}

// SAFETY: the mapping is owned by the Ring and freed only by its Drop; moving
// the owner to another thread moves nothing but the pointer.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps a new ring with a data area of `size` bytes (already checked
    /// with [`layout::check_size`], non-zero).
    pub fn new(size: usize) -> std::io::Result<Ring> {
        // SAFETY: an anonymous private mapping aliases nothing.
        let map = unsafe {
            sys::map_rw(
                layout::region_len(size),
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
            )
        }?;
        Ok(Ring::init(map, size))
    }

    /// A new ring in the shared mapping `map` of a file just sized for it,
    /// with the file's lock made.
    ///
    /// # Safety
    /// `map` is a writable mapping of `layout::region_len(size)` bytes that
    /// nobody else uses yet, and the Ring may unmap it.
    pub(super) unsafe fn new_shared(map: NonNull<u8>, size: usize) -> std::io::Result<Ring> {
        let mut ring = Ring::init(map, size);
        // SAFETY: LOCK_OFFSET lies inside the header space of the fresh
        // mapping, 8-aligned, unused so far.
        unsafe { lock::init(ring.lock_ptr()) }?;
        ring.make_shared();
        Ok(ring)
    }

    /// The ring another process keeps in the file mapped shared at `map`,
    /// joined as it is: its header, lock and records are that process's,
    /// and both append under the file's lock.
    ///
    /// # Safety
    /// `map` is a shared mapping of `layout::region_len(size)` bytes of a
    /// ring file whose header says this layout and `size` (checked by the
    /// caller on the file), with its lock made by the process that made it;
    /// the Ring may unmap it.
    pub(super) unsafe fn join_shared(map: NonNull<u8>, size: usize) -> Ring {
        let mut ring = Ring::over(map, size);
        ring.make_shared();
        ring.prints_here = false;
        ring
    }

    /// A ring file: other processes append too, so an append always looks
    /// at the head (no room is ever known to be there: `room_end` 0).
    fn make_shared(&mut self) {
        self.shared = true;
        self.room_end = 0;
    }

    fn init(base: NonNull<u8>, size: usize) -> Ring {
        // SAFETY: the fresh mapping is page-aligned, at least HEADER_SPACE
        // bytes long and not yet used by anyone.
        unsafe { base.as_ptr().cast::<Header>().write(Header::fresh(size)) };
        Ring::over(base, size)
    }

    /// The owner of the mapping at `base`, a ring of `size` bytes.
    fn over(base: NonNull<u8>, size: usize) -> Ring {
        let dict_size = layout::dict_size_for(size);
        Ring {
            base,
            // SAFETY: the data area lies within the mapping, after the
            // header and the dictionary.
            data: unsafe { base.add(HEADER_SPACE + dict_size) },
            map_len: layout::region_len(size),
            data_size: size,
            dict_size,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            shared: false,
            file: None,
            prints_here: true,
            last: 0,
            tail_off: 0,
            room_end: size as u64,
            flight_checked: 0,
            unprinted_limit: size as u64,
            urgent_over: size as u64 / 2,
        }
    }

    /// Keeps the ring file's descriptor, and registers the mapping with the
    /// guard that repairs it if another process truncates the file.
    pub(super) fn keep_file(&mut self, file: sys::Fd) {
        super::guard::guard(self.base.as_ptr(), self.map_len, self.data_size, file.raw());
        self.file = Some(file);
    }

    /// Whether another running process has this ring file mapped too (one
    /// that joined it, or the one this process joined; forked children
    /// share this process's lock and do not count): then the file must stay
    /// as it is.
    pub fn shared_with_others(&self) -> bool {
        let Some(file) = &self.file else {
            return false;
        };
        let alone = file.try_lock(true).unwrap_or(false);
        // Back to the shared lock every user of the file holds (a failed
        // conversion may have dropped it).
        for _ in 0..100 {
            if file.try_lock(false).unwrap_or(true) {
                break;
            }
            std::thread::yield_now();
        }
        !alone
    }

    /// Whether this is a ring file whose mapping had to be repaired: another
    /// process truncated the file, and the ring is in private memory now
    /// (see `guard`).
    pub fn was_repaired(&self) -> bool {
        self.file.is_some() && super::guard::is_repaired(self.base.as_ptr())
    }

    fn lock_ptr(&self) -> *mut libc::pthread_mutex_t {
        // SAFETY: LOCK_OFFSET lies inside the header space (layout checks
        // it), suitably aligned (the mapping is page-aligned, the offset a
        // multiple of 8).
        unsafe { self.base.as_ptr().add(LOCK_OFFSET).cast() }
    }

    /// Takes the ring file's lock until the guard is dropped (None for a
    /// ring in this process's own memory, which only the logger's lock
    /// guards).
    #[inline]
    fn lock_shared(&self) -> Option<SharedLock> {
        // SAFETY: a shared ring's lock was made by new_shared (here or in
        // the process that forked this one) and lives as long as the mapping,
        // which outlives the guard.
        self.shared
            .then(|| unsafe { SharedLock::take(self.lock_ptr()) })
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    pub(super) fn header(&self) -> &Header {
        // SAFETY: written in `init` and valid for the life of the mapping;
        // its mutable fields are atomics.
        unsafe { &*self.base.as_ptr().cast::<Header>() }
    }

    /// The address readers in this process use to find the ring (see
    /// [`View::from_raw`]).
    pub fn as_raw(&self) -> *const Header {
        self.base.as_ptr().cast()
    }

    pub fn view(&self) -> View<'_> {
        // SAFETY: the header of this live ring, mapped while `self` is
        // borrowed.
        unsafe { View::from_raw(self.as_raw()) }
    }

    pub(super) fn data_ptr(&self) -> *mut u8 {
        self.data.as_ptr()
    }

    /// The `len` bytes of the data area at `off`, for the writer.
    pub(super) fn data_mut(&mut self, off: usize, len: usize) -> &mut [u8] {
        assert!(off + len <= self.data_size);
        // SAFETY: in bounds (checked above) and 8-aligned. `&mut self` makes
        // this the only writer. Lock-free readers may copy these bytes at the
        // same time, as any process may read shared memory; they never trust
        // what they copy (commit word, checksum and the head check in
        // `reader::read`).
        unsafe { std::slice::from_raw_parts_mut(self.data_ptr().add(off), len) }
    }

    pub fn stats(&self) -> Stats {
        self.view().stats()
    }

    /// The whole region, header and data, as bytes: what a ring file holds.
    pub fn image_bytes(&self) -> &[u8] {
        // SAFETY: the mapping is map_len bytes long and initialised
        // (anonymous memory is zeroed); `&self` excludes the writer, which
        // needs `&mut`.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr(), self.map_len) }
    }

    /// Adds a call site to the dictionary and returns its entry's offset, or
    /// None when the dictionary is full or the site too long for it (its
    /// records then carry everything themselves).
    pub fn add_site(&mut self, site: &Site) -> Option<u32> {
        let len = site.encoded_len()?;
        let _shared = self.lock_shared();
        let used = self.header().dict_used.load(Ordering::Relaxed) as usize;
        if used + len > self.dict_size {
            return None;
        }
        // SAFETY: the bytes from `used` on lie inside the dictionary
        // (checked above) and no reader looks past `dict_used`; `&mut self`
        // makes this the only writer.
        let buf = unsafe {
            std::slice::from_raw_parts_mut(self.base.as_ptr().add(HEADER_SPACE + used), len)
        };
        site.encode(buf);
        // [W3] dict_used Release: pairs with [R3] in View::dict; the entry's
        // bytes are written before it is published.
        self.header()
            .dict_used
            .store((used + len) as u64, Ordering::Release);
        Some(used as u32)
    }

    /// Appends a text record, overwriting the oldest ones as needed, and
    /// returns the sequence number it was given (`rec.seq` is ignored), or
    /// the record in flight that keeps it from making room.
    pub fn append(&mut self, rec: &Record) -> Result<u64, Blocked> {
        self.append_stored(&Stored::text(*rec))
    }

    /// Appends a record made by a call: text, or deferred (`rec.message`
    /// is the payload, see `deferred::encode`), marked for the outputs
    /// when they print it (and this process's outputs read the ring).
    pub fn append_call(
        &mut self,
        rec: &Record,
        deferred: bool,
        for_outputs: bool,
    ) -> Result<u64, Blocked> {
        self.append_stored(&Stored {
            rec: *rec,
            kind: if deferred { Kind::Deferred } else { Kind::Text },
            for_outputs: for_outputs && self.prints_here,
            tag: sys::process_tag(),
        })
    }

    fn append_stored(&mut self, stored: &Stored) -> Result<u64, Blocked> {
        let _shared = self.lock_shared();
        let seq = self.header().next_seq.load(Ordering::Relaxed);
        self.append_as(stored, seq)?;
        Ok(seq)
    }

    /// Appends `stored` as number `seq` (migration keeps the old numbers).
    pub(super) fn append_as(&mut self, stored: &Stored, seq: u64) -> Result<(), Blocked> {
        let len = stored.encoded_len();
        let (tail, off) = self.reserve(len)?;
        let mut numbered = *stored;
        numbered.rec.seq = seq;
        numbered.encode(self.data_mut(off, len));
        self.publish(seq, tail, off, len, stored.for_outputs);
        Ok(())
    }

    /// Appends a kind-2 record of call site `entry` (see [`Ring::add_site`])
    /// with its captured arguments; `args_len` is their encoded size.
    /// `stamp.seq` is ignored: the record's sequence number is returned.
    /// Marked for the outputs as `stamp` says when this process's outputs
    /// read the ring.
    pub fn append_site(
        &mut self,
        stamp: Stamp,
        entry: u32,
        args: &[Captured],
        args_len: usize,
    ) -> Result<u64, Blocked> {
        let _shared = self.lock_shared();
        let seq = self.header().next_seq.load(Ordering::Relaxed);
        let len = Ring::site_len(args_len);
        let for_outputs = stamp.for_outputs && self.prints_here;
        let (tail, off) = self.reserve(len)?;
        let buf = self.data_mut(off, len);
        let stamp = Stamp {
            seq,
            for_outputs,
            ..stamp
        };
        deferred::write_args(args, record::site_args(buf, args_len));
        record::seal_site(buf, stamp, entry, args_len);
        self.publish(seq, tail, off, len, for_outputs);
        Ok(seq)
    }

    /// Makes room for a record of `len` bytes at the tail, padding to the end
    /// of the data area first if it does not fit there, and returns where it
    /// goes: its position and its offset in the data area.
    #[inline(always)]
    pub(super) fn reserve(&mut self, len: usize) -> Result<(u64, usize), Blocked> {
        let mut tail = self.header().tail.load(Ordering::Relaxed);
        let mut off = if self.shared {
            (tail % self.data_size as u64) as usize
        } else if self.tail_off == self.data_size {
            0
        } else {
            self.tail_off
        };
        if off + len > self.data_size {
            let pad = self.data_size - off;
            self.make_room(tail, pad)?;
            self.data_mut(off, 8)
                .copy_from_slice(&record::pad_word(pad));
            tail += pad as u64;
            off = 0;
        }
        // Always for a ring file (`room_end` 0).
        if tail + len as u64 > self.room_end {
            self.make_room(tail, len)?;
        }
        Ok((tail, off))
    }

    /// The tail moved to `tail` + `len`, the end of a record at `off`.
    #[inline(always)]
    pub(super) fn moved_tail(&mut self, tail: u64, off: usize, len: usize) {
        self.last = tail;
        // The data area's end itself when the record ends there: the next
        // append starts again at 0 (`reserve`), and the flight recorder's
        // room test (`reserve_slot_in_room`) fails, which sends it there.
        self.tail_off = off + len;
    }

    /// Publishes the record written at `off` (position `tail`, `len` bytes)
    /// as number `seq`: its commit word last, then the tail.
    #[inline(always)]
    fn publish(&mut self, seq: u64, tail: u64, off: usize, len: usize, for_outputs: bool) {
        self.moved_tail(tail, off, len);
        let commit = self.data_mut(off, 4).as_mut_ptr().cast::<u32>();
        // SAFETY: `commit` points at the record's first word, 8-aligned,
        // inside the mapping; readers load it atomically too.
        unsafe { AtomicU32::from_ptr(commit) }.store(record::commit_value(seq), Ordering::Release);
        let h = self.header();
        h.next_seq.store(seq + 1, Ordering::Relaxed);
        // [W1] tail Release: pairs with [R1] in View::tail; the record and
        // its commit word are written before readers may go up to it.
        h.tail.store(tail + len as u64, Ordering::Release);
        if for_outputs {
            // Before [W6] (logger::printer): the writer thread finds it.
            h.marked_end.store(tail + len as u64, Ordering::Release);
        }
    }

    /// Sets the counters a migrated ring carries on with. The records
    /// carried over were printed in the ring they came from (the outputs
    /// read everything before a ring is replaced).
    pub(super) fn carry_counters(&mut self, next_seq: u64, lost: u64) {
        let h = self.header();
        h.next_seq.store(next_seq, Ordering::Relaxed);
        h.lost.fetch_add(lost, Ordering::Relaxed);
        h.printed
            .store(h.tail.load(Ordering::Relaxed), Ordering::Release);
        h.marked_end.store(0, Ordering::Relaxed);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        super::guard::unguard(self.base.as_ptr());
        // SAFETY: unmaps exactly the mapping made for this ring; the logger
        // frees a replaced ring only once no lock-free reader uses it
        // (ring::published).
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.map_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deferred::Captured;
    use crate::priority::Priority;
    use crate::record::MESSAGE_MAX;
    use crate::ring::image::Image;
    use crate::ring::reader::{self, Entry, Region};
    use crate::ring::sites;

    use crate::record::Record;

    fn rec(msg: &[u8]) -> Record<'_> {
        Record::sample(msg)
    }

    fn messages(view: View) -> (Vec<(u64, String)>, usize) {
        let mut out = Vec::new();
        let mut damaged = 0;
        view.read(|e| match e {
            Entry::Record(r) => out.push((r.seq, String::from_utf8_lossy(r.message).into())),
            _ => damaged += 1,
        });
        (out, damaged)
    }

    /// A reader that trusts whole copies (the outputs', on a private ring)
    /// reads what a checking one reads; a checking one still finds a
    /// record whose bytes changed after it was committed.
    #[test]
    fn trusting_readers_read_what_checking_ones_read() {
        let mut ring = Ring::new(layout::MIN_SIZE).unwrap();
        for i in 0..500u32 {
            ring.append(&rec(format!("m{i}").as_bytes())).unwrap();
        }
        let collect = |view: View| {
            let mut got = Vec::new();
            view.read(|e| got.push(format!("{e:?}")));
            got
        };
        assert_eq!(collect(ring.view().trusting(true)), collect(ring.view()));
        // A byte of the newest record's message flipped after its commit.
        let tail = ring.header().tail.load(Ordering::Relaxed) as usize % layout::MIN_SIZE;
        let data = ring.data_mut(tail - 8, 8);
        data[0] ^= 0x20;
        let checked = collect(ring.view());
        let last = &checked[checked.len() - 2..];
        assert!(
            last[0].contains("Checksum") && last[1].starts_with("Skipped"),
            "{last:?}"
        );
    }

    #[test]
    fn header_is_self_describing() {
        let ring = Ring::new(layout::MIN_SIZE).unwrap();
        let h = ring.header();
        assert_eq!(&h.magic, b"VLOGRING");
        assert_eq!(h.version, 6);
        assert_eq!(h.data_size, layout::MIN_SIZE as u64);
        assert_eq!(h.dict_size, layout::dict_size_for(layout::MIN_SIZE) as u64);
        assert_eq!(
            ring.image_bytes().len(),
            HEADER_SPACE + 16 * 1024 + layout::MIN_SIZE
        );
        assert_eq!(h.byte_order, 0x0102_0304);
    }

    #[test]
    fn wraps_with_continuous_sequence_and_exact_loss() {
        let mut ring = Ring::new(layout::MIN_SIZE).unwrap();
        let n = 5000u64;
        for i in 0..n {
            // Varying lengths exercise the pad at the end of the data area.
            let msg = format!("message {i} {}", "x".repeat((i % 97) as usize));
            assert_eq!(ring.append(&rec(msg.as_bytes())), Ok(i));
        }
        let (got, damaged) = messages(ring.view());
        assert_eq!(damaged, 0);
        assert!(got.len() > 50 && (got.len() as u64) < n, "{got:?}");
        for w in got.windows(2) {
            assert_eq!(w[1].0, w[0].0 + 1);
        }
        assert_eq!(got.last().unwrap().0, n - 1);
        assert!(
            got.last()
                .unwrap()
                .1
                .starts_with(&format!("message {}", n - 1)),
            "{got:?}"
        );
        let stats = ring.stats();
        assert_eq!(stats.recorded, n);
        assert_eq!(stats.lost + got.len() as u64, n);
    }

    #[test]
    fn largest_record_fits_smallest_ring() {
        let mut ring = Ring::new(layout::MIN_SIZE).unwrap();
        let big = vec![b'y'; MESSAGE_MAX];
        for _ in 0..5 {
            ring.append(&rec(b"small")).unwrap();
            ring.append(&rec(&big)).unwrap();
        }
        let (got, damaged) = messages(ring.view());
        assert_eq!(damaged, 0);
        assert_eq!(got.last().unwrap().1.len(), MESSAGE_MAX);
    }

    #[test]
    fn corrupted_record_reported_not_printed() {
        let mut ring = Ring::new(layout::MIN_SIZE).unwrap();
        for i in 0..3 {
            ring.append(&rec(format!("m{i}").as_bytes())).unwrap();
        }
        // Flip a byte in the second record's message.
        let first = Stored::text(rec(b"m0")).encoded_len();
        let second_msg_end = first + Stored::text(rec(b"m1")).encoded_len() - 8;
        ring.data_mut(second_msg_end - 1, 1)[0] ^= 0x40;
        let mut seen = Vec::new();
        ring.view().read(|e| {
            seen.push(match e {
                Entry::Record(r) => format!("ok {}", r.seq),
                Entry::Damaged { seq, damage } => format!("bad {seq} {damage:?}"),
                Entry::Overwritten { .. } => "over".into(),
                Entry::Gap { expected, found } => format!("gap {expected}..{found}"),
                Entry::Skipped { bytes } => format!("skipped {bytes}"),
            })
        });
        // The damaged record's own bytes passed over, to the next one.
        let skipped = format!("skipped {}", Stored::text(rec(b"m1")).encoded_len());
        assert_eq!(seen, ["ok 0", "bad 1 Checksum", &skipped, "ok 2"]);
    }

    #[test]
    fn sequence_gap_is_reported_and_reading_goes_on() {
        let mut ring = Ring::new(layout::MIN_SIZE).unwrap();
        ring.append(&rec(b"a")).unwrap();
        // As if another writer took sequence numbers 1 and 2.
        ring.header().next_seq.store(3, Ordering::Relaxed);
        ring.append(&rec(b"b")).unwrap();
        ring.append(&rec(b"c")).unwrap();
        let mut seen = Vec::new();
        ring.view().read(|e| {
            seen.push(match e {
                Entry::Record(r) => format!("ok {}", r.seq),
                Entry::Gap { expected, found } => format!("gap {expected}..{found}"),
                other => format!("{other:?}"),
            })
        });
        assert_eq!(seen, ["ok 0", "gap 1..3", "ok 3", "ok 4"]);
    }

    #[test]
    fn migration_keeps_newest_and_counts_loss() {
        let mut old = Ring::new(64 * 1024).unwrap();
        for i in 0..1000 {
            old.append(&rec(format!("message number {i}").as_bytes()))
                .unwrap();
        }
        let mut small = Ring::new(layout::MIN_SIZE).unwrap();
        small.migrate_from(&old);
        let (got, damaged) = messages(small.view());
        assert_eq!(damaged, 0);
        assert_eq!(got.last().unwrap().0, 999);
        let stats = small.stats();
        assert_eq!(stats.recorded, 1000);
        assert_eq!(stats.lost + got.len() as u64, 1000);
        assert_eq!(small.append(&rec(b"next")), Ok(1000));
    }

    fn site<'a>(file: &'a [u8], format: &'a [u8]) -> Site<'a> {
        Site {
            source: b"qemu.monitor",
            file,
            func: b"qemuMonitorSend",
            line: 77,
            format,
            id: 0,
        }
    }

    fn append_site_record(ring: &mut Ring, entry: u32, args: &[Captured]) {
        let len = deferred::args_len(args).unwrap();
        let stamp = Stamp {
            seq: 0,
            time_ns: 5,
            tid: 6,
            priority: Priority::Info,
            for_outputs: false,
            tag: 7,
        };
        ring.append_site(stamp, entry, args, len).unwrap();
    }

    #[test]
    fn site_records_render_from_the_dictionary() {
        let mut ring = Ring::new(layout::MIN_SIZE).unwrap();
        let a = ring
            .add_site(&site(b"monitor.c", b"sent %zu bytes to %s"))
            .unwrap();
        let b = ring.add_site(&site(b"other.c", b"plain")).unwrap();
        assert_ne!(a, b);
        append_site_record(
            &mut ring,
            a,
            &[Captured::Unsigned(12), Captured::Str(Some(b"qemu"))],
        );
        append_site_record(&mut ring, b, &[]);
        let mut got = Vec::new();
        ring.view().read(|e| match e {
            Entry::Record(r) => got.push(format!(
                "{} {} {} {} {}",
                String::from_utf8_lossy(r.source),
                String::from_utf8_lossy(r.file),
                String::from_utf8_lossy(r.func),
                r.line,
                String::from_utf8_lossy(r.message)
            )),
            other => panic!("{other:?}"),
        });
        assert_eq!(
            got,
            [
                "qemu.monitor monitor.c qemuMonitorSend 77 sent 12 bytes to qemu",
                "qemu.monitor other.c qemuMonitorSend 77 plain"
            ]
        );
        // The same through a copy of the region, as vlog-dump reads it.
        let image = Image::parse(ring.image_bytes()).unwrap();
        let mut n = 0;
        reader::read(&image, |e| {
            assert!(matches!(e, Entry::Record(_)), "{e:?}");
            n += 1;
        });
        assert_eq!(n, 2);
    }

    #[test]
    fn a_record_whose_entry_is_missing_is_damaged_not_guessed() {
        let mut ring = Ring::new(layout::MIN_SIZE).unwrap();
        let a = ring.add_site(&site(b"monitor.c", b"n=%d")).unwrap();
        append_site_record(&mut ring, a + 8, &[Captured::Signed(1)]);
        append_site_record(&mut ring, a, &[Captured::Str(None)]);
        append_site_record(&mut ring, a, &[Captured::Signed(1)]);
        let mut kinds = Vec::new();
        ring.view().read(|e| {
            kinds.push(match e {
                Entry::Record(r) => String::from_utf8_lossy(r.message).into_owned(),
                Entry::Damaged { .. } => "damaged".into(),
                other => panic!("{other:?}"),
            })
        });
        // An entry offset that points at no entry, and arguments that do not
        // match the format's, are both refused.
        assert_eq!(kinds, ["damaged", "damaged", "n=1"]);
    }

    #[test]
    fn a_full_dictionary_refuses_new_sites() {
        let mut ring = Ring::new(layout::MIN_SIZE).unwrap();
        let mut added = 0;
        let file = [b'f'; 200];
        while ring.add_site(&site(&file, b"%d")).is_some() {
            added += 1;
        }
        let entry = site(&file, b"%d").encoded_len().unwrap();
        assert_eq!(added, layout::dict_size_for(layout::MIN_SIZE) / entry);
        let long = vec![b'x'; sites::FORMAT_MAX + 1];
        assert_eq!(
            Ring::new(layout::MIN_SIZE)
                .unwrap()
                .add_site(&site(b"f.c", &long)),
            None
        );
    }

    #[test]
    fn migrating_makes_site_records_self_contained() {
        let mut old = Ring::new(layout::MIN_SIZE).unwrap();
        let a = old.add_site(&site(b"monitor.c", b"n=%d")).unwrap();
        append_site_record(&mut old, a, &[Captured::Signed(7)]);
        let mut new = Ring::new(layout::MIN_SIZE * 2).unwrap();
        new.migrate_from(&old);
        drop(old);
        assert_eq!(new.view().dict().len(), 0);
        let (got, damaged) = messages(new.view());
        assert_eq!((got, damaged), (vec![(0, "n=7".to_string())], 0));
    }
}
