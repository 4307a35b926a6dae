//! The control socket: a running daemon's filters, outputs and level
//! changed, its configuration shown, its ring streamed back, through a Unix
//! socket that only the daemon's own user, root and a group it names may
//! use (`VLOG_CONTROL`, `vlog_control_start`; `vlog-ctl` speaks to it). A
//! stage above the logger, with its own lock and thread.
//!
//! - `authority`: who may do what (the one home of those rules).
//! - `server`: the socket, the connections, and one round of serving them
//!   without waiting (`Server::round`).
//! - `client`: one connection: its request read (bounded in size and
//!   time), its reply written as the socket takes it, a dump or a follow
//!   read from the ring a part at a time.
//! - `command`: the requests, and what each does.
//!
//! Served by a thread of vlog's (`Thread`, started by `VLOG_CONTROL` or
//! `vlog_control_start`), or by the program's own event loop: it polls one
//! descriptor (`vlog_control_open`) and calls `vlog_control_handle` when it
//! is readable. Both serve through [`serve`].
//!
//! # Locks
//!
//! The server and its thread are behind `SERVER`, the logger's state behind
//! its own lock (`STATE`). The lock order is STATE, then SERVER (vlog's
//! start opens the socket `VLOG_CONTROL` names with STATE held; a fork
//! takes both, in that order, through `logger::above`), and nothing takes
//! STATE while it holds SERVER: a round collects the requests under SERVER,
//! lets it go, runs each command under STATE (for as long as a
//! configuration call takes), and takes SERVER again to hand the replies
//! over. So no client, however slow, makes a logging thread wait: the
//! logger's lock is never held while a client is read or written to, and a
//! dump reads the ring without any lock. While clients read fast, rounds
//! follow each other closely, and a thread that wants SERVER while it holds
//! STATE (a fork, vlog's start) is let in first (`URGENT`): it waits for the
//! round in progress at most, and a round reads at most `ROUND_PARTS`
//! parts. A group named by name is looked up (NSS: files, LDAP) without
//! either lock: by `vlog_control_start` before it takes one, or by the
//! socket's thread when `VLOG_CONTROL` names it.
//!
//! A call that would nest on one thread (a signal handler that interrupted
//! a round and calls in again) is refused, never left waiting for its own
//! thread.

mod authority;
mod catalog;
mod client;
mod command;
mod server;
mod serving;
mod thread;

pub use command::COMMANDS;
pub use thread::{install, poll_fd, serve, start, stop};
