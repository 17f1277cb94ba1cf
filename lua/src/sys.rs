//! The system calls of the socket layer: TCP and UDP sockets (always
//! non-blocking and close-on-exec), name resolution, `poll(2)` for the
//! blocking mode, and the error strings LuaSocket uses. This file holds the crate's only calls into
//! libc; each checks its result and returns the `errno` of a failure.

use std::ffi::{CStr, CString, c_int};
use std::os::fd::RawFd;

/// A result whose error is an `errno` value.
pub type SysResult<T> = Result<T, c_int>;

fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

fn check(r: c_int) -> SysResult<c_int> {
    if r < 0 { Err(errno()) } else { Ok(r) }
}

/// A socket address (IPv4 or IPv6).
#[derive(Clone, Copy)]
pub struct Addr {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl Addr {
    fn empty() -> Addr {
        // SAFETY: sockaddr_storage is plain data; all zeroes is a valid value.
        Addr { storage: unsafe { std::mem::zeroed() }, len: std::mem::size_of::<libc::sockaddr_storage>() as _ }
    }

    /// `AF_INET` or `AF_INET6`.
    pub fn family(&self) -> c_int {
        self.storage.ss_family as c_int
    }

    fn as_ptr(&self) -> *const libc::sockaddr {
        (&self.storage as *const libc::sockaddr_storage).cast()
    }

    /// The numeric host and the port.
    pub fn host_port(&self) -> (String, u16) {
        match self.family() {
            libc::AF_INET => {
                // SAFETY: the family says the storage holds a sockaddr_in.
                let a = unsafe { &*(self.as_ptr() as *const libc::sockaddr_in) };
                let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
                (ip.to_string(), u16::from_be(a.sin_port))
            }
            libc::AF_INET6 => {
                // SAFETY: the family says the storage holds a sockaddr_in6.
                let a = unsafe { &*(self.as_ptr() as *const libc::sockaddr_in6) };
                let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
                (ip.to_string(), u16::from_be(a.sin6_port))
            }
            _ => (String::new(), 0),
        }
    }
}

/// A failed name resolution: a `getaddrinfo` code (`EAI_*`), or an errno for
/// `EAI_SYSTEM`.
#[derive(Clone, Copy, Debug)]
pub enum ResolveError {
    Gai(c_int),
    Sys(c_int),
}

/// What `lookup` asks `getaddrinfo`.
#[derive(Clone, Copy)]
pub struct Query {
    /// `AF_INET`, `AF_INET6` or `AF_UNSPEC` (any).
    pub family: c_int,
    /// `SOCK_STREAM` or `SOCK_DGRAM`.
    pub socktype: c_int,
    /// `AI_*` flags (`AI_PASSIVE`, `AI_NUMERICHOST`, `AI_CANONNAME`, ...).
    pub flags: c_int,
}

/// What `lookup` found: the addresses, and the canonical name if asked.
pub struct Found {
    pub addrs: Vec<Addr>,
    pub canon: Option<CString>,
}

/// Resolves `host` (None: the wildcard address of a passive lookup) and
/// `port` (None: no port) as `q` says. Blocking: it reads /etc/hosts and may
/// ask DNS. Thread-safe: the DNS module calls it on pool threads.
pub fn lookup(host: Option<&CStr>, port: Option<&CStr>, q: Query) -> Result<Found, ResolveError> {
    // SAFETY: `hints` is zeroed plain data; getaddrinfo writes `res`, which is
    // read only on success and freed once with freeaddrinfo; each entry's
    // ai_addr points to ai_addrlen valid bytes (at most a sockaddr_storage),
    // and ai_canonname, when set, is a C string.
    unsafe {
        let mut hints: libc::addrinfo = std::mem::zeroed();
        hints.ai_family = q.family;
        hints.ai_socktype = q.socktype;
        hints.ai_flags = q.flags;
        let mut res: *mut libc::addrinfo = std::ptr::null_mut();
        let h = host.map_or(std::ptr::null(), CStr::as_ptr);
        let p = port.map_or(std::ptr::null(), CStr::as_ptr);
        let r = libc::getaddrinfo(h, p, &hints, &mut res);
        if r != 0 {
            return Err(if r == libc::EAI_SYSTEM { ResolveError::Sys(errno()) } else { ResolveError::Gai(r) });
        }
        let mut out = Found { addrs: Vec::new(), canon: None };
        if !res.is_null() && !(*res).ai_canonname.is_null() {
            out.canon = Some(CStr::from_ptr((*res).ai_canonname).to_owned());
        }
        let mut ai = res;
        while !ai.is_null() {
            let a = &*ai;
            let fam = a.ai_family;
            if (fam == libc::AF_INET || fam == libc::AF_INET6)
                && (a.ai_addrlen as usize) <= std::mem::size_of::<libc::sockaddr_storage>()
            {
                let mut addr = Addr::empty();
                std::ptr::copy_nonoverlapping(
                    a.ai_addr as *const u8,
                    (&mut addr.storage as *mut libc::sockaddr_storage).cast::<u8>(),
                    a.ai_addrlen as usize,
                );
                addr.len = a.ai_addrlen;
                out.addrs.push(addr);
            }
            ai = a.ai_next;
        }
        libc::freeaddrinfo(res);
        Ok(out)
    }
}

/// Resolves `host` (None: the wildcard address of a passive lookup) and
/// `port` for a socket of `family` (`AF_UNSPEC` for any) and `socktype`.
pub fn resolve(
    host: Option<&CStr>,
    port: &CStr,
    family: c_int,
    socktype: c_int,
    passive: bool,
) -> Result<Vec<Addr>, ResolveError> {
    let flags = if passive { libc::AI_PASSIVE } else { 0 };
    lookup(host, Some(port), Query { family, socktype, flags }).map(|f| f.addrs)
}

/// Resolves a numeric `host` and `port` (LuaSocket's `sendto`): no lookup.
pub fn resolve_numeric(host: &CStr, port: &CStr, family: c_int) -> Result<Vec<Addr>, ResolveError> {
    let q = Query { family, socktype: libc::SOCK_DGRAM, flags: libc::AI_NUMERICHOST | libc::AI_NUMERICSERV };
    lookup(Some(host), Some(port), q).map(|f| f.addrs)
}

/// The host name of `addr` (`getnameinfo` with `NI_NAMEREQD`). Blocking.
pub fn reverse(addr: &Addr) -> Result<CString, ResolveError> {
    let mut host = [0 as libc::c_char; libc::NI_MAXHOST as usize];
    // SAFETY: `addr` points to `len` valid bytes, `host` is valid for its
    // length, and getnameinfo NUL-terminates what it writes on success.
    unsafe {
        let r = libc::getnameinfo(
            addr.as_ptr(),
            addr.len,
            host.as_mut_ptr(),
            host.len() as libc::socklen_t,
            std::ptr::null_mut(),
            0,
            libc::NI_NAMEREQD,
        );
        if r != 0 {
            return Err(if r == libc::EAI_SYSTEM { ResolveError::Sys(errno()) } else { ResolveError::Gai(r) });
        }
        Ok(CStr::from_ptr(host.as_ptr()).to_owned())
    }
}

/// The numeric-or-named host and the service of `addr`, as `getnameinfo`
/// (no flags) gives them; each only if asked, empty if it fails. Blocking.
pub fn name_info(addr: &Addr, host: bool, serv: bool) -> (CString, CString) {
    let mut h = [0 as libc::c_char; libc::NI_MAXHOST as usize];
    let mut s = [0 as libc::c_char; 32]; // NI_MAXSERV
    // SAFETY: `addr` points to `len` valid bytes; each buffer is valid for the
    // length passed (0: not asked), and stays NUL-terminated (zeroed, and
    // getnameinfo NUL-terminates what it writes).
    unsafe {
        libc::getnameinfo(
            addr.as_ptr(),
            addr.len,
            h.as_mut_ptr(),
            if host { h.len() as libc::socklen_t } else { 0 },
            s.as_mut_ptr(),
            if serv { s.len() as libc::socklen_t } else { 0 },
            0,
        );
        (CStr::from_ptr(h.as_ptr()).to_owned(), CStr::from_ptr(s.as_ptr()).to_owned())
    }
}

/// This machine's host name.
pub fn hostname() -> SysResult<CString> {
    let mut buf = [0 as libc::c_char; 257];
    // SAFETY: `buf` is valid for its length minus one; its last byte stays 0,
    // so the result is NUL-terminated even if truncated.
    unsafe {
        check(libc::gethostname(buf.as_mut_ptr(), buf.len() - 1))?;
        Ok(CStr::from_ptr(buf.as_ptr()).to_owned())
    }
}

/// A new non-blocking, close-on-exec socket of `family` and `socktype`
/// (`SOCK_STREAM`: TCP, `SOCK_DGRAM`: UDP).
pub fn socket(family: c_int, socktype: c_int) -> SysResult<RawFd> {
    // SAFETY: integer arguments; the result is checked.
    check(unsafe { libc::socket(family, socktype | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) })
}

/// Closes a descriptor (errors, even EINTR, leave it closed on Linux).
pub fn close(fd: RawFd) {
    // SAFETY: the caller owns `fd` and forgets it after this call.
    unsafe { libc::close(fd) };
}

pub fn bind(fd: RawFd, addr: &Addr) -> SysResult<()> {
    // SAFETY: `addr` points to `len` valid bytes.
    check(unsafe { libc::bind(fd, addr.as_ptr(), addr.len) }).map(drop)
}

pub fn listen(fd: RawFd, backlog: c_int) -> SysResult<()> {
    // SAFETY: integer arguments.
    check(unsafe { libc::listen(fd, backlog) }).map(drop)
}

/// Starts connecting; `Err(EINPROGRESS)` when the connection goes on.
pub fn connect(fd: RawFd, addr: &Addr) -> SysResult<()> {
    loop {
        // SAFETY: `addr` points to `len` valid bytes.
        match check(unsafe { libc::connect(fd, addr.as_ptr(), addr.len) }) {
            Err(libc::EINTR) => continue,
            r => return r.map(drop),
        }
    }
}

/// Accepts a connection as a non-blocking, close-on-exec socket.
pub fn accept(fd: RawFd) -> SysResult<RawFd> {
    loop {
        // SAFETY: null address pointers are allowed (the peer is not wanted).
        let r = unsafe {
            libc::accept4(fd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
        };
        match check(r) {
            Err(libc::EINTR) | Err(libc::ECONNABORTED) => continue,
            r => return r,
        }
    }
}

/// Sends what it can of `data`, never raising SIGPIPE.
pub fn send(fd: RawFd, data: &[u8]) -> SysResult<usize> {
    loop {
        // SAFETY: `data` is valid for reading its length.
        let r = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL) };
        if r >= 0 {
            return Ok(r as usize);
        }
        match errno() {
            libc::EINTR => continue,
            e => return Err(e),
        }
    }
}

/// Receives into the spare capacity of `buf` (at most `max` bytes), growing
/// its length by what came; `Ok(0)` at the end of the stream.
pub fn recv(fd: RawFd, buf: &mut Vec<u8>, max: usize) -> SysResult<usize> {
    buf.reserve(max);
    let len = buf.len();
    loop {
        // SAFETY: the spare capacity is at least `max` bytes; recv writes at
        // most that many, and the length grows only by what it wrote.
        let r = unsafe { libc::recv(fd, buf.as_mut_ptr().add(len).cast(), max, 0) };
        if r >= 0 {
            // SAFETY: `r` bytes were initialised by recv.
            unsafe { buf.set_len(len + r as usize) };
            return Ok(r as usize);
        }
        match errno() {
            libc::EINTR => continue,
            e => return Err(e),
        }
    }
}

/// Dissolves the association of a connected UDP socket (`connect` to an
/// `AF_UNSPEC` address).
pub fn disconnect(fd: RawFd) -> SysResult<()> {
    let mut a = Addr::empty();
    a.storage.ss_family = libc::AF_UNSPEC as libc::sa_family_t;
    a.len = std::mem::size_of::<libc::sa_family_t>() as libc::socklen_t;
    // SAFETY: `a` points to `len` valid bytes.
    match check(unsafe { libc::connect(fd, a.as_ptr(), a.len) }) {
        Err(libc::EAFNOSUPPORT) => Ok(()), // some kernels answer this, yet dissolve it
        r => r.map(drop),
    }
}

/// Sends one datagram to `addr` (None: the connected peer).
pub fn sendto(fd: RawFd, data: &[u8], addr: Option<&Addr>) -> SysResult<usize> {
    let (p, len) = addr.map_or((std::ptr::null(), 0), |a| (a.as_ptr(), a.len));
    loop {
        // SAFETY: `data` is valid for reading its length, `p` for `len` bytes (or null).
        let r = unsafe { libc::sendto(fd, data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL, p, len) };
        if r >= 0 {
            return Ok(r as usize);
        }
        match errno() {
            libc::EINTR => continue,
            e => return Err(e),
        }
    }
}

/// Receives one datagram into `buf` (replacing its contents; at most `max`
/// bytes, the rest of a longer datagram is dropped); returns its sender.
pub fn recvfrom(fd: RawFd, buf: &mut Vec<u8>, max: usize) -> SysResult<Addr> {
    buf.clear();
    buf.reserve(max);
    let mut a = Addr::empty();
    let p = (&mut a.storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr>();
    loop {
        // SAFETY: the spare capacity is at least `max` bytes; recvfrom writes
        // at most that many, and the address into `a` (`len` updated in place).
        let r = unsafe { libc::recvfrom(fd, buf.as_mut_ptr().cast(), max, 0, p, &mut a.len) };
        if r >= 0 {
            // SAFETY: `r` bytes were initialised by recvfrom.
            unsafe { buf.set_len(r as usize) };
            return Ok(a);
        }
        match errno() {
            libc::EINTR => continue,
            e => return Err(e),
        }
    }
}

pub fn shutdown(fd: RawFd, how: c_int) -> SysResult<()> {
    // SAFETY: integer arguments.
    check(unsafe { libc::shutdown(fd, how) }).map(drop)
}

/// The pending error of a socket (`SO_ERROR`), 0 for none.
pub fn socket_error(fd: RawFd) -> c_int {
    let mut e: c_int = 0;
    let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
    // SAFETY: `e` and `len` are valid for writing an int and its size.
    let r = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, (&mut e as *mut c_int).cast(), &mut len) };
    if r < 0 { errno() } else { e }
}

/// Sets an option from raw bytes (an int or a `linger`).
pub fn setsockopt(fd: RawFd, level: c_int, name: c_int, value: &[u8]) -> SysResult<()> {
    // SAFETY: `value` is valid for reading its length.
    check(unsafe { libc::setsockopt(fd, level, name, value.as_ptr().cast(), value.len() as libc::socklen_t) }).map(drop)
}

/// Reads an option into `value` (an int or a `linger`); returns its length.
pub fn getsockopt(fd: RawFd, level: c_int, name: c_int, value: &mut [u8]) -> SysResult<usize> {
    let mut len = value.len() as libc::socklen_t;
    // SAFETY: `value` is valid for writing `len` bytes.
    check(unsafe { libc::getsockopt(fd, level, name, value.as_mut_ptr().cast(), &mut len) })?;
    Ok(len as usize)
}

/// The local (`peer` false) or remote address of a socket.
pub fn name(fd: RawFd, peer: bool) -> SysResult<Addr> {
    let mut a = Addr::empty();
    let p = (&mut a.storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr>();
    // SAFETY: `p` is valid for `len` bytes, and `len` is updated in place.
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
    // SAFETY: `fds` is valid for `len` entries.
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
            // SAFETY: strerror returns a string that glibc keeps for its known
            // codes and a thread-local buffer otherwise; it is copied by the
            // caller (pushed into Lua) before any other strerror call.
            unsafe { CStr::from_ptr(libc::strerror(e)) }
        }
    }
}

/// LuaSocket's message for a resolution failure (its `socket_gaistrerror`).
pub fn resolve_strerror(e: ResolveError) -> &'static CStr {
    match e {
        ResolveError::Sys(e) => strerror(e),
        ResolveError::Gai(g) => match g {
            libc::EAI_AGAIN => c"temporary failure in name resolution",
            libc::EAI_BADFLAGS => c"invalid value for ai_flags",
            libc::EAI_FAIL => c"non-recoverable failure in name resolution",
            libc::EAI_FAMILY => c"ai_family not supported",
            libc::EAI_MEMORY => c"memory allocation failure",
            libc::EAI_NONAME => c"host or service not provided, or not known",
            libc::EAI_OVERFLOW => c"argument buffer overflow",
            libc::EAI_SERVICE => c"service not supported for socket type",
            libc::EAI_SOCKTYPE => c"ai_socktype not supported",
            // SAFETY: gai_strerror returns a static string.
            _ => unsafe { CStr::from_ptr(libc::gai_strerror(g)) },
        },
    }
}

/// Wall-clock seconds since the epoch (LuaSocket's `gettime`).
pub fn wall_time() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// Makes `fd` non-blocking (a descriptor handed in by `setfd`).
pub fn set_nonblocking(fd: RawFd) -> SysResult<()> {
    // SAFETY: integer arguments; the results are checked.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: as above.
    check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) }).map(drop)
}

/// The address family of socket `fd` (`SO_DOMAIN`).
pub fn domain(fd: RawFd) -> SysResult<c_int> {
    let mut v = [0u8; 4];
    getsockopt(fd, libc::SOL_SOCKET, libc::SO_DOMAIN, &mut v)?;
    Ok(c_int::from_ne_bytes(v))
}

/// How many descriptors this process may have open (the soft
/// `RLIMIT_NOFILE`; `c_int::MAX` if unlimited or unknown).
pub fn max_descriptors() -> i64 {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `r` is a valid rlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY {
        return c_int::MAX as i64;
    }
    r.rlim_cur.min(c_int::MAX as libc::rlim_t) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
