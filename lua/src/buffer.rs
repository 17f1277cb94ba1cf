//! The read buffer of sockets, files and pipes, from the core
//! (`cothread::util::buffer`).

pub use cothread::util::buffer::Buffer;
