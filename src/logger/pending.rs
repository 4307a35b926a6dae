//! A recorded call's line, written by the outputs before the call returns
//! (an error, `?sync`): after the lock, and, for a caller that asks
//! (`emit::emit_then_write`), after the frame that made the call returned,
//! so that what it held (a list of 32 fields) is not on the stack while
//! the outputs write.

use super::{printer, Entered};

/// What became of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Recorded,
    /// Dropped by the filters (or as a nested call).
    Dropped,
}

/// What became of a recorded call once the lock was let go of: done, or
/// its line still to be written.
pub enum Finished {
    Done(Outcome),
    Write(Pending),
}

/// A line to write, the thread still marked inside vlog (a signal handler
/// that logs meanwhile is dropped, as during the call).
pub struct Pending {
    entered: Entered,
    job: Job,
}

enum Job {
    /// Up to this position (the end of the caller's record); whether it
    /// is an error.
    Upto(u64, bool),
    /// The one record at this position (a ring file shared with another
    /// process).
    One(u64),
}

impl Pending {
    pub(super) fn upto(entered: Entered, upto: u64, error: bool) -> Pending {
        Pending {
            entered,
            job: Job::Upto(upto, error),
        }
    }

    pub(super) fn one(entered: Entered, pos: u64) -> Pending {
        Pending {
            entered,
            job: Job::One(pos),
        }
    }

    /// Lets go of the lock and has the outputs write the line.
    fn write(self) {
        match self.job {
            Job::Upto(upto, error) => {
                crate::crash::altstack::before_writing(error);
                self.entered
                    .leave_and_write(|| printer::caller::write_upto(upto));
            }
            Job::One(pos) => self
                .entered
                .leave_and_write(|| printer::caller::write_one(pos)),
        }
    }
}

impl Finished {
    /// What became of the call, its line written first if it has one.
    #[inline(always)]
    pub fn complete(self) -> Outcome {
        match self {
            Finished::Done(outcome) => outcome,
            Finished::Write(pending) => {
                pending.write();
                Outcome::Recorded
            }
        }
    }
}
