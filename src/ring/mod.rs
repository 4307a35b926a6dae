//! The ring: a self-describing memory region of variable-length records,
//! written under the logger's lock and read without any lock, by this process
//! (`vlog_dump`, the crash handler) or by another from a file or a core
//! (`vlog-dump`). It imports the text and deferred stages (readers render
//! deferred records) and the bottom of the crate, nothing above.
//!
//! # Overview
//!
//! ```text
//! | header (layout) | call-site dictionary (sites) | data area: records ... pad |
//!                                                   ^head (oldest)   ^tail (end)
//! ```
//! Positions are logical byte offsets that only grow; `pos % data_size` is
//! the place in the data area. `head` is the oldest record still held, `tail`
//! the end of the newest. A record never wraps: when it does not fit before
//! the end of the data area, a pad (`PAD_MARK`, length) fills the rest and
//! the record starts at offset 0.
//!
//! Appending a record (`writer`): reserve room at the tail, moving `head`
//! past the records about to be overwritten first (counting them lost); write
//! the record with its commit word 0; store the commit word (derived from the
//! sequence number) last; then move `tail`. A reader (`reader`) copies each
//! record, then checks that `head` has not moved past it, then validates the
//! copy (commit word tied to the sequence number, checksum, lengths,
//! dictionary entry). So a reader never prints a record that changed under
//! it, whatever the writer was doing, and a record a killed writer left
//! half-written is reported, not printed.
//!
//! A call site's record, in a ring in this process's private memory, is
//! *in flight* for a while (`slot`): the
//! writer reserves it under the lock (room made, its commit word 0, its
//! length, number and the outputs' mark written, the tail moved past it)
//! and copies it after letting go of the lock, its commit word stored
//! last. So the lock is held for the reservation alone. The outputs' walk
//! waits for a record in flight only when its mark says it is theirs,
//! and passes over one still in flight after the wait
//! (`Damage::Unfinished`), marking it so (`record::PASSED_OVER`): its
//! writer finds the mark as it commits, and under the logger's lock
//! commits it and has the outputs print it, out of turn
//! (`slot::PassedOver`), so that no line
//! is lost to a thread that stalled in the middle of its copy, and a
//! caller that writes its own line never returns with it unwritten.
//! A record in flight is never evicted: a writer that
//! needs its room lets go of the lock and waits for it (100 ms at most; a
//! message that would wait longer is dropped and counted), and a replaced
//! ring is unmapped only once none of its records is in flight. Readers in
//! this process wait for it as long (`View::wait_committed`); a reader of a
//! file or a core reports it as never committed. A forked child marks the
//! records its parent's other threads had in flight abandoned
//! (`record::ABANDONED`). Ring files keep writing records whole under
//! their lock: another process killed in the middle of a copy could not be
//! told from one still copying.
//!
//! The call-site dictionary (`sites`) is append-only: an entry is written
//! past `dict_used` and published by moving it, and never changes after.
//!
//! # Memory ordering, writer and reader in pairs
//!
//! - [W1] `tail` Release in `Ring::publish` pairs with [R1] `tail` Acquire in
//!   `View::tail`: every record below the tail a reader loaded is written,
//!   commit word included.
//! - [W2] Release fence after `head` moves in `Ring::evict`, before the
//!   evicted bytes are overwritten, pairs with [R2], the Acquire fence and
//!   `head` load after each copy in `reader::read`: a copy that saw any byte
//!   of a newer lap sees the head moved past it, and is discarded.
//! - [W3] `dict_used` Release in `Ring::add_site` pairs with [R3] `dict_used`
//!   Acquire in `View::dict`: a published entry is whole.
//! - [W5] `printed` Release in `View::set_printed`, once the outputs have
//!   copied every record before it, pairs with [R5] `printed` Acquire in
//!   `Ring::would_overwrite_unprinted`: the writer overwrites only records
//!   the outputs are done with. A record marked for the outputs
//!   (`record::FOR_OUTPUTS`) is never evicted before `printed` passed it:
//!   the caller that would evict it has the outputs print first.
//! - [W7] the commit word Release in `Slot::commit`, after the record's
//!   bytes, pairs with [R7], the commit word's Acquire load in
//!   `Ring::commit_at` (the writer, before it evicts a record and reuses
//!   its bytes), `View::wait_committed` and `View::is_committed`, and the
//!   reader's Acquire fence after it copied the commit word
//!   (`reader::read_with`): a record seen committed is copied whole, and a
//!   copy's bytes are done before the writer overwrites them. A reader in
//!   the process copies with relaxed atomic loads (`View::copy`) and the
//!   copy after the lock stores with relaxed atomic stores (`Slot::put`),
//!   so a copy that races a record in flight is a race of atomics that
//!   these fences order (and ThreadSanitizer finds nothing to report).
//! - [P1] the outputs' compare-and-swap of a marked record's commit word
//!   from 0 to `PASSED_OVER` (`View::pass_over`) and [P2] its writer's
//!   compare-and-swap from 0 to the commit value (`Slot::commit_marked`):
//!   read-modify-writes of one word, so exactly one of the two succeeds.
//!   Either the walk finds the record committed (and reads it whole,
//!   [R7]), or the writer finds it passed over and has it printed itself.
//! - [W4]/[R4] (`published`): the pointer readers find the ring by, and their
//!   count, SeqCst on both sides, so a replaced ring is freed only after its
//!   last reader left. The ring's id is stored after the pointer and loaded
//!   before it (`published::id`), so the id a reader holds is that of the
//!   ring it reads or of an earlier one, never a later ring's.
//! - [W8] the state READY Release in `Ahead::walk_with`, after what a
//!   walker without the lock found (`ahead`: where its walk over the oldest
//!   records began and ended), pairs with [R8] the state's Acquire load in
//!   `Ahead::take`, by the lock's holder that makes room: it reads what was
//!   found whole. With [R7] in the walk (each record passed was seen
//!   committed), the records' copies are done before their bytes are
//!   reused; the holder takes the walk only for its own ring (by id, see
//!   [W4]) and if the head is still where it began, so no record it passed
//!   was evicted and reused meanwhile. Back the other way, the holder's
//!   Release as it lets the state go pairs with the next walker's Acquire
//!   claim: a walker writes what it finds only after the last was read.
//!
//! # Files
//!
//! `layout` (the header, offsets, sizes, magic), `record` (the record's
//! binary form), `checksum` (its hash), `slot` (records in flight),
//! `inflight` (those left, and abandoned), `evict` (room made), `walk`
//! (the walk over the oldest records), `ahead` (that walk done without the
//! lock),
//! `sites` (the dictionary), `lock` (a ring file's
//! process-shared lock), `writer` (appending), `view` (a live ring, read),
//! `reader` (the walk every reader shares), `signatures` (the argument
//! kinds of the formats it renders, kept), `scan` (the header-only walk
//! an error's context makes), `image` (rings in bytes from
//! files and cores), `migrate` (records carried into a new ring), `file`
//! (ring files), `guard` (a ring file truncated under its mapping),
//! `published` (the ring lock-free readers find), `marks` (what the writer
//! keeps for the records marked for the outputs).

pub mod ahead;
pub mod checksum;
pub mod cursor;
pub mod evict;
pub mod file;
pub mod guard;
pub mod held;
pub mod image;
pub mod inflight;
pub mod layout;
pub mod lock;
pub mod marks;
pub mod migrate;
pub mod published;
pub mod reader;
pub mod record;
pub mod region;
pub mod scan;
pub mod signatures;
pub mod sites;
pub mod slot;
pub mod view;
pub mod walk;
pub mod writer;

pub use held::Held;
pub use image::{find_rings, Image, ImageError};
pub use layout::{check_size, Stats};
pub use reader::{read, Entry, Region};
pub use record::Damage;
pub use writer::{Blocked, Ring};
