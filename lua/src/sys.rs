//! The socket system calls, from the core's `net` layer (`cothread::net::sys` and `resolve`),
//! under the names the module's files use.

pub use cothread::net::resolve::{
    Found, Query, ResolveError, lookup, name_info, resolve, resolve_numeric, resolve_strerror, reverse,
};
pub use cothread::net::sys::{
    Addr, POLL_IN, POLL_OUT, SysResult, accept, bind, close, connect, disconnect, domain, getsockopt, hostname,
    ignore_sigpipe, listen, max_descriptors, name, poll, pollfd, recv, recvfrom, send, sendto, set_nonblocking,
    setsockopt, shutdown, socket, socket_error, strerror, wall_time,
};
