//! The system calls of the socket layer: TCP and UDP sockets (always
//! non-blocking and close-on-exec), their options and names, `poll(2)` for a
//! caller that blocks, the host name, the descriptor limit, and the error
//! texts LuaSocket uses. Name resolution is in `resolve.rs`.
//!
//! This file and `resolve.rs` hold all the unsafe code of `net`. Every call checks its result
//! and returns the `errno` of a failure (`SysResult`); calls that can be
//! interrupted are retried on `EINTR`. Each function takes plain descriptors:
//! the caller owns them (see `Socket` for an owner).

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_int};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};
use std::os::fd::RawFd;

/// A result whose error is an `errno` value.
pub type SysResult<T> = Result<T, c_int>;

pub(super) fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

fn check(r: c_int) -> SysResult<c_int> {
    if r < 0 { Err(errno()) } else { Ok(r) }
}

/// `r` from a call that returns a byte count (`-1` on failure), retried by
/// `call` again while it fails with `EINTR`.
fn retry(mut call: impl FnMut() -> isize) -> SysResult<usize> {
    loop {
        let r = call();
        if r >= 0 {
            return Ok(r as usize);
        }
        match errno() {
            libc::EINTR => continue,
            e => return Err(e),
        }
    }
}

/// A socket address, IPv4 or IPv6, as the kernel takes it.
#[derive(Clone, Copy)]
pub struct Addr {
    pub(super) storage: libc::sockaddr_storage,
    pub(super) len: libc::socklen_t,
}

impl Addr {
    /// A zeroed address of the storage's full length, for the kernel to fill.
    pub(super) fn empty() -> Addr {
        // SAFETY: sockaddr_storage is a C struct of integers and byte arrays:
        // every bit pattern, all zeroes included, is a valid value of it.
        let storage = unsafe { std::mem::zeroed() };
        Addr { storage, len: std::mem::size_of::<libc::sockaddr_storage>() as _ }
    }

    /// The address of `a`.
    pub fn new(a: SocketAddr) -> Addr {
        let mut out = Addr::empty();
        let p = (&mut out.storage as *mut libc::sockaddr_storage).cast::<u8>();
        match a {
            SocketAddr::V4(v4) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: v4.port().to_be(),
                    sin_addr: libc::in_addr { s_addr: u32::from(*v4.ip()).to_be() },
                    sin_zero: [0; 8],
                };
                let n = std::mem::size_of::<libc::sockaddr_in>();
                // SAFETY: sockaddr_storage is larger than any sockaddr, so the
                // sockaddr_in's bytes fit at its start; the two do not overlap
                // (one is a local).
                unsafe { std::ptr::copy_nonoverlapping((&sin as *const libc::sockaddr_in).cast::<u8>(), p, n) };
                out.len = n as _;
            }
            SocketAddr::V6(v6) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: v6.port().to_be(),
                    sin6_flowinfo: v6.flowinfo().to_be(),
                    sin6_addr: libc::in6_addr { s6_addr: v6.ip().octets() },
                    sin6_scope_id: v6.scope_id(),
                };
                let n = std::mem::size_of::<libc::sockaddr_in6>();
                // SAFETY: as for IPv4: a sockaddr_in6 (28 bytes) fits in the
                // storage (128 bytes), and a local does not overlap it.
                unsafe { std::ptr::copy_nonoverlapping((&sin6 as *const libc::sockaddr_in6).cast::<u8>(), p, n) };
                out.len = n as _;
            }
        }
        out
    }

    /// A copy of the `len` bytes at `p`, an address of any family (IPv4,
    /// IPv6, Unix) as C passes it. `None` if `len` is below a family field
    /// or above the storage's size.
    ///
    /// # Safety
    /// `p` is readable for `len` bytes.
    pub unsafe fn from_raw(p: *const u8, len: usize) -> Option<Addr> {
        let max = std::mem::size_of::<libc::sockaddr_storage>();
        if p.is_null() || len < std::mem::size_of::<libc::sa_family_t>() || len > max {
            return None;
        }
        let mut out = Addr::empty();
        // SAFETY: `p` is readable for `len` bytes (the caller's duty), `len`
        // fits in the storage (checked above), and a local does not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(p, (&mut out.storage as *mut libc::sockaddr_storage).cast::<u8>(), len)
        };
        out.len = len as libc::socklen_t;
        Some(out)
    }

    /// Its bytes as the kernel takes them (`len` of the storage).
    pub fn as_bytes(&self) -> &[u8] {
        let n = (self.len as usize).min(std::mem::size_of::<libc::sockaddr_storage>());
        // SAFETY: the storage is a plain C struct of `size_of` bytes, all
        // initialised (zeroed by `empty`, then written); `n` is within it.
        unsafe { std::slice::from_raw_parts(self.as_ptr().cast::<u8>(), n) }
    }

    /// `AF_INET`, `AF_INET6` or `AF_UNIX`.
    pub fn family(&self) -> c_int {
        self.storage.ss_family as c_int
    }

    pub(super) fn as_ptr(&self) -> *const libc::sockaddr {
        (&self.storage as *const libc::sockaddr_storage).cast()
    }

    /// The address as the standard library's, `None` for another family.
    pub fn to_socket_addr(&self) -> Option<SocketAddr> {
        match self.family() {
            libc::AF_INET => {
                // SAFETY: the family field says the kernel (or `new`) wrote a
                // sockaddr_in at the start of the storage, which is aligned
                // for any sockaddr type and larger than it.
                let a = unsafe { &*(self.as_ptr() as *const libc::sockaddr_in) };
                let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
                Some(SocketAddr::new(IpAddr::V4(ip), u16::from_be(a.sin_port)))
            }
            libc::AF_INET6 => {
                // SAFETY: as above, for the family AF_INET6 and a sockaddr_in6.
                let a = unsafe { &*(self.as_ptr() as *const libc::sockaddr_in6) };
                let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
                let port = u16::from_be(a.sin6_port);
                Some(SocketAddr::V6(SocketAddrV6::new(ip, port, u32::from_be(a.sin6_flowinfo), a.sin6_scope_id)))
            }
            _ => None,
        }
    }

    /// The numeric host and the port (an empty host and 0 for another family).
    pub fn host_port(&self) -> (String, u16) {
        self.to_socket_addr().map_or((String::new(), 0), |a| (a.ip().to_string(), a.port()))
    }
}

impl std::fmt::Debug for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.to_socket_addr() {
            Some(a) => write!(f, "Addr({a})"),
            None => write!(f, "Addr(family {})", self.family()),
        }
    }
}

/// This machine's host name.
pub fn hostname() -> SysResult<CString> {
    let mut buf = [0 as libc::c_char; 257];
    // SAFETY: `buf` is writable for the length passed, one less than its
    // size, so its last byte stays 0 even if the name is truncated.
    check(unsafe { libc::gethostname(buf.as_mut_ptr(), buf.len() - 1) })?;
    // SAFETY: `buf` ends with a 0 byte (see above): a C string within it.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_owned())
}

/// A new non-blocking, close-on-exec socket of `family` and `socktype`
/// (`SOCK_STREAM`: TCP, `SOCK_DGRAM`: UDP).
pub fn socket(family: c_int, socktype: c_int) -> SysResult<RawFd> {
    // SAFETY: socket(2) takes integers only and its result is checked.
    check(unsafe { libc::socket(family, socktype | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) })
}

/// A pair of connected non-blocking, close-on-exec `AF_UNIX` stream sockets.
pub fn socketpair() -> SysResult<(RawFd, RawFd)> {
    let mut fds = [-1 as c_int; 2];
    let kind = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: `fds` is writable for the two descriptors socketpair stores.
    check(unsafe { libc::socketpair(libc::AF_UNIX, kind, 0, fds.as_mut_ptr()) })?;
    Ok((fds[0], fds[1]))
}

/// Closes a descriptor (errors, even EINTR, leave it closed on Linux).
pub fn close(fd: RawFd) {
    // SAFETY: the caller owns `fd` and forgets it after this call, so no
    // other owner closes the same number (or a reuse of it) again.
    unsafe { libc::close(fd) };
}

/// Binds `fd` to `addr`.
pub fn bind(fd: RawFd, addr: &Addr) -> SysResult<()> {
    // SAFETY: `addr` points to `len` initialised bytes of its storage.
    check(unsafe { libc::bind(fd, addr.as_ptr(), addr.len) }).map(drop)
}

/// Makes `fd` a listening socket with a queue of `backlog` connections.
pub fn listen(fd: RawFd, backlog: c_int) -> SysResult<()> {
    // SAFETY: listen(2) takes integers only and its result is checked.
    check(unsafe { libc::listen(fd, backlog) }).map(drop)
}

/// Starts connecting; `Err(EINPROGRESS)` when the connection goes on.
pub fn connect(fd: RawFd, addr: &Addr) -> SysResult<()> {
    loop {
        // SAFETY: `addr` points to `len` initialised bytes, read by the call only.
        match check(unsafe { libc::connect(fd, addr.as_ptr(), addr.len) }) {
            Err(libc::EINTR) => continue,
            r => return r.map(drop),
        }
    }
}

/// Accepts a connection as a non-blocking, close-on-exec socket.
pub fn accept(fd: RawFd) -> SysResult<RawFd> {
    loop {
        let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
        // SAFETY: null address and length pointers are allowed: accept4 then
        // does not report the peer.
        let r = unsafe { libc::accept4(fd, std::ptr::null_mut(), std::ptr::null_mut(), flags) };
        match check(r) {
            // A connection reset before it was accepted: take the next one.
            Err(libc::EINTR) | Err(libc::ECONNABORTED) => continue,
            r => return r,
        }
    }
}

/// Sends what it can of `data`, never raising SIGPIPE.
pub fn send(fd: RawFd, data: &[u8]) -> SysResult<usize> {
    // SAFETY: `data` is readable for its length, the count passed.
    retry(|| unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL) })
}

/// Receives at most `max` bytes, appended to `buf`; `Ok(0)` at the end of
/// the stream. Into `buf`'s spare capacity when it has `max`; otherwise
/// through a per-thread scratch vector, so `buf` grows only by what came.
pub fn recv(fd: RawFd, buf: &mut Vec<u8>, max: usize) -> SysResult<usize> {
    if buf.capacity() - buf.len() >= max {
        return recv_spare(fd, buf, max);
    }
    // Not room for `max`: read into the thread's scratch vector and append
    // only what came, so a connection holding a few bytes of an unfinished
    // message does not keep a `max`-byte buffer.
    thread_local! {
        static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    SCRATCH.with_borrow_mut(|scratch| {
        scratch.clear();
        let n = recv_spare(fd, scratch, max)?;
        buf.extend_from_slice(&scratch[..n]);
        Ok(n)
    })
}

/// `recv` into the spare capacity of `buf` (reserving `max` first).
fn recv_spare(fd: RawFd, buf: &mut Vec<u8>, max: usize) -> SysResult<usize> {
    buf.reserve(max);
    let len = buf.len();
    // SAFETY: `reserve` left at least `max` bytes of spare capacity after
    // `len`, and recv writes at most `max`.
    let n = retry(|| unsafe { libc::recv(fd, buf.as_mut_ptr().add(len).cast(), max, 0) })?;
    // SAFETY: recv initialised the `n <= max` bytes after `len`, which are
    // within the capacity.
    unsafe { buf.set_len(len + n) };
    Ok(n)
}

/// Receives at most `out.len()` bytes straight into `out`; `Ok(0)` at the
/// end of the stream.
pub fn recv_into(fd: RawFd, out: &mut [u8]) -> SysResult<usize> {
    // SAFETY: `out` is writable for its length, the count passed.
    retry(|| unsafe { libc::recv(fd, out.as_mut_ptr().cast(), out.len(), 0) })
}

/// Peeks at the socket: 1 if a byte is there, 0 at the end of the stream;
/// nothing is consumed.
pub fn peek(fd: RawFd) -> SysResult<usize> {
    let mut b = 0u8;
    // SAFETY: `b` is writable for the 1 byte passed.
    retry(|| unsafe { libc::recv(fd, (&mut b as *mut u8).cast(), 1, libc::MSG_PEEK) })
}

/// Receives one datagram straight into `out` (the rest of a longer one is
/// dropped): its length and its sender.
pub fn recvfrom_into(fd: RawFd, out: &mut [u8]) -> SysResult<(usize, Addr)> {
    let mut a = Addr::empty();
    let p = (&mut a.storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr>();
    let len = &mut a.len as *mut libc::socklen_t;
    // SAFETY: `out` is writable for its length, the count passed; `p` is
    // writable for `*len` bytes (the whole storage) and `len` is updated in
    // place; both point into the local `a`.
    let n = retry(|| unsafe { libc::recvfrom(fd, out.as_mut_ptr().cast(), out.len(), 0, p, len) })?;
    Ok((n, a))
}

/// Dissolves the association of a connected UDP socket (`connect` to an
/// `AF_UNSPEC` address).
pub fn disconnect(fd: RawFd) -> SysResult<()> {
    let mut a = Addr::empty();
    a.storage.ss_family = libc::AF_UNSPEC as libc::sa_family_t;
    a.len = std::mem::size_of::<libc::sa_family_t>() as libc::socklen_t;
    // SAFETY: `a` is a local whose first `len` bytes (the family) are set.
    match check(unsafe { libc::connect(fd, a.as_ptr(), a.len) }) {
        Err(libc::EAFNOSUPPORT) => Ok(()), // some kernels answer this, yet dissolve it
        r => r.map(drop),
    }
}

/// Sends one datagram to `addr` (None: the connected peer).
pub fn sendto(fd: RawFd, data: &[u8], addr: Option<&Addr>) -> SysResult<usize> {
    let (p, len) = addr.map_or((std::ptr::null(), 0), |a| (a.as_ptr(), a.len));
    // SAFETY: `data` is readable for its length; `p` is null with length 0,
    // or points to `len` initialised bytes of the borrowed address.
    retry(|| unsafe { libc::sendto(fd, data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL, p, len) })
}

/// Receives one datagram into `buf` (replacing its contents; at most `max`
/// bytes, the rest of a longer datagram is dropped); returns its sender.
pub fn recvfrom(fd: RawFd, buf: &mut Vec<u8>, max: usize) -> SysResult<Addr> {
    buf.clear();
    buf.reserve(max);
    let mut a = Addr::empty();
    let p = (&mut a.storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr>();
    let len = &mut a.len as *mut libc::socklen_t;
    // SAFETY: the spare capacity holds at least `max` bytes and recvfrom
    // writes at most that many; `p` is writable for `*len` bytes (the whole
    // storage) and `len` is updated in place; both point into the local `a`.
    let n = retry(|| unsafe { libc::recvfrom(fd, buf.as_mut_ptr().cast(), max, 0, p, len) })?;
    // SAFETY: recvfrom initialised `n <= max` bytes from the start.
    unsafe { buf.set_len(n) };
    Ok(a)
}

/// Shuts down reading (`SHUT_RD`), writing (`SHUT_WR`) or both.
pub fn shutdown(fd: RawFd, how: c_int) -> SysResult<()> {
    // SAFETY: shutdown(2) takes integers only and its result is checked.
    check(unsafe { libc::shutdown(fd, how) }).map(drop)
}

/// The pending error of a socket (`SO_ERROR`, cleared by reading it), 0 for
/// none; the errno of `getsockopt` itself if that fails.
pub fn socket_error(fd: RawFd) -> c_int {
    let mut v = [0u8; 4];
    match getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, &mut v) {
        Ok(_) => c_int::from_ne_bytes(v),
        Err(e) => e,
    }
}

/// Sets an option from raw bytes (an int or a `linger`).
pub fn setsockopt(fd: RawFd, level: c_int, name: c_int, value: &[u8]) -> SysResult<()> {
    let len = value.len() as libc::socklen_t;
    // SAFETY: `value` is readable for `len` bytes, the length passed.
    check(unsafe { libc::setsockopt(fd, level, name, value.as_ptr().cast(), len) }).map(drop)
}

/// Reads an option into `value` (an int or a `linger`); returns its length.
pub fn getsockopt(fd: RawFd, level: c_int, name: c_int, value: &mut [u8]) -> SysResult<usize> {
    let mut len = value.len() as libc::socklen_t;
    // SAFETY: `value` is writable for `len` bytes, and getsockopt writes at
    // most that many, storing the real length back into the local `len`.
    check(unsafe { libc::getsockopt(fd, level, name, value.as_mut_ptr().cast(), &mut len) })?;
    Ok(len as usize)
}

/// The local (`peer` false) or remote address of a socket.
pub fn name(fd: RawFd, peer: bool) -> SysResult<Addr> {
    let mut a = Addr::empty();
    let p = (&mut a.storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr>();
    // SAFETY: `p` is writable for `a.len` bytes (the whole storage), and the
    // call stores the address's real length back into `a.len`.
    let r = unsafe { if peer { libc::getpeername(fd, p, &mut a.len) } else { libc::getsockname(fd, p, &mut a.len) } };
    check(r).map(|_| a)
}

/// Readiness asked of `poll`: readable.
pub const POLL_IN: i16 = libc::POLLIN;
/// Readiness asked of `poll`: writable.
pub const POLL_OUT: i16 = libc::POLLOUT;

/// Waits up to `timeout_ms` (-1: forever) for readiness of `fds`; sets each
/// entry's `revents`. Returns how many are ready. An interruption counts as
/// nothing ready.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: c_int) -> SysResult<usize> {
    // SAFETY: `fds` is a slice of pollfd, writable for the count passed.
    match check(unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) }) {
        Ok(n) => Ok(n as usize),
        Err(libc::EINTR) => Ok(0),
        Err(e) => Err(e),
    }
}

/// A `pollfd` for `fd` and `events`.
pub fn pollfd(fd: RawFd, events: i16) -> libc::pollfd {
    libc::pollfd { fd, events, revents: 0 }
}

/// LuaSocket's message for `errno` (its `socket_strerror`): a few fixed
/// strings, otherwise the C library's.
pub fn strerror(e: c_int) -> &'static CStr {
    match e {
        libc::EADDRINUSE => c"address already in use",
        libc::EISCONN => c"already connected",
        libc::EACCES => c"permission denied",
        libc::ECONNREFUSED => c"connection refused",
        libc::ECONNABORTED | libc::ECONNRESET | libc::EPIPE => c"closed",
        libc::ETIMEDOUT => c"timeout",
        _ => {
            // SAFETY: glibc's strerror returns a pointer into its static table
            // for known codes, or into a thread-local buffer for others; either
            // stays valid until this thread's next strerror call, and callers
            // copy the text (into Lua) before making another.
            unsafe { CStr::from_ptr(libc::strerror(e)) }
        }
    }
}

/// Wall-clock seconds since the epoch (LuaSocket's `gettime`).
pub fn wall_time() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// Makes `fd` non-blocking (a descriptor handed in from outside).
pub fn set_nonblocking(fd: RawFd) -> SysResult<()> {
    // SAFETY: fcntl(F_GETFL) takes integers only; the result is checked.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: fcntl(F_SETFL) takes the flags as an integer; checked.
    check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) }).map(drop)
}

/// Ignores SIGPIPE if its action is the default (which ends the process)
/// and this thread does not block it. A library that writes to sockets
/// with plain `write(2)` (OpenSSL under LuaSec) would otherwise kill the
/// process on a peer's reset, where `send` here passes `MSG_NOSIGNAL`.
/// A handler, an ignore, or a block (a signalfd reading SIGPIPE) set by
/// someone else is left alone. Answers whether it changed the action.
pub fn ignore_sigpipe() -> bool {
    // SAFETY: an all-zero sigset_t is a valid value to be overwritten.
    let mut mask: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: a null new set only reads the mask into `mask`, a local.
    let blocked = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask) } == 0
        // SAFETY: `mask` was filled by pthread_sigmask just above.
        && unsafe { libc::sigismember(&mask, libc::SIGPIPE) } == 1;
    if blocked {
        return false;
    }
    // SAFETY: an all-zero sigaction is a valid value for sigaction to fill.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads SIGPIPE's action into `old`.
    if unsafe { libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) } != 0 || old.sa_sigaction != libc::SIG_DFL {
        return false;
    }
    // SAFETY: SIG_IGN needs no handler code; signal() takes integers only.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) != libc::SIG_ERR }
}

/// The address family of socket `fd` (`SO_DOMAIN`).
pub fn domain(fd: RawFd) -> SysResult<c_int> {
    int_option(fd, libc::SO_DOMAIN)
}

/// The type of socket `fd` (`SO_TYPE`: `SOCK_STREAM`, `SOCK_DGRAM`, ...);
/// `ENOTSOCK` for a descriptor that is not a socket, `EBADF` for one not open.
pub fn socktype(fd: RawFd) -> SysResult<c_int> {
    int_option(fd, libc::SO_TYPE)
}

/// An integer option of level `SOL_SOCKET`.
fn int_option(fd: RawFd, name: c_int) -> SysResult<c_int> {
    let mut v = [0u8; 4];
    getsockopt(fd, libc::SOL_SOCKET, name, &mut v)?;
    Ok(c_int::from_ne_bytes(v))
}

/// How many descriptors this process may have open (the soft
/// `RLIMIT_NOFILE`; `c_int::MAX` if unlimited or unknown).
pub fn max_descriptors() -> i64 {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `r` is a local rlimit, writable, which getrlimit fills.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY {
        return c_int::MAX as i64;
    }
    r.rlim_cur.min(c_int::MAX as libc::rlim_t) as i64
}

#[cfg(test)]
mod tests {
    //! Each wrapper's failure path, on loopback and local descriptors only
    //! (no lookup leaves the machine: names are numeric).

    use super::*;

    /// A descriptor number nothing has open.
    const BAD: RawFd = 1_000_000;

    fn local(port: u16) -> Addr {
        Addr::new(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    /// A TCP socket listening on a free loopback port, and its address.
    fn listener() -> (RawFd, Addr) {
        let fd = socket(libc::AF_INET, libc::SOCK_STREAM).unwrap();
        bind(fd, &local(0)).unwrap();
        listen(fd, 8).unwrap();
        (fd, name(fd, false).unwrap())
    }

    #[test]
    fn addresses_round_trip() {
        for a in ["127.0.0.1:80", "[::1]:8080", "[fe80::1%3]:1"] {
            let a: SocketAddr = a.parse().unwrap();
            assert_eq!(Addr::new(a).to_socket_addr(), Some(a));
        }
        assert_eq!(local(7).host_port(), ("127.0.0.1".to_string(), 7));
        assert_eq!(Addr::new("[::1]:9".parse().unwrap()).family(), libc::AF_INET6);
        assert_eq!(Addr::empty().to_socket_addr(), None);
        assert_eq!(Addr::empty().host_port(), (String::new(), 0));
        let v6 = Addr::new("[::1]:9".parse().unwrap());
        let b = v6.as_bytes();
        // SAFETY: `b` is readable for its length.
        let copy = unsafe { Addr::from_raw(b.as_ptr(), b.len()) }.unwrap();
        assert_eq!(copy.to_socket_addr(), v6.to_socket_addr());
        let wide = [0u8; 4096];
        // SAFETY: `b` is readable for its length, which covers the 1 byte.
        assert!(unsafe { Addr::from_raw(b.as_ptr(), 1) }.is_none(), "shorter than a family");
        // SAFETY: `wide` is readable for all its 4096 bytes.
        assert!(unsafe { Addr::from_raw(wide.as_ptr(), wide.len()) }.is_none(), "longer than any address");
    }

    #[test]
    fn sockets_fail_with_the_kernels_errno() {
        assert_eq!(socket(12345, libc::SOCK_STREAM), Err(libc::EAFNOSUPPORT));
        assert_eq!(bind(BAD, &local(0)), Err(libc::EBADF));
        assert_eq!(listen(BAD, 1), Err(libc::EBADF));
        assert_eq!(connect(BAD, &local(1)), Err(libc::EBADF));
        assert_eq!(accept(BAD), Err(libc::EBADF));
        assert_eq!(send(BAD, b"x"), Err(libc::EBADF));
        assert_eq!(recv(BAD, &mut Vec::new(), 10), Err(libc::EBADF));
        assert_eq!(sendto(BAD, b"x", None).err(), Some(libc::EBADF));
        assert_eq!(recvfrom(BAD, &mut Vec::new(), 10).err(), Some(libc::EBADF));
        assert_eq!(shutdown(BAD, libc::SHUT_RDWR), Err(libc::EBADF));
        assert_eq!(socket_error(BAD), libc::EBADF);
        assert_eq!(setsockopt(BAD, libc::SOL_SOCKET, libc::SO_REUSEADDR, &1i32.to_ne_bytes()), Err(libc::EBADF));
        assert_eq!(getsockopt(BAD, libc::SOL_SOCKET, libc::SO_REUSEADDR, &mut [0; 4]), Err(libc::EBADF));
        assert_eq!(name(BAD, false).err(), Some(libc::EBADF));
        assert_eq!(set_nonblocking(BAD), Err(libc::EBADF));
        assert_eq!(domain(BAD), Err(libc::EBADF));
        assert_eq!(disconnect(BAD), Err(libc::EBADF));
    }

    #[test]
    fn misuse_of_a_real_socket_is_refused() {
        let (srv, addr) = listener();
        let other = socket(libc::AF_INET, libc::SOCK_STREAM).unwrap();
        assert_eq!(bind(other, &addr), Err(libc::EADDRINUSE));
        assert_eq!(accept(srv), Err(libc::EAGAIN), "nobody connects: non-blocking");
        assert_eq!(accept(other), Err(libc::EINVAL), "not listening");
        assert_eq!(send(other, b"x"), Err(libc::EPIPE), "not connected, and no SIGPIPE");
        assert_eq!(recv(other, &mut Vec::new(), 1), Err(libc::ENOTCONN));
        assert_eq!(shutdown(other, libc::SHUT_RDWR), Err(libc::ENOTCONN));
        assert_eq!(name(other, true).err(), Some(libc::ENOTCONN));
        assert_eq!(setsockopt(other, libc::SOL_SOCKET, 9999, &[0; 4]), Err(libc::ENOPROTOOPT));
        assert_eq!(getsockopt(other, libc::SOL_SOCKET, 9999, &mut [0; 4]), Err(libc::ENOPROTOOPT));
        assert_eq!(domain(other), Ok(libc::AF_INET));
        assert_eq!(socket_error(other), 0);
        let udp = socket(libc::AF_INET, libc::SOCK_DGRAM).unwrap();
        assert_eq!(listen(udp, 1), Err(libc::EOPNOTSUPP));
        assert_eq!(recvfrom(udp, &mut Vec::new(), 10).err(), Some(libc::EAGAIN));
        assert_eq!(disconnect(udp), Ok(()));
        for fd in [srv, other, udp] {
            close(fd);
        }
    }

    #[test]
    fn a_refused_connection_reports_econnrefused() {
        let (srv, addr) = listener();
        close(srv); // nobody listens there now
        let fd = socket(libc::AF_INET, libc::SOCK_STREAM).unwrap();
        match connect(fd, &addr) {
            Err(libc::ECONNREFUSED) => {}
            Err(libc::EINPROGRESS) => {
                let mut fds = [pollfd(fd, POLL_OUT)];
                assert_eq!(poll(&mut fds, 5000), Ok(1));
                assert_eq!(socket_error(fd), libc::ECONNREFUSED);
            }
            r => panic!("connect to a closed port: {r:?}"),
        }
        close(fd);
    }

    #[test]
    fn bytes_and_datagrams_go_through() {
        let (a, b) = socketpair().unwrap();
        assert_eq!(send(a, b"hello"), Ok(5));
        let mut buf = b"> ".to_vec();
        assert_eq!(recv(b, &mut buf, 64), Ok(5));
        assert_eq!(buf, b"> hello", "appended after what was there");
        assert_eq!(recv(b, &mut buf, 64), Err(libc::EAGAIN));
        close(a);
        assert_eq!(recv(b, &mut buf, 64), Ok(0), "the end of the stream");
        close(b);

        let u1 = socket(libc::AF_INET, libc::SOCK_DGRAM).unwrap();
        let u2 = socket(libc::AF_INET, libc::SOCK_DGRAM).unwrap();
        bind(u1, &local(0)).unwrap();
        bind(u2, &local(0)).unwrap();
        let to = name(u2, false).unwrap();
        assert_eq!(sendto(u1, b"datagram", Some(&to)), Ok(8));
        let mut fds = [pollfd(u2, POLL_IN)];
        assert_eq!(poll(&mut fds, 5000), Ok(1));
        let from = recvfrom(u2, &mut buf, 4).unwrap();
        assert_eq!(buf, b"data", "truncated to max, the rest dropped");
        assert_eq!(from.to_socket_addr(), name(u1, false).unwrap().to_socket_addr());
        close(u1);
        close(u2);
    }

    #[test]
    fn poll_reports_bad_descriptors_and_times_out() {
        let mut fds = [pollfd(BAD, POLL_IN)];
        assert_eq!(poll(&mut fds, 0), Ok(1));
        assert_eq!(fds[0].revents, libc::POLLNVAL);
        let (a, b) = socketpair().unwrap();
        let mut fds = [pollfd(a, POLL_IN)];
        assert_eq!(poll(&mut fds, 10), Ok(0), "nothing to read");
        close(a);
        close(b);
    }

    #[test]
    fn the_machine_has_a_name_and_a_descriptor_limit() {
        assert!(!hostname().unwrap().to_bytes().is_empty());
        assert!(max_descriptors() > 2);
    }

    #[test]
    fn an_ignored_sigpipe_is_left_alone() {
        // Rust's runtime ignores SIGPIPE before main: nothing to change.
        assert!(!ignore_sigpipe());
        // SAFETY: a null new action only reads SIGPIPE's action.
        let old = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old);
            old
        };
        assert_eq!(old.sa_sigaction, libc::SIG_IGN);
    }

    #[test]
    fn luasocket_fixed_texts() {
        for (e, text) in [
            (libc::EADDRINUSE, "address already in use"),
            (libc::EISCONN, "already connected"),
            (libc::EACCES, "permission denied"),
            (libc::ECONNREFUSED, "connection refused"),
            (libc::ECONNABORTED, "closed"),
            (libc::ECONNRESET, "closed"),
            (libc::EPIPE, "closed"),
            (libc::ETIMEDOUT, "timeout"),
        ] {
            assert_eq!(strerror(e).to_str().unwrap(), text);
        }
        assert_eq!(strerror(libc::EBADF).to_str().unwrap(), "Bad file descriptor", "the C library's");
    }
}
