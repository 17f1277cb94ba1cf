//! UDP objects (`socket.udp()`), LuaSocket's datagram interface.
//!
//! A UDP object is the same `Tcp` record as a TCP object, with two classes
//! of its own (metatables `cothread.udp{unconnected}` and
//! `cothread.udp{connected}`): *unconnected* (`sendto`,
//! `receivefrom`, `setsockname`) and *connected* (`send`, `getpeername`),
//! switched by `setpeername`. Its blocking calls (`send`, `sendto`,
//! `receive`, `receivefrom`) are engine operations (`Receive`, `Send`),
//! driven as the TCP ones are: they suspend the calling cothread on its
//! scheduler's engine, or block outside cothreads. Name resolution, binding,
//! timeouts, options, `close` and `select` are the TCP code's.

use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;

use super::methods::{bind_to, check_host_port, push_addr};
use super::object::{
    Kind, Tcp, check_tcp, close_tcp, ensure_fd, failure, ok, one_source, push_deadline, push_tcp, set_kind,
    wait_deadline,
};
use super::options;
use super::tcp::{Started, start_connect};
use crate::engine::{Frame, Next, Operation, READ, Source, WRITE, Why};
use crate::park::drive_raw;
use crate::raw::{self, L, ffi};
use crate::sys;

/// Bytes `receive` and `receivefrom` take by default (LuaSocket's).
pub(super) const DEFAULT_SIZE: ffi::lua_Integer = 8192;
/// The largest datagram (an IPv4 or IPv6 UDP payload is smaller).
const MAX_SIZE: ffi::lua_Integer = 65535;

const UDP_ANY: &[Kind] = &[Kind::Unconnected, Kind::Connected];

/// Methods every socket object shares with TCP, checked as UDP first (for
/// LuaSocket's `udp{any} expected` message).
macro_rules! shared {
    ($($name:ident => $f:path),* $(,)?) => {$(
        unsafe extern "C-unwind" fn $name(l: L) -> c_int {
            // SAFETY: a method of the module; the shared one checks again.
            unsafe {
                check_tcp(l, 1, UDP_ANY);
                $f(l)
            }
        }
    )*};
}

shared! {
    udp_close => super::object::tcp_close,
    udp_getfd => super::methods::tcp_getfd,
    udp_dirty => super::methods::tcp_dirty,
    udp_settimeout => super::methods::tcp_settimeout,
    udp_gettimeout => super::methods::tcp_gettimeout,
    udp_getsockname => super::methods::tcp_getsockname,
    udp_getfamily => super::methods::sock_getfamily,
    udp_setfd => super::methods::sock_setfd,
}

/// `udp:setoption(name, value)`: LuaSocket's UDP options.
unsafe extern "C-unwind" fn udp_setoption(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe { options::set(l, check_tcp(l, 1, UDP_ANY), options::UDP) }
}

/// `udp:getoption(name)`.
unsafe extern "C-unwind" fn udp_getoption(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe { options::get(l, check_tcp(l, 1, UDP_ANY), options::UDP) }
}

/// `connected:getpeername()`: `host, port, family` of the peer.
unsafe extern "C-unwind" fn udp_getpeername(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Connected]);
        if (*t).fd < 0 {
            return raw::push_fail(l, c"closed");
        }
        match sys::name((*t).fd, true) {
            Ok(a) => push_addr(l, &a),
            Err(e) => raw::push_fail(l, sys::strerror(e)),
        }
    }
}

/// `unconnected:setsockname(host, port)`: binds (`"*"`: any address).
unsafe extern "C-unwind" fn udp_setsockname(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Unconnected]);
        let (host, port) = check_host_port(l, 2);
        if (*t).closed {
            return raw::push_fail(l, c"closed");
        }
        match bind_to(t, host, port) {
            None => ok(l),
            Some(m) => raw::push_fail(l, m),
        }
    }
}

/// `udp:setpeername(host, port)`: connects (the object becomes connected);
/// `udp:setpeername("*")`: disconnects (it becomes unconnected).
unsafe extern "C-unwind" fn udp_setpeername(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let t = check_tcp(l, 1, UDP_ANY);
        let host = CStr::from_ptr(ffi::luaL_checklstring(l, 2, std::ptr::null_mut()));
        if host.to_bytes() == b"*" {
            if (*t).closed {
                return raw::push_fail(l, c"closed");
            }
            if (*t).fd >= 0 {
                if let Err(e) = sys::disconnect((*t).fd) {
                    return raw::push_fail(l, sys::strerror(e));
                }
            }
            set_kind(l, 1, t, Kind::Unconnected);
            return ok(l);
        }
        let (host, port) = check_host_port(l, 2);
        if (*t).closed {
            return raw::push_fail(l, c"closed");
        }
        match start_connect(t, host, port) {
            Started::Connected | Started::InProgress => {
                set_kind(l, 1, t, Kind::Connected);
                ok(l)
            }
            Started::Failed(m) => raw::push_fail(l, m),
        }
    }
}

// ----- receive -----

/// `udp:receive` and `receivefrom`. Frame: 1 object, 2 size, 3 with the
/// sender (receivefrom), 4 deadline.
#[derive(Clone, Copy)]
struct Receive;

impl Operation for Receive {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        // SAFETY: the frame `start_receive` built.
        unsafe { receive_step(f, why) }
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        // SAFETY: as `step`.
        unsafe { one_source(f.l(), f.base, READ, each) }
    }
}

/// Starts `receive` (`from` false) or `receivefrom`.
unsafe fn start_receive(l: L, from: bool) -> c_int {
    // SAFETY: `check_tcp` returns a live object or raises; the frame is built
    // in the function's own stack.
    unsafe {
        let t = if from { check_tcp(l, 1, &[Kind::Unconnected]) } else { check_tcp(l, 1, UDP_ANY) };
        let size = if ffi::lua_isnoneornil(l, 2) != 0 {
            DEFAULT_SIZE
        } else {
            let n = ffi::luaL_checknumber(l, 2);
            if n.is_nan() || n < 0.0 {
                raw::arg_error(l, 2, c"invalid receive size");
            }
            n.min(MAX_SIZE as f64) as ffi::lua_Integer
        };
        ffi::lua_settop(l, 1);
        ffi::lua_pushinteger(l, size);
        ffi::lua_pushboolean(l, from as c_int);
        push_deadline(l, (*t).total); // socket size from deadline
        drive_raw(l, Receive)
    }
}

/// `udp:receive([size])`: the next datagram (at most `size` bytes, default
/// 8192; the rest of a longer one is dropped).
unsafe extern "C-unwind" fn udp_receive(l: L) -> c_int {
    // SAFETY: a method of a UDP class (see `start_receive`).
    unsafe { start_receive(l, false) }
}

/// `unconnected:receivefrom([size])`: the next datagram and its sender's
/// `ip, port`.
unsafe extern "C-unwind" fn udp_receivefrom(l: L) -> c_int {
    // SAFETY: a method of a UDP class (see `start_receive`).
    unsafe { start_receive(l, true) }
}

unsafe fn receive_step(f: &mut Frame, why: Why) -> Next {
    // SAFETY: the frame of `Receive`; `t` stays a live object (slot 1); the
    // datagram is copied into Lua before the buffer is emptied.
    unsafe {
        let l = f.l();
        let t = ffi::lua_touserdata(l, f.at(1)) as *mut Tcp;
        if let Some(m) = failure(why) {
            return Next::Done(raw::push_fail(l, m));
        }
        if (*t).closed {
            return Next::Done(raw::push_fail(l, c"closed"));
        }
        // An unused `udp()` receives on an IPv4 descriptor (nothing comes
        // before it is bound or sends).
        if let Err(e) = ensure_fd(t, libc::AF_INET) {
            return Next::Done(raw::push_fail(l, sys::strerror(e)));
        }
        let size = ffi::lua_tointegerx(l, f.at(2), std::ptr::null_mut()) as usize;
        match sys::recvfrom((*t).fd, &mut (*t).rb.buf, size) {
            Ok(addr) => {
                (*t).rb.first = 0;
                ffi::lua_pushlstring(l, (*t).rb.buf.as_ptr().cast(), (*t).rb.buf.len());
                (*t).rb.buf.clear();
                if ffi::lua_toboolean(l, f.at(3)) == 0 {
                    return Next::Done(1);
                }
                push_addr(l, &addr);
                ffi::lua_pop(l, 1); // the family
                Next::Done(3)
            }
            Err(libc::EAGAIN) => match wait_deadline(l, t, f.at(4)) {
                Ok(d) => Next::Wait(d),
                Err(()) => Next::Done(raw::push_fail(l, c"timeout")),
            },
            Err(e) => Next::Done(raw::push_fail(l, sys::strerror(e))),
        }
    }
}

// ----- send -----

/// `connected:send` and `sendto`. Frame: 1 object, 2 data, 3 ip (nil:
/// connected), 4 port, 5 deadline.
#[derive(Clone, Copy)]
struct Send;

impl Operation for Send {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        // SAFETY: the frame `udp_send` or `udp_sendto` built.
        unsafe { send_step(f, why) }
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        // SAFETY: as `step`.
        unsafe { one_source(f.l(), f.base, WRITE, each) }
    }
}

/// `connected:send(datagram)`: sends it to the peer; the number of bytes sent.
unsafe extern "C-unwind" fn udp_send(l: L) -> c_int {
    // SAFETY: `check_tcp` returns a live connected object or raises.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Connected]);
        ffi::luaL_checklstring(l, 2, std::ptr::null_mut());
        ffi::lua_settop(l, 2);
        ffi::lua_pushnil(l);
        ffi::lua_pushnil(l);
        push_deadline(l, (*t).total); // socket data nil nil deadline
        drive_raw(l, Send)
    }
}

/// `unconnected:sendto(datagram, ip, port)`: sends it to a numeric address
/// (no name resolution, as in LuaSocket); the number of bytes sent.
unsafe extern "C-unwind" fn udp_sendto(l: L) -> c_int {
    // SAFETY: `check_tcp` returns a live unconnected object or raises.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Unconnected]);
        ffi::luaL_checklstring(l, 2, std::ptr::null_mut());
        ffi::luaL_checklstring(l, 3, std::ptr::null_mut());
        ffi::luaL_checklstring(l, 4, std::ptr::null_mut()); // a number becomes a string
        ffi::lua_settop(l, 4);
        push_deadline(l, (*t).total); // socket data ip port deadline
        drive_raw(l, Send)
    }
}

/// The destination of a `sendto` (None: the peer of `send`), making the
/// descriptor of a `udp()` for its family; the message of a failure.
unsafe fn destination(f: &Frame, t: *mut Tcp) -> Result<Option<sys::Addr>, &'static CStr> {
    // SAFETY: the frame of `Send`; the strings stay in their slots; only
    // Rust code runs while the vector lives.
    unsafe {
        if ffi::lua_type(f.l(), f.at(3)) == ffi::LUA_TNIL {
            return Ok(None);
        }
        let ip = CStr::from_ptr(ffi::lua_tolstring(f.l(), f.at(3), std::ptr::null_mut()));
        let port = CStr::from_ptr(ffi::lua_tolstring(f.l(), f.at(4), std::ptr::null_mut()));
        let addr = match sys::resolve_numeric(ip, port, (*t).family) {
            Ok(v) => v.first().copied().ok_or(c"host or service not provided, or not known")?,
            Err(e) => return Err(sys::resolve_strerror(e)),
        };
        ensure_fd(t, addr.family()).map_err(sys::strerror)?;
        Ok(Some(addr))
    }
}

unsafe fn send_step(f: &mut Frame, why: Why) -> Next {
    // SAFETY: the frame of `Send`; the data string stays in slot 2.
    unsafe {
        let l = f.l();
        let t = ffi::lua_touserdata(l, f.at(1)) as *mut Tcp;
        if let Some(m) = failure(why) {
            return Next::Done(raw::push_fail(l, m));
        }
        if (*t).closed || (*t).fd < 0 && ffi::lua_type(l, f.at(3)) == ffi::LUA_TNIL {
            return Next::Done(raw::push_fail(l, c"closed"));
        }
        let dest = match destination(f, t) {
            Ok(d) => d,
            Err(m) => return Next::Done(raw::push_fail(l, m)),
        };
        let mut len = 0;
        let data = ffi::lua_tolstring(l, f.at(2), &mut len) as *const u8;
        match sys::sendto((*t).fd, std::slice::from_raw_parts(data, len), dest.as_ref()) {
            Ok(n) => {
                ffi::lua_pushinteger(l, n as ffi::lua_Integer);
                Next::Done(1)
            }
            Err(libc::EAGAIN) => match wait_deadline(l, t, f.at(5)) {
                Ok(d) => Next::Wait(d),
                Err(()) => Next::Done(raw::push_fail(l, c"timeout")),
            },
            Err(e) => Next::Done(raw::push_fail(l, sys::strerror(e))),
        }
    }
}

// ===== constructors and the metatable =====

unsafe fn new_udp(l: L, family: c_int) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        let lazy = family == libc::AF_UNSPEC;
        let t = push_tcp(l, -1, family, Kind::Unconnected, lazy);
        if !lazy {
            if let Err(e) = ensure_fd(t, family) {
                close_tcp(t);
                return raw::push_fail(l, sys::strerror(e));
            }
        }
        1
    }
}

/// `socket.udp()`: an unconnected object whose family follows its first
/// `setsockname`, `setpeername` or `sendto`.
unsafe extern "C-unwind" fn udp(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe { new_udp(l, libc::AF_UNSPEC) }
}

/// `socket.udp4()`: an unconnected IPv4 object.
unsafe extern "C-unwind" fn udp4(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe { new_udp(l, libc::AF_INET) }
}

/// `socket.udp6()`: an unconnected IPv6-only object.
unsafe extern "C-unwind" fn udp6(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe { new_udp(l, libc::AF_INET6) }
}

/// The methods of UDP objects (both classes).
pub(super) const METHODS: &[raw::Reg] = &[
    (c"close", udp_close),
    (c"dirty", udp_dirty),
    (c"getfamily", udp_getfamily),
    (c"getfd", udp_getfd),
    (c"getoption", udp_getoption),
    (c"getpeername", udp_getpeername),
    (c"getsockname", udp_getsockname),
    (c"gettimeout", udp_gettimeout),
    (c"receive", udp_receive),
    (c"receivefrom", udp_receivefrom),
    (c"send", udp_send),
    (c"sendto", udp_sendto),
    (c"setfd", udp_setfd),
    (c"setoption", udp_setoption),
    (c"setpeername", udp_setpeername),
    (c"setsockname", udp_setsockname),
    (c"settimeout", udp_settimeout),
];

/// The module's UDP constructors.
pub(super) const FUNCTIONS: &[raw::Reg] = &[(c"udp", udp), (c"udp4", udp4), (c"udp6", udp6)];
