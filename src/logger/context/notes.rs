//! vlog's own lines in a context: what it left out, and why.

use crate::output::{Outputs, Said};
use crate::priority::Priority;
use crate::record::Record;
use crate::text::Bounded;

/// One line of vlog's own in a context, printed on output `i` just before
/// the records it is about: a record of source `vlog`, at info, with the
/// error's time and thread; its seq is 0, since no record of the ring is
/// it (a reader that tells records apart by seq never takes it for one).
/// (Not inlined: its buffer is not on the stack while records are read.)
#[inline(never)]
pub fn note(
    outputs: &mut Outputs,
    i: usize,
    (time_ns, tid): (u64, u32),
    report: &mut impl FnMut(Said),
    write: impl FnOnce(&mut Bounded),
) {
    let mut buf = [0u8; 320];
    let mut text = Bounded::new(&mut buf);
    write(&mut text);
    let text = text.finish();
    let rec = Record {
        time_ns,
        tid,
        context: true,
        ..Record::note(Priority::Info, b"context", text)
    };
    outputs.add_to(i, &rec, report);
}

pub fn plural<'a>(n: u64, one: &'a [u8], many: &'a [u8]) -> &'a [u8] {
    if n == 1 {
        one
    } else {
        many
    }
}
