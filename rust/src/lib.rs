//! cothread core: a single-threaded coroutine scheduler with O(1) queues and
//! signals, timers, and the stable C ABI over them.
//!
//! Layers (dependencies point down):
//! - [`ffi`]: the `extern "C"` API, the only thing exported to C.
//! - [`sched`]: the scheduler: ready queue, signal queues, combined signals,
//!   postponed queue.
//! - [`reactor`]: the event loop (timers, fd readiness, wakeups), on a scheduler.
//! - [`stack`]: stackful coroutines: stacks with guard pages, the context
//!   switch in assembly, coroutines that run as tasks of a loop.
//! - [`sync`]: synchronization building blocks for the faces: awaiter chains,
//!   a FIFO-handoff mutex, the per-thread resume queue, parking, the thread
//!   pool and a thread-safe timer service.
//! - [`time`]: clocks and the timer heap.
//! - `util`: small building blocks (the OS clock, futexes, intrusive node
//!   chains).
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
pub mod op;
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
mod util;

pub use error::Error;
pub use sched::{Mode, Sched, Task, When};

/// The crate version, `MAJOR.MINOR.PATCH`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
