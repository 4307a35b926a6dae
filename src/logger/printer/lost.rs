//! What the outputs' walk finds damaged in the ring before they read it,
//! said in every output (see `Lost`).

use crate::output::{Outputs, Said};
use crate::priority::Priority;
use crate::ring::{Damage, Entry};

/// What the outputs' walk found damaged before they read it: records (by
/// their numbers), bytes passed over. Said in every output before the next
/// line it prints, so a reader of the output knows lines are missing there
/// and how many (vlog's dump, or `vlog-dump`, has the rest of the story).
/// Records overwritten are not the outputs' loss: a record they had not
/// printed is never overwritten (a caller that needs its room waits for
/// them, a crash included), and the ring-only records they pass over go
/// as the ring wraps.
#[derive(Default)]
pub(super) struct Lost {
    damaged: u64,
    damaged_bytes: u64,
    /// Lines whose threads had not finished copying them after the wait
    /// (printed by those threads as they finish, `record::PASSED_OVER`).
    unfinished: u64,
}

impl Lost {
    pub(super) fn see(&mut self, entry: &Entry) {
        match *entry {
            // A record never committed is a flight recorder's (one whose
            // thread a fork left behind): never a line.
            Entry::Damaged {
                damage: Damage::Unfinished,
                ..
            } => self.unfinished += 1,
            Entry::Damaged { damage, .. } if damage != Damage::Uncommitted => self.damaged += 1,
            Entry::Gap { expected, found } => self.damaged += found.saturating_sub(expected),
            Entry::Skipped { bytes } => self.damaged_bytes += bytes,
            _ => {}
        }
    }

    /// Says what was lost, if anything, in every output (a warning of
    /// source `vlog`, at `time_ns`), and forgets it.
    #[cold]
    fn say_now(&mut self, outputs: &mut Outputs, time_ns: u64, said: &mut Vec<Said>) {
        let (n, bytes, unfinished) = (self.damaged, self.damaged_bytes, self.unfinished);
        let text = if n + bytes == 0 {
            format!(
                "{unfinished} lines were still being copied into the ring by their threads \
                 after this output had waited 100 ms for each: each follows, out of turn, \
                 when its thread finishes it"
            )
        } else {
            format!(
                "{n} records of the ring were damaged ({bytes} bytes) before this output wrote \
                 them: the lines among them are lost{}",
                if unfinished > 0 {
                    format!(
                        "; {unfinished} more were still being copied by their threads after \
                         100 ms, and follow out of turn"
                    )
                } else {
                    String::new()
                }
            )
        };
        *self = Lost::default();
        let rec = crate::record::Record {
            time_ns,
            ..crate::record::Record::note(Priority::Warning, b"output", text.as_bytes())
        };
        outputs.add_to_every(&rec, |event| said.push(event));
    }

    #[inline(always)]
    pub(super) fn say(&mut self, outputs: &mut Outputs, time_ns: u64, said: &mut Vec<Said>) {
        if self.damaged + self.damaged_bytes + self.unfinished > 0 {
            self.say_now(outputs, time_ns, said);
        }
    }
}

/// A line the outputs' walk passed over (its thread was still copying it)
/// that is not where its thread left it when printed. The logger's lock,
/// held from the record's commit to its print, rules that out; were it
/// ever broken, the outputs say the line is lost (they had said it would
/// follow) and count it, rather than print another record in its place.
#[cold]
pub(super) fn overwritten_passed_over(outputs: &mut Outputs, said: &mut Vec<Said>) {
    crate::stats::add(&crate::stats::LINES_LOST, 1);
    let rec = crate::record::Record {
        time_ns: crate::sys::realtime_ns(),
        ..crate::record::Record::note(
            Priority::Warning,
            b"output",
            b"a line that was to follow out of turn (its thread was still copying it) was \
              overwritten in the ring before its thread could have it printed: it is lost",
        )
    };
    outputs.add_to_every(&rec, |event| said.push(event));
}
