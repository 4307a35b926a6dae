//! The outputs (`VLOG_OUTPUTS`): where recorded messages are printed, each
//! an object with its own minimum priority and one call that prints a record
//! (`Output::print`, in `print`; the list in force is `list`). A new kind of
//! output is a module here, a variant of `print::Target` and its token in
//! `spec`; nothing outside this folder changes.
//!
//! An output that fails (a full disk, a reader gone, a full pipe, fd 2
//! closed) never stops logging: the line is dropped and counted, the ring and
//! the other outputs go on, and the failure is reported once, then its end
//! once with the number of lines lost. Writes never raise SIGPIPE and never
//! wait for a full pipe.
//!
//! Imports the text stage and the bottom of the crate.

pub mod address;
pub mod at_crash;
pub mod context;
mod failing;
pub mod file;
pub mod fluent;
pub mod journald;
mod lines;
mod list;
mod print;
pub mod rotate;
mod said;
pub mod slow;
pub mod spec;
pub mod syslog;

pub use list::{Lookups, Outputs, NEEDS_RESOLVER, NEEDS_TICKER};

pub use print::Output;
pub use said::Said;
