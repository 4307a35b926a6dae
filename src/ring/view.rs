//! A read-only handle on a ring in this process's memory, for the readers
//! that take no lock: `vlog_dump`, the crash handler, the control socket,
//! and the walk over the oldest records done ahead of eviction (`ahead`).

use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::layout::{Header, Stats, HEADER_SPACE};
use super::reader::{self, Entry, Region};
use super::record;
use super::walk::{walk, Walked};

#[derive(Clone, Copy)]
pub struct View<'a> {
    header: &'a Header,
    data: *const u8,
    /// See `Region::whole`.
    whole: bool,
}

impl<'a> View<'a> {
    /// # Safety
    /// `header` must point at the header of a live ring (`Ring`) that stays
    /// mapped for `'a`.
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
            whole: false,
        }
    }

    /// This view, for a reader that trusts a record copied whole when the
    /// ring is in this process's private memory (see `Region::whole`).
    pub fn trusting(self, private: bool) -> View<'a> {
        View {
            whole: private,
            ..self
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

    /// Which ring this is, to tell it from one that replaced it.
    pub fn id(&self) -> usize {
        (self.header as *const Header).addr()
    }

    pub fn stats(&self) -> Stats {
        let h = self.header;
        Stats {
            size: h.data_size,
            recorded: h.next_seq.load(Ordering::Relaxed),
            lost: h.lost.load(Ordering::Relaxed),
        }
    }

    /// Where the outputs have read the ring to (see the header's
    /// `printed`).
    pub fn printed(&self) -> u64 {
        self.header.printed.load(Ordering::Acquire)
    }

    /// The end of the newest record marked for the outputs.
    pub fn marked_end(&self) -> u64 {
        self.header.marked_end.load(Ordering::Acquire)
    }

    /// Moves where the outputs have read to: every record before `pos` was
    /// handed to them and may be overwritten. Only the outputs' reader
    /// (under the printer's lock) moves it, forward only.
    pub fn set_printed(&self, pos: u64) {
        // [W5] printed Release: pairs with [R5] in
        // Ring::would_overwrite_unprinted; the outputs copied every record
        // before `pos` before the writer may overwrite it.
        self.header.printed.fetch_max(pos, Ordering::Release);
    }

    pub fn read(&self, visit: impl FnMut(Entry)) {
        reader::read(self, visit)
    }
}

/// How long a reader waits for a record in flight (`Region::wait_committed`):
/// a copy takes well under a microsecond; a writer preempted in the middle
/// of one is back within a few scheduler slices, even on a loaded machine.
/// One stopped for longer (in a signal handler, a debugger) is not waited
/// for.
pub const WAIT_NS: u64 = 100_000_000;

impl View<'_> {
    /// The commit word of the record at data offset `off`, which its
    /// writer stores atomically.
    fn commit_word(&self, off: usize) -> &AtomicU32 {
        assert!(off % 8 == 0 && off + 8 <= self.header.data_size as usize);
        // SAFETY: a record's first word inside the data area (asserted),
        // 4-aligned, mapped as long as the view.
        unsafe { AtomicU32::from_ptr(self.data.add(off).cast::<u32>().cast_mut()) }
    }

    /// Waits up to `max_ns` for the record at data offset `off` to be
    /// committed, and returns its commit word then (0: still in flight,
    /// whether or not the outputs passed it over).
    pub fn wait_committed_within(&self, off: usize, max_ns: u64) -> u32 {
        let word = self.commit_word(off);
        let start = crate::sys::monotonic_ns();
        let mut spins = 0u32;
        loop {
            // [R7] Acquire: pairs with [W7] in Slot::commit.
            let commit = word.load(Ordering::Acquire);
            if !record::in_flight(commit) {
                return commit;
            }
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
                continue;
            }
            if crate::sys::monotonic_ns().saturating_sub(start) > max_ns {
                return 0;
            }
            // SAFETY: no arguments; async-signal-safe.
            unsafe { libc::sched_yield() };
        }
    }

    /// Walks the oldest records from the head, a 64th of the ring (see
    /// `ahead`): where it began, and what it found.
    pub fn walk_ahead(&self) -> (u64, Walked) {
        let size = self.header.data_size;
        let from = self.head();
        let end = (from + size / 64).min(self.tail());
        // SAFETY: this view's data area, mapped while the view lives, its
        // record words stored atomically by their writers. Bytes that
        // change under the walk (the head moved past them) give wrong
        // lengths at worst, and a result `ahead::take` drops.
        (from, unsafe { walk(self.data, size as usize, from, end) })
    }

    /// Whether the record at data offset `off` is committed now.
    pub fn is_committed(&self, off: usize) -> bool {
        // [R7] Acquire: pairs with [W7] in Slot::commit.
        !record::in_flight(self.commit_word(off).load(Ordering::Acquire))
    }
}

impl Region for View<'_> {
    fn data_size(&self) -> u64 {
        self.header.data_size
    }

    fn head(&self) -> u64 {
        // [R2] head Acquire: pairs with [W2], the fence after the writer
        // moves head (ring/mod.rs).
        self.header.head.load(Ordering::Acquire)
    }

    fn tail(&self) -> u64 {
        // [R1] tail Acquire: pairs with [W1], tail Release in
        // Ring::publish: the records before this tail are whole.
        self.header.tail.load(Ordering::Acquire)
    }

    fn dict(&self) -> &[u8] {
        let h = self.header;
        // [R3] dict_used Acquire: pairs with [W3] in Ring::add_site.
        let used = h.dict_used.load(Ordering::Acquire).min(h.dict_size) as usize;
        // SAFETY: the published part of the dictionary, inside the mapping;
        // published entries are never written again.
        unsafe {
            std::slice::from_raw_parts((h as *const Header).cast::<u8>().add(HEADER_SPACE), used)
        }
    }

    fn whole(&self) -> bool {
        self.whole
    }

    fn wait_committed(&self, off: usize) -> u32 {
        self.wait_committed_within(off, WAIT_NS)
    }

    fn pass_over(&self, off: usize) -> u32 {
        // [R7] Acquire on failure: pairs with [W7] in Slot::commit (a
        // record committed meanwhile is read whole). [P1]: pairs with
        // [P2] in `Slot::commit_marked`, a compare-and-swap from 0 too:
        // whichever comes first, the other fails on it.
        match self.commit_word(off).compare_exchange(
            0,
            record::PASSED_OVER,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) | Err(record::PASSED_OVER) => 0,
            Err(commit) => commit,
        }
    }

    fn copy(&self, off: usize, dst: &mut [u8]) {
        assert!(off % 8 == 0 && dst.len() % 8 == 0);
        assert!(off + dst.len() <= self.header.data_size as usize);
        for (i, chunk) in dst.chunks_exact_mut(8).enumerate() {
            // SAFETY: in bounds and aligned (asserted above). An atomic
            // load, relaxed (a plain load's cost), because a writer may
            // store to these bytes while we copy (a record's words as it
            // is copied in, its commit word); the copy is validated before
            // anything in it is believed, and ordered by the fences the
            // reader puts around it ([R7], [R2]).
            let word =
                unsafe { AtomicU64::from_ptr(self.data.add(off + i * 8).cast::<u64>().cast_mut()) }
                    .load(Ordering::Relaxed);
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
    }
}
