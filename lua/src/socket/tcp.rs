//! The TCP calls that may wait: `receive`, `send`, `accept`, `connect`
//! (the method and `socket.connect`). Each is an engine operation whose
//! frame holds its arguments and state (see each struct), driven by
//! `park::drive`: its step is one system call and what follows it.

use std::cell::Cell;
use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;

use cothread::net::{self, AcceptError};

use super::methods::{bad_option, bind_to, check_host_port, host_port_at, resolve};
use super::object::{
    Kind, Sock, check, failure, ok, one_source, push_deadline, push_sock, set_kind, sock_of, wait_deadline,
};
use crate::cfn;
use crate::engine::{Frame, Next, Operation, READ, Source, WRITE, Why};
use crate::lua::{Error, Lua, Reg, Ret, Type, lua_Integer};
use crate::park::drive;
use crate::sys;

/// Bytes asked of `recv` at a time.
const CHUNK: usize = 64 * 1024;

/// The answer of a step whose socket is gone from its frame (collected
/// under it: its method checked it).
fn gone(f: &Frame) -> Next {
    Next::Done(f.lua.fail(c"closed"))
}

// ----- receive -----

/// Receive patterns (slot 2): a count >= 0, or one of these.
const LINE: lua_Integer = -1;
const ALL: lua_Integer = -2;

/// `client:receive`. Frame: 1 socket, 2 pattern, 3 prefix, 4 deadline.
#[derive(Clone, Copy)]
struct Receive;

impl Operation for Receive {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        receive_step(f, why)
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        one_source(f, READ, each)
    }
}

cfn!(receive = receive_body);

/// `client:receive([pattern [, prefix]])`: "*l"/"l" (a line, without its end
/// of line and any CR; longer than the object's `maxline`, if set, it fails
/// with "line too long"), "*a"/"a" (up to the end of the stream), or a
/// count.
fn receive_body(lua: &mut Lua) -> Ret {
    let total = check(lua, 1, &[Kind::Client])?.total.get();
    let pattern = match lua.kind(2) {
        Type::Number => {
            let n = lua.to_num(2).unwrap_or(f64::NAN);
            if n.is_nan() || n < 0.0 {
                return Err(Error::arg(2, c"invalid receive pattern"));
            }
            n.min(lua_Integer::MAX as f64) as lua_Integer
        }
        Type::None | Type::Nil => LINE,
        _ => match lua.to_cstr(2).map(CStr::to_bytes) {
            Some(b"*l" | b"l") => LINE,
            Some(b"*a" | b"a") => ALL,
            _ => return Err(Error::arg(2, c"invalid receive pattern")),
        },
    };
    lua.set_top(3);
    if lua.is_nil(3) {
        lua.push_bytes(b"");
        lua.replace(3);
    } else {
        lua.check_bytes(3)?;
    }
    lua.push_int(pattern);
    lua.replace(2);
    push_deadline(lua, total); // socket pattern prefix deadline
    drive(lua, Receive)
}

/// `[-0, +1, m]` Pushes the prefix (frame slot 3) followed by `data` (for a
/// line, its CRs are dropped in place: those bytes are consumed anyway).
fn push_data(f: &Frame, data: &mut [u8], line: bool) {
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
    let prefix = f.lua.to_bytes(f.at(3)).unwrap_or_default();
    if prefix.is_empty() {
        f.lua.push_bytes(&data[..len]);
    } else {
        f.lua.push_bytes(&[prefix, &data[..len]].concat());
    }
}

/// `[-0, +1, m]` Pushes the prefix followed by `n` unread bytes of `s` (CRs
/// dropped for a line), and consumes `skip >= n` of them.
fn push_taken(f: &Frame, s: &Sock, n: usize, skip: usize, line: bool) {
    s.with_buffer(|rb| {
        let first = rb.first;
        push_data(f, &mut rb.buf[first..first + n], line);
        rb.consume(skip);
    });
    s.count_received(skip);
}

thread_local! {
    /// Where a receive reads when its object's buffer is empty: data taken
    /// as it comes (the usual case) then never goes through the object's
    /// buffer, so an idle connection holds no read buffer. Taken out while
    /// used: a receive that Lua code run by a push makes gets its own.
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Reads once from `s` into its buffer, through the thread's scratch buffer
/// if the object's is empty; a read that satisfies the pattern by itself is
/// pushed from there (the rest, if any, is kept in the object): then
/// `Ok(None)`. Otherwise what `recv` returned.
fn recv_step(f: &Frame, s: &Sock, pattern: lua_Integer, wanted: usize) -> sys::SysResult<Option<usize>> {
    if s.unread_len() > 0 {
        return sys::recv(s.fd.get(), &mut s.rb.borrow_mut().buf, CHUNK).map(Some);
    }
    let mut scratch = SCRATCH.take();
    scratch.clear();
    scratch.reserve(CHUNK); // room for CHUNK: recv reads straight into it
    let r = recv_into(f, s, &mut scratch, pattern, wanted);
    SCRATCH.set(scratch);
    r
}

/// `recv_step` with the scratch buffer.
fn recv_into(
    f: &Frame,
    s: &Sock,
    scratch: &mut Vec<u8>,
    pattern: lua_Integer,
    wanted: usize,
) -> sys::SysResult<Option<usize>> {
    let n = sys::recv(s.fd.get(), scratch, CHUNK)?;
    let max = s.maxline.get();
    let taken = match pattern {
        _ if n == 0 => None,
        // A line over the limit goes to the buffer: `receive_step` fails it.
        LINE => scratch.iter().position(|&b| b == b'\n').filter(|&i| max == 0 || i <= max).map(|i| (i, i + 1)),
        ALL => None,
        _ => (n >= wanted).then_some((wanted, wanted)),
    };
    let Some((len, skip)) = taken else {
        s.rb.borrow_mut().buf.extend_from_slice(scratch);
        return Ok(Some(n));
    };
    // The rest is stored before the string is pushed: a finalizer run by
    // the push may receive too.
    s.rb.borrow_mut().buf.extend_from_slice(&scratch[skip..]);
    s.drained.set(n < CHUNK);
    s.count_received(skip);
    push_data(f, &mut scratch[..len], pattern == LINE);
    Ok(None)
}

/// `[-0, +3, m]` A failed receive: `nil, msg, partial` (what was buffered).
fn receive_failed(f: &Frame, s: &Sock, msg: &CStr) -> Next {
    f.lua.push_nil();
    f.lua.push_bytes(msg.to_bytes());
    let n = s.unread_len();
    let line = f.lua.to_int(f.at(2)) == Some(LINE);
    push_taken(f, s, n, n, line);
    Next::Done(3)
}

/// `[-0, +3, m]` A line over the limit: `nil, "line too long", partial`, the
/// partial its first `maxline` bytes (consumed: the next receive goes on
/// with the rest of the line).
fn line_too_long(f: &Frame, s: &Sock) -> Next {
    f.lua.push_nil();
    f.lua.push_bytes(b"line too long");
    let max = s.maxline.get();
    push_taken(f, s, max, max, true);
    Next::Done(3)
}

/// `[-0, +3, m]` A receive that got its data (on the top): `data, nil, nil`.
fn received(f: &Frame) -> Next {
    f.lua.push_nil();
    f.lua.push_nil();
    Next::Done(3)
}

/// Is the receive of `pattern` (with `wanted` bytes) answered by the buffer
/// of `s`? Then it has pushed the data.
fn answer_from_buffer(f: &Frame, s: &Sock, pattern: lua_Integer, wanted: usize, prefix_len: usize) -> Option<Next> {
    let unread = s.unread_len();
    match pattern {
        LINE => {
            let max = s.maxline.get();
            if max > 0 && net::line_too_long(&mut s.rb.borrow_mut(), max) {
                return Some(line_too_long(f, s));
            }
            let newline = s.rb.borrow_mut().newline();
            let i = newline?;
            push_taken(f, s, i, i + 1, true);
            Some(received(f))
        }
        ALL => None,
        // As LuaSocket: `receive(0)` (no prefix) needs something buffered,
        // so it reads (waits) once, and fails on a closed or ended stream.
        _ if unread >= wanted && (unread > 0 || pattern > 0 || prefix_len > 0) => {
            push_taken(f, s, wanted, wanted, false);
            Some(received(f))
        }
        _ => None,
    }
}

fn receive_step(f: &mut Frame, why: Why) -> Next {
    let f = &*f;
    let Some(s) = sock_of(f) else { return gone(f) };
    if let Some(m) = failure(why) {
        return receive_failed(f, s, m);
    }
    if why != Why::Start {
        s.drained.set(false); // readiness (or a close, found below)
    }
    let pattern = f.lua.to_int(f.at(2)).unwrap_or(LINE);
    let prefix_len = f.lua.to_bytes(f.at(3)).map_or(0, <[u8]>::len);
    let wanted = if pattern >= 0 { (pattern as usize).saturating_sub(prefix_len) } else { 0 };
    loop {
        if let Some(next) = answer_from_buffer(f, s, pattern, wanted, prefix_len) {
            return next;
        }
        if s.fd.get() < 0 {
            return receive_failed(f, s, c"closed");
        }
        if s.drained.get() {
            // Skip a recv that would most likely fail with EAGAIN; with
            // no time left to wait, try it all the same.
            if let Ok(d) = wait_deadline(&f.lua, s, f.at(4)) {
                return Next::Wait(d);
            }
        }
        let unread = s.unread_len();
        match recv_step(f, s, pattern, wanted) {
            Ok(None) => return received(f),
            Ok(Some(0)) => {
                if pattern == ALL && unread > 0 {
                    push_taken(f, s, unread, unread, false);
                    return received(f);
                }
                return receive_failed(f, s, c"closed");
            }
            Ok(Some(n)) => s.drained.set(n < CHUNK),
            Err(libc::EAGAIN) => match wait_deadline(&f.lua, s, f.at(4)) {
                Ok(d) => return Next::Wait(d),
                Err(()) => return receive_failed(f, s, c"timeout"),
            },
            Err(e) => return receive_failed(f, s, sys::strerror(e)),
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
        send_step(f, why, &mut self.sent)
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        one_source(f, WRITE, each)
    }
}

cfn!(send = send_body);

/// `client:send(data [, i [, j]])`: sends `data:sub(i, j)`; returns the
/// index of the last byte sent.
fn send_body(lua: &mut Lua) -> Ret {
    let total = check(lua, 1, &[Kind::Client])?.total.get();
    let size = lua.check_bytes(2)?.len() as i64;
    let mut i = lua.opt_int(3, 1)?;
    let mut j = lua.opt_int(4, -1)?;
    if i < 0 {
        i = size + i + 1;
    }
    if j < 0 {
        j = size + j + 1;
    }
    i = i.max(1);
    j = j.min(size);
    lua.set_top(2);
    lua.push_int(i);
    lua.push_int(j);
    push_deadline(lua, total);
    drive(lua, Send { sent: 0 })
}

fn send_step(f: &mut Frame, why: Why, sent: &mut i64) -> Next {
    let lua = &f.lua;
    let Some(s) = sock_of(f) else { return gone(f) };
    // The data string stays in slot 2: its bytes stay where they are.
    let data = lua.to_bytes(f.at(2)).unwrap_or_default();
    let i = lua.to_int(f.at(3)).unwrap_or(1);
    let j = lua.to_int(f.at(4)).unwrap_or(0);
    debug_assert!(j <= data.len() as i64);
    let failed = |sent: i64, msg: &CStr| {
        lua.push_nil();
        lua.push_bytes(msg.to_bytes());
        lua.push_int(i - 1 + sent);
        Next::Done(3)
    };
    if let Some(m) = failure(why) {
        return failed(*sent, m);
    }
    while i - 1 + *sent < j {
        if s.fd.get() < 0 {
            return failed(*sent, c"closed");
        }
        let from = (i - 1 + *sent) as usize;
        match sys::send(s.fd.get(), &data[from..j as usize]) {
            Ok(n) => {
                *sent += n as i64;
                s.sent.set(s.sent.get() + n as u64);
            }
            Err(libc::EAGAIN) => {
                return match wait_deadline(lua, s, f.at(5)) {
                    Ok(d) => Next::Wait(d),
                    Err(()) => failed(*sent, c"timeout"),
                };
            }
            Err(e) => return failed(*sent, sys::strerror(e)),
        }
    }
    lua.push_int(i - 1 + *sent);
    lua.push_nil();
    lua.push_nil();
    Next::Done(3)
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
        accept_step(f, why, self)
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        one_source(f, READ, each)
    }
}

fn accept_step(f: &mut Frame, why: Why, op: &mut Accept) -> Next {
    let lua = &f.lua;
    let Some(s) = sock_of(f) else { return gone(f) };
    // While retrying, a timeout is the next try (at the deadline, the last).
    let retry = op.retrying && why == Why::Timeout;
    if let Some(m) = failure(why).filter(|_| !retry) {
        return Next::Done(lua.fail(m));
    }
    if s.fd.get() < 0 {
        return Next::Done(lua.fail(c"closed"));
    }
    let e = match sys::accept(s.fd.get()) {
        Ok(fd) => {
            push_sock(lua, fd, s.family.get(), Kind::Client, false).maxline.set(s.maxline.get());
            return Next::Done(1);
        }
        Err(e) => e,
    };
    let rule = net::accept_error(e);
    if rule == AcceptError::Fail {
        return Next::Done(lua.fail(sys::strerror(e)));
    }
    let deadline = if op.retrying { still_ahead(op.until) } else { wait_deadline(lua, s, f.at(2)) };
    let Ok(deadline) = deadline else {
        return Next::Done(lua.fail(c"timeout"));
    };
    op.retrying = rule == AcceptError::Retry;
    if !op.retrying {
        return Next::Wait(deadline);
    }
    op.until = deadline;
    let now = cothread::time::monotonic_ns();
    Next::Sleep(now + net::retry_wait(now, deadline))
}

/// `deadline` if it has not passed yet.
fn still_ahead(deadline: Option<u64>) -> Result<Option<u64>, ()> {
    match deadline {
        Some(d) if d <= cothread::time::monotonic_ns() => Err(()),
        d => Ok(d),
    }
}

cfn!(accept = accept_body);

/// `server:accept()`: the next connection, a client object.
fn accept_body(lua: &mut Lua) -> Ret {
    let total = check(lua, 1, &[Kind::Server])?.total.get();
    lua.set_top(1);
    push_deadline(lua, total);
    drive(lua, Accept { retrying: false, until: None })
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
        connect_step(f, why, self)
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        one_source(f, WRITE, each)
    }
}

cfn!(connect_method = connect_method_body);

/// `master:connect(host, port)`: connects (blocking name resolution, then a
/// non-blocking connect awaited on the loop); the object becomes a client.
fn connect_method_body(lua: &mut Lua) -> Ret {
    let total = check(lua, 1, &[Kind::Master])?.total.get();
    check_host_port(lua, 2)?;
    lua.set_top(3);
    push_deadline(lua, total);
    drive(lua, Connect { in_progress: false, module: false })
}

/// How starting a connection went.
pub(super) enum Started {
    Connected,
    InProgress,
    Failed(&'static CStr),
}

/// Resolves and starts connecting `s`, trying the next address after an
/// immediate failure if the object chose no family.
pub(super) fn start_connect(s: &Sock, host: Option<&CStr>, port: &CStr) -> Started {
    let addrs = match resolve(host, port, s.family.get(), s.kind.get(), false) {
        Ok(a) => a,
        Err(m) => return Started::Failed(m),
    };
    let mut last = c"host or service not provided, or not known";
    for a in &addrs {
        if s.fd.get() >= 0 && a.family() != s.family.get() {
            continue;
        }
        let made = s.fd.get() < 0;
        if let Err(e) = s.ensure_fd(a.family()) {
            return Started::Failed(sys::strerror(e));
        }
        match sys::connect(s.fd.get(), a) {
            Ok(()) => return Started::Connected,
            Err(libc::EINPROGRESS) => return Started::InProgress,
            Err(e) => {
                last = sys::strerror(e);
                if made && s.lazy.get() {
                    // Another family may work: start afresh.
                    sys::close(s.fd.get());
                    s.fd.set(-1);
                    s.family.set(libc::AF_UNSPEC);
                } else {
                    return Started::Failed(last);
                }
            }
        }
    }
    Started::Failed(last)
}

/// `[-0, +n, m]` Ends a connect with `r`.
fn connect_done(f: &Frame, s: &Sock, op: &Connect, r: Result<(), &CStr>) -> Next {
    let lua = &f.lua;
    if r.is_ok() {
        set_kind(lua, f.at(1), s, Kind::Client);
    }
    if !op.module {
        return Next::Done(match r {
            Ok(()) => ok(lua),
            Err(m) => lua.fail(m),
        });
    }
    // The module's connect returns the object, or closes it.
    match r {
        Ok(()) => {
            lua.push_value(f.at(1));
            Next::Done(1)
        }
        Err(m) => {
            s.close();
            Next::Done(lua.fail(m))
        }
    }
}

fn connect_step(f: &mut Frame, why: Why, op: &mut Connect) -> Next {
    let f = &*f;
    let Some(s) = sock_of(f) else { return gone(f) };
    if let Some(m) = failure(why) {
        return connect_done(f, s, op, Err(m));
    }
    if s.closed.get() {
        return connect_done(f, s, op, Err(c"closed"));
    }
    if !op.in_progress {
        // The method checked host and port: they are strings.
        let started = match host_port_at(&f.lua, f.at(2)) {
            Some((host, port)) => start_connect(s, host, port),
            None => Started::Failed(c"host or service not provided, or not known"),
        };
        match started {
            Started::Connected => return connect_done(f, s, op, Ok(())),
            Started::Failed(m) => return connect_done(f, s, op, Err(m)),
            Started::InProgress => op.in_progress = true,
        }
    } else {
        match sys::socket_error(s.fd.get()) {
            0 => return connect_done(f, s, op, Ok(())),
            libc::EINPROGRESS | libc::EALREADY => {}
            e => return connect_done(f, s, op, Err(sys::strerror(e))),
        }
    }
    match wait_deadline(&f.lua, s, f.at(4)) {
        Ok(d) => Next::Wait(d),
        Err(()) => connect_done(f, s, op, Err(c"timeout")),
    }
}

cfn!(connect = connect_body);

/// `socket.connect(host, port [, lhost [, lport [, family]]])`: a client
/// connected to `host:port` (bound first to `lhost:lport` if given; family
/// "inet", "inet6" or "unspec").
fn connect_body(lua: &mut Lua) -> Ret {
    check_host_port(lua, 1)?;
    let local = !lua.is_nil(3);
    if local {
        lua.check_bytes(3)?;
        lua.opt_bytes(4, b"0")?;
    }
    let fam = if lua.is_nil(5) { c"unspec" } else { lua.check_cstr(5)? };
    let family = match fam.to_bytes() {
        b"unspec" => libc::AF_UNSPEC,
        b"inet" => libc::AF_INET,
        b"inet6" => libc::AF_INET6,
        other => return Err(bad_option(5, other)),
    };
    lua.set_top(5); // the object goes above the arguments, missing ones nil
    if let Some(failed) = make_connecting(lua, family, local) {
        return Ok(failed);
    }
    // Frame: socket host port deadline (nil: a new object has no timeout).
    lua.push_value(2);
    lua.replace(3);
    lua.push_value(1);
    lua.replace(2);
    lua.push_value(6);
    lua.replace(1);
    lua.set_top(3);
    lua.push_nil();
    drive(lua, Connect { in_progress: false, module: true })
}

/// `[-0, +1|3, m]` Pushes the object of `socket.connect` (slot 6), bound to
/// slots 3 and 4 if `local`; the count of results of a failure (`nil,
/// message` pushed above it).
fn make_connecting(lua: &Lua, family: c_int, local: bool) -> Option<c_int> {
    let s = push_sock(lua, -1, family, Kind::Master, family == libc::AF_UNSPEC);
    if family != libc::AF_UNSPEC {
        if let Err(e) = s.ensure_fd(family) {
            return Some(lua.fail(sys::strerror(e)));
        }
    }
    if local {
        let lhost = lua.to_cstr(3).unwrap_or_default();
        let lport = if lua.is_nil(4) { c"0" } else { lua.to_cstr(4).unwrap_or_default() };
        let lhost = if lhost.to_bytes() == b"*" { None } else { Some(lhost) };
        if let Some(m) = bind_to(s, lhost, lport) {
            s.close();
            return Some(lua.fail(m));
        }
    }
    None
}

/// The TCP methods that may wait.
pub(super) const METHODS: &[Reg] = &[
    (c"accept", accept),
    (c"connect", connect_method),
    (c"receive", receive),
    (c"send", send),
    (c"setpeername", connect_method),
];

/// The module functions that may wait (besides `select` and `sleep`).
pub(super) const FUNCTIONS: &[Reg] = &[(c"connect", connect)];
