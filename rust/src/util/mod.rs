//! Small building blocks. `os` holds the only unsafe code of the core below `ffi`.

pub(crate) mod hash;
pub(crate) mod os;
