//! The `extern "C"` API: the only thing the library exports. One file per C
//! object; `include/cothread.h` is generated from these files by cbindgen.
//!
//! Conventions: every function checks its arguments and returns 0 (or a
//! count / boolean as 1 or 0) on success and a negative `COT_E*` code on
//! failure; a failed call changes nothing and never runs a callback.
//! Objects are single-threaded unless a function says otherwise.
//!
//! The unsafe code of this layer is the pointer handling in `guard` and the
//! views of C memory (chains, mutexes, parked words); each exported function
//! states its caller's duties under `# Safety`.

#![allow(non_camel_case_types)]

mod async_;
mod chain;
mod error;
mod fs;
mod future;
mod guard;
mod loop_;
mod loop_task;
mod mutex;
mod op;
mod os_signal;
mod park;
mod poll;
mod pool;
mod resolve;
mod resume_queue;
mod sched;
mod signal;
mod socket;
mod task;
mod tcp;
mod timeout;
mod timer;
mod timers;
mod udp;
mod version;
mod work;
// Last: the header lists coroutines (and their raw contexts) after the loop
// they run on.
mod context;
mod coro;
mod coro_net;

// After coroutines, which wait on them.
mod chan;
mod group;
mod invoke;

pub use async_::*;
pub use chain::*;
pub use chan::*;
pub use context::*;
pub use coro::*;
pub use error::*;
pub use fs::*;
pub use future::*;
pub use group::*;
pub use invoke::*;
pub use loop_::*;
pub use loop_task::*;
pub use mutex::*;
pub use op::*;
pub use os_signal::*;
pub use park::*;
pub use poll::*;
pub use pool::*;
pub use resolve::*;
pub use resume_queue::*;
pub use sched::*;
pub use signal::*;
pub use socket::*;
pub use task::*;
pub use tcp::*;
pub use timeout::COT_FOREVER;
pub use timer::*;
pub use timers::*;
pub use udp::*;
pub use version::*;
pub use work::*;
