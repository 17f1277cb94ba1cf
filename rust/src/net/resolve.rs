//! Name resolution: `getaddrinfo` and `getnameinfo` behind safe calls, and
//! LuaSocket's texts for their failures. Every call blocks (it reads
//! /etc/hosts and may ask DNS) and is thread-safe: a face runs it on a pool
//! thread when its caller must not block.

use std::ffi::{CStr, CString, c_int};

use super::sys::{Addr, errno, strerror};

/// A failed name resolution: a `getaddrinfo` code (`EAI_*`), or an errno for
/// `EAI_SYSTEM`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ResolveError {
    /// A `getaddrinfo` / `getnameinfo` code (`EAI_NONAME`, ...).
    Gai(c_int),
    /// `EAI_SYSTEM`: this errno.
    Sys(c_int),
}

fn resolve_error(r: c_int) -> ResolveError {
    if r == libc::EAI_SYSTEM { ResolveError::Sys(errno()) } else { ResolveError::Gai(r) }
}

/// What `lookup` asks `getaddrinfo`.
#[derive(Clone, Copy, Debug)]
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
    /// The IPv4 and IPv6 addresses, in the resolver's order.
    pub addrs: Vec<Addr>,
    /// The canonical name (`AI_CANONNAME`), when the resolver gave one.
    pub canon: Option<CString>,
}

/// Resolves `host` (None: the wildcard address of a passive lookup) and
/// `port` (None: no port) as `q` says. Blocking: it reads /etc/hosts and may
/// ask DNS. Thread-safe: a face may call it on pool threads.
pub fn lookup(host: Option<&CStr>, port: Option<&CStr>, q: Query) -> Result<Found, ResolveError> {
    // SAFETY: addrinfo is a C struct of integers and pointers, for which all
    // zeroes (null pointers) is a valid value, as getaddrinfo wants unused
    // hint fields.
    let mut hints: libc::addrinfo = unsafe { std::mem::zeroed() };
    hints.ai_family = q.family;
    hints.ai_socktype = q.socktype;
    hints.ai_flags = q.flags;
    let mut res: *mut libc::addrinfo = std::ptr::null_mut();
    let h = host.map_or(std::ptr::null(), CStr::as_ptr);
    let p = port.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: `h` and `p` are null or C strings borrowed for the call,
    // `hints` and `res` are valid locals; getaddrinfo writes `res` only.
    let r = unsafe { libc::getaddrinfo(h, p, &hints, &mut res) };
    if r != 0 {
        return Err(resolve_error(r));
    }
    let mut out = Found { addrs: Vec::new(), canon: None };
    let mut ai = res;
    while !ai.is_null() {
        // SAFETY: `ai` is `res` or an `ai_next` of the list getaddrinfo
        // returned, not freed until the loop ends; each entry is valid.
        let a = unsafe { &*ai };
        if ai == res && !a.ai_canonname.is_null() {
            // SAFETY: a non-null ai_canonname is a C string of the list.
            out.canon = Some(unsafe { CStr::from_ptr(a.ai_canonname) }.to_owned());
        }
        let len = a.ai_addrlen as usize;
        if (a.ai_family == libc::AF_INET || a.ai_family == libc::AF_INET6)
            && len <= std::mem::size_of::<libc::sockaddr_storage>()
        {
            let mut addr = Addr::empty();
            // SAFETY: ai_addr points to ai_addrlen readable bytes, checked
            // above to fit in the storage, which is a separate local.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    a.ai_addr as *const u8,
                    (&mut addr.storage as *mut libc::sockaddr_storage).cast::<u8>(),
                    len,
                )
            };
            addr.len = a.ai_addrlen;
            out.addrs.push(addr);
        }
        ai = a.ai_next;
    }
    // SAFETY: `res` came from a successful getaddrinfo and is freed once; no
    // reference into the list outlives this line (the name was copied).
    unsafe { libc::freeaddrinfo(res) };
    Ok(out)
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
    // SAFETY: `addr` points to `len` initialised bytes of its storage, and
    // `host` is writable for the length passed; no service is asked (null, 0).
    let r = unsafe {
        libc::getnameinfo(
            addr.as_ptr(),
            addr.len,
            host.as_mut_ptr(),
            host.len() as libc::socklen_t,
            std::ptr::null_mut(),
            0,
            libc::NI_NAMEREQD,
        )
    };
    if r != 0 {
        return Err(resolve_error(r));
    }
    // SAFETY: on success getnameinfo wrote a NUL-terminated name into `host`.
    Ok(unsafe { CStr::from_ptr(host.as_ptr()) }.to_owned())
}

/// The numeric-or-named host and the service of `addr`, as `getnameinfo`
/// (no flags) gives them; each only if asked, empty if it fails. Blocking.
pub fn name_info(addr: &Addr, host: bool, serv: bool) -> (CString, CString) {
    let mut h = [0 as libc::c_char; libc::NI_MAXHOST as usize];
    let mut s = [0 as libc::c_char; 32]; // NI_MAXSERV
    // SAFETY: `addr` points to `len` initialised bytes; each buffer is
    // writable for the length passed (0 when not asked, then untouched).
    unsafe {
        libc::getnameinfo(
            addr.as_ptr(),
            addr.len,
            h.as_mut_ptr(),
            if host { h.len() as libc::socklen_t } else { 0 },
            s.as_mut_ptr(),
            if serv { s.len() as libc::socklen_t } else { 0 },
            0,
        )
    };
    // Both buffers start zeroed and getnameinfo NUL-terminates what it writes
    // (also on failure it leaves them terminated): each holds a C string.
    let text = |b: &[libc::c_char]| {
        let bytes: Vec<u8> = b.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        CString::new(bytes).unwrap_or_default()
    };
    (text(&h), text(&s))
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
            // SAFETY: gai_strerror returns a pointer to a string constant of
            // the C library, valid for the whole program.
            _ => unsafe { CStr::from_ptr(libc::gai_strerror(g)) },
        },
    }
}

#[cfg(test)]
mod tests {
    //! Numeric names only: no lookup leaves the machine.

    use super::*;

    #[test]
    fn names_resolve_without_leaving_the_machine() {
        let found = resolve_numeric(c"127.0.0.1", c"53", libc::AF_UNSPEC).unwrap();
        assert_eq!(found[0].host_port(), ("127.0.0.1".to_string(), 53));
        let v6 = resolve(Some(c"::1"), c"80", libc::AF_INET6, libc::SOCK_STREAM, false).unwrap();
        assert_eq!(v6[0].family(), libc::AF_INET6);
        let any = resolve(None, c"0", libc::AF_INET, libc::SOCK_STREAM, true).unwrap();
        assert_eq!(any[0].host_port(), ("0.0.0.0".to_string(), 0), "passive: the wildcard");
        let e = resolve_numeric(c"not a number", c"1", libc::AF_INET).err().unwrap();
        assert_eq!(e, ResolveError::Gai(libc::EAI_NONAME));
        assert_eq!(resolve_strerror(e).to_str().unwrap(), "host or service not provided, or not known");
        let e = resolve_numeric(c"127.0.0.1", c"1", 12345).err().unwrap();
        assert_eq!(e, ResolveError::Gai(libc::EAI_FAMILY));
        assert_eq!(
            resolve_strerror(ResolveError::Sys(libc::EPIPE)).to_str().unwrap(),
            "closed",
            "errno texts: LuaSocket's"
        );
        assert_eq!(reverse(&Addr::empty()).err(), Some(ResolveError::Gai(libc::EAI_FAMILY)));
        let (_, serv) = name_info(&Addr::new(std::net::SocketAddr::from(([127, 0, 0, 1], 80))), false, true);
        assert!(!serv.to_bytes().is_empty(), "a service name or number");
    }
}
