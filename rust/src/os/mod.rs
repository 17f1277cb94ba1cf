//! The system calls the faces need beyond sockets (`net::sys`): plain
//! descriptors (`fd`: files and pipes) and child processes (`process`).
//! Each function is a safe wrapper: errors are errno values, and nothing
//! here keeps state.

pub mod fd;
pub mod process;
