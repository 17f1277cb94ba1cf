//! The system calls the faces need beyond sockets (`net::sys`): plain
//! descriptors (`fd`: files and pipes), child processes (`process`) and
//! processors (`cpu`: affinity, for pinning a loop's thread).
//! Each function is a safe wrapper: errors are errno values, and nothing
//! here keeps state.

pub mod cpu;
pub mod fd;
pub mod process;
