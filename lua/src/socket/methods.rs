//! The socket methods that never wait: timeouts, names, options, `setfd`,
//! statistics, `bind`, `listen`, `shutdown`, and the module functions that
//! make objects (`tcp`, `bind`, ...) or answer at once (`gettime`, `skip`).

use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;

use super::object::{
    ANY, Kind, MAX_VALUE, PendingOpt, Tcp, check_tcp, close_tcp, ensure_fd, ok, push_tcp, set_kind, tcp_close,
};
use super::options;
use crate::engine;
use crate::raw::{self, L, ffi};
use crate::sys;

/// `[-0, +0, e]` Raises `bad argument #arg to '...' (invalid option 'name')`,
/// as `luaL_checkoption` (LuaSocket's message for an unknown choice).
pub(super) unsafe fn bad_option(l: L, arg: c_int, name: &CStr) -> ! {
    // SAFETY: `l` is in a C function (for the message's position); "%s"
    // keeps `name` literal.
    unsafe {
        let msg = ffi::lua_pushfstring(l, c"invalid option '%s'".as_ptr(), name.as_ptr());
        ffi::luaL_argerror(l, arg, msg);
    }
    unreachable!("luaL_argerror returned")
}

/// `sock:getfd()`: the descriptor, or -1.
pub(super) unsafe extern "C-unwind" fn tcp_getfd(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        ffi::lua_pushinteger(l, (*t).fd as ffi::lua_Integer);
        1
    }
}

/// `sock:dirty()`: is received data buffered (a `receive` would not wait)?
pub(super) unsafe extern "C-unwind" fn tcp_dirty(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        ffi::lua_pushboolean(l, !(*t).unread().is_empty() as c_int);
        1
    }
}

/// `sock:settimeout(t [, mode])`: `mode` "b" (default: each wait) or "t"
/// (each call, also "r"); nil or negative: no timeout.
pub(super) unsafe extern "C-unwind" fn tcp_settimeout(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        let v = if ffi::lua_isnoneornil(l, 2) != 0 { -1.0 } else { ffi::luaL_checknumber(l, 2) };
        let v = if v.is_nan() { -1.0 } else { v };
        let mode = ffi::luaL_optlstring(l, 3, c"b".as_ptr(), std::ptr::null_mut());
        match *mode as u8 {
            b'b' => (*t).block = v,
            b't' | b'r' => (*t).total = v,
            _ => raw::arg_error(l, 3, c"invalid timeout mode"),
        }
        ok(l)
    }
}

/// `sock:gettimeout()`: the block and total timeouts (-1: none).
pub(super) unsafe extern "C-unwind" fn tcp_gettimeout(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        ffi::lua_pushnumber(l, (*t).block);
        ffi::lua_pushnumber(l, (*t).total);
        2
    }
}

/// `[-0, +3|2, m]` Pushes `host, port, family` of `addr`.
pub(super) unsafe fn push_addr(l: L, addr: &sys::Addr) -> c_int {
    let (host, port) = addr.host_port();
    // SAFETY: valid state; `host` is dropped before anything may raise.
    unsafe {
        ffi::lua_pushlstring(l, host.as_ptr().cast(), host.len());
        drop(host);
        ffi::lua_pushinteger(l, port as ffi::lua_Integer);
        let fam = if addr.family() == libc::AF_INET6 { c"inet6" } else { c"inet" };
        ffi::lua_pushstring(l, fam.as_ptr());
    }
    3
}

unsafe fn sock_name(l: L, peer: bool) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = if peer { check_tcp(l, 1, &[Kind::Master, Kind::Client, Kind::Server]) } else { check_tcp(l, 1, ANY) };
        if (*t).fd < 0 {
            return raw::push_fail(l, c"closed");
        }
        match sys::name((*t).fd, peer) {
            Ok(a) => push_addr(l, &a),
            Err(e) => raw::push_fail(l, sys::strerror(e)),
        }
    }
}

/// `sock:getsockname()`: `host, port, family` of the local end.
pub(super) unsafe extern "C-unwind" fn tcp_getsockname(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe { sock_name(l, false) }
}

/// `client:getpeername()`: `host, port, family` of the remote end.
unsafe extern "C-unwind" fn tcp_getpeername(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe { sock_name(l, true) }
}

/// `client:shutdown([how])`: "both" (default), "send" or "receive".
unsafe extern "C-unwind" fn tcp_shutdown(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Client]);
        let how = CStr::from_ptr(ffi::luaL_optlstring(l, 2, c"both".as_ptr(), std::ptr::null_mut()));
        let how = match how.to_bytes() {
            b"both" => libc::SHUT_RDWR,
            b"send" => libc::SHUT_WR,
            b"receive" => libc::SHUT_RD,
            _ => bad_option(l, 2, how),
        };
        if (*t).fd < 0 {
            return raw::push_fail(l, c"closed");
        }
        match sys::shutdown((*t).fd, how) {
            Ok(()) => ok(l),
            Err(e) => raw::push_fail(l, sys::strerror(e)),
        }
    }
}

/// `sock:setoption(name, value)`: "keepalive", "reuseaddr", "reuseport",
/// "tcp-nodelay", "ipv6-v6only" (booleans), "linger" (`{on = bool, timeout =
/// seconds}`), "tcp-keepidle", "tcp-keepcnt", "tcp-keepintvl",
/// "recv-buffer-size", "send-buffer-size" (integers).
unsafe extern "C-unwind" fn tcp_setoption(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe { options::set(l, check_tcp(l, 1, ANY), options::TCP) }
}

/// `sock:getoption(name)`: the option's value (a linger as `{on, timeout}`).
unsafe extern "C-unwind" fn tcp_getoption(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe { options::get(l, check_tcp(l, 1, ANY), options::TCP) }
}

/// `sock:getfamily()`: `"inet6"` for an IPv6 object, otherwise `"inet4"`
/// (also before a `tcp()` or `udp()` object has a descriptor), as LuaSocket.
pub(super) unsafe extern "C-unwind" fn sock_getfamily(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        let name = if (*t).family == libc::AF_INET6 { c"inet6" } else { c"inet4" };
        ffi::lua_pushstring(l, name.as_ptr());
        1
    }
}

/// `sock:setfd(fd)`: makes the object use descriptor `fd` (LuaSocket's
/// "very dangerous" method: the old descriptor is not closed, and the
/// object will close `fd`). A cothread waiting on the object gets "closed";
/// `fd` is made non-blocking. Returns nothing.
pub(super) unsafe extern "C-unwind" fn sock_setfd(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        let fd = ffi::luaL_checknumber(l, 2);
        let fd = if fd >= 0.0 && fd <= c_int::MAX as f64 { fd as RawFd } else { -1 };
        engine::detach(&raw mut (*t).src);
        (*t).fd = fd;
        if fd >= 0 {
            let _ = sys::set_nonblocking(fd); // not a descriptor: its calls fail alike
            if let Ok(f) = sys::domain(fd) {
                (*t).family = f;
            }
            (*t).closed = false;
            (*t).lazy = false;
        } else {
            (*t).closed = !(*t).lazy;
        }
        0
    }
}

/// `client:getstats()`: bytes received (taken by `receive`), bytes sent,
/// and the object's age in seconds.
unsafe extern "C-unwind" fn tcp_getstats(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Client]);
        ffi::lua_pushinteger(l, (*t).received as ffi::lua_Integer);
        ffi::lua_pushinteger(l, (*t).sent as ffi::lua_Integer);
        ffi::lua_pushnumber(l, sys::wall_time() - (*t).birthday);
        3
    }
}

/// `client:setstats([received [, sent [, age]]])`: sets what `getstats`
/// counts from (nil keeps a value); returns 1.
unsafe extern "C-unwind" fn tcp_setstats(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Client]);
        let count = |l: L, idx: c_int, old: u64| {
            let v = ffi::luaL_optnumber(l, idx, old as ffi::lua_Number);
            if v > 0.0 { v as u64 } else { 0 }
        };
        (*t).received = count(l, 2, (*t).received);
        (*t).sent = count(l, 3, (*t).sent);
        if ffi::lua_isnumber(l, 4) != 0 {
            (*t).birthday = sys::wall_time() - ffi::lua_tonumberx(l, 4, std::ptr::null_mut());
        }
        ok(l)
    }
}

/// `[-0, +0, e]` Host (`"*"`: any, as None) and port (a string or a number)
/// at `idx` and `idx + 1`.
pub(super) unsafe fn check_host_port<'a>(l: L, idx: c_int) -> (Option<&'a CStr>, &'a CStr) {
    // SAFETY: valid state; the strings stay on the stack while used (the
    // caller keeps its arguments), and luaL_checklstring converts numbers in place.
    unsafe {
        let host = CStr::from_ptr(ffi::luaL_checklstring(l, idx, std::ptr::null_mut()));
        let port = CStr::from_ptr(ffi::luaL_checklstring(l, idx + 1, std::ptr::null_mut()));
        (if host.to_bytes() == b"*" { None } else { Some(host) }, port)
    }
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

/// `master:bind(host, port)`: binds to the first address `host` resolves to
/// ("*" for any; blocking name resolution).
unsafe extern "C-unwind" fn tcp_bind(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Master]);
        let (host, port) = check_host_port(l, 2);
        if (*t).closed {
            return raw::push_fail(l, c"closed");
        }
        let msg = bind_to(t, host, port);
        match msg {
            None => ok(l),
            Some(m) => raw::push_fail(l, m),
        }
    }
}

/// Binds `t`; the message of a failure.
pub(super) unsafe fn bind_to(t: *mut Tcp, host: Option<&CStr>, port: &CStr) -> Option<&'static CStr> {
    // SAFETY: `t` is live; only Rust code runs (no Lua call while the vector lives).
    unsafe {
        let addrs = match resolve(host, port, (*t).family, (*t).kind, true) {
            Ok(a) => a,
            Err(m) => return Some(m),
        };
        let mut last = c"host or service not provided, or not known";
        for a in &addrs {
            if (*t).fd >= 0 && a.family() != (*t).family {
                continue;
            }
            if let Err(e) = ensure_fd(t, a.family()) {
                return Some(sys::strerror(e));
            }
            match sys::bind((*t).fd, a) {
                Ok(()) => return None,
                Err(e) => last = sys::strerror(e),
            }
        }
        Some(last)
    }
}

/// `master:listen([backlog])`: makes it a server (backlog default 32).
unsafe extern "C-unwind" fn tcp_listen(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Master]);
        let backlog = ffi::luaL_optinteger(l, 2, 32).clamp(0, c_int::MAX as ffi::lua_Integer) as c_int;
        if (*t).closed {
            return raw::push_fail(l, c"closed");
        }
        if let Err(e) = ensure_fd(t, if (*t).family == libc::AF_UNSPEC { libc::AF_INET } else { (*t).family }) {
            return raw::push_fail(l, sys::strerror(e));
        }
        match sys::listen((*t).fd, backlog) {
            Ok(()) => {
                set_kind(l, 1, t, Kind::Server);
                ok(l)
            }
            Err(e) => raw::push_fail(l, sys::strerror(e)),
        }
    }
}

/// `socket.skip(n, ...)`: the arguments after the first `n` of `...`.
unsafe extern "C-unwind" fn skip(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        let n = ffi::luaL_checkinteger(l, 1);
        let rest = ffi::lua_gettop(l) as ffi::lua_Integer - 1;
        rest.saturating_sub(n.max(0)).max(0) as c_int
    }
}

/// `socket.__unload()`: LuaSocket's hook for unloading the library; nothing
/// to release here.
unsafe extern "C-unwind" fn unload(_l: L) -> c_int {
    0
}

/// `socket.gettime()`: wall-clock seconds since the epoch (LuaSocket's).
unsafe extern "C-unwind" fn gettime(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe { ffi::lua_pushnumber(l, sys::wall_time()) };
    1
}

// ===== constructors =====

unsafe fn new_tcp(l: L, family: c_int) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        if family == libc::AF_UNSPEC {
            push_tcp(l, -1, family, Kind::Master, true);
            return 1;
        }
        let t = push_tcp(l, -1, family, Kind::Master, false);
        if let Err(e) = ensure_fd(t, family) {
            return raw::push_fail(l, sys::strerror(e));
        }
        1
    }
}

/// `socket.tcp()`: a master object whose family follows its first bind or
/// connect.
unsafe extern "C-unwind" fn tcp(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe { new_tcp(l, libc::AF_UNSPEC) }
}

/// `socket.tcp4()`: an IPv4 master object.
unsafe extern "C-unwind" fn tcp4(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe { new_tcp(l, libc::AF_INET) }
}

/// `socket.tcp6()`: an IPv6-only master object.
unsafe extern "C-unwind" fn tcp6(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe { new_tcp(l, libc::AF_INET6) }
}

/// `socket.bind(host, port [, backlog])`: a server listening on `host:port`
/// (with "reuseaddr").
unsafe extern "C-unwind" fn bind(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        let (host, port) = check_host_port(l, 1);
        let backlog = ffi::luaL_optinteger(l, 3, 32).clamp(0, c_int::MAX as ffi::lua_Integer) as c_int;
        let t = push_tcp(l, -1, libc::AF_UNSPEC, Kind::Master, true);
        let one = 1i32.to_ne_bytes();
        let mut value = [0u8; MAX_VALUE];
        value[..4].copy_from_slice(&one);
        (*t).pending.push(PendingOpt { level: libc::SOL_SOCKET, name: libc::SO_REUSEADDR, value, len: 4 });
        let failed = bind_to(t, host, port).or_else(|| sys::listen((*t).fd, backlog).err().map(sys::strerror));
        match failed {
            None => {
                set_kind(l, -1, t, Kind::Server);
                1
            }
            Some(m) => {
                close_tcp(t);
                raw::push_fail(l, m)
            }
        }
    }
}

/// The methods every TCP class has that never wait.
pub(super) const METHODS: &[raw::Reg] = &[
    (c"bind", tcp_bind),
    (c"close", tcp_close),
    (c"dirty", tcp_dirty),
    (c"getfamily", sock_getfamily),
    (c"getfd", tcp_getfd),
    (c"getoption", tcp_getoption),
    (c"getpeername", tcp_getpeername),
    (c"getsockname", tcp_getsockname),
    (c"getstats", tcp_getstats),
    (c"gettimeout", tcp_gettimeout),
    (c"listen", tcp_listen),
    (c"setfd", sock_setfd),
    (c"setoption", tcp_setoption),
    (c"setsockname", tcp_bind),
    (c"setstats", tcp_setstats),
    (c"settimeout", tcp_settimeout),
    (c"shutdown", tcp_shutdown),
];

/// The module functions that never wait.
pub(super) const FUNCTIONS: &[raw::Reg] = &[
    (c"tcp", tcp),
    (c"tcp4", tcp4),
    (c"tcp6", tcp6),
    (c"bind", bind),
    (c"gettime", gettime),
    (c"skip", skip),
    (c"__unload", unload),
];
