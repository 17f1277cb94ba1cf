//! cothread core: a single-threaded coroutine scheduler with O(1) queues and
//! signals, timers, an event loop, and the stable C ABI over them.
//!
//! Layers, bottom up: a module uses only modules listed above it (checked
//! with `grep -rn 'crate::' rust/src`; doc/architecture.md has the graph).
//! `sched`, `sync` and `op` do not use each other.
//! - [`util`]: small building blocks (a generational slab,
//!   the OS clock, processors, futexes, intrusive node chains, a one-thread pointer
//!   ring, a read buffer: the only public one). Uses nothing.
//! - [`error`]: the core's error type (the C ABI's negative `COT_E*` codes).
//!   Uses nothing.
//! - [`time`]: clocks and the timer heap. Uses `util`.
//! - [`sched`]: the scheduler: ready queue, signal queues, combined signals,
//!   postponed queue. Uses `time`, `util`, `error`.
//! - [`sync`]: synchronization building blocks for the faces: awaiter chains,
//!   a FIFO-handoff mutex, the per-thread resume queue, parking, the thread
//!   pool and a thread-safe timer service. Uses `time`, `util`, `error`.
//! - [`future`]: promises and futures, settled from any thread. Uses `sync`
//!   (parking), `time`, `error`.
//! - [`op`]: the operation state machines (libuv-style requests, handles and
//!   objects), sans-IO. Uses `error` only.
//! - [`reactor`]: the event loop (timers, fd readiness, wakeups, OS signals,
//!   children, work on the pool, loop tasks), on its own scheduler. Uses
//!   `sched`, `sync`, `future`, `op`, `time`, `util`, `error`.
//! - [`net`]: TCP and UDP sockets: their system calls, LuaSocket's receive
//!   patterns, and reads, writes, accepts, connects and recvfroms that wait
//!   on a loop until a deadline. Uses `reactor`, `util`, `error`.
//! - [`os`]: plain descriptors (files, pipes) and child processes for the
//!   faces. Uses `net`, `reactor`.
//! - [`group`]: groups of loops, each on its own thread (optionally
//!   pinned), with posts between them, a load per loop and a graceful
//!   shutdown. Uses `reactor`, `util`, `error`.
//! - [`stack`]: stackful coroutines: stacks with guard pages, the context
//!   switch in assembly, coroutines that run as tasks of a loop. Uses
//!   `reactor`, `sched`, `future`, `error`.
//! - [`ffi`]: the `extern "C"` API, the only thing exported to C. Uses all of
//!   the above.
//!
//! Tasks are opaque to the core: it keeps a node per task with a user value,
//! and the face (Lua, C++, C) decides what resuming a task means.
#![warn(missing_docs, unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

/// cbindgen:ignore
pub mod error;
pub mod ffi;
/// cbindgen:ignore
pub mod future;
/// cbindgen:ignore
pub mod group;
/// cbindgen:ignore
pub mod net;
/// cbindgen:ignore
pub mod op;
/// cbindgen:ignore
pub mod os;
/// cbindgen:ignore
pub mod reactor;
/// cbindgen:ignore
pub mod sched;
/// cbindgen:ignore
pub mod stack;
/// cbindgen:ignore
pub mod sync;
/// cbindgen:ignore
pub mod time;
/// cbindgen:ignore
pub mod util;

pub use error::Error;
pub use sched::{Mode, Sched, Task, When};

/// The crate version, `MAJOR.MINOR.PATCH`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
