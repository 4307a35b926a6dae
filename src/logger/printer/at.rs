//! One record printed by its position, out of the walk's order: a
//! process that shares a ring file prints its own records as it makes
//! them, and a thread whose line the outputs' walk passed over has it
//! printed as it commits it.

use super::{context, lost, Printer};
use crate::output::Said;
use crate::priority::Priority;
use crate::ring::cursor::Cursor;
use crate::ring::view::View;
use crate::ring::{reader, scan, Entry};

impl Printer {
    /// Hands the outputs the record at `pos` (a process sharing a ring
    /// file prints its own records as it makes them; a line their walk
    /// passed over is printed by its writer), if its number is `seq`.
    pub fn print_at(&mut self, view: &View, pos: u64, seq: Option<u64>) {
        let ours = |rec: &crate::record::Record| seq.is_none_or(|seq| rec.seq == seq);
        let Printer {
            outputs,
            said,
            contexts,
            ..
        } = self;
        outputs.print_all(|outputs| {
            // An error's context comes first: the record is read whole
            // twice only when its header says it is an error.
            let mut error = false;
            scan::scan(view, pos, pos + 1, |_, head, _| {
                error = head.priority == Priority::Error as u8;
            });
            let mut due = None;
            // Read into the contexts' buffers, off the caller's stack.
            let mut heap = contexts.buffers.take();
            if error {
                reader::Buffers::with(heap.as_deref_mut(), |buffers| {
                    reader::read_with(view, Cursor::at(pos), 1, buffers, false, |entry, _| {
                        match entry {
                            Entry::Record(rec) if ours(&rec) => {
                                due = context::due(contexts, outputs, &rec);
                            }
                            _ => {}
                        }
                        true
                    })
                });
            }
            contexts.buffers = heap;
            match due {
                Some(due) => {
                    let mut report = |event: Said| said.push(event);
                    context::print(contexts, outputs, view, pos, &due, &mut report);
                }
                None => contexts.passed(pos),
            }
            let mut heap = contexts.buffers.take();
            reader::Buffers::with(heap.as_deref_mut(), |buffers| {
                let mut found = false;
                reader::read_with(view, Cursor::at(pos), 1, buffers, false, |entry, _| {
                    match entry {
                        Entry::Record(rec) if ours(&rec) => {
                            found = true;
                            outputs.add(&rec, |event| said.push(event));
                        }
                        _ => {}
                    }
                    true
                });
                if !found && seq.is_some() {
                    lost::overwritten_passed_over(outputs, said);
                }
            });
            contexts.buffers = heap;
            outputs.flush(|event| said.push(event));
        });
    }
}
