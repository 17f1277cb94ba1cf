//! Synchronization building blocks for the faces (the C++ coroutine library
//! first), usable from C as well. No unsafe code here: the raw node and word
//! handling is in `util::chain`, the futex calls in `util::futex`.
//!
//! - `chain`: lock-free chains of awaiters (Treiber stacks in one word, taken
//!   whole and returned oldest first), optionally closed by a marker.
//! - `mutex`: a lock-free mutex with strict FIFO handoff, two words, no heap:
//!   `state` is NULL (unlocked), the mutex's own address (locked) or a stack
//!   of requests above that marker; the owner moves requests into the private
//!   FIFO `queue` when it needs the next owner.
//! - [`resume_queue`]: the per-thread queue of coroutines to resume ("coro
//!   mode"), a thread-local, no locking.
//! - [`park`]: blocking waits on a 32-bit word (futexes).
//! - [`Pool`]: a thread pool running jobs in submission order, shared by loops
//!   (their work requests) and plain jobs; stop cancels what has not started.
//! - `mailbox`: items any thread puts and one owner (a loop) takes, with a
//!   bell rung only while the owner sleeps; the protocol of the loop's inbox,
//!   model-checked by loom through `shim` (std's or loom's atomics and mutex).
//! - [`Timers`]: a thread-safe timer service (Mutex + Condvar over the timer
//!   heap of `time`), entries cancellable by an identifier in O(log n).
//!
//! Thread rules: chains, the mutex, parking, mailboxes, the pool and the timers are safe
//! from any thread; the resume queue is per thread by construction.
#![deny(unsafe_code)]

pub(crate) mod chain;
pub(crate) mod mailbox;
pub(crate) mod mutex;
pub mod park;
mod pool;
pub mod resume_queue;
pub(crate) mod shim;
mod timers;

pub use pool::{JOB_WORDS, Job, Pool, Rejected, Words};
pub use timers::Timers;
