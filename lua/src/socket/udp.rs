//! UDP objects (`socket.udp()`), LuaSocket's datagram interface.
//!
//! A UDP object is the same `Sock` record as a TCP object, with two classes
//! of its own (metatables `cothread.udp{unconnected}` and
//! `cothread.udp{connected}`): *unconnected* (`sendto`,
//! `receivefrom`, `setsockname`) and *connected* (`send`, `getpeername`),
//! switched by `setpeername`. Its blocking calls (`send`, `sendto`,
//! `receive`, `receivefrom`) are engine operations (`Receive`, `Send`),
//! driven as the TCP ones are: they suspend the calling cothread on its
//! scheduler's engine, or block outside cothreads. Name resolution, binding,
//! timeouts, options, `close` and `select` are the TCP code's.

use std::ffi::CStr;
use std::os::fd::RawFd;

use super::methods::{
    bind_method_body, check_host_port, dirty_body, getfamily_body, getfd_body, getoption_body, getsockname_body,
    gettimeout_body, new_body, push_name, setfd_body, setoption_body, settimeout_body,
};
use super::object::{
    Kind, Sock, UDP_ANY, check, close_body, deadline_at, failure, ok, one_source, push_deadline, set_kind, sock_of,
    wait_deadline,
};
use super::tcp::{Started, start_connect};
use crate::cfn;
use crate::engine::{Frame, Next, Operation, READ, Source, WRITE, Why};
use crate::lua::{Error, Lua, Reg, Ret, Type, lua_Integer};
use crate::park::drive;
use crate::sys;

/// Bytes `receive` and `receivefrom` take by default (LuaSocket's).
pub(super) const DEFAULT_SIZE: lua_Integer = 8192;
/// The largest datagram (an IPv4 or IPv6 UDP payload is smaller).
const MAX_SIZE: lua_Integer = 65535;

// The methods UDP shares with TCP, checked as UDP (for LuaSocket's
// "udp{any} expected").
cfn!(close = close_body::<true>);
cfn!(getfd = getfd_body::<true>);
cfn!(dirty = dirty_body::<true>);
cfn!(settimeout = settimeout_body::<true>);
cfn!(gettimeout = gettimeout_body::<true>);
cfn!(getsockname = getsockname_body::<true>);
cfn!(getfamily = getfamily_body::<true>);
cfn!(setfd = setfd_body::<true>);

cfn!(setoption = setoption_body::<true>);
cfn!(getoption = getoption_body::<true>);

cfn!(getpeername = getpeername_body);

/// `connected:getpeername()`: `host, port, family` of the peer.
fn getpeername_body(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, &[Kind::Connected])?;
    Ok(push_name(lua, s, true))
}

cfn!(setsockname = bind_method_body::<true>);

cfn!(setpeername = setpeername_body);

/// `udp:setpeername(host, port)`: connects (the object becomes connected);
/// `udp:setpeername("*")`: disconnects (it becomes unconnected).
fn setpeername_body(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, UDP_ANY)?;
    if lua.check_cstr(2)?.to_bytes() == b"*" {
        if s.closed.get() {
            return Ok(lua.fail(c"closed"));
        }
        if s.fd.get() >= 0 {
            if let Err(e) = sys::disconnect(s.fd.get()) {
                return Ok(lua.fail(sys::strerror(e)));
            }
        }
        set_kind(lua, 1, s, Kind::Unconnected);
        return Ok(ok(lua));
    }
    let (host, port) = check_host_port(lua, 2)?;
    if s.closed.get() {
        return Ok(lua.fail(c"closed"));
    }
    match start_connect(s, host, port) {
        Started::Connected | Started::InProgress => {
            set_kind(lua, 1, s, Kind::Connected);
            Ok(ok(lua))
        }
        Started::Failed(m) => Ok(lua.fail(m)),
    }
}

// ----- receive -----

/// `udp:receive` and `receivefrom`. Frame: 1 object, 2 size, 3 with the
/// sender (receivefrom), 4 deadline.
#[derive(Clone, Copy)]
struct Receive;

impl Operation for Receive {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        receive_step(f, why)
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(&Source, RawFd, u32)) {
        one_source(f, READ, each)
    }
}

/// Starts `receive` (`from` false) or `receivefrom`.
fn start_receive(lua: &mut Lua, from: bool) -> Ret {
    let kinds: &[Kind] = if from { &[Kind::Unconnected] } else { UDP_ANY };
    let total = check(lua, 1, kinds)?.total.get();
    let size = if lua.is_nil(2) {
        DEFAULT_SIZE
    } else {
        let n = lua.check_num(2)?;
        if n.is_nan() || n < 0.0 {
            return Err(Error::arg(2, c"invalid receive size"));
        }
        n.min(MAX_SIZE as f64) as lua_Integer
    };
    lua.set_top(1);
    lua.push_int(size);
    lua.push_bool(from);
    push_deadline(lua, total); // socket size from deadline
    drive(lua, Receive)
}

cfn!(receive = receive_body);

/// `udp:receive([size])`: the next datagram (at most `size` bytes, default
/// 8192; the rest of a longer one is dropped).
fn receive_body(lua: &mut Lua) -> Ret {
    start_receive(lua, false)
}

cfn!(receivefrom = receivefrom_body);

/// `unconnected:receivefrom([size])`: the next datagram and its sender's
/// `ip, port`.
fn receivefrom_body(lua: &mut Lua) -> Ret {
    start_receive(lua, true)
}

fn receive_step(f: &mut Frame, why: Why) -> Next {
    let lua = &f.lua;
    let Some(s) = sock_of(f) else { return Next::Done(lua.fail(c"closed")) };
    if let Some(m) = failure(why) {
        return Next::Done(lua.fail(m));
    }
    if s.closed.get() {
        return Next::Done(lua.fail(c"closed"));
    }
    // An unused `udp()` receives on an IPv4 descriptor (nothing comes
    // before it is bound or sends).
    if let Err(e) = s.ensure_fd(libc::AF_INET) {
        return Next::Done(lua.fail(sys::strerror(e)));
    }
    let size = lua.to_int(f.at(2)).unwrap_or(DEFAULT_SIZE) as usize;
    // The object's buffer is scratch space for the datagram, pushed out of
    // it with no borrow held (a memory error loses nothing).
    let got = {
        let mut rb = s.rb.borrow_mut();
        rb.first = 0;
        sys::recvfrom(s.fd.get(), &mut rb.buf, size)
    };
    if got.is_ok() {
        lua.push_held(&s.rb, |rb| &rb.buf);
    }
    s.rb.borrow_mut().buf.clear();
    match got {
        Ok(addr) => {
            if !lua.to_bool(f.at(3)) {
                return Next::Done(1);
            }
            let (host, port) = addr.host_port();
            lua.push_owned(host);
            lua.push_int(port as lua_Integer);
            Next::Done(3)
        }
        Err(libc::EAGAIN) => match wait_deadline(s, deadline_at(lua, f.at(4))) {
            Ok(d) => Next::Wait(d),
            Err(()) => Next::Done(lua.fail(c"timeout")),
        },
        Err(e) => Next::Done(lua.fail(sys::strerror(e))),
    }
}

// ----- send -----

/// `connected:send` and `sendto`. Frame: 1 object, 2 data, 3 ip (nil:
/// connected), 4 port, 5 deadline.
#[derive(Clone, Copy)]
struct Send;

impl Operation for Send {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        send_step(f, why)
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(&Source, RawFd, u32)) {
        one_source(f, WRITE, each)
    }
}

cfn!(send = send_body);

/// `connected:send(datagram)`: sends it to the peer; the number of bytes sent.
fn send_body(lua: &mut Lua) -> Ret {
    let total = check(lua, 1, &[Kind::Connected])?.total.get();
    lua.check_bytes(2)?;
    lua.set_top(2);
    lua.push_nil();
    lua.push_nil();
    push_deadline(lua, total); // socket data nil nil deadline
    drive(lua, Send)
}

cfn!(sendto = sendto_body);

/// `unconnected:sendto(datagram, ip, port)`: sends it to a numeric address
/// (no name resolution, as in LuaSocket); the number of bytes sent.
fn sendto_body(lua: &mut Lua) -> Ret {
    let total = check(lua, 1, &[Kind::Unconnected])?.total.get();
    lua.check_bytes(2)?;
    lua.check_bytes(3)?;
    lua.check_bytes(4)?; // a number becomes a string
    lua.set_top(4);
    push_deadline(lua, total); // socket data ip port deadline
    drive(lua, Send)
}

/// The destination of a `sendto` (None: the peer of `send`), making the
/// descriptor of a `udp()` for its family; the message of a failure.
fn destination(f: &Frame, s: &Sock) -> Result<Option<sys::Addr>, &'static CStr> {
    if f.lua.kind(f.at(3)) == Type::Nil {
        return Ok(None);
    }
    let ip = f.lua.to_cstr(f.at(3)).unwrap_or_default();
    let port = f.lua.to_cstr(f.at(4)).unwrap_or_default();
    let addr = match sys::resolve_numeric(ip, port, s.family.get()) {
        Ok(v) => v.first().copied().ok_or(c"host or service not provided, or not known")?,
        Err(e) => return Err(sys::resolve_strerror(e)),
    };
    s.ensure_fd(addr.family()).map_err(sys::strerror)?;
    Ok(Some(addr))
}

fn send_step(f: &mut Frame, why: Why) -> Next {
    let lua = &f.lua;
    let Some(s) = sock_of(f) else { return Next::Done(lua.fail(c"closed")) };
    if let Some(m) = failure(why) {
        return Next::Done(lua.fail(m));
    }
    if s.closed.get() || s.fd.get() < 0 && lua.kind(f.at(3)) == Type::Nil {
        return Next::Done(lua.fail(c"closed"));
    }
    let dest = match destination(f, s) {
        Ok(d) => d,
        Err(m) => return Next::Done(lua.fail(m)),
    };
    // The data string stays in slot 2.
    let data = lua.to_bytes(f.at(2)).unwrap_or_default();
    match sys::sendto(s.fd.get(), data, dest.as_ref()) {
        Ok(n) => {
            lua.push_int(n as lua_Integer);
            Next::Done(1)
        }
        Err(libc::EAGAIN) => match wait_deadline(s, deadline_at(lua, f.at(5))) {
            Ok(d) => Next::Wait(d),
            Err(()) => Next::Done(lua.fail(c"timeout")),
        },
        Err(e) => Next::Done(lua.fail(sys::strerror(e))),
    }
}

// ===== constructors and the metatable =====

cfn!(udp = new_body::<true, { libc::AF_UNSPEC }>);
cfn!(udp4 = new_body::<true, { libc::AF_INET }>);
cfn!(udp6 = new_body::<true, { libc::AF_INET6 }>);

/// The methods of UDP objects (both classes).
pub(super) const METHODS: &[Reg] = &[
    (c"close", close),
    (c"dirty", dirty),
    (c"getfamily", getfamily),
    (c"getfd", getfd),
    (c"getoption", getoption),
    (c"getpeername", getpeername),
    (c"getsockname", getsockname),
    (c"gettimeout", gettimeout),
    (c"receive", receive),
    (c"receivefrom", receivefrom),
    (c"send", send),
    (c"sendto", sendto),
    (c"setfd", setfd),
    (c"setoption", setoption),
    (c"setpeername", setpeername),
    (c"setsockname", setsockname),
    (c"settimeout", settimeout),
];

/// The module's UDP constructors.
pub(super) const FUNCTIONS: &[Reg] = &[(c"udp", udp), (c"udp4", udp4), (c"udp6", udp6)];
