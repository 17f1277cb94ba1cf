//! Sockets: TCP and UDP on the event loop, with deadlines, for every face.
//!
//! | file | what |
//! | --- | --- |
//! | `sys.rs` | the system calls: sockets, options, names, `poll(2)`, LuaSocket's error texts |
//! | `resolve.rs` | name resolution and reverse lookup (`getaddrinfo`, `getnameinfo`). With `sys.rs` and `write_buf.rs`, all the unsafe code of the layer. |
//! | `write_buf.rs` | the bytes of a write: owned, or lent by a caller who keeps them in place |
//! | `accept.rs` | what an accept does when `accept(2)` fails: out of descriptors it retries on a timer |
//! | `pattern.rs` | LuaSocket's receive patterns (line, count, all) over a read [`Buffer`](crate::util::buffer::Buffer) |
//! | `io.rs` | a socket's descriptor and read buffer, and one non-blocking try of each operation |
//! | `ops.rs` | operations waiting on a loop: the loop's callbacks drive them, cancel and detach end them |
//! | `socket.rs` | [`Socket`], what a face holds, and [`Exported`], a socket between loops |
//!
//! The API has no face's types in it: the Lua face calls it, and the C and
//! C++ faces can wrap a [`Socket`] the same way (a completion is a Rust
//! closure; a C ABI would pass a function and a pointer through one).
//!
//! # Two ways to do I/O
//! - `try_read`, `try_write`, `try_accept`, `try_recvfrom`, `try_sendto`
//!   try once, now, and say when they would block. A face tries first: most
//!   reads and writes end there, with no loop and no allocation.
//! - [`Socket::read`] (with a [`Pattern`]), [`Socket::write`] (all of a
//!   buffer), [`Socket::accept`], [`Socket::connect`] (the end of a
//!   connection `connect_start` began), [`Socket::recvfrom`] and
//!   [`Socket::sendto`] wait on a
//!   [`Loop`](crate::reactor::Loop) until a deadline, and end through a
//!   completion closure.
//!
//! # An operation's states
//! Each socket has two directions, read (read, accept, recvfrom) and write
//! (write, connect, sendto), and at most one operation waiting per direction.
//!
//! | state | what holds it | left by | to |
//! | --- | --- | --- | --- |
//! | Polling | the poll handle watches its direction; its timer is set to the deadline, if any | readiness: it tries again and ends, or stays | Ended (data, end of stream, error), Polling, or Retrying (an accept out of descriptors) |
//! | | | its deadline: it tries once more, then ends | Ended (data, ..., or `Timeout`) |
//! | | | `cancel` | Cancelled |
//! | | | `detach` or `close` | Closing |
//! | Retrying | an accept out of descriptors (`accept.rs`): the poll handle does not watch for it; its timer is set to its next try, or to the deadline if sooner | the timer: it tries again (at the deadline, a last time) | Ended (a connection, an error, or `Timeout`), Retrying, or Polling (nothing queued any more) |
//! | | | `cancel` | Cancelled |
//! | | | `detach` or `close` | Closing |
//! | Due | a read the buffer answered at its start: its timer is set to now | the timer: it takes its match (or, if another read took the bytes, goes on waiting) | Ended or Polling |
//! | Cancelled | its timer is set to now; the poll handle no longer watches for it | the timer | Ended (`Cancelled`) |
//! | | | `detach` or `close` | Closing (stays cancelled) |
//! | Closing | the close callback of the socket's poll handle | the close callback | Ended (`Closed`, or `Cancelled`) |
//! | Ended | its completion, called once | -- | -- |
//!
//! Rules, as the loop keeps them for its handles:
//! - A completion runs exactly once, from the loop's `run`: never inside the
//!   call that started, cancelled or closed its operation. A start that fails
//!   (closed socket, busy direction, another loop) returns the error and
//!   never calls the completion.
//! - One deadline rule: an absolute time on the loop's clock
//!   ([`Loop::now`](crate::reactor::Loop::now)), or none. Faces map their
//!   users' conventions onto it. When the deadline's timer fires, the
//!   operation tries once more before it fails with `Timeout`: bytes that
//!   came in the same loop turn as the deadline are delivered, whichever of
//!   the two the loop ran first.
//! - A read that fails leaves what it read in the buffer (`take_partial`
//!   hands it out, as LuaSocket's partial result); a write reports how much
//!   went.
//! - A socket is attached to the loop of its first operation, until
//!   `detach` or `close`. Close (or detach) attached sockets before dropping
//!   the loop, and run the loop until their close callbacks ran
//!   (`Loop::check_close`); completions still waiting when a loop is dropped
//!   never run. A socket dropped without `close` closes its descriptor, but
//!   its (paused) poll handle stays in the loop until the loop is dropped.
//!
//! # Why not the `op` machines
//! `op::Object` is a handle awaited by one task at a time, and the start,
//! stop and close it asks for are that handle's. Here the two directions of
//! a socket share one poll handle (epoll takes one registration per
//! descriptor), so stopping one direction is not stopping the handle, and
//! the ends an operation has (data found by a system call in the callback, a
//! timeout after a last try) are not the machine's events. What the machine
//! guarantees is kept by simpler means: one `Option` per direction gives
//! `Busy`, a completion is a `FnOnce` taken out of it once, and a closed
//! socket refuses starts (`Error::BadF`).

mod accept;
mod io;
mod ops;
mod pattern;
pub mod resolve;
mod socket;
pub mod sys;
mod write_buf;

#[cfg(test)]
mod tests;

use std::ffi::{CStr, c_int};

pub use accept::{ACCEPT_RETRY_NS, AcceptError, accept_error, retry_wait};
pub use ops::{Done, WriteDone};
pub use pattern::{Pattern, line_too_long};
pub use resolve::ResolveError;
pub use socket::{Exported, Socket};
pub use sys::{Addr, SysResult};
pub use write_buf::WriteBuf;

/// The direction of an operation: read (read, accept, recvfrom) or write
/// (write, connect).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Dir {
    /// Waits for readability.
    Read = 0,
    /// Waits for writability.
    Write = 1,
}

/// How an operation failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fail {
    /// Its deadline passed (after a last try).
    Timeout,
    /// The socket was closed, or detached from the loop, while it waited.
    Closed,
    /// It was cancelled.
    Cancelled,
    /// The peer ended the stream before the pattern matched; what came
    /// stays buffered.
    Eof,
    /// A system call failed with this `errno`.
    Sys(c_int),
}

impl Fail {
    /// LuaSocket's message: `"timeout"`, `"closed"` (also for the end of
    /// the stream), `"cancelled"`, or the text of the `errno`.
    pub fn message(self) -> &'static CStr {
        match self {
            Fail::Timeout => c"timeout",
            Fail::Closed | Fail::Eof => c"closed",
            Fail::Cancelled => c"cancelled",
            Fail::Sys(e) => sys::strerror(e),
        }
    }
}
