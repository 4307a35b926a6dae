//! The flight recorder's call as the boundary hands it over, and what is
//! done with it under the logger's lock: the record's reservation (its
//! place, its number, its mark, room made) and the call site's dictionary
//! entry in the ring. Everything between taking the lock and letting it
//! go, and nothing else.

use std::sync::atomic::Ordering;

use crate::logger::printer;
use crate::logger::State;
use crate::priority::Priority;
use crate::ring::published;
use crate::ring::sites::Site;
use crate::ring::slot::{PassedOver, Slot};
use crate::ring::Blocked;
use crate::ring::Ring;
use crate::site::vlog__site;
use crate::source::Live;

/// A deferred call site's call, as the boundary hands it over: the words the
/// macro captured (a string's replaced by its length) and the strings'
/// bytes, `message_len` in all.
pub struct Words<'a> {
    pub site: &'a vlog__site,
    pub source: Live,
    pub priority: Priority,
    pub words: &'a [u64],
    pub strings: &'a [&'a [u8]],
    pub message_len: usize,
}

/// A deferred call site's names, line and format, as the logger asks for
/// them: only on the site's first record in a ring and when the message is
/// printed. (Measured at the boundary, which prepared the site.)
pub trait CallSite {
    /// The site's file, function, line and format (with an empty source
    /// name: the logger fills it in).
    fn describe(&self) -> Site<'_>;
}

/// Whether a reserved record is marked for the outputs, and then who
/// writes its line: the writer thread, woken after the lock (see
/// `printer::wake`), or the caller.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Mark {
    RingOnly,
    Printed,
    /// The ring is half full of lines not yet written: the writer thread
    /// writes without letting the burst gather.
    PrintedUrgently,
    /// The caller writes its line (and every one before it) before its
    /// call returns: an error, a `?sync` output's line, any with the
    /// writer thread off.
    Written,
}

impl Mark {
    /// A printed record's mark: how the writer thread is woken for it.
    #[inline(always)]
    pub(super) fn printed(urgent: bool) -> Mark {
        if urgent {
            Mark::PrintedUrgently
        } else {
            Mark::Printed
        }
    }
}

/// What the lock's holder decided.
pub(super) enum Reserved {
    /// The record's place, its site's dictionary entry, and whether it is
    /// marked for the outputs.
    Slot(Slot, u32, Mark),
    /// The room is held by a record in flight; whether this record would
    /// have been marked for the outputs.
    Blocked(Blocked, bool),
    General,
}

impl State {
    /// Under the lock: the record's place, or why the general way takes
    /// the call: everything the lock's holder does between taking it and
    /// letting go of it. The common case first, decided with a few
    /// compares: no replaced ring to free, no output that prints the
    /// message, the site known to this ring, room for the record without
    /// evicting (so none that the outputs have not printed either).
    #[inline(always)]
    pub(super) fn reserve_words(&mut self, call: &Words, len: usize) -> Reserved {
        // (Fields apart, not `prints`: the ring is borrowed meanwhile.)
        let State {
            ring,
            retired,
            lowest,
            ..
        } = self;
        if let Some(ring) = ring.as_mut() {
            if (call.priority as u8) < *lowest && retired.is_empty() {
                if let Some(entry) = known_entry(ring, call.source, call.site) {
                    if let Some(slot) = ring.reserve_slot_in_room(len) {
                        return Reserved::Slot(slot, entry, Mark::RingOnly);
                    }
                }
            }
        }
        self.reserve_words_making_room(call, len)
    }

    /// [`State::reserve_words`] for a line an output prints: the same
    /// record, marked, when vlog's writer thread writes it (`WRITTEN`
    /// false; the writer thread is woken after the lock) or its caller
    /// does (an error, a `?sync` output's, any with the writer thread off),
    /// no line the outputs have not written is in the way and nothing is
    /// evicted.
    #[inline(always)]
    pub(super) fn reserve_marked<const WRITTEN: bool>(
        &mut self,
        call: &Words,
        len: usize,
    ) -> Reserved {
        let theirs = match WRITTEN {
            true => self.caller_writes(call.priority),
            false => self.writer_prints(call.priority),
        };
        if self.retired.is_empty() && theirs {
            if let Some(ring) = self.ring.as_mut() {
                if let Some(entry) = known_entry(ring, call.source, call.site) {
                    if let Some((slot, urgent)) = ring.reserve_marked_in_room(len) {
                        let mark = match WRITTEN {
                            true => Mark::Written,
                            false => Mark::printed(urgent),
                        };
                        return Reserved::Slot(slot, entry, mark);
                    }
                }
            }
        }
        self.reserve_words_making_room(call, len)
    }

    /// [`State::reserve_words`] past the common case: replaced rings freed,
    /// the site added to the dictionary, room made.
    #[cold]
    #[inline(never)]
    fn reserve_words_making_room(&mut self, call: &Words, len: usize) -> Reserved {
        // What every holder does before letting go (see `publish`), but
        // the ring readers find: a reservation does not replace it.
        if !self.retired.is_empty() {
            published::free_unread(&mut self.retired);
        }
        // A line an output prints: the same record, marked, if vlog's
        // writer thread writes it or its caller does. Otherwise (the
        // writer thread not started yet, which the general way starts)
        // the general way.
        let printed = self.prints(call.priority);
        let written = printed && self.caller_writes(call.priority);
        if printed && !written && !self.writer_prints(call.priority) {
            return Reserved::General;
        }
        let Some(ring) = self.ring.as_mut() else {
            return Reserved::General;
        };
        if !ring.is_private() || ring.would_overwrite_unprinted(len) {
            return Reserved::General;
        }
        let Some(entry) = site_entry(ring, call.source, call.site) else {
            return Reserved::General;
        };
        match ring.reserve_slot(len, printed) {
            Ok(slot) if written => Reserved::Slot(slot, entry, Mark::Written),
            Ok(slot) if printed => Reserved::Slot(slot, entry, Mark::printed(ring.urgent())),
            Ok(slot) => Reserved::Slot(slot, entry, Mark::RingOnly),
            Err(at) => Reserved::Blocked(at, printed),
        }
    }
}

impl State {
    /// Under the lock, for a record of this thread's that the outputs'
    /// walk passed over (see `flight::print_passed_over`): the record
    /// committed (no other thread evicts while the lock is held), then its
    /// line printed from the ring that holds it.
    pub(in crate::logger) fn print_passed_over(&mut self, passed: PassedOver) {
        let (pos, seq) = (passed.pos(), passed.seq());
        let Some(ring) = self
            .ring
            .iter()
            .chain(&self.retired)
            .find(|r| passed.is_in(r))
        else {
            // A ring is freed only once none of its records is in flight:
            // never here. Its memory is not touched again.
            std::mem::forget(passed);
            return;
        };
        passed.commit();
        let mut printer = printer::lock_of(self.printer);
        printer.print_at(&ring.view(), pos, Some(seq));
        let said = printer.take_said();
        drop(printer);
        self.note_all(said);
    }
}

/// The site's dictionary entry in `ring`, if it has one there already.
#[inline(always)]
fn known_entry(ring: &Ring, source: Live, site: &vlog__site) -> Option<u32> {
    let cached = site.entry.load(Ordering::Relaxed);
    ((cached >> 32) as u32 == ring.id()
        && site.entry_source.load(Ordering::Relaxed) == source.addr())
    .then_some(cached as u32)
}

/// The offset of the site's dictionary entry in `ring`, adding the site on
/// its first record there; None when the dictionary has no room for it.
#[inline]
pub(in crate::logger) fn site_entry(
    ring: &mut Ring,
    source: Live,
    site: &vlog__site,
) -> Option<u32> {
    known_entry(ring, source, site).or_else(|| add_site(ring, source, site))
}

/// A site's first record in this ring: its entry is added.
#[cold]
fn add_site(ring: &mut Ring, source: Live, site: &vlog__site) -> Option<u32> {
    let described = Site {
        source: source.get().name_bytes(),
        ..site.describe()
    };
    let offset = ring.add_site(&described)?;
    site.entry.store(
        u64::from(ring.id()) << 32 | u64::from(offset),
        Ordering::Relaxed,
    );
    site.entry_source.store(source.addr(), Ordering::Relaxed);
    Some(offset)
}
