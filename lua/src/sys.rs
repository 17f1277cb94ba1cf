//! The socket system calls, from the core's `net` layer (`cothread::net::sys`),
//! under the names the module's files use.

pub use cothread::net::sys::{
    Addr, Found, POLL_IN, POLL_OUT, Query, ResolveError, SysResult, accept, bind, close, connect, disconnect, domain,
    getsockopt, hostname, listen, lookup, max_descriptors, name, name_info, poll, pollfd, recv, recvfrom, resolve,
    resolve_numeric, resolve_strerror, reverse, send, sendto, set_nonblocking, setsockopt, shutdown, socket,
    socket_error, strerror, wall_time,
};
