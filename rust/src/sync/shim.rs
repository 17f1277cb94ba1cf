//! The atomics and the mutex of the protocols that loom model-checks (the
//! inbox's, `mailbox.rs`). The tests of a `--cfg loom` build take loom's
//! instrumented types, which loom runs through every interleaving its bounds
//! allow; any other build takes std's, under the same names. (loom is a
//! dev-dependency: a `--cfg loom` build of the library alone uses std's.)

#[cfg(all(test, loom))]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU8};
#[cfg(all(test, loom))]
pub(crate) use loom::sync::{Mutex, MutexGuard};

#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::{Mutex, MutexGuard};
