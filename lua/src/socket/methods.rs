//! The socket methods that never wait: timeouts, names, options, `setfd`,
//! statistics, `bind`, `listen`, `shutdown`, and the module functions that
//! make objects (`tcp`, `bind`, ...) or answer at once (`gettime`, `skip`).
//! A method UDP objects share is a body over `UDP` (see `object::shared`);
//! `udp` exports its copies.

use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;

use super::object::{Kind, MAX_VALUE, PendingOpt, Sock, check, close, ok, push_sock, set_kind, shared};
use super::options;
use crate::cfn;
use crate::lua::{Error, Lua, Reg, Ret, lua_Integer};
use crate::sys;

cfn!(getfd = getfd_body::<false>);

/// `sock:getfd()`: the descriptor, or -1.
pub(super) fn getfd_body<const UDP: bool>(lua: &mut Lua) -> Ret {
    let fd = check(lua, 1, shared::<UDP>())?.fd.get();
    lua.push_int(fd as lua_Integer);
    Ok(1)
}

cfn!(dirty = dirty_body::<false>);

/// `sock:dirty()`: is received data buffered (a `receive` would not wait)?
pub(super) fn dirty_body<const UDP: bool>(lua: &mut Lua) -> Ret {
    let buffered = check(lua, 1, shared::<UDP>())?.unread_len() > 0;
    lua.push_bool(buffered);
    Ok(1)
}

cfn!(settimeout = settimeout_body::<false>);

/// `sock:settimeout(t [, mode])`: `mode` "b" (default: each wait) or "t"
/// (each call, also "r"); nil or negative: no timeout.
pub(super) fn settimeout_body<const UDP: bool>(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, shared::<UDP>())?;
    let v = lua.opt_num(2, -1.0)?;
    let v = if v.is_nan() { -1.0 } else { v };
    match lua.opt_bytes(3, b"b")?.first() {
        Some(b'b') => s.block.set(v),
        Some(b't' | b'r') => s.total.set(v),
        _ => return Err(Error::arg(3, c"invalid timeout mode")),
    }
    Ok(ok(lua))
}

cfn!(gettimeout = gettimeout_body::<false>);

/// `sock:gettimeout()`: the block and total timeouts (-1: none).
pub(super) fn gettimeout_body<const UDP: bool>(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, shared::<UDP>())?;
    lua.push_num(s.block.get());
    lua.push_num(s.total.get());
    Ok(2)
}

/// `[-0, +3, m]` Pushes `host, port, family` of `addr`.
pub(super) fn push_addr(lua: &Lua, addr: &sys::Addr) -> c_int {
    let (host, port) = addr.host_port();
    lua.push_owned(host);
    lua.push_int(port as lua_Integer);
    lua.push_bytes(if addr.family() == libc::AF_INET6 { b"inet6" } else { b"inet" });
    3
}

/// `[-0, +3|2, m]` Pushes `host, port, family` of the local or (`peer`)
/// remote end of `s`, or `nil, message`.
pub(super) fn push_name(lua: &Lua, s: &Sock, peer: bool) -> c_int {
    if s.fd.get() < 0 {
        return lua.fail(c"closed");
    }
    match sys::name(s.fd.get(), peer) {
        Ok(a) => push_addr(lua, &a),
        Err(e) => lua.fail(sys::strerror(e)),
    }
}

cfn!(getsockname = getsockname_body::<false>);

/// `sock:getsockname()`: `host, port, family` of the local end.
pub(super) fn getsockname_body<const UDP: bool>(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, shared::<UDP>())?;
    Ok(push_name(lua, s, false))
}

cfn!(getpeername = getpeername_body);

/// `client:getpeername()`: `host, port, family` of the remote end.
fn getpeername_body(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, &[Kind::Master, Kind::Client, Kind::Server])?;
    Ok(push_name(lua, s, true))
}

cfn!(shutdown = shutdown_body);

/// `client:shutdown([how])`: "both" (default), "send" or "receive".
fn shutdown_body(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, &[Kind::Client])?;
    let how = [libc::SHUT_RDWR, libc::SHUT_WR, libc::SHUT_RD]
        [lua.check_option(2, Some(c"both"), &[c"both", c"send", c"receive"])?];
    if s.fd.get() < 0 {
        return Ok(lua.fail(c"closed"));
    }
    match sys::shutdown(s.fd.get(), how) {
        Ok(()) => Ok(ok(lua)),
        Err(e) => Ok(lua.fail(sys::strerror(e))),
    }
}

cfn!(setoption = setoption_body::<false>);

/// `sock:setoption(name, value)`: "keepalive", "reuseaddr", "reuseport",
/// "tcp-nodelay", "ipv6-v6only" (booleans), "linger" (`{on = bool, timeout =
/// seconds}`), "tcp-keepidle", "tcp-keepcnt", "tcp-keepintvl",
/// "recv-buffer-size", "send-buffer-size" (integers); for UDP, LuaSocket's
/// UDP options.
pub(super) fn setoption_body<const UDP: bool>(lua: &mut Lua) -> Ret {
    options::set(lua, shared::<UDP>(), if UDP { options::UDP } else { options::TCP })
}

cfn!(getoption = getoption_body::<false>);

/// `sock:getoption(name)`: the option's value (a linger as `{on, timeout}`).
pub(super) fn getoption_body<const UDP: bool>(lua: &mut Lua) -> Ret {
    options::get(lua, shared::<UDP>(), if UDP { options::UDP } else { options::TCP })
}

cfn!(getfamily = getfamily_body::<false>);

/// `sock:getfamily()`: `"inet6"` for an IPv6 object, otherwise `"inet4"`
/// (also before a `tcp()` or `udp()` object has a descriptor), as LuaSocket.
pub(super) fn getfamily_body<const UDP: bool>(lua: &mut Lua) -> Ret {
    let six = check(lua, 1, shared::<UDP>())?.family.get() == libc::AF_INET6;
    lua.push_bytes(if six { b"inet6" } else { b"inet4" });
    Ok(1)
}

cfn!(setfd = setfd_body::<false>);

/// `sock:setfd(fd)`: makes the object use descriptor `fd` (LuaSocket's
/// "very dangerous" method: the old descriptor is not closed, and the
/// object will close `fd`). A cothread waiting on the object gets "closed";
/// `fd` is made non-blocking. Returns nothing.
pub(super) fn setfd_body<const UDP: bool>(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, shared::<UDP>())?;
    let fd = lua.check_num(2)?;
    let fd = if fd >= 0.0 && fd <= c_int::MAX as f64 { fd as RawFd } else { -1 };
    s.src.detach();
    s.fd.set(fd);
    if fd >= 0 {
        let _ = sys::set_nonblocking(fd); // not a descriptor: its calls fail alike
        if let Ok(f) = sys::domain(fd) {
            s.family.set(f);
        }
        s.closed.set(false);
        s.lazy.set(false);
    } else {
        s.closed.set(!s.lazy.get());
    }
    Ok(0)
}

cfn!(getstats = getstats_body);

/// `client:getstats()`: bytes received (taken by `receive`), bytes sent,
/// and the object's age in seconds.
fn getstats_body(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, &[Kind::Client])?;
    lua.push_int(s.received.get() as lua_Integer);
    lua.push_int(s.sent.get() as lua_Integer);
    lua.push_num(sys::wall_time() - s.birthday.get());
    Ok(3)
}

cfn!(setstats = setstats_body);

/// `client:setstats([received [, sent [, age]]])`: sets what `getstats`
/// counts from (nil keeps a value); returns 1.
fn setstats_body(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, &[Kind::Client])?;
    let count = |idx: c_int, old: u64| -> Result<u64, Error> {
        let v = lua.opt_num(idx, old as f64)?;
        Ok(if v > 0.0 { v as u64 } else { 0 })
    };
    s.received.set(count(2, s.received.get())?);
    s.sent.set(count(3, s.sent.get())?);
    if let Some(age) = lua.to_num(4) {
        s.birthday.set(sys::wall_time() - age);
    }
    Ok(ok(lua))
}

/// Host (`"*"`: any, as None) and port (a string or a number, converted in
/// its slot) at `idx` and `idx + 1`, as arguments.
pub(super) fn check_host_port(lua: &Lua, idx: c_int) -> Result<(Option<&CStr>, &CStr), Error> {
    let host = lua.check_cstr(idx)?;
    let port = lua.check_cstr(idx + 1)?;
    Ok((if host.to_bytes() == b"*" { None } else { Some(host) }, port))
}

/// Host and port at `idx` and `idx + 1` of a frame, which its method
/// checked (`check_host_port`): none if they are not strings.
pub(super) fn host_port_at(lua: &Lua, idx: c_int) -> Option<(Option<&CStr>, &CStr)> {
    let host = lua.to_cstr(idx)?;
    let port = lua.to_cstr(idx + 1)?;
    Some((if host.to_bytes() == b"*" { None } else { Some(host) }, port))
}

/// The addresses for `host`/`port` that a socket of `family` and `kind` can use.
pub(super) fn resolve(
    host: Option<&CStr>,
    port: &CStr,
    family: c_int,
    kind: Kind,
    passive: bool,
) -> Result<Vec<sys::Addr>, &'static CStr> {
    // "*" binds the wildcard of the socket's family (IPv4 if not chosen yet).
    let fam = if host.is_none() && family == libc::AF_UNSPEC { libc::AF_INET } else { family };
    match sys::resolve(host, port, fam, kind.socktype(), passive) {
        Ok(v) if v.is_empty() => Err(c"host or service not provided, or not known"),
        Ok(v) => Ok(v),
        Err(e) => Err(sys::resolve_strerror(e)),
    }
}

cfn!(bind_method = bind_method_body::<false>);

/// `master:bind(host, port)` and `unconnected:setsockname(host, port)`
/// (`UDP`): binds to the first address `host` resolves to ("*" for any;
/// blocking name resolution).
pub(super) fn bind_method_body<const UDP: bool>(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, &[if UDP { Kind::Unconnected } else { Kind::Master }])?;
    let (host, port) = check_host_port(lua, 2)?;
    if s.closed.get() {
        return Ok(lua.fail(c"closed"));
    }
    match bind_to(s, host, port) {
        None => Ok(ok(lua)),
        Some(m) => Ok(lua.fail(m)),
    }
}

/// Binds `s`; the message of a failure.
pub(super) fn bind_to(s: &Sock, host: Option<&CStr>, port: &CStr) -> Option<&'static CStr> {
    let addrs = match resolve(host, port, s.family.get(), s.kind.get(), true) {
        Ok(a) => a,
        Err(m) => return Some(m),
    };
    let mut last = c"host or service not provided, or not known";
    for a in &addrs {
        if s.fd.get() >= 0 && a.family() != s.family.get() {
            continue;
        }
        if let Err(e) = s.ensure_fd(a.family()) {
            return Some(sys::strerror(e));
        }
        match sys::bind(s.fd.get(), a) {
            Ok(()) => return None,
            Err(e) => last = sys::strerror(e),
        }
    }
    Some(last)
}

/// A listen backlog argument (default 32), clamped to a `c_int`.
fn backlog(lua: &Lua, arg: c_int) -> Result<c_int, Error> {
    Ok(lua.opt_int(arg, 32)?.clamp(0, c_int::MAX as lua_Integer) as c_int)
}

cfn!(listen = listen_body);

/// `master:listen([backlog])`: makes it a server (backlog default 32).
fn listen_body(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, &[Kind::Master])?;
    let backlog = backlog(lua, 2)?;
    if s.closed.get() {
        return Ok(lua.fail(c"closed"));
    }
    let family = if s.family.get() == libc::AF_UNSPEC { libc::AF_INET } else { s.family.get() };
    if let Err(e) = s.ensure_fd(family) {
        return Ok(lua.fail(sys::strerror(e)));
    }
    match sys::listen(s.fd.get(), backlog) {
        Ok(()) => {
            set_kind(lua, 1, s, Kind::Server);
            Ok(ok(lua))
        }
        Err(e) => Ok(lua.fail(sys::strerror(e))),
    }
}

cfn!(skip = skip_body);

/// `socket.skip(n, ...)`: the arguments after the first `n` of `...`.
fn skip_body(lua: &mut Lua) -> Ret {
    let n = lua.check_int(1)?;
    let rest = lua.top() as lua_Integer - 1;
    Ok(rest.saturating_sub(n.max(0)).max(0) as c_int)
}

cfn!(unload = unload_body);

/// `socket.__unload()`: LuaSocket's hook for unloading the library; nothing
/// to release here.
fn unload_body(_lua: &mut Lua) -> Ret {
    Ok(0)
}

cfn!(gettime = gettime_body);

/// `socket.gettime()`: wall-clock seconds since the epoch (LuaSocket's).
fn gettime_body(lua: &mut Lua) -> Ret {
    lua.push_num(sys::wall_time());
    Ok(1)
}

// ===== constructors =====

/// `socket.tcp()`, `tcp4()`, `tcp6()` (a master object) and `udp()`,
/// `udp4()`, `udp6()` (`UDP`: an unconnected object): `[-0, +1|2, m]` a
/// new object of `FAMILY`, or `nil, message`. With `AF_UNSPEC` the
/// descriptor is made lazily, of the family of the first bind or connect
/// (UDP: `setsockname`, `setpeername` or `sendto`); `AF_INET6` is IPv6-only.
pub(super) fn new_body<const UDP: bool, const FAMILY: c_int>(lua: &mut Lua) -> Ret {
    let lazy = FAMILY == libc::AF_UNSPEC;
    let kind = if UDP { Kind::Unconnected } else { Kind::Master };
    let s = push_sock(lua, -1, FAMILY, kind, lazy);
    if !lazy {
        if let Err(e) = s.ensure_fd(FAMILY) {
            s.close();
            return Ok(lua.fail(sys::strerror(e)));
        }
    }
    Ok(1)
}

cfn!(tcp = new_body::<false, { libc::AF_UNSPEC }>);
cfn!(tcp4 = new_body::<false, { libc::AF_INET }>);
cfn!(tcp6 = new_body::<false, { libc::AF_INET6 }>);

cfn!(bind = bind_body);

/// `socket.bind(host, port [, backlog])`: a server listening on `host:port`
/// (with "reuseaddr").
fn bind_body(lua: &mut Lua) -> Ret {
    let (host, port) = check_host_port(lua, 1)?;
    let backlog = backlog(lua, 3)?;
    let s = push_sock(lua, -1, libc::AF_UNSPEC, Kind::Master, true);
    let mut value = [0u8; MAX_VALUE];
    value[..4].copy_from_slice(&1i32.to_ne_bytes());
    s.pending.borrow_mut().push(PendingOpt { level: libc::SOL_SOCKET, name: libc::SO_REUSEADDR, value, len: 4 });
    let failed = bind_to(s, host, port).or_else(|| sys::listen(s.fd.get(), backlog).err().map(sys::strerror));
    match failed {
        None => {
            set_kind(lua, -1, s, Kind::Server);
            Ok(1)
        }
        Some(m) => {
            s.close();
            Ok(lua.fail(m))
        }
    }
}

/// The methods every TCP class has that never wait.
pub(super) const METHODS: &[Reg] = &[
    (c"bind", bind_method),
    (c"close", close),
    (c"dirty", dirty),
    (c"getfamily", getfamily),
    (c"getfd", getfd),
    (c"getoption", getoption),
    (c"getpeername", getpeername),
    (c"getsockname", getsockname),
    (c"getstats", getstats),
    (c"gettimeout", gettimeout),
    (c"listen", listen),
    (c"setfd", setfd),
    (c"setoption", setoption),
    (c"setsockname", bind_method),
    (c"setstats", setstats),
    (c"settimeout", settimeout),
    (c"shutdown", shutdown),
];

/// The module functions that never wait.
pub(super) const FUNCTIONS: &[Reg] = &[
    (c"tcp", tcp),
    (c"tcp4", tcp4),
    (c"tcp6", tcp6),
    (c"bind", bind),
    (c"gettime", gettime),
    (c"skip", skip),
    (c"__unload", unload),
];
