//! Small building blocks: a pointer hasher, a generational slab, the OS clock
//! (the one unsafe call here).

pub(crate) mod hash;
pub(crate) mod os;
pub(crate) mod slab;
