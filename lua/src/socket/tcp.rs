//! The TCP calls that may wait: `receive`, `send`, `accept`, `connect`
//! (the method and `socket.connect`). Each is an engine operation whose
//! frame holds its arguments and state (see each struct), driven by
//! `park::drive`: its step is one system call and what follows it.

use std::cell::RefCell;
use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;

use cothread::net::{self, AcceptError};

use super::methods::{bind_to, check_host_port, host_port_at, resolve};
use super::object::{
    Kind, Sock, call_deadline, check, deadline_at, failure, ok, one_source, push_deadline, push_sock, set_kind,
    sock_of, wait_deadline,
};
use crate::cfn;
use crate::engine::{Frame, Next, Operation, READ, Source, WRITE, Why};
use crate::lua::{Error, Lua, Reg, Ret, Type, lua_Integer};
use crate::park::{drive, drive_waiting, first_step};
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

/// What a receive wants: its pattern, the prefix its data goes after, and
/// the deadline of the call.
struct Want<'a> {
    pattern: lua_Integer,
    prefix: &'a [u8],
    deadline: Option<u64>,
}

impl Want<'_> {
    /// For a count: the bytes wanted after the prefix.
    fn wanted(&self) -> usize {
        if self.pattern >= 0 { (self.pattern as usize).saturating_sub(self.prefix.len()) } else { 0 }
    }
}

/// `client:receive`. Frame: 1 socket, 2 pattern, 3 prefix, 4 deadline.
/// The method makes the first attempt itself, with the socket it checked
/// (`drive_waiting`).
#[derive(Clone, Copy)]
struct Receive;

impl Operation for Receive {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        let Some(s) = sock_of(f) else { return gone(f) };
        let lua = &f.lua;
        let want = Want {
            pattern: lua.to_int(f.at(2)).unwrap_or(LINE),
            prefix: lua.to_bytes(f.at(3)).unwrap_or_default(),
            deadline: deadline_at(lua, f.at(4)),
        };
        receive_now(lua, s, &want, why)
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(&Source, RawFd, u32)) {
        one_source(f, READ, each)
    }
}

cfn!(receive = receive_body);

/// `client:receive([pattern [, prefix]])`: "*l"/"l" (a line, without its end
/// of line and any CR; longer than the object's `maxline`, if set, it fails
/// with "line too long"), "*a"/"a" (up to the end of the stream), or a
/// count.
fn receive_body(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, &[Kind::Client])?;
    let pattern = pattern_arg(lua)?;
    let prefix = if lua.is_nil(3) { &b""[..] } else { lua.check_bytes(3)? };
    let want = Want { pattern, prefix, deadline: call_deadline(s.total.get()) };
    let deadline = want.deadline;
    let first = match first_step(lua, || receive_now(lua, s, &want, Why::Start)) {
        Ok(n) => return Ok(n),
        Err(first) => first,
    };
    lua.set_top(3); // socket pattern prefix deadline
    if lua.is_nil(3) {
        lua.push_bytes(b"");
        lua.replace(3);
    }
    lua.push_int(pattern);
    lua.replace(2);
    match deadline {
        Some(d) => lua.push_int(d as lua_Integer),
        None => lua.push_nil(),
    }
    drive_waiting(lua, Receive, first)
}

/// The receive pattern, argument 2.
fn pattern_arg(lua: &Lua) -> Result<lua_Integer, Error> {
    match lua.kind(2) {
        Type::Number => {
            let n = lua.to_num(2).unwrap_or(f64::NAN);
            if n.is_nan() || n < 0.0 {
                return Err(Error::arg(2, c"invalid receive pattern"));
            }
            Ok(n.min(lua_Integer::MAX as f64) as lua_Integer)
        }
        Type::None | Type::Nil => Ok(LINE),
        _ => match lua.to_cstr(2).map(CStr::to_bytes) {
            Some(b"*l" | b"l") => Ok(LINE),
            Some(b"*a" | b"a") => Ok(ALL),
            _ => Err(Error::arg(2, c"invalid receive pattern")),
        },
    }
}

/// Drops the CRs of a line in place (those bytes are consumed anyway):
/// the length left.
fn drop_crs(data: &mut [u8], line: bool) -> usize {
    if !line || !data.contains(&b'\r') {
        return data.len();
    }
    let mut w = 0;
    for r in 0..data.len() {
        if data[r] != b'\r' {
            data[w] = data[r];
            w += 1;
        }
    }
    w
}

/// `[-0, +1, m]` Pushes `prefix` followed by the bytes `pick` finds in
/// `cell`. Nothing of ours is borrowed or taken out while Lua allocates
/// (`push_held`; a prefixed copy is `push_owned`): a memory error loses
/// nothing.
fn push_data<T>(lua: &Lua, prefix: &[u8], cell: &RefCell<T>, pick: impl FnOnce(&T) -> &[u8]) {
    if prefix.is_empty() {
        lua.push_held(cell, pick);
    } else {
        let data = [prefix, pick(&cell.borrow())].concat();
        lua.push_owned(data);
    }
}

/// `[-0, +1, m]` Pushes the prefix followed by `n` unread bytes of `s` (CRs
/// dropped for a line), then consumes `skip >= n` (which may free them).
fn push_taken(lua: &Lua, s: &Sock, want: &Want, n: usize, skip: usize) {
    let (first, len) = {
        let mut rb = s.rb.borrow_mut();
        let first = rb.first;
        (first, drop_crs(&mut rb.buf[first..first + n], want.pattern == LINE))
    };
    push_data(lua, want.prefix, &s.rb, |rb| &rb.buf[first..first + len]);
    s.rb.borrow_mut().consume(skip);
    s.count_received(skip);
}

thread_local! {
    /// Where a receive reads when its object's buffer is empty: data taken
    /// as it comes (the usual case) then never goes through the object's
    /// buffer, so an idle connection holds no read buffer. Borrowed only
    /// while no Lua code runs: a receive that Lua code run by a push makes
    /// uses it after the push's copy.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// What a read into the scratch buffer did: `n` bytes kept in the object's
/// buffer, or the answer, its first bytes (this many, CRs dropped).
enum Got {
    Kept(usize),
    Answer(usize),
}

/// Reads once from `s` into its buffer, through the thread's scratch buffer
/// if the object's is empty; a read that satisfies the receive by itself is
/// pushed from there (the rest, if any, is kept in the object): then
/// `Ok(None)`. Otherwise what `recv` returned.
fn recv_step(lua: &Lua, s: &Sock, want: &Want) -> sys::SysResult<Option<usize>> {
    if s.unread_len() > 0 {
        return sys::recv(s.fd.get(), &mut s.rb.borrow_mut().buf, CHUNK).map(Some);
    }
    match SCRATCH.with(|c| recv_into(s, want, &mut c.borrow_mut()))? {
        Got::Kept(n) => Ok(Some(n)),
        Got::Answer(len) => {
            SCRATCH.with(|c| push_data(lua, want.prefix, c, |v| &v[..len]));
            Ok(None)
        }
    }
}

/// `recv_step`'s read, with the scratch buffer.
fn recv_into(s: &Sock, want: &Want, scratch: &mut Vec<u8>) -> sys::SysResult<Got> {
    scratch.clear();
    scratch.reserve(CHUNK); // room for CHUNK: recv reads straight into it
    let n = sys::recv(s.fd.get(), scratch, CHUNK)?;
    let max = s.maxline.get();
    let wanted = want.wanted();
    let taken = match want.pattern {
        _ if n == 0 => None,
        // A line over the limit goes to the buffer: `receive_now` fails it.
        LINE => scratch.iter().position(|&b| b == b'\n').filter(|&i| max == 0 || i <= max).map(|i| (i, i + 1)),
        ALL => None,
        _ => (n >= wanted).then_some((wanted, wanted)),
    };
    let Some((len, skip)) = taken else {
        s.rb.borrow_mut().buf.extend_from_slice(scratch);
        return Ok(Got::Kept(n));
    };
    // The rest is stored before the string is pushed: a finalizer run by
    // the push may receive too.
    s.rb.borrow_mut().buf.extend_from_slice(&scratch[skip..]);
    s.drained.set(n < CHUNK);
    s.count_received(skip);
    Ok(Got::Answer(drop_crs(&mut scratch[..len], want.pattern == LINE)))
}

/// `[-0, +3, m]` A failed receive: `nil, msg, partial` (what was buffered).
fn receive_failed(lua: &Lua, s: &Sock, want: &Want, msg: &CStr) -> Next {
    lua.push_nil();
    lua.push_bytes(msg.to_bytes());
    let n = s.unread_len();
    push_taken(lua, s, want, n, n);
    Next::Done(3)
}

/// `[-0, +3, m]` A line over the limit: `nil, "line too long", partial`, the
/// partial its first `maxline` bytes (consumed: the next receive goes on
/// with the rest of the line).
fn line_too_long(lua: &Lua, s: &Sock, want: &Want) -> Next {
    lua.push_nil();
    lua.push_bytes(b"line too long");
    let max = s.maxline.get();
    push_taken(lua, s, want, max, max);
    Next::Done(3)
}

/// `[-0, +3, m]` A receive that got its data (on the top): `data, nil, nil`.
fn received(lua: &Lua) -> Next {
    lua.push_nil();
    lua.push_nil();
    Next::Done(3)
}

/// Is the receive answered by the buffer of `s`? Then it has pushed the
/// data.
fn answer_from_buffer(lua: &Lua, s: &Sock, want: &Want) -> Option<Next> {
    let unread = s.unread_len();
    let wanted = want.wanted();
    match want.pattern {
        LINE => {
            let max = s.maxline.get();
            if max > 0 && net::line_too_long(&mut s.rb.borrow_mut(), max) {
                return Some(line_too_long(lua, s, want));
            }
            let newline = s.rb.borrow_mut().newline();
            let i = newline?;
            push_taken(lua, s, want, i, i + 1);
            Some(received(lua))
        }
        ALL => None,
        // As LuaSocket: `receive(0)` (no prefix) needs something buffered,
        // so it reads (waits) once, and fails on a closed or ended stream.
        p if unread >= wanted && (unread > 0 || p > 0 || !want.prefix.is_empty()) => {
            push_taken(lua, s, want, wanted, wanted);
            Some(received(lua))
        }
        _ => None,
    }
}

/// One go of a receive on `s` after `why`: its results pushed (`Done`), or
/// the wait it needs.
fn receive_now(lua: &Lua, s: &Sock, want: &Want, why: Why) -> Next {
    if let Some(m) = failure(why) {
        return receive_failed(lua, s, want, m);
    }
    if why != Why::Start {
        s.drained.set(false); // readiness (or a close, found below)
    }
    loop {
        if let Some(next) = answer_from_buffer(lua, s, want) {
            return next;
        }
        if s.fd.get() < 0 {
            return receive_failed(lua, s, want, c"closed");
        }
        if s.drained.get() {
            // Skip a recv that would most likely fail with EAGAIN; with
            // no time left to wait, try it all the same.
            if let Ok(d) = wait_deadline(s, want.deadline) {
                return Next::Wait(d);
            }
        }
        let unread = s.unread_len();
        match recv_step(lua, s, want) {
            Ok(None) => return received(lua),
            Ok(Some(0)) => {
                if want.pattern == ALL && unread > 0 {
                    push_taken(lua, s, want, unread, unread);
                    return received(lua);
                }
                return receive_failed(lua, s, want, c"closed");
            }
            Ok(Some(n)) => s.drained.set(n < CHUNK),
            Err(libc::EAGAIN) => match wait_deadline(s, want.deadline) {
                Ok(d) => return Next::Wait(d),
                Err(()) => return receive_failed(lua, s, want, c"timeout"),
            },
            Err(e) => return receive_failed(lua, s, want, sys::strerror(e)),
        }
    }
}

// ----- send -----

/// `client:send`. Frame: 1 socket, 2 data, 3 first index, 4 last index,
/// 5 deadline. The bytes sent so far are in the struct. As a receive, the
/// method makes the first attempt itself.
#[derive(Clone, Copy)]
struct Send {
    sent: i64,
}

impl Operation for Send {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        let lua = &f.lua;
        let Some(s) = sock_of(f) else { return gone(f) };
        // The data string stays in slot 2: its bytes stay where they are.
        let data = lua.to_bytes(f.at(2)).unwrap_or_default();
        let range = (lua.to_int(f.at(3)).unwrap_or(1), lua.to_int(f.at(4)).unwrap_or(0));
        if let Some(m) = failure(why) {
            return Next::Done(send_failed(lua, m, range.0 - 1 + self.sent));
        }
        send_now(lua, s, data, range, deadline_at(lua, f.at(5)), &mut self.sent)
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(&Source, RawFd, u32)) {
        one_source(f, WRITE, each)
    }
}

cfn!(send = send_body);

/// `client:send(data [, i [, j]])`: sends `data:sub(i, j)`; returns the
/// index of the last byte sent.
fn send_body(lua: &mut Lua) -> Ret {
    let s = check(lua, 1, &[Kind::Client])?;
    let data = lua.check_bytes(2)?;
    let size = data.len() as i64;
    let mut i = lua.opt_int(3, 1)?;
    let mut j = lua.opt_int(4, -1)?;
    if i < 0 {
        i = size + i + 1;
    }
    if j < 0 {
        j = size + j + 1;
    }
    let (i, j) = (i.max(1), j.min(size));
    let deadline = call_deadline(s.total.get());
    let mut sent = 0;
    let first = match first_step(lua, || send_now(lua, s, data, (i, j), deadline, &mut sent)) {
        Ok(n) => return Ok(n),
        Err(first) => first,
    };
    lua.set_top(2); // socket data i j deadline
    lua.push_int(i);
    lua.push_int(j);
    match deadline {
        Some(d) => lua.push_int(d as lua_Integer),
        None => lua.push_nil(),
    }
    drive_waiting(lua, Send { sent }, first)
}

/// `[-0, +3, m]` A failed send: `nil, msg, last` (the index of the last
/// byte sent). Returns 3.
fn send_failed(lua: &Lua, msg: &CStr, last: i64) -> c_int {
    lua.push_nil();
    lua.push_bytes(msg.to_bytes());
    lua.push_int(last);
    3
}

/// Sends `data[i - 1 + sent .. j]` (`range` is `(i, j)`) on `s`, counting
/// in `sent`: its results pushed (`Done`), or the wait it needs.
fn send_now(lua: &Lua, s: &Sock, data: &[u8], range: (i64, i64), deadline: Option<u64>, sent: &mut i64) -> Next {
    let (i, j) = range;
    debug_assert!(j <= data.len() as i64);
    while i - 1 + *sent < j {
        if s.fd.get() < 0 {
            return Next::Done(send_failed(lua, c"closed", i - 1 + *sent));
        }
        let from = (i - 1 + *sent) as usize;
        match sys::send(s.fd.get(), &data[from..j as usize]) {
            Ok(n) => {
                *sent += n as i64;
                s.sent.set(s.sent.get() + n as u64);
            }
            Err(libc::EAGAIN) => {
                return match wait_deadline(s, deadline) {
                    Ok(d) => Next::Wait(d),
                    Err(()) => Next::Done(send_failed(lua, c"timeout", i - 1 + *sent)),
                };
            }
            Err(e) => return Next::Done(send_failed(lua, sys::strerror(e), i - 1 + *sent)),
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

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(&Source, RawFd, u32)) {
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
    let deadline = if op.retrying { still_ahead(op.until) } else { wait_deadline(s, deadline_at(lua, f.at(2))) };
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

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(&Source, RawFd, u32)) {
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
    match wait_deadline(s, deadline_at(&f.lua, f.at(4))) {
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
    let family = [libc::AF_UNSPEC, libc::AF_INET, libc::AF_INET6]
        [lua.check_option(5, Some(c"unspec"), &[c"unspec", c"inet", c"inet6"])?];
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
