//! The TCP calls that may wait: `receive`, `send`, `accept`, `connect`
//! (the method and `socket.connect`). Each is an engine operation whose
//! frame holds its arguments and state (see each struct), driven by
//! `park::drive`: its step is one system call and what follows it.

use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;

use cothread::net::{self, AcceptError};

use super::methods::{bind_to, check_host_port, resolve};
use super::object::{
    Kind, Tcp, check_tcp, close_tcp, ensure_fd, failure, ok, one_source, push_deadline, push_tcp, set_kind,
    wait_deadline,
};
use crate::engine::{Frame, Next, Operation, READ, Source, WRITE, Why};
use crate::park::drive_raw;
use crate::raw::{self, L, ffi};
use crate::sys;

/// Bytes asked of `recv` at a time.
const CHUNK: usize = 64 * 1024;

/// The socket in slot 1 of the frame.
unsafe fn sock(f: &Frame) -> *mut Tcp {
    // SAFETY: slot 1 of every socket operation's frame holds its `Tcp`
    // (checked by the method that built the frame).
    unsafe { ffi::lua_touserdata(f.l(), f.at(1)) as *mut Tcp }
}

// ----- receive -----

/// Receive patterns (slot 2): a count >= 0, or one of these.
const LINE: ffi::lua_Integer = -1;
const ALL: ffi::lua_Integer = -2;

/// `client:receive`. Frame: 1 socket, 2 pattern, 3 prefix, 4 deadline.
#[derive(Clone, Copy)]
struct Receive;

impl Operation for Receive {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        // SAFETY: the frame `tcp_receive` built.
        unsafe { receive_step(f, why) }
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        // SAFETY: as `step`.
        unsafe { one_source(f.l(), f.base, READ, each) }
    }
}

/// `client:receive([pattern [, prefix]])`: "*l"/"l" (a line, without its end
/// of line and any CR; longer than the object's `maxline`, if set, it fails
/// with "line too long"), "*a"/"a" (up to the end of the stream), or a
/// count.
unsafe extern "C-unwind" fn tcp_receive(l: L) -> c_int {
    // SAFETY: `check_tcp` returns a live client or raises; the frame is built
    // in the function's own stack (LUA_MINSTACK slots) before `drive`.
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
        drive_raw(l, Receive)
    }
}

/// `[-0, +1, m]` Pushes the prefix (frame slot 3) followed by `n` unread
/// bytes of `t` (CRs dropped for a line), and consumes `skip >= n` of them.
unsafe fn push_taken(f: &Frame, t: *mut Tcp, n: usize, skip: usize, line: bool) {
    // SAFETY: `t` is live and `n <= skip <= unread`; Lua copies the string
    // before the buffer changes.
    unsafe {
        let first = (*t).rb.first;
        push_data(f, &mut (&mut (*t).rb.buf)[first..first + n], line);
        (*t).consume(skip);
        (*t).received += skip as u64;
    }
}

/// `[-0, +1, m]` Pushes the prefix (frame slot 3) followed by `data` (for a
/// line, its CRs are dropped in place: those bytes are consumed anyway).
unsafe fn push_data(f: &Frame, data: &mut [u8], line: bool) {
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
    // SAFETY: a step has `STEP_SLOTS` free slots; Lua copies the bytes.
    unsafe {
        ffi::lua_pushvalue(f.l(), f.at(3));
        ffi::lua_pushlstring(f.l(), data.as_ptr().cast(), len);
        ffi::lua_concat(f.l(), 2);
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
unsafe fn recv_step(f: &Frame, t: *mut Tcp, pattern: ffi::lua_Integer, wanted: usize) -> sys::SysResult<Option<usize>> {
    // SAFETY: `t` is live; the scratch vector is only touched here, never
    // while Lua runs (the rest is stored before the string is pushed, since
    // a finalizer run by that push may receive too); `data` is a plain slice.
    unsafe {
        if !(*t).unread().is_empty() {
            return sys::recv((*t).fd, &mut (*t).rb.buf, CHUNK).map(Some);
        }
        let scratch = SCRATCH.with(|s| s.get());
        (*scratch).clear();
        (*scratch).reserve(CHUNK); // room for CHUNK: recv reads straight into it
        let n = sys::recv((*t).fd, &mut *scratch, CHUNK)?;
        let data: &mut [u8] = std::slice::from_raw_parts_mut((*scratch).as_mut_ptr(), n);
        let max = (*t).maxline;
        let taken = match pattern {
            _ if n == 0 => None,
            // A line over the limit goes to the buffer: `receive_step` fails it.
            LINE => data.iter().position(|&b| b == b'\n').filter(|&i| max == 0 || i <= max).map(|i| (i, i + 1)),
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
        push_data(f, &mut data[..len], pattern == LINE);
        Ok(None)
    }
}

/// `[-0, +3, m]` A failed receive: `nil, msg, partial` (what was buffered).
unsafe fn receive_failed(f: &Frame, t: *mut Tcp, msg: &CStr) -> Next {
    // SAFETY: a step's frame and slots; `t` is live.
    unsafe {
        ffi::lua_pushnil(f.l());
        ffi::lua_pushstring(f.l(), msg.as_ptr());
        let n = (*t).unread().len();
        let line = ffi::lua_tointegerx(f.l(), f.at(2), std::ptr::null_mut()) == LINE;
        push_taken(f, t, n, n, line);
        Next::Done(3)
    }
}

/// `[-0, +3, m]` A line over the limit: `nil, "line too long", partial`, the
/// partial its first `maxline` bytes (consumed: the next receive goes on
/// with the rest of the line).
unsafe fn line_too_long(f: &Frame, t: *mut Tcp) -> Next {
    // SAFETY: a step's frame and slots; `t` is live and holds more than
    // `maxline` unread bytes (`net::line_too_long` said so).
    unsafe {
        ffi::lua_pushnil(f.l());
        ffi::lua_pushliteral(f.l(), c"line too long");
        let max = (*t).maxline;
        push_taken(f, t, max, max, true);
        Next::Done(3)
    }
}

/// `[-0, +3, m]` A receive that got its data (on the top): `data, nil, nil`.
unsafe fn received(f: &Frame) -> Next {
    // SAFETY: a step's slots.
    unsafe {
        ffi::lua_pushnil(f.l());
        ffi::lua_pushnil(f.l());
    }
    Next::Done(3)
}

unsafe fn receive_step(f: &mut Frame, why: Why) -> Next {
    // SAFETY: the frame of `Receive`; `t` stays a live `Tcp` (slot 1).
    unsafe {
        let t = sock(f);
        if let Some(m) = failure(why) {
            return receive_failed(f, t, m);
        }
        if why != Why::Start {
            (*t).drained = false; // readiness (or a close, found below)
        }
        let pattern = ffi::lua_tointegerx(f.l(), f.at(2), std::ptr::null_mut());
        let mut prefix_len = 0;
        ffi::lua_tolstring(f.l(), f.at(3), &mut prefix_len);
        let wanted = if pattern >= 0 { (pattern as usize).saturating_sub(prefix_len) } else { 0 };
        loop {
            // Satisfied by the buffer?
            let unread = (*t).unread().len();
            match pattern {
                LINE => {
                    if (*t).maxline > 0 && net::line_too_long(&mut (*t).rb, (*t).maxline) {
                        return line_too_long(f, t);
                    }
                    if let Some(i) = (*t).rb.newline() {
                        push_taken(f, t, i, i + 1, true);
                        return received(f);
                    }
                }
                ALL => {}
                _ => {
                    // As LuaSocket: `receive(0)` (no prefix) needs something
                    // buffered, so it reads (waits) once, and fails on a
                    // closed or ended stream.
                    if unread >= wanted && (unread > 0 || pattern > 0 || prefix_len > 0) {
                        push_taken(f, t, wanted, wanted, false);
                        return received(f);
                    }
                }
            }
            if (*t).fd < 0 {
                return receive_failed(f, t, c"closed");
            }
            if (*t).drained {
                // Skip a recv that would most likely fail with EAGAIN; with
                // no time left to wait, try it all the same.
                if let Ok(d) = wait_deadline(f.l(), t, f.at(4)) {
                    return Next::Wait(d);
                }
            }
            match recv_step(f, t, pattern, wanted) {
                Ok(None) => return received(f),
                Ok(Some(0)) => {
                    if pattern == ALL && unread > 0 {
                        push_taken(f, t, unread, unread, false);
                        return received(f);
                    }
                    return receive_failed(f, t, c"closed");
                }
                Ok(Some(n)) => (*t).drained = n < CHUNK,
                Err(libc::EAGAIN) => match wait_deadline(f.l(), t, f.at(4)) {
                    Ok(d) => return Next::Wait(d),
                    Err(()) => return receive_failed(f, t, c"timeout"),
                },
                Err(e) => return receive_failed(f, t, sys::strerror(e)),
            }
        }
    }
}

// ----- send -----

/// `client:send`. Frame: 1 socket, 2 data, 3 first index, 4 last index,
/// 5 deadline. The bytes sent so far are in the struct.
#[derive(Clone, Copy)]
struct Send {
    sent: i64,
}

impl Operation for Send {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        // SAFETY: the frame `tcp_send` built.
        unsafe { send_step(f, why, &mut self.sent) }
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        // SAFETY: as `step`.
        unsafe { one_source(f.l(), f.base, WRITE, each) }
    }
}

/// `client:send(data [, i [, j]])`: sends `data:sub(i, j)`; returns the
/// index of the last byte sent.
unsafe extern "C-unwind" fn tcp_send(l: L) -> c_int {
    // SAFETY: `check_tcp` returns a live client or raises; the frame is built
    // in the function's own stack.
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
        drive_raw(l, Send { sent: 0 })
    }
}

unsafe fn send_step(f: &mut Frame, why: Why, sent: &mut i64) -> Next {
    // SAFETY: the frame of `Send`; the data string stays in slot 2, so its
    // bytes stay where they are.
    unsafe {
        let t = sock(f);
        let mut len = 0;
        let data = ffi::lua_tolstring(f.l(), f.at(2), &mut len) as *const u8;
        let i = ffi::lua_tointegerx(f.l(), f.at(3), std::ptr::null_mut());
        let j = ffi::lua_tointegerx(f.l(), f.at(4), std::ptr::null_mut());
        debug_assert!(j <= len as i64);
        let failed = |sent: i64, msg: &CStr| {
            ffi::lua_pushnil(f.l());
            ffi::lua_pushstring(f.l(), msg.as_ptr());
            ffi::lua_pushinteger(f.l(), i - 1 + sent);
            Next::Done(3)
        };
        if let Some(m) = failure(why) {
            return failed(*sent, m);
        }
        while i - 1 + *sent < j {
            if (*t).fd < 0 {
                return failed(*sent, c"closed");
            }
            let from = (i - 1 + *sent) as usize;
            let chunk = std::slice::from_raw_parts(data.add(from), j as usize - from);
            match sys::send((*t).fd, chunk) {
                Ok(n) => {
                    *sent += n as i64;
                    (*t).sent += n as u64;
                }
                Err(libc::EAGAIN) => {
                    return match wait_deadline(f.l(), t, f.at(5)) {
                        Ok(d) => Next::Wait(d),
                        Err(()) => failed(*sent, c"timeout"),
                    };
                }
                Err(e) => return failed(*sent, sys::strerror(e)),
            }
        }
        ffi::lua_pushinteger(f.l(), i - 1 + *sent);
        ffi::lua_pushnil(f.l());
        ffi::lua_pushnil(f.l());
        Next::Done(3)
    }
}

// ----- accept -----

/// `server:accept`. Frame: 1 socket, 2 deadline. Out of descriptors it
/// sleeps between tries, without watching the listener (the rule is the
/// core's: `cothread::net::accept_error`).
#[derive(Clone, Copy)]
struct Accept {
    /// It is out of descriptors, retrying until `until`: the deadline of the
    /// wait that began with the first failure.
    retrying: bool,
    until: Option<u64>,
}

impl Operation for Accept {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        // SAFETY: the frame `tcp_accept` built.
        unsafe { accept_step(f, why, self) }
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        // SAFETY: as `step`.
        unsafe { one_source(f.l(), f.base, READ, each) }
    }
}

unsafe fn accept_step(f: &mut Frame, why: Why, op: &mut Accept) -> Next {
    // SAFETY: the frame of `Accept`; `t` stays a live `Tcp` (slot 1).
    unsafe {
        let t = sock(f);
        // While retrying, a timeout is the next try (at the deadline, the last).
        let retry = op.retrying && why == Why::Timeout;
        if let Some(m) = failure(why).filter(|_| !retry) {
            return Next::Done(raw::push_fail(f.l(), m));
        }
        if (*t).fd < 0 {
            return Next::Done(raw::push_fail(f.l(), c"closed"));
        }
        let e = match sys::accept((*t).fd) {
            Ok(fd) => {
                let c = push_tcp(f.l(), fd, (*t).family, Kind::Client, false);
                (*c).maxline = (*t).maxline;
                return Next::Done(1);
            }
            Err(e) => e,
        };
        let rule = net::accept_error(e);
        if rule == AcceptError::Fail {
            return Next::Done(raw::push_fail(f.l(), sys::strerror(e)));
        }
        let deadline = if op.retrying { still_ahead(op.until) } else { wait_deadline(f.l(), t, f.at(2)) };
        let Ok(deadline) = deadline else {
            return Next::Done(raw::push_fail(f.l(), c"timeout"));
        };
        op.retrying = rule == AcceptError::Retry;
        if !op.retrying {
            return Next::Wait(deadline);
        }
        op.until = deadline;
        let now = cothread::time::monotonic_ns();
        Next::Sleep(now + net::retry_wait(now, deadline))
    }
}

/// `deadline` if it has not passed yet.
fn still_ahead(deadline: Option<u64>) -> Result<Option<u64>, ()> {
    match deadline {
        Some(d) if d <= cothread::time::monotonic_ns() => Err(()),
        d => Ok(d),
    }
}

/// `server:accept()`: the next connection, a client object.
unsafe extern "C-unwind" fn tcp_accept(l: L) -> c_int {
    // SAFETY: `check_tcp` returns a live server or raises.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Server]);
        ffi::lua_settop(l, 1);
        push_deadline(l, (*t).total);
        drive_raw(l, Accept { retrying: false, until: None })
    }
}

// ----- connect -----

/// `master:connect` and `socket.connect`. Frame: 1 socket, 2 host, 3 port,
/// 4 deadline. `module`: `socket.connect`, which returns the object (or
/// closes it on failure).
#[derive(Clone, Copy)]
struct Connect {
    in_progress: bool,
    module: bool,
}

impl Operation for Connect {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        // SAFETY: the frame `tcp_connect` or `connect` built.
        unsafe { connect_step(f, why, self) }
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        // SAFETY: as `step`.
        unsafe { one_source(f.l(), f.base, WRITE, each) }
    }
}

/// `master:connect(host, port)`: connects (blocking name resolution, then a
/// non-blocking connect awaited on the loop); the object becomes a client.
unsafe extern "C-unwind" fn tcp_connect(l: L) -> c_int {
    // SAFETY: `check_tcp` returns a live master or raises.
    unsafe {
        let t = check_tcp(l, 1, &[Kind::Master]);
        check_host_port(l, 2);
        ffi::lua_settop(l, 3);
        push_deadline(l, (*t).total);
        drive_raw(l, Connect { in_progress: false, module: false })
    }
}

/// How starting a connection went.
pub(super) enum Started {
    Connected,
    InProgress,
    Failed(&'static CStr),
}

/// Resolves and starts connecting `t`, trying the next address after an
/// immediate failure if the object chose no family.
pub(super) unsafe fn start_connect(t: *mut Tcp, host: Option<&CStr>, port: &CStr) -> Started {
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

/// `[-0, +n, m]` Ends a connect with `r`.
unsafe fn connect_done(f: &Frame, op: &Connect, r: Result<(), &CStr>) -> Next {
    // SAFETY: the frame of `Connect`; slot 1 holds its live socket.
    unsafe {
        let t = sock(f);
        if r.is_ok() {
            set_kind(f.l(), f.at(1), t, Kind::Client);
        }
        if !op.module {
            return Next::Done(match r {
                Ok(()) => ok(f.l()),
                Err(m) => raw::push_fail(f.l(), m),
            });
        }
        // The module's connect returns the object, or closes it.
        match r {
            Ok(()) => {
                ffi::lua_pushvalue(f.l(), f.at(1));
                Next::Done(1)
            }
            Err(m) => {
                close_tcp(t);
                Next::Done(raw::push_fail(f.l(), m))
            }
        }
    }
}

unsafe fn connect_step(f: &mut Frame, why: Why, op: &mut Connect) -> Next {
    // SAFETY: the frame of `Connect`; the host and port strings stay in
    // their slots while used.
    unsafe {
        let t = sock(f);
        if let Some(m) = failure(why) {
            return connect_done(f, op, Err(m));
        }
        if (*t).closed {
            return connect_done(f, op, Err(c"closed"));
        }
        if !op.in_progress {
            let (host, port) = check_host_port(f.l(), f.at(2));
            match start_connect(t, host, port) {
                Started::Connected => return connect_done(f, op, Ok(())),
                Started::Failed(m) => return connect_done(f, op, Err(m)),
                Started::InProgress => op.in_progress = true,
            }
        } else {
            match sys::socket_error((*t).fd) {
                0 => return connect_done(f, op, Ok(())),
                libc::EINPROGRESS | libc::EALREADY => {}
                e => return connect_done(f, op, Err(sys::strerror(e))),
            }
        }
        match wait_deadline(f.l(), t, f.at(4)) {
            Ok(d) => Next::Wait(d),
            Err(()) => connect_done(f, op, Err(c"timeout")),
        }
    }
}

/// `socket.connect(host, port [, lhost [, lport [, family]]])`: a client
/// connected to `host:port` (bound first to `lhost:lport` if given; family
/// "inet", "inet6" or "unspec").
unsafe extern "C-unwind" fn connect(l: L) -> c_int {
    // SAFETY: a module function: the arguments are checked, then the frame
    // is rebuilt in the function's own stack.
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
            _ => super::methods::bad_option(l, 5, fam),
        };
        ffi::lua_settop(l, 5); // the object goes above the arguments, missing ones nil
        let t = push_tcp(l, -1, family, Kind::Master, family == libc::AF_UNSPEC);
        if family != libc::AF_UNSPEC {
            if let Err(e) = ensure_fd(t, family) {
                return raw::push_fail(l, sys::strerror(e));
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
                return raw::push_fail(l, m);
            }
        }
        // Frame: socket host port deadline.
        let obj = ffi::lua_gettop(l);
        ffi::lua_pushvalue(l, obj);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushvalue(l, 2);
        ffi::lua_pushnil(l);
        ffi::lua_rotate(l, 1, 4);
        ffi::lua_settop(l, 4);
        drive_raw(l, Connect { in_progress: false, module: true })
    }
}

/// The TCP methods that may wait.
pub(super) const METHODS: &[raw::Reg] = &[
    (c"accept", tcp_accept),
    (c"connect", tcp_connect),
    (c"receive", tcp_receive),
    (c"send", tcp_send),
    (c"setpeername", tcp_connect),
];

/// The module functions that may wait (besides `select` and `sleep`).
pub(super) const FUNCTIONS: &[raw::Reg] = &[(c"connect", connect)];
