//! Small building blocks: a pointer hasher, a generational slab, the OS clock,
//! futexes, a test-only random source, and intrusive chains of C-owned nodes (the unsafe parts of `sync`).

pub(crate) mod chain;
pub(crate) mod futex;
pub(crate) mod hash;
pub(crate) mod os;
#[cfg(test)]
pub(crate) mod rng;
pub(crate) mod slab;
