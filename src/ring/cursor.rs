//! What a walk of the ring keeps: where it ended, for the next to go on
//! from, and the buffers it reads records into (see `reader`).

use super::record::RECORD_MAX;
use super::signatures::Signatures;
use crate::record::MESSAGE_MAX;

/// Where a walk ended, for the next to go on from (`vlog-ctl follow`, and a
/// dump sent a part at a time): the position of the next record and the
/// sequence number expected there. The default starts at the oldest record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    pub(super) pos: Option<u64>,
    pub(super) expected: Option<u64>,
    /// `pos` need not be a record boundary (see [`Cursor::near`]).
    pub(super) resync: bool,
}

impl Cursor {
    /// A walk that begins at position `pos`, a record boundary (where the
    /// outputs stopped, say).
    pub fn at(pos: u64) -> Cursor {
        Cursor {
            pos: Some(pos),
            expected: None,
            resync: false,
        }
    }

    /// A walk that begins at the first record that validates whole at or
    /// after position `pos`, which need not be a record boundary (a dump
    /// of the ring's newest bytes): found as a record after damage is, and
    /// the bytes passed over to it are not damage, so not reported.
    pub fn near(pos: u64) -> Cursor {
        Cursor {
            pos: Some(pos),
            expected: None,
            resync: true,
        }
    }

    /// The position of the next record, once a walk has been made.
    pub fn pos(&self) -> Option<u64> {
        self.pos
    }
}

/// Stack buffers for one record and its rendered text, filled anew for
/// each record: made once per walk (clearing them per record cost more
/// than the rest of the walk), and kept by a reader that reads records one
/// at a time (an error's context) across its reads.
/// A set kept on the heap has with it the formats whose argument kinds its
/// reader knows already; one made on a stack (the crash handler's, a
/// reader short of memory) has none, and parses each format.
pub struct Buffers {
    pub(super) record: [u8; RECORD_MAX],
    pub(super) text: [u8; MESSAGE_MAX],
    pub(super) signatures: Option<Box<Signatures>>,
}

impl Buffers {
    pub fn new() -> Buffers {
        Buffers {
            record: [0; RECORD_MAX],
            text: [0; MESSAGE_MAX],
            signatures: None,
        }
    }

    /// A set on the heap, made once, for a reader that keeps one (an
    /// error's context, read on a caller's stack, which may be small);
    /// None without the memory.
    pub fn on_heap() -> Option<Box<Buffers>> {
        let mut buffers = zeroed_box::<Buffers>()?;
        buffers.signatures = zeroed_box::<Signatures>();
        Some(buffers)
    }
}

/// A `T` on the heap, every byte zero; None without the memory (never an
/// abort). Only for the two types below, for which all-zero bytes are a
/// valid value.
fn zeroed_box<T: ZeroValid>() -> Option<Box<T>> {
    let layout = std::alloc::Layout::new::<T>();
    // SAFETY: the layout is not zero-sized (both types hold arrays). A
    // non-null result is a fresh allocation of that layout, zeroed, and
    // all-zero bytes are a valid `T` (`ZeroValid`), so the Box may own it
    // and free it with the same layout.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<T>();
        (!p.is_null()).then(|| Box::from_raw(p))
    }
}

/// Types that [`zeroed_box`] may make.
///
/// # Safety
/// All-zero bytes must be a valid value of the type.
unsafe trait ZeroValid {}
// SAFETY: byte arrays, and None (an Option of a Box is a null pointer).
unsafe impl ZeroValid for Buffers {}
// SAFETY: byte arrays and integers; all zero is the empty format's entry.
unsafe impl ZeroValid for Signatures {}

impl Buffers {
    /// Runs `f` on `heap`, or, without it (memory was short when it was to
    /// be made), on a set in a frame of its own: only then does a reader
    /// take 21 KiB of its caller's stack.
    #[inline(always)]
    pub fn with<R>(heap: Option<&mut Buffers>, f: impl FnOnce(&mut Buffers) -> R) -> R {
        match heap {
            Some(buffers) => f(buffers),
            None => on_stack(f),
        }
    }
}

#[cold]
#[inline(never)]
fn on_stack<R>(f: impl FnOnce(&mut Buffers) -> R) -> R {
    f(&mut Buffers::new())
}

impl Default for Buffers {
    fn default() -> Buffers {
        Buffers::new()
    }
}
