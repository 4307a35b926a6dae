//! The ring: a self-describing memory region of variable-length records, written
//! under the logger's lock and read without any lock.
//!
//! Positions are logical byte offsets that only grow; `pos % data_size` is the
//! place in the data area. `head` is the oldest record still held, `tail` the
//! end of the newest. A record never wraps: when it does not fit before the end
//! of the data area, a pad (`PAD_MARK`, length) fills the rest and the record
//! starts at offset 0. The writer moves `head` past the records it is about to
//! overwrite before touching their bytes, so a reader that copies a record and
//! then finds `head` still at or before it knows the copy was not overwritten;
//! the record's commit word and checksum catch everything else.
//!
//! Between the header and the data area lies the call-site dictionary (see
//! `sites`), append-only, so the records of a deferred call site need carry
//! only their arguments.

use std::ffi::c_int;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use crate::config::ConfigError;
use crate::deferred::{self, CapturedArgs};
use crate::priority::Priority;
use crate::reader::{self, Entry, Region};
use crate::record::{self, Record, Stamp, PAD_MARK};
use crate::sites::{self, Site};
use crate::sys;

pub const MIN_SIZE: usize = 16 * 1024;
pub const MAX_SIZE: usize = 1 << 30;
/// Version 2 added the call-site dictionary (a version 1 header reads as one
/// with an empty dictionary).
pub const LAYOUT_VERSION: u32 = 2;
/// Room reserved for the header at the start of the region; the dictionary
/// and then the data area follow it.
pub const HEADER_SPACE: usize = 256;
const BYTE_ORDER_MARK: u32 = 0x0102_0304;

/// "VLOGRING", stored inverted so that a scan of a core file for the magic finds
/// rings, not this constant.
const MAGIC_INVERTED: [u8; 8] = [!b'V', !b'L', !b'O', !b'G', !b'R', !b'I', !b'N', !b'G'];

pub fn magic() -> [u8; 8] {
    // black_box keeps the compiler from folding the real magic into the code.
    std::hint::black_box(MAGIC_INVERTED).map(|b| !b)
}

/// Checks a requested ring size: 0 (no ring) or MIN_SIZE..=MAX_SIZE, rounded up
/// to a multiple of 8.
pub fn check_size(size: usize) -> Result<usize, ConfigError> {
    match size {
        0 => Ok(0),
        n if n < MIN_SIZE => Err(ConfigError::new(format!(
            "buffer size {n} is below the minimum of {MIN_SIZE} bytes (16K); use 0 to disable the ring"
        ))),
        n if n > MAX_SIZE => Err(ConfigError::new(format!(
            "buffer size {n} is above the maximum of {MAX_SIZE} bytes (1G)"
        ))),
        n => Ok(record::align8(n)),
    }
}

/// The header at the start of the region. Its layout is part of the on-disk and
/// in-core format; fields are only ever appended.
#[repr(C)]
pub struct Header {
    magic: [u8; 8],
    version: u32,
    header_space: u32,
    byte_order: u32,
    record_header_len: u32,
    data_size: u64,
    head: AtomicU64,
    tail: AtomicU64,
    next_seq: AtomicU64,
    /// Records overwritten to make room (or lost when the ring was resized).
    lost: AtomicU64,
    /// Version 2: the size of the call-site dictionary, and how much of it
    /// holds published entries.
    dict_size: u64,
    dict_used: AtomicU64,
}

/// Where a ring file keeps its process-shared lock, inside the header space:
/// every process that has the file mapped (a daemon and the children it forks)
/// appends under it.
const LOCK_OFFSET: usize = 128;

const _: () = assert!(std::mem::size_of::<Header>() <= LOCK_OFFSET);
const _: () = assert!(LOCK_OFFSET + std::mem::size_of::<libc::pthread_mutex_t>() <= HEADER_SPACE);

/// The whole region for a data area of `size` bytes: header, dictionary, data.
fn region_len(size: usize) -> usize {
    HEADER_SPACE + sites::size_for(size) + size
}

/// Counters a caller can show.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub size: u64,
    /// Records ever appended (the next sequence number).
    pub recorded: u64,
    pub lost: u64,
}

/// A ring owned by this process: an anonymous mapping, written only through
/// `&mut self` (the logger's lock).
pub struct Ring {
    base: NonNull<u8>,
    map_len: usize,
    data_size: usize,
    dict_size: usize,
    /// Unique among the rings of this process, so a call site can tell whether
    /// its dictionary entry belongs to the current ring.
    id: u32,
    /// A ring file: other processes (forked children) may append to it too, so
    /// appends take the lock at LOCK_OFFSET.
    shared: bool,
}

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

// SAFETY: the mapping is owned by the Ring and freed only by its Drop; moving the
// owner to another thread moves nothing but the pointer.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps a new ring with a data area of `size` bytes (already checked with
    /// [`check_size`], non-zero).
    pub fn new(size: usize) -> std::io::Result<Ring> {
        // SAFETY: an anonymous private mapping aliases nothing.
        let map = unsafe {
            sys::map_rw(
                region_len(size),
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
            )
        }?;
        Ok(Ring::init(map, size))
    }

    /// A ring kept in the file at `path` (MAP_SHARED), so its records survive
    /// the process, even SIGKILL. The ring is built in `PATH.<pid>.new` and renamed
    /// over `path`, carrying over the records of `previous` (the ring being
    /// replaced, or the ring an earlier run left in the file).
    pub fn create_file(
        path: &Path,
        size: usize,
        previous: Option<(&dyn Region, Stats)>,
    ) -> std::io::Result<Ring> {
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::AsRawFd;
        // A name of this process's own, so two processes given the same path
        // never truncate each other's mapping.
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".{}.new", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        file.set_len(region_len(size) as u64)?;
        // SAFETY: a shared mapping of a file we just created and sized; other
        // processes reading it never trust its contents.
        let map = unsafe { sys::map_rw(region_len(size), libc::MAP_SHARED, file.as_raw_fd()) }?;
        let mut ring = Ring::init(map, size);
        ring.init_shared_lock()?;
        if let Some((region, stats)) = previous {
            ring.migrate(region, stats);
        }
        std::fs::rename(&tmp, path)?;
        Ok(ring)
    }

    fn init(base: NonNull<u8>, size: usize) -> Ring {
        let dict_size = sites::size_for(size);
        let header = Header {
            magic: magic(),
            version: LAYOUT_VERSION,
            header_space: HEADER_SPACE as u32,
            byte_order: BYTE_ORDER_MARK,
            record_header_len: record::HEADER_LEN as u32,
            data_size: size as u64,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            next_seq: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            dict_size: dict_size as u64,
            dict_used: AtomicU64::new(0),
        };
        // SAFETY: the fresh mapping is page-aligned, at least HEADER_SPACE bytes
        // long and not yet used by anyone.
        unsafe { base.as_ptr().cast::<Header>().write(header) };
        Ring {
            base,
            map_len: region_len(size),
            data_size: size,
            dict_size,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            shared: false,
        }
    }

    fn lock_ptr(&self) -> *mut libc::pthread_mutex_t {
        // SAFETY: LOCK_OFFSET lies inside the header space (asserted above),
        // suitably aligned (the mapping is page-aligned, the offset a multiple
        // of 8).
        unsafe { self.base.as_ptr().add(LOCK_OFFSET).cast() }
    }

    /// Makes the ring's lock: process-shared, and robust, so a process killed
    /// while it holds it (SIGKILL mid-append) does not stop the others.
    fn init_shared_lock(&mut self) -> std::io::Result<()> {
        let check = |rc: c_int| match rc {
            0 => Ok(()),
            e => Err(std::io::Error::from_raw_os_error(e)),
        };
        // SAFETY: attr is initialised before use and destroyed after; the mutex
        // memory is ours, unused so far, and lives as long as the mapping.
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            check(libc::pthread_mutexattr_init(&mut attr))?;
            let result = check(libc::pthread_mutexattr_setpshared(
                &mut attr,
                libc::PTHREAD_PROCESS_SHARED,
            ))
            .and_then(|()| {
                check(libc::pthread_mutexattr_setrobust(
                    &mut attr,
                    libc::PTHREAD_MUTEX_ROBUST,
                ))
            })
            .and_then(|()| check(libc::pthread_mutex_init(self.lock_ptr(), &attr)));
            libc::pthread_mutexattr_destroy(&mut attr);
            result?;
        }
        self.shared = true;
        Ok(())
    }

    /// Takes the ring file's lock until the guard is dropped (None for a ring
    /// in this process's own memory, which only the logger's lock guards).
    #[inline]
    fn lock_shared(&self) -> Option<SharedLock> {
        self.shared.then(|| SharedLock::take(self.lock_ptr()))
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    pub fn header(&self) -> &Header {
        // SAFETY: written in `new` and valid for the life of the mapping; its
        // mutable fields are atomics.
        unsafe { &*self.base.as_ptr().cast::<Header>() }
    }

    /// The address readers in this process use to find the ring (see
    /// [`View::from_raw`]).
    pub fn as_raw(&self) -> *const Header {
        self.base.as_ptr().cast()
    }

    pub fn view(&self) -> View<'_> {
        // SAFETY: the header of this live ring, mapped while `self` is borrowed.
        unsafe { View::from_raw(self.as_raw()) }
    }

    fn data_ptr(&self) -> *mut u8 {
        // SAFETY: the data area lies within the mapping.
        unsafe { self.base.as_ptr().add(HEADER_SPACE + self.dict_size) }
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
        // SAFETY: the bytes from `used` on lie inside the dictionary (checked
        // above) and no reader looks past `dict_used`; `&mut self` makes this
        // the only writer.
        let buf = unsafe {
            std::slice::from_raw_parts_mut(self.base.as_ptr().add(HEADER_SPACE + used), len)
        };
        site.encode(buf);
        // Publishes the entry: readers load dict_used with Acquire.
        self.header()
            .dict_used
            .store((used + len) as u64, Ordering::Release);
        Some(used as u32)
    }

    /// The `len` bytes of the data area at `off`, for the writer.
    fn data_mut(&mut self, off: usize, len: usize) -> &mut [u8] {
        assert!(off + len <= self.data_size);
        // SAFETY: in bounds (checked above) and 8-aligned. `&mut self` makes this
        // the only writer. Lock-free readers may copy these bytes at the same
        // time, as any process may read shared memory; they never trust what they
        // copy (commit word, checksum and the head check in `View::read`).
        unsafe { std::slice::from_raw_parts_mut(self.data_ptr().add(off), len) }
    }

    pub fn stats(&self) -> Stats {
        self.view().stats()
    }

    /// The whole region, header and data, as bytes: what a ring file holds.
    pub fn image_bytes(&self) -> &[u8] {
        // SAFETY: the mapping is map_len bytes long and initialised (anonymous
        // memory is zeroed); `&self` excludes the writer, which needs `&mut`.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr(), self.map_len) }
    }

    /// Appends a record, overwriting the oldest ones as needed, and returns the
    /// sequence number it was given (`rec.seq` is ignored).
    pub fn append(&mut self, rec: &Record) -> u64 {
        let _shared = self.lock_shared();
        let seq = self.header().next_seq.load(Ordering::Relaxed);
        self.append_as(rec, seq);
        seq
    }

    fn append_as(&mut self, rec: &Record, seq: u64) {
        let len = rec.encoded_len();
        let (tail, off) = self.reserve(len);
        Record { seq, ..*rec }.encode(self.data_mut(off, len));
        self.publish(seq, tail, off, len);
    }

    /// Appends a kind-2 record of call site `entry` (see [`Ring::add_site`])
    /// with its captured arguments; `args_len` is their encoded size.
    #[inline]
    pub fn append_site<'a>(
        &mut self,
        time_ns: u64,
        tid: u32,
        priority: Priority,
        entry: u32,
        args: impl CapturedArgs<'a>,
        args_len: usize,
    ) {
        let _shared = self.lock_shared();
        let seq = self.header().next_seq.load(Ordering::Relaxed);
        let len = record::align8(record::HEADER_LEN + args_len);
        let (tail, off) = self.reserve(len);
        let buf = self.data_mut(off, len);
        let stamp = Stamp {
            seq,
            time_ns,
            tid,
            priority,
        };
        record::encode_site(buf, stamp, entry, args_len, |out| {
            deferred::write_args(args, out)
        });
        self.publish(seq, tail, off, len);
    }

    /// Makes room for a record of `len` bytes at the tail, padding to the end
    /// of the data area first if it does not fit there, and returns where it
    /// goes: its position and its offset in the data area.
    #[inline]
    fn reserve(&mut self, len: usize) -> (u64, usize) {
        let size = self.data_size as u64;
        let mut tail = self.header().tail.load(Ordering::Relaxed);
        let mut off = (tail % size) as usize;
        if off + len > self.data_size {
            let pad = self.data_size - off;
            self.make_room(tail, pad);
            let slot = self.data_mut(off, 8);
            slot[0..4].copy_from_slice(&PAD_MARK.to_ne_bytes());
            slot[4..8].copy_from_slice(&(pad as u32).to_ne_bytes());
            tail += pad as u64;
            off = 0;
        }
        self.make_room(tail, len);
        (tail, off)
    }

    /// Publishes the record written at `off` (position `tail`, `len` bytes) as
    /// number `seq`: its commit word last, then the tail.
    #[inline]
    fn publish(&mut self, seq: u64, tail: u64, off: usize, len: usize) {
        let commit = self.data_mut(off, 4).as_mut_ptr().cast::<u32>();
        // SAFETY: `commit` points at the record's first word, 8-aligned, inside
        // the mapping; readers load it atomically too.
        unsafe { AtomicU32::from_ptr(commit) }.store(record::commit_value(seq), Ordering::Release);
        let h = self.header();
        h.next_seq.store(seq + 1, Ordering::Relaxed);
        h.tail.store(tail + len as u64, Ordering::Release);
    }

    /// Moves `head` past every record that overlaps `[tail, tail + len)` of the
    /// next lap, counting them as lost, before their bytes are reused.
    #[inline]
    fn make_room(&mut self, tail: u64, len: usize) {
        let size = self.data_size as u64;
        let Some(needed) = (tail + len as u64).checked_sub(size) else {
            return;
        };
        let head = self.header().head.load(Ordering::Relaxed);
        if head < needed {
            self.evict(tail, needed, head);
        }
    }

    /// Moves `head` from `head` to at least `needed` (a record boundary, or
    /// `tail`), counting the records passed as lost.
    fn evict(&mut self, tail: u64, needed: u64, mut head: u64) {
        let size = self.data_size as u64;
        let mut lost = 0;
        while head < needed && head < tail {
            let off = (head % size) as usize;
            let mut word = [0u8; 8];
            self.view().copy(off, &mut word);
            let step = if record::u32_at(&word, 0) == PAD_MARK {
                u32::from_ne_bytes(word[4..8].try_into().unwrap()) as u64
            } else {
                lost += 1;
                record::peek_len(&word).unwrap_or(0) as u64
            };
            if step == 0 {
                // Our own bytes cannot be malformed; if they are, give up on
                // everything older rather than walk garbage.
                head = tail;
                break;
            }
            head += step;
        }
        let h = self.header();
        h.head.store(head.max(needed.min(tail)), Ordering::Relaxed);
        h.lost.fetch_add(lost, Ordering::Relaxed);
        // Order the head update before the overwriting stores (see View::read).
        fence(Ordering::Release);
    }

    /// Copies the valid records of `old` into this (empty) ring, newest kept
    /// when they do not all fit, keeping their sequence numbers and counting the
    /// ones left out as lost.
    pub fn migrate_from(&mut self, old: &Ring) {
        self.migrate(&old.view(), old.stats());
    }

    fn migrate(&mut self, old: &dyn Region, old_stats: Stats) {
        let mut carried = 0;
        reader::read(&old, |entry| {
            // The reader hands over text: records that referred to the old
            // ring's dictionary carry their names again.
            if let Entry::Record(rec) = entry {
                self.append_as(&rec, rec.seq);
                carried += 1;
            }
        });
        let h = self.header();
        h.next_seq.store(old_stats.recorded, Ordering::Relaxed);
        // Records evicted while migrating were counted by make_room; the ones
        // the old ring held but could not hand over (damaged, or torn by a
        // killed writer) are counted here.
        let held = old_stats.recorded.saturating_sub(old_stats.lost);
        h.lost.fetch_add(
            old_stats.lost + held.saturating_sub(carried),
            Ordering::Relaxed,
        );
    }
}

/// A ring file's lock, held until dropped.
struct SharedLock(*mut libc::pthread_mutex_t);

impl SharedLock {
    fn take(lock: *mut libc::pthread_mutex_t) -> SharedLock {
        // SAFETY: the mutex was initialised by init_shared_lock (by this
        // process, or by the one that made the file before forking us), and it
        // lives as long as the mapping, which outlives the guard.
        if unsafe { libc::pthread_mutex_lock(lock) } == libc::EOWNERDEAD {
            // Its last holder died mid-append. The ring stays readable: that
            // record was never committed, or it was and tail was not moved past
            // it (the next record overwrites it and readers see a gap).
            // SAFETY: we hold the lock now (EOWNERDEAD means acquired).
            unsafe { libc::pthread_mutex_consistent(lock) };
        }
        SharedLock(lock)
    }
}

impl Drop for SharedLock {
    fn drop(&mut self) {
        // SAFETY: locked by this thread in `take`.
        unsafe { libc::pthread_mutex_unlock(self.0) };
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`; the logger frees a
        // replaced ring only once no lock-free reader uses it (with_state).
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.map_len) };
    }
}

/// A read-only handle on a ring in this process's memory.
#[derive(Clone, Copy)]
pub struct View<'a> {
    header: &'a Header,
    data: *const u8,
}

impl<'a> View<'a> {
    /// # Safety
    /// `header` must point at the header of a live ring made by [`Ring::new`]
    /// that stays mapped for `'a`.
    pub unsafe fn from_raw(header: *const Header) -> View<'a> {
        View {
            // SAFETY: the caller guarantees a live, mapped header.
            header: unsafe { &*header },
            // SAFETY: the dictionary and then the data area follow the header
            // inside the same mapping.
            data: unsafe {
                header
                    .cast::<u8>()
                    .add(HEADER_SPACE + (*header).dict_size as usize)
            },
        }
    }

    /// Writes the whole region (header and data, as a ring file holds it) to
    /// `fd` with write(2): async-signal-safe. The bytes may change while the
    /// kernel copies them; readers of the copy validate every record.
    pub fn write_image(&self, fd: c_int) -> std::io::Result<()> {
        let start = (self.header as *const Header).cast::<u8>();
        let len = HEADER_SPACE + (self.header.dict_size + self.header.data_size) as usize;
        crate::sys::write_all_raw(fd, start, len)
    }

    pub fn stats(&self) -> Stats {
        let h = self.header;
        Stats {
            size: h.data_size,
            recorded: h.next_seq.load(Ordering::Relaxed),
            lost: h.lost.load(Ordering::Relaxed),
        }
    }

    pub fn read(&self, visit: impl FnMut(Entry)) {
        reader::read(self, visit)
    }
}

impl Region for View<'_> {
    fn data_size(&self) -> u64 {
        self.header.data_size
    }

    fn head(&self) -> u64 {
        self.header.head.load(Ordering::Acquire)
    }

    fn tail(&self) -> u64 {
        self.header.tail.load(Ordering::Acquire)
    }

    fn dict(&self) -> &[u8] {
        let h = self.header;
        // Pairs with the Release store in Ring::add_site.
        let used = h.dict_used.load(Ordering::Acquire).min(h.dict_size) as usize;
        // SAFETY: the published part of the dictionary, inside the mapping;
        // published entries are never written again.
        unsafe {
            std::slice::from_raw_parts((h as *const Header).cast::<u8>().add(HEADER_SPACE), used)
        }
    }

    fn copy(&self, off: usize, dst: &mut [u8]) {
        assert!(off.is_multiple_of(8) && dst.len().is_multiple_of(8));
        assert!(off + dst.len() <= self.header.data_size as usize);
        for (i, chunk) in dst.chunks_exact_mut(8).enumerate() {
            // SAFETY: in bounds and aligned (asserted above). Volatile because the
            // writer may change these bytes while we copy; the copy is validated
            // before anything in it is believed.
            let word = unsafe { self.data.add(off + i * 8).cast::<u64>().read_volatile() };
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deferred::Captured;

    fn rec(msg: &[u8]) -> Record<'_> {
        Record {
            seq: 0,
            time_ns: 1,
            tid: 7,
            line: 9,
            priority: Priority::Debug,
            source: b"src",
            file: b"f.c",
            func: b"fn",
            message: msg,
            fields: b"",
            kind: crate::record::Kind::Text,
        }
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

    #[test]
    fn sizes() {
        assert_eq!(check_size(0), Ok(0));
        assert_eq!(check_size(MIN_SIZE + 1), Ok(MIN_SIZE + 8));
        assert!(check_size(100).unwrap_err().message.contains("minimum"));
        assert!(check_size(MAX_SIZE + 1).is_err());
    }

    #[test]
    fn header_is_self_describing() {
        let ring = Ring::new(MIN_SIZE).unwrap();
        let h = ring.header();
        assert_eq!(&h.magic, b"VLOGRING");
        assert_eq!(h.version, 2);
        assert_eq!(h.data_size, MIN_SIZE as u64);
        assert_eq!(h.dict_size, sites::size_for(MIN_SIZE) as u64);
        assert_eq!(
            ring.image_bytes().len(),
            HEADER_SPACE + 16 * 1024 + MIN_SIZE
        );
        assert_eq!(h.byte_order, 0x0102_0304);
    }

    #[test]
    fn wraps_with_continuous_sequence_and_exact_loss() {
        let mut ring = Ring::new(MIN_SIZE).unwrap();
        let n = 5000u64;
        for i in 0..n {
            // Varying lengths exercise the pad at the end of the data area.
            let msg = format!("message {i} {}", "x".repeat((i % 97) as usize));
            assert_eq!(ring.append(&rec(msg.as_bytes())), i);
        }
        let (got, damaged) = messages(ring.view());
        assert_eq!(damaged, 0);
        assert!(got.len() > 50 && (got.len() as u64) < n);
        for w in got.windows(2) {
            assert_eq!(w[1].0, w[0].0 + 1);
        }
        assert_eq!(got.last().unwrap().0, n - 1);
        assert!(got
            .last()
            .unwrap()
            .1
            .starts_with(&format!("message {}", n - 1)));
        let stats = ring.stats();
        assert_eq!(stats.recorded, n);
        assert_eq!(stats.lost + got.len() as u64, n);
    }

    #[test]
    fn largest_record_fits_smallest_ring() {
        let mut ring = Ring::new(MIN_SIZE).unwrap();
        let big = vec![b'y'; record::MESSAGE_MAX];
        for _ in 0..5 {
            ring.append(&rec(b"small"));
            ring.append(&rec(&big));
        }
        let (got, damaged) = messages(ring.view());
        assert_eq!(damaged, 0);
        assert_eq!(got.last().unwrap().1.len(), record::MESSAGE_MAX);
    }

    #[test]
    fn corrupted_record_reported_not_printed() {
        let mut ring = Ring::new(MIN_SIZE).unwrap();
        for i in 0..3 {
            ring.append(&rec(format!("m{i}").as_bytes()));
        }
        // Flip a byte in the second record's message.
        let first = rec(b"m0").encoded_len();
        let second_msg_end = first + rec(b"m1").encoded_len() - 8;
        ring.data_mut(second_msg_end - 1, 1)[0] ^= 0x40;
        let mut seen = Vec::new();
        ring.view().read(|e| {
            seen.push(match e {
                Entry::Record(r) => format!("ok {}", r.seq),
                Entry::Damaged { seq, damage } => format!("bad {seq} {damage:?}"),
                Entry::Overwritten { .. } => "over".into(),
                Entry::Gap { expected, found } => format!("gap {expected}..{found}"),
            })
        });
        assert_eq!(seen, ["ok 0", "bad 1 Checksum", "ok 2"]);
    }

    #[test]
    fn sequence_gap_is_reported_and_reading_goes_on() {
        let mut ring = Ring::new(MIN_SIZE).unwrap();
        ring.append(&rec(b"a"));
        // As if another writer took sequence numbers 1 and 2.
        ring.header().next_seq.store(3, Ordering::Relaxed);
        ring.append(&rec(b"b"));
        ring.append(&rec(b"c"));
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
            old.append(&rec(format!("message number {i}").as_bytes()));
        }
        let mut small = Ring::new(MIN_SIZE).unwrap();
        small.migrate_from(&old);
        let (got, damaged) = messages(small.view());
        assert_eq!(damaged, 0);
        assert_eq!(got.last().unwrap().0, 999);
        let stats = small.stats();
        assert_eq!(stats.recorded, 1000);
        assert_eq!(stats.lost + got.len() as u64, 1000);
        assert_eq!(small.append(&rec(b"next")), 1000);
    }

    fn site<'a>(file: &'a [u8], format: &'a [u8]) -> Site<'a> {
        Site {
            source: b"qemu.monitor",
            file,
            func: b"qemuMonitorSend",
            line: 77,
            format,
        }
    }

    fn site_args<'a>(args: &'a [Captured<'a>]) -> impl CapturedArgs<'a> {
        args.iter().copied()
    }

    fn append_site_record(ring: &mut Ring, entry: u32, args: &[Captured]) {
        let len = deferred::args_len(site_args(args)).unwrap();
        ring.append_site(5, 6, Priority::Info, entry, site_args(args), len);
    }

    #[test]
    fn site_records_render_from_the_dictionary() {
        let mut ring = Ring::new(MIN_SIZE).unwrap();
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
            Entry::Record(r) => {
                assert_eq!(r.kind, crate::record::Kind::Text);
                got.push(format!(
                    "{} {} {} {} {}",
                    String::from_utf8_lossy(r.source),
                    String::from_utf8_lossy(r.file),
                    String::from_utf8_lossy(r.func),
                    r.line,
                    String::from_utf8_lossy(r.message)
                ))
            }
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
        let image = crate::reader::Image::parse(ring.image_bytes()).unwrap();
        let mut n = 0;
        crate::reader::read(&image, |e| {
            assert!(matches!(e, Entry::Record(_)), "{e:?}");
            n += 1;
        });
        assert_eq!(n, 2);
    }

    #[test]
    fn a_record_whose_entry_is_missing_is_damaged_not_guessed() {
        let mut ring = Ring::new(MIN_SIZE).unwrap();
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
        let mut ring = Ring::new(MIN_SIZE).unwrap();
        let mut added = 0;
        let file = [b'f'; 200];
        while ring.add_site(&site(&file, b"%d")).is_some() {
            added += 1;
        }
        let entry = site(&file, b"%d").encoded_len().unwrap();
        assert_eq!(added, sites::size_for(MIN_SIZE) / entry);
        let long = vec![b'x'; sites::FORMAT_MAX + 1];
        assert_eq!(
            Ring::new(MIN_SIZE).unwrap().add_site(&site(b"f.c", &long)),
            None
        );
    }

    #[test]
    fn migrating_makes_site_records_self_contained() {
        let mut old = Ring::new(MIN_SIZE).unwrap();
        let a = old.add_site(&site(b"monitor.c", b"n=%d")).unwrap();
        append_site_record(&mut old, a, &[Captured::Signed(7)]);
        let mut new = Ring::new(MIN_SIZE * 2).unwrap();
        new.migrate_from(&old);
        drop(old);
        assert_eq!(new.view().dict().len(), 0);
        let (got, damaged) = messages(new.view());
        assert_eq!((got, damaged), (vec![(0, "n=7".to_string())], 0));
    }
}
