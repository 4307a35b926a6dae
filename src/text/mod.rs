//! Text: everything vlog writes for people and for other programs, made
//! without allocating so the crash handler can use it too. Sinks (where the
//! bytes go), numbers, times, the text line, the JSON line, hex dumps, and printf.
//!
//! Imports only the bottom of the crate (record, fields, priority).

pub mod bounded;
pub mod frames;
pub mod hexdump;
pub mod json;
pub mod line;
pub mod msgpack;
pub mod num;
pub mod plain;
pub mod printf;
pub mod sink;
pub mod time;

pub use bounded::Bounded;
pub use sink::{ChunkSink, Sink};
