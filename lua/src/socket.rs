//! `cothread.socket`: LuaSocket's TCP surface on the event loop; UDP objects
//! (`udp`), options (`options`) and `protect`/`try`/`newtry` (`protect`) in
//! the submodules.
//!
//! Sockets are full userdata (`Tcp`) holding a non-blocking descriptor,
//! LuaSocket's timeouts and a read buffer. As in LuaSocket, each class has
//! its own metatable (registry `cothread.tcp{master}`, ...), whose `__index`
//! holds the protocol's methods and the field `class` (`"tcp{master}"`, ...):
//! a change of class (`listen`, `connect`, `setpeername`) changes the
//! object's metatable (`set_kind`). Each blocking method is an
//! *operation* (`Op`) written as a step function over a fixed frame of stack
//! slots, so it can stop and go on:
//! - a step returns `Done(n)` (its results are on the stack) or `Wait(deadline)`
//!   (the descriptor would block);
//! - inside a cothread (the scheduler resuming the calling coroutine is known
//!   through `io::CURRENT`), the operation parks the cothread on its
//!   scheduler's event loop (`io::Io::begin`) and yields the hidden operation
//!   `cothread.io` with a continuation (`resume`), which runs the step again
//!   with the outcome of the wait;
//! - anywhere else (the main chunk, a plain coroutine, a metamethod), it
//!   blocks the caller in `poll(2)` until the descriptor is ready or the
//!   deadline passes, as LuaSocket does.
//!
//! Failures follow LuaSocket: misuse raises (`bad argument`), failed I/O
//! returns `nil, message` (`"timeout"`, `"closed"`, an `errno` text), with the
//! partial data or the last byte sent as third result where LuaSocket gives
//! one. A wait the cothread left (unscheduled and scheduled again) gives
//! `"cancelled"`.
//!
//! No Rust value with a destructor is alive across a call into Lua that may
//! raise or yield (both longjmp): steps keep their state on the Lua stack and
//! in the `Tcp`, and build vectors only between such calls.

use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;

mod options;
mod protect;
mod udp;

use crate::buffer::Buffer;
use crate::channel;
use crate::io::{self, Outcome, READ, WRITE};
use crate::raw::{self, L, ffi};
use crate::state::{self, State};
use crate::sys;

/// The key that marks the metatables of socket objects (its address).
static MARK: u8 = 0;
/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.socket";
/// Bytes asked of `recv` at a time.
const CHUNK: usize = 64 * 1024;
/// A consumed prefix of the read buffer larger than this is dropped.

// ===== objects =====

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Master,
    Client,
    Server,
    /// UDP objects (see `udp`).
    Unconnected,
    Connected,
}

impl Kind {
    fn name(self) -> &'static CStr {
        match self {
            Kind::Master => c"tcp{master}",
            Kind::Client => c"tcp{client}",
            Kind::Server => c"tcp{server}",
            Kind::Unconnected => c"udp{unconnected}",
            Kind::Connected => c"udp{connected}",
        }
    }

    /// The registry name of the class's metatable.
    fn registry(self) -> &'static CStr {
        match self {
            Kind::Master => c"cothread.tcp{master}",
            Kind::Client => c"cothread.tcp{client}",
            Kind::Server => c"cothread.tcp{server}",
            Kind::Unconnected => c"cothread.udp{unconnected}",
            Kind::Connected => c"cothread.udp{connected}",
        }
    }

    fn is_udp(self) -> bool {
        matches!(self, Kind::Unconnected | Kind::Connected)
    }

    fn socktype(self) -> c_int {
        if self.is_udp() { libc::SOCK_DGRAM } else { libc::SOCK_STREAM }
    }
}

/// An option set before the descriptor exists (`tcp()` makes it lazily).
#[derive(Clone, Copy)]
struct PendingOpt {
    level: c_int,
    name: c_int,
    value: [u8; options::MAX_VALUE],
    len: usize,
}

/// A socket object: TCP (kinds master, client, server), or UDP (kinds
/// unconnected and connected: the read buffer is then only scratch space
/// for a datagram).
struct Tcp {
    /// The descriptor, or -1 (not made yet, or closed).
    fd: RawFd,
    /// `AF_INET`, `AF_INET6`, or `AF_UNSPEC` until the first bind/connect.
    family: c_int,
    /// Made by `tcp()`: the family follows the first address used.
    lazy: bool,
    closed: bool,
    kind: Kind,
    /// LuaSocket's timeouts (seconds; negative: none): per wait, per call.
    block: f64,
    total: f64,
    /// Read buffer.
    rb: Buffer,
    /// The last `recv` came back short: the socket is most likely empty, so
    /// a read that needs more data waits for readiness before trying again
    /// (as libuv reads only on readiness). Cleared when a wait or `select`
    /// finds it readable.
    drained: bool,
    pending: Vec<PendingOpt>,
    /// Identifier on the event loop of `owner` (0: never attached).
    id: u64,
    /// The scheduler whose loop it is attached to (its userdata is user value 1).
    owner: *mut State,
    /// Readiness found by `select` (between its passes).
    sel: u8,
    /// Dropped by `__gc`.
    gone: bool,
    /// LuaSocket's statistics (`getstats`): bytes taken by `receive`, bytes
    /// sent, and the wall-clock time the object was made (seconds).
    received: u64,
    sent: u64,
    birthday: f64,
}

impl Tcp {
    fn unread(&self) -> &[u8] {
        self.rb.unread()
    }

    fn consume(&mut self, n: usize) {
        self.rb.consume(n)
    }
}

/// `[-0, +1, m]` Pushes a new TCP object.
unsafe fn push_tcp(l: L, fd: RawFd, family: c_int, kind: Kind, lazy: bool) -> *mut Tcp {
    // SAFETY: valid state; the block is fresh, sized and aligned for a `Tcp`
    // (Lua aligns userdata for any C type), written before the metatable
    // makes `__gc` reach it.
    unsafe {
        raw::check_stack(l, 4);
        let t = ffi::lua_newuserdatauv(l, std::mem::size_of::<Tcp>(), 1) as *mut Tcp;
        t.write(Tcp {
            fd,
            family,
            lazy,
            closed: false,
            kind,
            block: -1.0,
            total: -1.0,
            rb: Buffer::default(),
            drained: false,
            pending: Vec::new(),
            id: 0,
            owner: std::ptr::null_mut(),
            sel: 0,
            gone: false,
            received: 0,
            sent: 0,
            birthday: sys::wall_time(),
        });
        ffi::luaL_setmetatable(l, kind.registry().as_ptr());
        t
    }
}

/// `[-0, +0, m]` Makes `t`, the object at `idx`, of class `kind`.
unsafe fn set_kind(l: L, idx: c_int, t: *mut Tcp, kind: Kind) {
    // SAFETY: valid state with a free slot; `t` is the userdata at `idx`.
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        (*t).kind = kind;
        ffi::luaL_getmetatable(l, kind.registry().as_ptr());
        ffi::lua_setmetatable(l, idx);
    }
}

/// `[-0, +0, -]` The socket object (TCP or UDP) at `idx`, or null: the
/// methods hold their class's metatable as upvalue 1, which the object's
/// usually is; any other metatable is looked at for the mark of ours (no
/// lookup by name).
unsafe fn to_sock(l: L, idx: c_int) -> *mut Tcp {
    // SAFETY: valid state with two free slots (every caller is a C function);
    // an upvalue index past a function's upvalues is acceptable (not equal).
    // Only this module puts `MARK`'s address in a metatable.
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TUSERDATA || ffi::lua_getmetatable(l, idx) == 0 {
            return std::ptr::null_mut();
        }
        let mut same = ffi::lua_rawequal(l, -1, ffi::lua_upvalueindex(1)) != 0;
        if !same {
            same = ffi::lua_rawgetp(l, -1, (&raw const MARK).cast()) != ffi::LUA_TNIL;
            ffi::lua_pop(l, 1);
        }
        ffi::lua_pop(l, 1);
        if same { ffi::lua_touserdata(l, idx) as *mut Tcp } else { std::ptr::null_mut() }
    }
}

/// `[-0, +0, e]` The TCP object at `idx`, raising unless it is one of `kinds`.
unsafe fn check_tcp(l: L, idx: c_int, kinds: &[Kind]) -> *mut Tcp {
    // SAFETY: valid state; a userdata with this metatable holds a `Tcp`.
    unsafe {
        let t = to_sock(l, idx);
        let expected = match kinds {
            [k] => k.name(),
            [k, ..] if k.is_udp() => c"udp{any}",
            _ => c"tcp{any}",
        };
        if t.is_null() {
            let msg =
                ffi::lua_pushfstring(l, c"%s expected, got %s".as_ptr(), expected.as_ptr(), ffi::luaL_typename(l, idx));
            ffi::luaL_argerror(l, idx, msg);
        }
        if !kinds.contains(&(*t).kind) {
            let msg =
                ffi::lua_pushfstring(l, c"%s expected, got %s".as_ptr(), expected.as_ptr(), (*t).kind.name().as_ptr());
            ffi::luaL_argerror(l, idx, msg);
        }
        t
    }
}

/// Any socket object: the methods every class has, TCP or UDP.
const ANY: &[Kind] = &[Kind::Master, Kind::Client, Kind::Server, Kind::Unconnected, Kind::Connected];

/// `[-0, +0, e]` Raises `bad argument #arg to '...' (invalid option 'name')`,
/// as `luaL_checkoption` (LuaSocket's message for an unknown choice).
unsafe fn bad_option(l: L, arg: c_int, name: &CStr) -> ! {
    // SAFETY: valid state in a C function; "%s" keeps `name` literal.
    unsafe {
        let msg = ffi::lua_pushfstring(l, c"invalid option '%s'".as_ptr(), name.as_ptr());
        ffi::luaL_argerror(l, arg, msg);
    }
    unreachable!("luaL_argerror returned")
}

/// `[-0, +2, m]` Pushes `nil, msg`; returns 2.
unsafe fn fail(l: L, msg: &CStr) -> c_int {
    // SAFETY: valid state with two free slots (every caller is a C function).
    unsafe {
        ffi::lua_pushnil(l);
        ffi::lua_pushstring(l, msg.as_ptr());
    }
    2
}

/// `[-0, +1, -]` Pushes LuaSocket's success value, 1.
unsafe fn ok(l: L) -> c_int {
    // SAFETY: valid state with a free slot.
    unsafe { ffi::lua_pushinteger(l, 1) };
    1
}

/// Applies the pending options to the new descriptor of `t`.
unsafe fn apply_pending(t: *mut Tcp) -> sys::SysResult<()> {
    // SAFETY: `t` is a live object; only Rust code runs.
    unsafe {
        if (*t).family == libc::AF_INET6 {
            let one = 1i32.to_ne_bytes();
            sys::setsockopt((*t).fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, &one)?;
        }
        for o in &(*t).pending {
            sys::setsockopt((*t).fd, o.level, o.name, &o.value[..o.len])?;
        }
        (*t).pending.clear();
        Ok(())
    }
}

/// Makes the descriptor of `t` for `family` if it has none yet.
unsafe fn ensure_fd(t: *mut Tcp, family: c_int) -> sys::SysResult<()> {
    // SAFETY: `t` is a live object; only Rust code runs.
    unsafe {
        if (*t).fd >= 0 {
            return Ok(());
        }
        let fd = sys::socket(family, (*t).kind.socktype())?;
        (*t).fd = fd;
        (*t).family = family;
        if let Err(e) = apply_pending(t) {
            sys::close(fd);
            (*t).fd = -1;
            return Err(e);
        }
        Ok(())
    }
}

/// Detaches `t` from its scheduler's loop (its waiters end with "closed").
unsafe fn detach(t: *mut Tcp) {
    // SAFETY: `t` is live; its owner's memory is kept by user value 1, and
    // `closed` says whether it still holds a loop. Only Rust code runs.
    unsafe {
        let p = std::mem::replace(&mut (*t).owner, std::ptr::null_mut());
        state::source_event(p, (*t).id, state::SourceEvent::Detach);
    }
}

/// Closes the descriptor of `t` (waking its waiters) and empties its buffer.
unsafe fn close_tcp(t: *mut Tcp) {
    // SAFETY: `t` is live; only Rust code runs.
    unsafe {
        detach(t);
        if (*t).fd >= 0 {
            sys::close((*t).fd);
            (*t).fd = -1;
        }
        (*t).closed = true;
        (*t).rb.release();
    }
}

// ===== metamethods and simple methods =====

unsafe extern "C-unwind" fn tcp_gc(l: L) -> c_int {
    // SAFETY: called by Lua on a `Tcp` userdata; it is dropped once (`gone`).
    unsafe {
        let t = ffi::lua_touserdata(l, 1) as *mut Tcp;
        if !t.is_null() && !(*t).gone {
            close_tcp(t);
            (*t).gone = true;
            std::ptr::drop_in_place(t);
        }
    }
    0
}

/// `sock:close()`, also `__close`: closes the socket; a cothread waiting on
/// it gets "closed". Closing again does nothing.
unsafe extern "C-unwind" fn tcp_close(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        close_tcp(t);
        ok(l)
    }
}

unsafe extern "C-unwind" fn tcp_tostring(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        ffi::lua_pushfstring(l, c"%s: %p".as_ptr(), (*t).kind.name().as_ptr(), t as *const std::ffi::c_void);
        1
    }
}

/// `sock:getfd()`: the descriptor, or -1.
unsafe extern "C-unwind" fn tcp_getfd(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        ffi::lua_pushinteger(l, (*t).fd as ffi::lua_Integer);
        1
    }
}

/// `sock:dirty()`: is received data buffered (a `receive` would not wait)?
unsafe extern "C-unwind" fn tcp_dirty(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        ffi::lua_pushboolean(l, !(*t).unread().is_empty() as c_int);
        1
    }
}

/// `sock:settimeout(t [, mode])`: `mode` "b" (default: each wait) or "t"
/// (each call, also "r"); nil or negative: no timeout.
unsafe extern "C-unwind" fn tcp_settimeout(l: L) -> c_int {
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
unsafe extern "C-unwind" fn tcp_gettimeout(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        ffi::lua_pushnumber(l, (*t).block);
        ffi::lua_pushnumber(l, (*t).total);
        2
    }
}

/// `[-0, +3|2, m]` Pushes `host, port, family` of `addr`.
unsafe fn push_addr(l: L, addr: &sys::Addr) -> c_int {
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
            return fail(l, c"closed");
        }
        match sys::name((*t).fd, peer) {
            Ok(a) => push_addr(l, &a),
            Err(e) => fail(l, sys::strerror(e)),
        }
    }
}

/// `sock:getsockname()`: `host, port, family` of the local end.
unsafe extern "C-unwind" fn tcp_getsockname(l: L) -> c_int {
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
            return fail(l, c"closed");
        }
        match sys::shutdown((*t).fd, how) {
            Ok(()) => ok(l),
            Err(e) => fail(l, sys::strerror(e)),
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
unsafe extern "C-unwind" fn sock_getfamily(l: L) -> c_int {
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
unsafe extern "C-unwind" fn sock_setfd(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        let fd = ffi::luaL_checknumber(l, 2);
        let fd = if fd >= 0.0 && fd <= c_int::MAX as f64 { fd as RawFd } else { -1 };
        detach(t);
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
unsafe fn check_host_port<'a>(l: L, idx: c_int) -> (Option<&'a CStr>, &'a CStr) {
    // SAFETY: valid state; the strings stay on the stack while used (the
    // caller keeps its arguments), and luaL_checklstring converts numbers in place.
    unsafe {
        let host = CStr::from_ptr(ffi::luaL_checklstring(l, idx, std::ptr::null_mut()));
        let port = CStr::from_ptr(ffi::luaL_checklstring(l, idx + 1, std::ptr::null_mut()));
        (if host.to_bytes() == b"*" { None } else { Some(host) }, port)
    }
}

/// The addresses for `host`/`port` that a socket of `family` and `kind` can use.
fn resolve(
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
            return fail(l, c"closed");
        }
        let msg = bind_to(t, host, port);
        match msg {
            None => ok(l),
            Some(m) => fail(l, m),
        }
    }
}

/// Binds `t`; the message of a failure.
unsafe fn bind_to(t: *mut Tcp, host: Option<&CStr>, port: &CStr) -> Option<&'static CStr> {
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
            return fail(l, c"closed");
        }
        if let Err(e) = ensure_fd(t, if (*t).family == libc::AF_UNSPEC { libc::AF_INET } else { (*t).family }) {
            return fail(l, sys::strerror(e));
        }
        match sys::listen((*t).fd, backlog) {
            Ok(()) => {
                set_kind(l, 1, t, Kind::Server);
                ok(l)
            }
            Err(e) => fail(l, sys::strerror(e)),
        }
    }
}

// ===== operations =====

/// A blocking operation. Each has a fixed frame of `base()` stack slots.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    /// 1 socket, 2 pattern (count, or LINE / ALL), 3 prefix, 4 deadline.
    Receive = 1,
    /// 1 socket, 2 data, 3 first index, 4 last index, 5 deadline, 6 sent.
    Send,
    /// 1 socket, 2 deadline.
    Accept,
    /// 1 socket, 2 host, 3 port, 4 deadline, 5 in progress, 6 return the socket.
    Connect,
    /// 1 receivers, 2 senders, 3 timeout, 4 deadline.
    Select,
    /// 1 seconds, 2 deadline.
    Sleep,
    /// 1 UDP object, 2 size, 3 with the sender (receivefrom), 4 deadline.
    UdpReceive,
    /// 1 UDP object, 2 data, 3 ip (nil: connected), 4 port, 5 deadline.
    UdpSend,
}

impl Op {
    fn base(self) -> c_int {
        match self {
            Op::Receive | Op::Select | Op::UdpReceive => 4,
            Op::Send | Op::Connect => 6,
            Op::Accept | Op::Sleep => 2,
            Op::UdpSend => 5,
        }
    }

    fn from_ctx(ctx: ffi::lua_KContext) -> Op {
        match ctx {
            1 => Op::Receive,
            2 => Op::Send,
            3 => Op::Accept,
            4 => Op::Connect,
            5 => Op::Select,
            6 => Op::Sleep,
            7 => Op::UdpReceive,
            _ => Op::UdpSend,
        }
    }
}

/// Why a step runs again.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Why {
    /// The awaited descriptor is ready (or a socket it waited on was closed:
    /// the step finds out).
    Ready,
    /// The wait failed: the step returns this message.
    Failed(&'static CStr),
}

impl From<Outcome> for Why {
    fn from(o: Outcome) -> Why {
        match o {
            Outcome::Ready | Outcome::Closed => Why::Ready,
            Outcome::Timeout => Why::Failed(c"timeout"),
            Outcome::Cancelled => Why::Failed(c"cancelled"),
        }
    }
}

/// What a step asks for.
enum Step {
    /// Done: this many results are on the stack.
    Done(c_int),
    /// Wait for the descriptors of the operation, until this monotonic time (ns).
    Wait(Option<u64>),
}

fn now_ns() -> u64 {
    cothread::time::monotonic_ns()
}

/// Nanoseconds from seconds (negative or NaN: None; huge, `math.huge`
/// included: `u64::MAX`, a deadline that never comes).
fn ns_of(secs: f64) -> Option<u64> {
    (secs >= 0.0).then(|| (secs * 1e9).ceil() as u64)
}

/// `[-0, +1, -]` Pushes the deadline of a call with total timeout `total`.
unsafe fn push_deadline(l: L, total: f64) {
    // SAFETY: valid state with a free slot.
    unsafe {
        match ns_of(total) {
            Some(ns) => ffi::lua_pushinteger(l, now_ns().saturating_add(ns) as ffi::lua_Integer),
            None => ffi::lua_pushnil(l),
        }
    }
}

/// The deadline of the next wait of an operation on `t` whose call deadline
/// is at `slot`: `Err` if it has passed already.
unsafe fn wait_deadline(l: L, t: *mut Tcp, slot: c_int) -> Result<Option<u64>, ()> {
    // SAFETY: valid state and slot; `t` is live.
    unsafe {
        let call = (ffi::lua_type(l, slot) == ffi::LUA_TNUMBER)
            .then(|| ffi::lua_tointegerx(l, slot, std::ptr::null_mut()) as u64);
        let block = ns_of((*t).block);
        if call.is_none() && block.is_none() {
            return Ok(None); // no timeout: no need to read the clock
        }
        let now = now_ns();
        let each = block.map(|ns| now.saturating_add(ns));
        let d = match (call, each) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match d {
            Some(d) if d <= now => Err(()),
            d => Ok(d),
        }
    }
}

/// The scheduler resuming the calling coroutine and its task, if the caller
/// is a cothread that may yield.
pub(crate) unsafe fn cothread_of(l: L) -> Option<(*mut State, cothread::Task)> {
    let p = io::CURRENT.get();
    // SAFETY: CURRENT is set only around a resume by a live state.
    unsafe {
        if p.is_null() || (*p).closed || (*p).running != l || ffi::lua_isyieldable(l) == 0 {
            return None;
        }
        Some((p, (*p).running_task?))
    }
}

/// Runs operation `op` from its frame until it is done: waits park the
/// cothread (this then yields and never returns) or block the caller.
unsafe fn drive(l: L, op: Op, mut why: Option<Why>) -> c_int {
    // SAFETY: a C function whose frame is `op`'s; no value with a destructor
    // is alive here when a step or `park` raises or yields.
    unsafe {
        loop {
            let step = match op {
                Op::Receive => receive_step(l, why),
                Op::Send => send_step(l, why),
                Op::Accept => accept_step(l, why),
                Op::Connect => connect_step(l, why),
                Op::Select => select_step(l, why),
                Op::Sleep => sleep_step(l, why),
                Op::UdpReceive => udp::receive_step(l, why),
                Op::UdpSend => udp::send_step(l, why),
            };
            match step {
                Step::Done(n) => return n,
                Step::Wait(deadline) => {
                    why = Some(match cothread_of(l) {
                        Some((p, task)) => park(l, op, p, task, deadline),
                        None => block(l, op, deadline),
                    })
                }
            }
        }
    }
}

/// The descriptors an operation waits on: `(object, direction)`.
unsafe fn waits_of(l: L, op: Op) -> Vec<(*mut Tcp, u32)> {
    // SAFETY: the frame of `op`; only raw reads (nothing raises).
    unsafe {
        let one = |dir| {
            let t = ffi::lua_touserdata(l, 1) as *mut Tcp;
            if (*t).fd >= 0 { vec![(t, dir)] } else { Vec::new() }
        };
        match op {
            Op::Receive | Op::Accept | Op::UdpReceive => one(READ),
            Op::Send | Op::Connect | Op::UdpSend => one(WRITE),
            Op::Sleep => Vec::new(),
            Op::Select => {
                let mut v = Vec::new();
                for (idx, dir) in [(1, READ), (2, WRITE)] {
                    each_selected(l, idx, |t| v.push((t, dir)));
                }
                v
            }
        }
    }
}

/// Calls `f` with each open socket in the table at `idx` (a list; nil: none).
unsafe fn each_selected(l: L, idx: c_int, mut f: impl FnMut(*mut Tcp)) {
    // SAFETY: valid state; raw reads; the tables were checked to hold only
    // sockets by `select`, and a socket stays a `Tcp` until collected (the
    // table holds it).
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
            return;
        }
        let mut i = 1;
        loop {
            if ffi::lua_rawgeti(l, idx, i) == ffi::LUA_TNIL {
                ffi::lua_pop(l, 1);
                return;
            }
            let t = to_sock(l, -1);
            ffi::lua_pop(l, 1);
            if !t.is_null() && (*t).fd >= 0 {
                f(t);
            }
            i += 1;
        }
    }
}

/// Parks the running cothread on its scheduler's loop until the operation's
/// descriptors are ready or `deadline`: yields (with `resume` as
/// continuation) and never returns, unless the wait cannot start.
unsafe fn park(l: L, op: Op, p: *mut State, task: cothread::Task, deadline: Option<u64>) -> Why {
    // SAFETY: a C function in a cothread of `p`; `io_of` may raise before any
    // vector exists; the vector is consumed before the yield.
    unsafe {
        let io = state::io_of(l, p);
        raw::check_stack(l, 8);
        state::push_state(l, p); // keeps `p` alive until the continuation
        let mut regs = Vec::new();
        for (t, dir) in waits_of(l, op) {
            if let Err(m) = attach(l, t, p, &mut *io) {
                ffi::lua_pop(l, 1);
                return Why::Failed(m);
            }
            regs.push(((*t).id, dir));
        }
        if op == Op::Select {
            if let Err(m) = channel::select_waits(l, 1, p, &mut *io, &mut regs) {
                ffi::lua_pop(l, 1);
                return Why::Failed(m);
            }
        }
        let id = match (*io).begin(task, regs, deadline) {
            Ok(id) => id,
            Err(e) => {
                ffi::lua_pop(l, 1);
                return Why::Failed(e.c_message());
            }
        };
        ffi::lua_pushinteger(l, id as ffi::lua_Integer);
        ffi::lua_pushstring(l, c"cothread.io".as_ptr());
        ffi::lua_yieldk(l, 1, op as ffi::lua_KContext, Some(resume));
        unreachable!("lua_yieldk returned")
    }
}

/// Attaches `t` to the loop of `p` (moving it from another scheduler's loop
/// if nothing waits on it there). The state userdata is on the stack top.
unsafe fn attach(l: L, t: *mut Tcp, p: *mut State, io: &mut io::Io) -> Result<(), &'static CStr> {
    // SAFETY: `t` is live; its owner's memory is kept by its user value.
    unsafe {
        if (*t).owner == p && io.attached((*t).id) {
            return Ok(());
        }
        let old = (*t).owner;
        if !old.is_null() && !(*old).closed && (*old).io.as_ref().is_some_and(|o| o.busy((*t).id)) {
            return Err(c"socket in use by another scheduler");
        }
        detach(t);
        if (*t).id == 0 {
            (*t).id = io::new_id();
        }
        io.attach((*t).id, (*t).fd).map_err(|e| e.c_message())?;
        (*t).owner = p;
        // The socket keeps its scheduler's memory alive: user value 1. The
        // userdata of `t` is found at the index its operation put it.
        ffi::lua_pushvalue(l, -1);
        set_owner_uv(l, t);
        Ok(())
    }
}

/// `[-1, +0, -]` Stores the value on the top as user value 1 of the socket
/// `t`, found in the frame (slot 1, or in the select tables).
unsafe fn set_owner_uv(l: L, t: *mut Tcp) {
    // SAFETY: valid state; `t` is reachable from the frame of the operation.
    unsafe {
        if ffi::lua_touserdata(l, 1) == t.cast() {
            ffi::lua_setiuservalue(l, 1, 1);
            return;
        }
        for idx in [1, 2] {
            if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
                continue;
            }
            let mut i = 1;
            while ffi::lua_rawgeti(l, idx, i) != ffi::LUA_TNIL {
                if ffi::lua_touserdata(l, -1) == t.cast() {
                    ffi::lua_rotate(l, -2, 1); // ud state
                    ffi::lua_setiuservalue(l, -2, 1);
                    ffi::lua_pop(l, 1);
                    return;
                }
                ffi::lua_pop(l, 1);
                i += 1;
            }
            ffi::lua_pop(l, 1);
        }
        ffi::lua_pop(l, 1);
    }
}

/// The continuation of a parked operation: ends the wait and steps again.
unsafe extern "C-unwind" fn resume(l: L, _status: c_int, ctx: ffi::lua_KContext) -> c_int {
    // SAFETY: the frame of the operation, then the state userdata and the
    // wait id pushed by `park`, then the values the cothread was resumed with.
    unsafe {
        let op = Op::from_ctx(ctx);
        let base = op.base();
        let p = ffi::lua_touserdata(l, base + 1) as *mut State;
        let id = ffi::lua_tointegerx(l, base + 2, std::ptr::null_mut()) as u64;
        ffi::lua_settop(l, base);
        let outcome = match p.as_mut().filter(|p| !p.closed).and_then(|p| p.io.as_mut()) {
            Some(io) => io.end(id),
            None => Outcome::Cancelled,
        };
        drive(l, op, Some(outcome.into()))
    }
}

/// Blocks the calling thread until the operation's descriptors are ready or
/// `deadline` (outside cothreads, as LuaSocket does).
unsafe fn block(l: L, op: Op, deadline: Option<u64>) -> Why {
    // SAFETY: the frame of `op`; nothing here raises.
    unsafe {
        let mut fds: Vec<libc::pollfd> = waits_of(l, op)
            .into_iter()
            .map(|(t, dir)| sys::pollfd((*t).fd, if dir == READ { sys::POLL_IN } else { sys::POLL_OUT }))
            .collect();
        loop {
            let ms = match deadline {
                None => -1,
                Some(d) => {
                    let now = now_ns();
                    if d <= now {
                        return Why::Failed(c"timeout");
                    }
                    (d - now).div_ceil(1_000_000).min(c_int::MAX as u64) as c_int
                }
            };
            match sys::poll(&mut fds, ms) {
                Ok(0) => continue,
                Ok(_) => return Why::Ready,
                Err(e) => return Why::Failed(sys::strerror(e)),
            }
        }
    }
}

// ----- receive -----

/// Receive patterns (slot 2): a count >= 0, or one of these.
const LINE: ffi::lua_Integer = -1;
const ALL: ffi::lua_Integer = -2;

/// `client:receive([pattern [, prefix]])`: "*l"/"l" (a line, without its end
/// of line and any CR), "*a"/"a" (up to the end of the stream), or a count.
unsafe extern "C-unwind" fn tcp_receive(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Client]);
        let pattern = if ffi::lua_type(l, 2) == ffi::LUA_TNUMBER {
            let n = ffi::lua_tonumber(l, 2);
            if n.is_nan() || n < 0.0 {
                raw::arg_error(l, 2, c"invalid receive pattern");
            }
            n.min(ffi::lua_Integer::MAX as f64) as ffi::lua_Integer
        } else if ffi::lua_isnoneornil(l, 2) != 0 {
            LINE
        } else {
            let s = raw::to_str(l, 2).map(|s| CStr::from_ptr(s).to_bytes());
            match s {
                Some(b"*l" | b"l") => LINE,
                Some(b"*a" | b"a") => ALL,
                _ => raw::arg_error(l, 2, c"invalid receive pattern"),
            }
        };
        ffi::lua_settop(l, 3);
        if ffi::lua_isnoneornil(l, 3) != 0 {
            ffi::lua_pushliteral(l, c"");
            ffi::lua_replace(l, 3);
        } else {
            ffi::luaL_checklstring(l, 3, std::ptr::null_mut());
        }
        ffi::lua_pushinteger(l, pattern);
        ffi::lua_replace(l, 2);
        push_deadline(l, (*t).total); // socket pattern prefix deadline
        drive(l, Op::Receive, None)
    }
}

/// `[-0, +1, m]` Pushes the prefix (slot 3) followed by `n` unread bytes of
/// `t` (CRs dropped for a line), and consumes `skip >= n` of them.
unsafe fn push_taken(l: L, t: *mut Tcp, n: usize, skip: usize, line: bool) {
    // SAFETY: valid state; `t` is live and `n <= skip <= unread`; the string
    // is copied by Lua before the buffer changes.
    unsafe {
        let first = (*t).rb.first;
        push_data(l, &mut (&mut (*t).rb.buf)[first..first + n], line);
        (*t).consume(skip);
        (*t).received += skip as u64;
    }
}

/// `[-0, +1, m]` Pushes the prefix (slot 3) followed by `data` (for a line,
/// its CRs are dropped in place: those bytes are consumed anyway).
unsafe fn push_data(l: L, data: &mut [u8], line: bool) {
    let mut len = data.len();
    if line {
        let mut w = 0;
        for r in 0..len {
            if data[r] != b'\r' {
                data[w] = data[r];
                w += 1;
            }
        }
        len = w;
    }
    // SAFETY: valid state with two free slots; Lua copies the bytes.
    unsafe {
        ffi::lua_pushvalue(l, 3);
        ffi::lua_pushlstring(l, data.as_ptr().cast(), len);
        ffi::lua_concat(l, 2);
    }
}

thread_local! {
    /// Where a receive reads when its object's buffer is empty: data taken
    /// as it comes (the usual case) then never goes through the object's
    /// buffer, so an idle connection holds no read buffer.
    static SCRATCH: std::cell::UnsafeCell<Vec<u8>> = const { std::cell::UnsafeCell::new(Vec::new()) };
}

/// Reads once from `t` into its buffer, through the thread's scratch buffer
/// if the object's is empty; a read that satisfies the pattern by itself is
/// pushed from there (the rest, if any, is kept in the object): then
/// `Ok(None)`. Otherwise what `recv` returned.
unsafe fn recv_step(l: L, t: *mut Tcp, pattern: ffi::lua_Integer, wanted: usize) -> sys::SysResult<Option<usize>> {
    // SAFETY: `t` is live; the scratch vector is only touched here, never
    // while Lua runs (the rest is stored before the string is pushed, since
    // a finalizer run by that push may receive too); `data` is a plain slice.
    unsafe {
        if !(*t).unread().is_empty() {
            return sys::recv((*t).fd, &mut (*t).rb.buf, CHUNK).map(Some);
        }
        let scratch = SCRATCH.with(|s| s.get());
        (*scratch).clear();
        let n = sys::recv((*t).fd, &mut *scratch, CHUNK)?;
        let data: &mut [u8] = std::slice::from_raw_parts_mut((*scratch).as_mut_ptr(), n);
        let taken = match pattern {
            _ if n == 0 => None,
            LINE => data.iter().position(|&b| b == b'\n').map(|i| (i, i + 1)),
            ALL => None,
            _ => (n >= wanted).then_some((wanted, wanted)),
        };
        let Some((len, skip)) = taken else {
            (*t).rb.buf.extend_from_slice(data);
            return Ok(Some(n));
        };
        (*t).rb.buf.extend_from_slice(&data[skip..]);
        (*t).drained = n < CHUNK;
        (*t).received += skip as u64;
        push_data(l, &mut data[..len], pattern == LINE);
        Ok(None)
    }
}

/// `[-0, +3, m]` A failed receive: `nil, msg, partial` (what was buffered).
unsafe fn receive_failed(l: L, t: *mut Tcp, msg: &CStr) -> Step {
    // SAFETY: valid state; `t` is live.
    unsafe {
        ffi::lua_pushnil(l);
        ffi::lua_pushstring(l, msg.as_ptr());
        let n = (*t).unread().len();
        let line = ffi::lua_tointegerx(l, 2, std::ptr::null_mut()) == LINE;
        push_taken(l, t, n, n, line);
        Step::Done(3)
    }
}

unsafe fn receive_step(l: L, why: Option<Why>) -> Step {
    // SAFETY: the frame of `Op::Receive`; `t` stays a live `Tcp` (slot 1).
    unsafe {
        let t = ffi::lua_touserdata(l, 1) as *mut Tcp;
        match why {
            Some(Why::Failed(m)) => return receive_failed(l, t, m),
            Some(Why::Ready) => (*t).drained = false,
            None => {}
        }
        let pattern = ffi::lua_tointegerx(l, 2, std::ptr::null_mut());
        let mut prefix_len = 0;
        ffi::lua_tolstring(l, 3, &mut prefix_len);
        let wanted = if pattern >= 0 { (pattern as usize).saturating_sub(prefix_len) } else { 0 };
        loop {
            // Satisfied by the buffer?
            let unread = (*t).unread().len();
            match pattern {
                LINE => {
                    if let Some(i) = (*t).rb.newline() {
                        push_taken(l, t, i, i + 1, true);
                        ffi::lua_pushnil(l);
                        ffi::lua_pushnil(l);
                        return Step::Done(3);
                    }
                }
                ALL => {}
                _ => {
                    // As LuaSocket: `receive(0)` (no prefix) needs something
                    // buffered, so it reads (waits) once, and fails on a
                    // closed or ended stream.
                    if unread >= wanted && (unread > 0 || pattern > 0 || prefix_len > 0) {
                        push_taken(l, t, wanted, wanted, false);
                        ffi::lua_pushnil(l);
                        ffi::lua_pushnil(l);
                        return Step::Done(3);
                    }
                }
            }
            if (*t).fd < 0 {
                return receive_failed(l, t, c"closed");
            }
            if (*t).drained {
                // Skip a recv that would most likely fail with EAGAIN; with
                // no time left to wait, try it all the same.
                if let Ok(d) = wait_deadline(l, t, 4) {
                    return Step::Wait(d);
                }
            }
            match recv_step(l, t, pattern, wanted) {
                Ok(None) => {
                    ffi::lua_pushnil(l);
                    ffi::lua_pushnil(l);
                    return Step::Done(3);
                }
                Ok(Some(0)) => {
                    if pattern == ALL && unread > 0 {
                        push_taken(l, t, unread, unread, false);
                        ffi::lua_pushnil(l);
                        ffi::lua_pushnil(l);
                        return Step::Done(3);
                    }
                    return receive_failed(l, t, c"closed");
                }
                Ok(Some(n)) => (*t).drained = n < CHUNK,
                Err(libc::EAGAIN) => match wait_deadline(l, t, 4) {
                    Ok(d) => return Step::Wait(d),
                    Err(()) => return receive_failed(l, t, c"timeout"),
                },
                Err(e) => return receive_failed(l, t, sys::strerror(e)),
            }
        }
    }
}

// ----- send -----

/// `client:send(data [, i [, j]])`: sends `data:sub(i, j)`; returns the
/// index of the last byte sent.
unsafe extern "C-unwind" fn tcp_send(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Client]);
        let mut size = 0;
        ffi::luaL_checklstring(l, 2, &mut size);
        let size = size as i64;
        let mut i = ffi::luaL_optinteger(l, 3, 1);
        let mut j = ffi::luaL_optinteger(l, 4, -1);
        if i < 0 {
            i = size + i + 1;
        }
        if j < 0 {
            j = size + j + 1;
        }
        i = i.max(1);
        j = j.min(size);
        ffi::lua_settop(l, 2);
        ffi::lua_pushinteger(l, i);
        ffi::lua_pushinteger(l, j);
        push_deadline(l, (*t).total);
        ffi::lua_pushinteger(l, 0);
        drive(l, Op::Send, None)
    }
}

unsafe fn send_step(l: L, why: Option<Why>) -> Step {
    // SAFETY: the frame of `Op::Send`; the data string stays in slot 2.
    unsafe {
        let t = ffi::lua_touserdata(l, 1) as *mut Tcp;
        let mut len = 0;
        let data = ffi::lua_tolstring(l, 2, &mut len) as *const u8;
        debug_assert!(ffi::lua_tointegerx(l, 4, std::ptr::null_mut()) <= len as i64);
        let i = ffi::lua_tointegerx(l, 3, std::ptr::null_mut());
        let j = ffi::lua_tointegerx(l, 4, std::ptr::null_mut());
        let mut sent = ffi::lua_tointegerx(l, 6, std::ptr::null_mut());
        let failed = |l: L, sent: i64, msg: &CStr| {
            ffi::lua_pushnil(l);
            ffi::lua_pushstring(l, msg.as_ptr());
            ffi::lua_pushinteger(l, i - 1 + sent);
            Step::Done(3)
        };
        if let Some(Why::Failed(m)) = why {
            return failed(l, sent, m);
        }
        while i - 1 + sent < j {
            if (*t).fd < 0 {
                return failed(l, sent, c"closed");
            }
            let from = (i - 1 + sent) as usize;
            let chunk = std::slice::from_raw_parts(data.add(from), j as usize - from);
            match sys::send((*t).fd, chunk) {
                Ok(n) => {
                    sent += n as i64;
                    (*t).sent += n as u64;
                }
                Err(libc::EAGAIN) => {
                    ffi::lua_pushinteger(l, sent);
                    ffi::lua_replace(l, 6);
                    return match wait_deadline(l, t, 5) {
                        Ok(d) => Step::Wait(d),
                        Err(()) => failed(l, sent, c"timeout"),
                    };
                }
                Err(e) => return failed(l, sent, sys::strerror(e)),
            }
        }
        ffi::lua_pushinteger(l, i - 1 + sent);
        ffi::lua_pushnil(l);
        ffi::lua_pushnil(l);
        Step::Done(3)
    }
}

// ----- accept -----

/// `server:accept()`: the next connection, a client object.
unsafe extern "C-unwind" fn tcp_accept(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Server]);
        ffi::lua_settop(l, 1);
        push_deadline(l, (*t).total);
        drive(l, Op::Accept, None)
    }
}

unsafe fn accept_step(l: L, why: Option<Why>) -> Step {
    // SAFETY: the frame of `Op::Accept`.
    unsafe {
        let t = ffi::lua_touserdata(l, 1) as *mut Tcp;
        if let Some(Why::Failed(m)) = why {
            return Step::Done(fail(l, m));
        }
        if (*t).fd < 0 {
            return Step::Done(fail(l, c"closed"));
        }
        match sys::accept((*t).fd) {
            Ok(fd) => {
                push_tcp(l, fd, (*t).family, Kind::Client, false);
                Step::Done(1)
            }
            Err(libc::EAGAIN) => match wait_deadline(l, t, 2) {
                Ok(d) => Step::Wait(d),
                Err(()) => Step::Done(fail(l, c"timeout")),
            },
            Err(e) => Step::Done(fail(l, sys::strerror(e))),
        }
    }
}

// ----- connect -----

/// `master:connect(host, port)`: connects (blocking name resolution, then a
/// non-blocking connect awaited on the loop); the object becomes a client.
unsafe extern "C-unwind" fn tcp_connect(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Master]);
        check_host_port(l, 2);
        ffi::lua_settop(l, 3);
        push_deadline(l, (*t).total);
        ffi::lua_pushboolean(l, 0);
        ffi::lua_pushboolean(l, 0);
        drive(l, Op::Connect, None)
    }
}

/// How starting a connection went.
enum Started {
    Connected,
    InProgress,
    Failed(&'static CStr),
}

/// Resolves and starts connecting `t`, trying the next address after an
/// immediate failure if the object chose no family.
unsafe fn start_connect(t: *mut Tcp, host: Option<&CStr>, port: &CStr) -> Started {
    // SAFETY: `t` is live; only Rust code runs while the vector lives.
    unsafe {
        let addrs = match resolve(host, port, (*t).family, (*t).kind, false) {
            Ok(a) => a,
            Err(m) => return Started::Failed(m),
        };
        let mut last = c"host or service not provided, or not known";
        for a in &addrs {
            if (*t).fd >= 0 && a.family() != (*t).family {
                continue;
            }
            let made = (*t).fd < 0;
            if let Err(e) = ensure_fd(t, a.family()) {
                return Started::Failed(sys::strerror(e));
            }
            match sys::connect((*t).fd, a) {
                Ok(()) => return Started::Connected,
                Err(libc::EINPROGRESS) => return Started::InProgress,
                Err(e) => {
                    last = sys::strerror(e);
                    if made && (*t).lazy {
                        // Another family may work: start afresh.
                        sys::close((*t).fd);
                        (*t).fd = -1;
                        (*t).family = libc::AF_UNSPEC;
                    } else {
                        return Started::Failed(last);
                    }
                }
            }
        }
        Started::Failed(last)
    }
}

unsafe fn connect_step(l: L, why: Option<Why>) -> Step {
    // SAFETY: the frame of `Op::Connect`.
    unsafe {
        let t = ffi::lua_touserdata(l, 1) as *mut Tcp;
        let done = |l: L, r: Result<(), &CStr>| {
            let t = ffi::lua_touserdata(l, 1) as *mut Tcp;
            if ffi::lua_toboolean(l, 6) == 0 {
                return Step::Done(match r {
                    Ok(()) => ok(l),
                    Err(m) => fail(l, m),
                });
            }
            // The module's connect returns the object, or closes it.
            match r {
                Ok(()) => {
                    ffi::lua_pushvalue(l, 1);
                    Step::Done(1)
                }
                Err(m) => {
                    close_tcp(t);
                    Step::Done(fail(l, m))
                }
            }
        };
        if let Some(Why::Failed(m)) = why {
            return done(l, Err(m));
        }
        if (*t).closed {
            return done(l, Err(c"closed"));
        }
        if ffi::lua_toboolean(l, 5) == 0 {
            let (host, port) = check_host_port(l, 2);
            match start_connect(t, host, port) {
                Started::Connected => {
                    set_kind(l, 1, t, Kind::Client);
                    return done(l, Ok(()));
                }
                Started::Failed(m) => return done(l, Err(m)),
                Started::InProgress => {
                    ffi::lua_pushboolean(l, 1);
                    ffi::lua_replace(l, 5);
                }
            }
        } else {
            match sys::socket_error((*t).fd) {
                0 => {
                    set_kind(l, 1, t, Kind::Client);
                    return done(l, Ok(()));
                }
                libc::EINPROGRESS | libc::EALREADY => {}
                e => return done(l, Err(sys::strerror(e))),
            }
        }
        match wait_deadline(l, t, 4) {
            Ok(d) => Step::Wait(d),
            Err(()) => done(l, Err(c"timeout")),
        }
    }
}

// ----- select and sleep -----

/// `socket.select(recvt, sendt [, timeout])`: the sockets of `recvt` that
/// are readable (or hold buffered data) and those of `sendt` that are
/// writable, as lists that also map each socket to its index; with none
/// ready after `timeout` seconds (nil or negative: no limit),
/// `{}, {}, "timeout"`.
pub(crate) unsafe extern "C-unwind" fn select(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        for idx in [1, 2] {
            if ffi::lua_isnoneornil(l, idx) != 0 {
                continue;
            }
            ffi::luaL_checktype(l, idx, ffi::LUA_TTABLE);
            let mut i = 1;
            while ffi::lua_rawgeti(l, idx, i) != ffi::LUA_TNIL {
                // Channel receivers may be selected for reading.
                let receiver = idx == 1 && channel::is_receiver(l, -1);
                if to_sock(l, -1).is_null() && !receiver {
                    let msg = ffi::lua_pushfstring(
                        l,
                        c"socket expected at index %d, got %s".as_ptr(),
                        i as c_int,
                        ffi::luaL_typename(l, -1),
                    );
                    ffi::luaL_argerror(l, idx, msg);
                }
                ffi::lua_pop(l, 1);
                i += 1;
            }
            ffi::lua_pop(l, 1);
        }
        let timeout = if ffi::lua_isnoneornil(l, 3) != 0 { -1.0 } else { ffi::luaL_checknumber(l, 3) };
        ffi::lua_settop(l, 3);
        push_deadline(l, timeout);
        drive(l, Op::Select, None)
    }
}

/// Marks (`Tcp::sel`) the sockets of the select tables that are ready now;
/// returns whether any is.
unsafe fn select_poll(l: L) -> bool {
    // SAFETY: the frame of `Op::Select`; nothing raises while `fds` lives.
    unsafe {
        let socks = waits_of(l, Op::Select);
        let mut fds: Vec<libc::pollfd> = socks
            .iter()
            .map(|&(t, dir)| {
                (*t).sel = 0;
                sys::pollfd((*t).fd, if dir == READ { sys::POLL_IN } else { sys::POLL_OUT })
            })
            .collect();
        let _ = sys::poll(&mut fds, 0);
        let mut any = false;
        for (&(t, dir), fd) in socks.iter().zip(&fds) {
            let failed = fd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0;
            let ready = failed || fd.revents & fd.events != 0 || (dir == READ && !(*t).unread().is_empty());
            if ready {
                (*t).sel |= dir as u8;
                if dir == READ {
                    (*t).drained = false;
                }
                any = true;
            }
        }
        channel::select_poll(l, 1) || any
    }
}

/// `[-0, +1, m]` Pushes the list of the sockets of table `idx` marked for
/// `dir`. It maps each socket to its index too (`list[sock] == i`, as
/// LuaSocket's), through its metatable: `pairs` and `next` see only the list,
/// as with cosock's `select`, whose results programs iterate with `pairs`.
unsafe fn push_selected(l: L, idx: c_int, dir: u32) {
    // SAFETY: the frame of `Op::Select`; the sockets stay in their table.
    // Stack: out, then (once a socket is ready) its metatable `map`.
    unsafe {
        raw::check_stack(l, 4);
        ffi::lua_newtable(l);
        let out = ffi::lua_gettop(l);
        let mut n = 0;
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
            return;
        }
        let mut i = 1;
        while ffi::lua_rawgeti(l, idx, i) != ffi::LUA_TNIL {
            let t = to_sock(l, -1);
            let ready = if t.is_null() { channel::selected(l, -1) } else { (*t).fd >= 0 && (*t).sel & dir as u8 != 0 };
            if ready {
                if n == 0 {
                    ffi::lua_createtable(l, 0, 2); // out sock map
                    ffi::lua_pushvalue(l, -1);
                    ffi::lua_setfield(l, -2, c"__index".as_ptr()); // map.__index = map
                    ffi::lua_rotate(l, -2, 1); // out map sock
                }
                n += 1;
                ffi::lua_pushvalue(l, -1);
                ffi::lua_rawseti(l, out, n);
                ffi::lua_pushinteger(l, n);
                ffi::lua_rawset(l, out + 1); // map[sock] = n
            } else {
                ffi::lua_pop(l, 1);
            }
            i += 1;
        }
        ffi::lua_pop(l, 1);
        if n > 0 {
            ffi::lua_setmetatable(l, out);
        }
    }
}

unsafe fn select_step(l: L, why: Option<Why>) -> Step {
    // SAFETY: the frame of `Op::Select`.
    unsafe {
        let ready = match why {
            Some(Why::Failed(_)) => false,
            _ => select_poll(l),
        };
        if ready {
            push_selected(l, 1, READ);
            push_selected(l, 2, WRITE);
            return Step::Done(2);
        }
        let msg = match why {
            Some(Why::Failed(m)) => Some(m),
            _ => {
                let d = (ffi::lua_type(l, 4) == ffi::LUA_TNUMBER)
                    .then(|| ffi::lua_tointegerx(l, 4, std::ptr::null_mut()) as u64);
                match d {
                    Some(d) if d <= now_ns() => Some(c"timeout"),
                    d => return Step::Wait(d),
                }
            }
        };
        ffi::lua_newtable(l);
        ffi::lua_newtable(l);
        ffi::lua_pushstring(l, msg.unwrap_or(c"timeout").as_ptr());
        Step::Done(3)
    }
}

/// `socket.sleep(seconds)`: suspends the calling cothread (blocks outside
/// cothreads) for `seconds`. `seconds <= 0` in a cothread yields once
/// through the event loop (cosock's `sleep(0)`).
unsafe extern "C-unwind" fn sleep(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        let s = ffi::luaL_checknumber(l, 1);
        ffi::lua_settop(l, 1);
        if s.is_nan() || (s <= 0.0 && cothread_of(l).is_none()) {
            return 0;
        }
        push_deadline(l, s.max(0.0));
        drive(l, Op::Sleep, None)
    }
}

unsafe fn sleep_step(l: L, why: Option<Why>) -> Step {
    // SAFETY: the frame of `Op::Sleep` (slot 2: the deadline).
    unsafe {
        match why {
            Some(_) => Step::Done(0),
            None => Step::Wait(Some(ffi::lua_tointegerx(l, 2, std::ptr::null_mut()) as u64)),
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
            return fail(l, sys::strerror(e));
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
        let mut value = [0u8; options::MAX_VALUE];
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
                fail(l, m)
            }
        }
    }
}

/// `socket.connect(host, port [, lhost [, lport [, family]]])`: a client
/// connected to `host:port` (bound first to `lhost:lport` if given; family
/// "inet", "inet6" or "unspec").
unsafe extern "C-unwind" fn connect(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        check_host_port(l, 1);
        let local = ffi::lua_isnoneornil(l, 3) == 0;
        if local {
            ffi::luaL_checklstring(l, 3, std::ptr::null_mut());
            ffi::luaL_optlstring(l, 4, c"0".as_ptr(), std::ptr::null_mut());
        }
        let fam = CStr::from_ptr(ffi::luaL_optlstring(l, 5, c"unspec".as_ptr(), std::ptr::null_mut()));
        let family = match fam.to_bytes() {
            b"unspec" => libc::AF_UNSPEC,
            b"inet" => libc::AF_INET,
            b"inet6" => libc::AF_INET6,
            _ => bad_option(l, 5, fam),
        };
        ffi::lua_settop(l, 5); // the object goes above the arguments, missing ones nil
        let t = push_tcp(l, -1, family, Kind::Master, family == libc::AF_UNSPEC);
        if family != libc::AF_UNSPEC {
            if let Err(e) = ensure_fd(t, family) {
                return fail(l, sys::strerror(e));
            }
        }
        if local {
            let lhost = CStr::from_ptr(ffi::lua_tolstring(l, 3, std::ptr::null_mut()));
            let lport = if ffi::lua_isnoneornil(l, 4) != 0 {
                c"0"
            } else {
                CStr::from_ptr(ffi::lua_tolstring(l, 4, std::ptr::null_mut()))
            };
            let lhost = if lhost.to_bytes() == b"*" { None } else { Some(lhost) };
            if let Some(m) = bind_to(t, lhost, lport) {
                close_tcp(t);
                return fail(l, m);
            }
        }
        // Frame: socket host port deadline in-progress return-the-socket.
        let obj = ffi::lua_gettop(l);
        ffi::lua_pushvalue(l, obj);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushvalue(l, 2);
        ffi::lua_pushnil(l);
        ffi::lua_pushboolean(l, 0);
        ffi::lua_pushboolean(l, 1);
        ffi::lua_rotate(l, 1, 6);
        ffi::lua_settop(l, 6);
        drive(l, Op::Connect, None)
    }
}

// ===== the module =====

const METHODS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"accept", tcp_accept),
    (c"bind", tcp_bind),
    (c"close", tcp_close),
    (c"connect", tcp_connect),
    (c"dirty", tcp_dirty),
    (c"getfamily", sock_getfamily),
    (c"getfd", tcp_getfd),
    (c"getoption", tcp_getoption),
    (c"getpeername", tcp_getpeername),
    (c"getsockname", tcp_getsockname),
    (c"getstats", tcp_getstats),
    (c"gettimeout", tcp_gettimeout),
    (c"listen", tcp_listen),
    (c"receive", tcp_receive),
    (c"send", tcp_send),
    (c"setfd", sock_setfd),
    (c"setoption", tcp_setoption),
    (c"setpeername", tcp_connect),
    (c"setsockname", tcp_bind),
    (c"setstats", tcp_setstats),
    (c"settimeout", tcp_settimeout),
    (c"shutdown", tcp_shutdown),
];

const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"tcp", tcp),
    (c"tcp4", tcp4),
    (c"tcp6", tcp6),
    (c"bind", bind),
    (c"connect", connect),
    (c"select", select),
    (c"sleep", sleep),
    (c"gettime", gettime),
    (c"skip", skip),
    (c"__unload", unload),
];

/// `[-0, +1, m]` Pushes the module table, made once per Lua state.
///
/// # Safety
/// `l` is a valid state.
pub unsafe fn push_module(l: L) {
    // SAFETY: valid state.
    unsafe { raw::push_module_once(l, MODULE, |l| make_module(l)) }
}

/// `[-0, +0, m]` Registers the metatable of class `kind` (once per Lua
/// state): marked with `MARK`, its metamethods, and an `__index` with the
/// protocol's `methods` and `class`. Methods and metamethods get the
/// metatable as upvalue 1 (`to_sock`).
unsafe fn new_class(l: L, kind: Kind, methods: &[(&CStr, ffi::lua_CFunction)]) {
    // SAFETY: valid state; pushes are balanced as the comments show.
    unsafe {
        raw::check_stack(l, 4);
        if ffi::luaL_newmetatable(l, kind.registry().as_ptr()) != 0 {
            ffi::lua_pushboolean(l, 1);
            ffi::lua_rawsetp(l, -2, (&raw const MARK).cast()); // mt[MARK] = true
            for (name, f) in
                [(c"__gc", tcp_gc as ffi::lua_CFunction), (c"__close", tcp_close), (c"__tostring", tcp_tostring)]
            {
                ffi::lua_pushvalue(l, -1);
                ffi::lua_pushcclosure(l, f, 1);
                ffi::lua_setfield(l, -2, name.as_ptr());
            }
            ffi::lua_createtable(l, 0, methods.len() as c_int + 1); // mt index
            for (name, f) in methods {
                ffi::lua_pushvalue(l, -2);
                ffi::lua_pushcclosure(l, *f, 1);
                ffi::lua_setfield(l, -2, name.as_ptr());
            }
            ffi::lua_pushstring(l, kind.name().as_ptr());
            ffi::lua_setfield(l, -2, c"class".as_ptr());
            ffi::lua_setfield(l, -2, c"__index".as_ptr());
        }
        ffi::lua_pop(l, 1);
    }
}

/// LuaSocket's helpers written in Lua (`helpers.lua`, embedded).
const HELPERS: &str = include_str!("socket/helpers.lua");

/// `[-0, +0, e]` Runs the helpers' chunk with the module table on the top.
unsafe fn add_helpers(l: L) {
    // SAFETY: valid state; pushes are balanced as the comments show.
    unsafe {
        raw::check_stack(l, 3);
        raw::load_chunk(l, HELPERS, c"=cothread.socket");
        ffi::lua_pushvalue(l, -2); // M chunk M
        ffi::lua_call(l, 1, 0);
    }
}

/// `[-0, +1, m]` Registers the metatables and pushes a new module table.
unsafe fn make_module(l: L) {
    // SAFETY: valid state; pushes are balanced as the comments show.
    unsafe {
        raw::check_stack(l, 6);
        for kind in [Kind::Master, Kind::Client, Kind::Server] {
            new_class(l, kind, METHODS);
        }
        for kind in [Kind::Unconnected, Kind::Connected] {
            new_class(l, kind, udp::METHODS);
        }
        ffi::lua_createtable(l, 0, FUNCTIONS.len() as c_int + 12);
        for (name, f) in FUNCTIONS.iter().chain(udp::FUNCTIONS) {
            ffi::lua_pushcfunction(l, *f);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
        // LuaSocket's constants: select takes any descriptor this process
        // may have (epoll and poll(2), no FD_SETSIZE); an invalid descriptor
        // is -1; receive and receivefrom take 8192 bytes by default.
        for (name, v) in [
            (c"_SETSIZE", sys::max_descriptors()),
            (c"_SOCKETINVALID", -1),
            (c"_DATAGRAMSIZE", udp::DEFAULT_SIZE),
        ] {
            ffi::lua_pushinteger(l, v as ffi::lua_Integer);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
        protect::add_functions(l);
        add_helpers(l);
        crate::dns::push_module(l);
        ffi::lua_setfield(l, -2, c"dns".as_ptr());
        ffi::lua_pushfstring(l, c"cothread.socket %s".as_ptr(), cothread::ffi::cot_version_string());
        ffi::lua_setfield(l, -2, c"_VERSION".as_ptr());
    }
}
