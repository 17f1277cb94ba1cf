//! Small building blocks: a generational slab, the OS clock, processors
//! (affinity, for pinning a loop's thread), futexes, a
//! test-only random source, intrusive chains of C-owned nodes, a one-thread
//! pointer ring (the unsafe parts of `sync`), a spin lock (a channel's),
//! and a read buffer. Only the buffer is public: the faces read files and
//! pipes into it too.

pub mod buffer;
pub(crate) mod chain;
pub(crate) mod cpu;
pub(crate) mod futex;
pub(crate) mod os;
pub(crate) mod ring;
#[cfg(any(test, fuzzing))]
pub(crate) mod rng;
pub(crate) mod slab;
// The loom models take loom's mutex in its place (`reactor/chan/waiters.rs`).
#[cfg(not(all(test, loom)))]
pub(crate) mod spin;
