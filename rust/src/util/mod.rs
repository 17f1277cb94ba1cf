//! Small building blocks: a generational slab, the OS clock, futexes, a
//! test-only random source, intrusive chains of C-owned nodes and a
//! one-thread pointer ring (the unsafe parts of `sync`).

pub(crate) mod chain;
pub(crate) mod futex;
pub(crate) mod os;
pub(crate) mod ring;
#[cfg(any(test, fuzzing))]
pub(crate) mod rng;
pub(crate) mod slab;
