//! `cothread.ssl`: LuaSec's TLS on the waiting engine.
//!
//! LuaSec owns the TLS state and the descriptor; it is told never to wait
//! (its timeout stays 0), so each of its calls is one non-blocking attempt
//! that may answer "wantread" or "wantwrite". The Lua side (`ssl.lua`,
//! embedded) calls LuaSec and, on a want, waits here for that direction of
//! the descriptor, then calls again: the one retry loop. This file holds
//! what that loop needs from the engine: the `Tls` object (the descriptor's
//! `Source`, LuaSocket's timeouts, a cache of LuaSec's `dirty`), the wait
//! operation, and the loader.
//!
//! The chunk runs once per Lua state with a private `core` table and the
//! class's metatable; it fills the metatable's `__index` with LuaSec's
//! methods and returns the module table, cached in the registry.

use std::cell::Cell;
use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;

use crate::cfn;
use crate::engine::{self, Frame, Next, Operation, READ, Selectable, Source, SourceKind, WRITE, Why};
use crate::lua::{Error, Lua, Reg, Ret, Udata, lua_Integer};
use crate::park::drive;
use crate::sys;

/// The Lua side.
const SOURCE: &str = include_str!("ssl.lua");
/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.ssl";
/// `cothread.ssl.https`, on top of the module.
const HTTPS_SOURCE: &str = include_str!("https.lua");
/// Registry field caching the https module table.
const HTTPS: &CStr = c"cothread.ssl.https";

/// A TLS connection: LuaSec's `SSL:Connection` (user value 1) seen by the
/// engine. LuaSec closes the descriptor; this object only watches it, and
/// leaves the engine (`release`) before LuaSec's close or collection.
struct Tls {
    /// The descriptor LuaSec owns (-1 once released).
    fd: Cell<RawFd>,
    /// Its side in the waiting engine.
    src: Source,
    /// LuaSocket's timeouts (seconds; negative: none): per wait, per call.
    block: Cell<f64>,
    total: Cell<f64>,
    /// LuaSec's `dirty()` after its last call: decrypted data waits in its
    /// buffers (data enters them only in calls `ssl.lua` makes, each
    /// followed by `setdirty`).
    dirty: Cell<bool>,
    closed: Cell<bool>,
}

// SAFETY: c"cothread.ssl.connection" names only this type (no other `Udata`, no registry field).
unsafe impl Udata for Tls {
    const NAME: &'static CStr = c"cothread.ssl.connection";
}

impl Drop for Tls {
    /// Collected: LuaSec's connection, made before this object, is finalized
    /// after it (Lua runs finalizers in the reverse order of their marking)
    /// and closes the descriptor, now out of the engine.
    fn drop(&mut self) {
        self.release();
    }
}

impl Tls {
    /// Takes the descriptor out of the engine while it is still open (the
    /// operations waiting on it end with "closed"), before LuaSec closes it.
    /// LuaSec's close sends close_notify with a blocking write: if the
    /// socket cannot take it now, its sending side is shut first, so the
    /// write fails at once (EPIPE; SIGPIPE is ignored) instead of blocking
    /// the thread.
    fn release(&self) {
        if self.closed.replace(true) {
            return;
        }
        self.src.detach();
        self.dirty.set(false);
        let fd = self.fd.replace(-1);
        let mut p = [sys::pollfd(fd, sys::POLL_OUT)];
        if !matches!(sys::poll(&mut p, 0), Ok(1)) || p[0].revents & sys::POLL_OUT == 0 {
            let _ = sys::shutdown(fd, libc::SHUT_WR);
        }
    }
}

/// Argument 1 as a live `Tls`.
fn check(lua: &Lua) -> Result<&Tls, Error> {
    lua.udata::<Tls>(1)
}

// ===== the wait =====

/// `core.wait(t, dir, deadline)`: waits until `t`'s descriptor is ready for
/// `dir` (READ or WRITE). Frame: 1 connection, 2 direction, 3 call deadline
/// (ns) or nil.
#[derive(Clone, Copy)]
struct Wait;

impl Operation for Wait {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        let (conn, deadline) = (f.at(1), f.at(3));
        let lua = &mut f.lua;
        let msg = match why {
            Why::Ready => {
                lua.push_bool(true);
                return Next::Done(1);
            }
            Why::Start => match lua.test_udata::<Tls>(conn) {
                Some(t) if !t.closed.get() => {
                    let call = lua.to_int(deadline).map(|d| d as u64);
                    match engine::next_deadline(t.block.get(), call) {
                        Ok(d) => return Next::Wait(d),
                        Err(()) => c"timeout",
                    }
                }
                _ => c"closed",
            },
            Why::Timeout => c"timeout",
            Why::Closed => c"closed",
            Why::Cancelled => c"cancelled",
            Why::Failed(m) => m,
            Why::Done => c"closed", // no job, no event: unreachable
        };
        Next::Done(lua.fail(msg))
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(&Source, RawFd, u32)) {
        let dir = if f.lua.to_int(f.at(2)) == Some(WRITE as lua_Integer) { WRITE } else { READ };
        if let Some(t) = f.lua.test_udata::<Tls>(f.at(1)).filter(|t| !t.closed.get()) {
            each(&t.src, t.fd.get(), dir);
        }
    }
}

cfn!(wait = wait_body);

/// `core.wait(t, dir, deadline)`: `true` when the descriptor is ready, else
/// `nil, "timeout" | "closed" | "cancelled" | message`. A deadline already
/// passed answers "timeout" without waiting (timeout 0).
fn wait_body(lua: &mut Lua) -> Ret {
    check(lua)?;
    lua.check_int(2)?;
    lua.set_top(3);
    drive(lua, Wait)
}

// ===== the core table =====

/// `core.turn()`: `true` at once, unless the cothread is over its budget
/// (doc/lua.md, "Fairness"): then it yields to the ready tail first (`nil,
/// "cancelled"` if it is unscheduled meanwhile). Each TLS call begins with
/// it, since LuaSec answers from what it already holds without the engine.
#[derive(Clone, Copy)]
struct Turn;

impl Operation for Turn {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        match why {
            Why::Start => {
                f.lua.push_bool(true);
                Next::Done(1)
            }
            _ => Next::Done(f.lua.fail(c"cancelled")),
        }
    }
}

cfn!(turn = turn_body);

fn turn_body(lua: &mut Lua) -> Ret {
    lua.set_top(0);
    drive(lua, Turn)
}

cfn!(new = new_body);

/// `core.new(conn, fd)`: a `Tls` over LuaSec's connection `conn` (made
/// before it, so finalized after it) and its descriptor.
fn new_body(lua: &mut Lua) -> Ret {
    lua.check_any(1)?;
    let fd = lua.check_int(2)?;
    let fd = RawFd::try_from(fd).map_err(|_| Error::arg(2, c"invalid descriptor"))?;
    lua.new_udata(
        Tls {
            fd: Cell::new(fd),
            src: Source::new(SourceKind::Socket),
            block: Cell::new(-1.0),
            total: Cell::new(-1.0),
            dirty: Cell::new(false),
            closed: Cell::new(false),
        },
        1,
    );
    lua.push_value(1);
    lua.set_uservalue(-2, 1);
    Ok(1)
}

cfn!(begin = begin_body);

/// `core.begin(t)`: LuaSec's connection and the call's deadline (ns, or
/// nil), or nothing when `t` is closed: what one operation starts with.
fn begin_body(lua: &mut Lua) -> Ret {
    let t = check(lua)?;
    if t.closed.get() {
        return Ok(0);
    }
    let deadline = engine::call_deadline(t.total.get());
    lua.get_uservalue(1, 1);
    match deadline {
        Some(d) => lua.push_int(d as lua_Integer),
        None => lua.push_nil(),
    }
    Ok(2)
}

cfn!(conn = conn_body);

/// `core.conn(t)`: LuaSec's connection, closed or not (the forwarded
/// methods then get LuaSec's own answer).
fn conn_body(lua: &mut Lua) -> Ret {
    check(lua)?;
    lua.get_uservalue(1, 1);
    Ok(1)
}

cfn!(setdirty = setdirty_body);

/// `core.setdirty(t, dirty)`: records LuaSec's `dirty()`.
fn setdirty_body(lua: &mut Lua) -> Ret {
    let b = lua.to_bool(2);
    let t = check(lua)?;
    t.dirty.set(b && !t.closed.get());
    Ok(0)
}

cfn!(release = release_body);

/// `core.release(t)`: takes `t` out of the engine (see `Tls::release`) and
/// answers LuaSec's connection for its close; nothing if `t` was closed.
fn release_body(lua: &mut Lua) -> Ret {
    let t = check(lua)?;
    if t.closed.get() {
        return Ok(0);
    }
    t.release();
    lua.get_uservalue(1, 1);
    Ok(1)
}

cfn!(ignore_sigpipe = ignore_sigpipe_body);

/// `core.ignore_sigpipe()`: OpenSSL writes with `write(2)`, which raises
/// SIGPIPE on a reset connection; LuaSec (built without LuaSocket's core)
/// does not ignore it, so this does, unless the program handles it.
fn ignore_sigpipe_body(lua: &mut Lua) -> Ret {
    lua.push_bool(sys::ignore_sigpipe());
    Ok(1)
}

/// The functions of the private `core` table.
const CORE: &[Reg] = &[
    (c"new", new),
    (c"begin", begin),
    (c"conn", conn),
    (c"wait", wait),
    (c"turn", turn),
    (c"setdirty", setdirty),
    (c"release", release),
    (c"ignore_sigpipe", ignore_sigpipe),
];

// ===== methods =====

cfn!(getfd = getfd_body);

/// `conn:getfd()`: the descriptor, or -1 once closed.
fn getfd_body(lua: &mut Lua) -> Ret {
    let fd = check(lua)?.fd.get();
    lua.push_int(fd as lua_Integer);
    Ok(1)
}

cfn!(dirty = dirty_body);

/// `conn:dirty()`: does LuaSec hold decrypted data (a `receive` would take
/// it without waiting)?
fn dirty_body(lua: &mut Lua) -> Ret {
    let d = check(lua)?.dirty.get();
    lua.push_bool(d);
    Ok(1)
}

cfn!(settimeout = settimeout_body);

/// `conn:settimeout(t [, mode])`: LuaSocket's, "b" (each wait, the
/// default) or "t" (each call, also "r"); nil or negative: none. Returns 1.
fn settimeout_body(lua: &mut Lua) -> Ret {
    let t = check(lua)?;
    let v = lua.opt_num(2, -1.0)?;
    let v = if v.is_nan() { -1.0 } else { v };
    match lua.opt_bytes(3, b"b")?.first() {
        Some(b'b') => t.block.set(v),
        Some(b't' | b'r') => t.total.set(v),
        _ => return Err(Error::arg(3, c"invalid timeout mode")),
    }
    lua.push_int(1);
    Ok(1)
}

cfn!(gettimeout = gettimeout_body);

/// `conn:gettimeout()`: the block and total timeouts (-1: none).
fn gettimeout_body(lua: &mut Lua) -> Ret {
    let t = check(lua)?;
    lua.push_num(t.block.get());
    lua.push_num(t.total.get());
    Ok(2)
}

cfn!(tostring = tostring_body);

/// `__tostring`: LuaSec's `SSL connection: 0x...`, `(closed)` after it.
fn tostring_body(lua: &mut Lua) -> Ret {
    let closed = check(lua)?.closed.get();
    let tail = if closed { " (closed)" } else { "" };
    lua.push_owned(format!("SSL connection: {:p}{tail}", lua.to_pointer(1)));
    Ok(1)
}

// ===== select =====

/// The source of the connection at `idx`.
fn tls_source(lua: &Lua, idx: c_int) -> Option<&Source> {
    lua.test_udata::<Tls>(idx).map(|t| &t.src)
}

/// The descriptor of the connection at `idx` (-1 once closed).
fn tls_fd(lua: &Lua, idx: c_int) -> RawFd {
    lua.test_udata::<Tls>(idx).map_or(-1, |t| t.fd.get())
}

/// Would a receive on the connection at `idx` answer without waiting:
/// decrypted data waits in LuaSec, or it is closed ("closed" at once)?
fn tls_pending(lua: &Lua, idx: c_int) -> bool {
    lua.test_udata::<Tls>(idx).is_some_and(|t| t.dirty.get() || t.closed.get())
}

/// What `socket.select` needs of a connection, in both lists.
static TLS_SELECT: Selectable = Selectable { source: tls_source, fd: tls_fd, pending: tls_pending, write: true };

/// The methods written here; `ssl.lua` adds the others.
const METHODS: &[Reg] =
    &[(c"getfd", getfd), (c"dirty", dirty), (c"settimeout", settimeout), (c"gettimeout", gettimeout)];

// ===== the module =====

/// `[-0, +1, e]` Pushes the module table, made once per Lua state; raises
/// the chunk's error (LuaSec missing) and caches nothing then.
pub fn push_module(lua: &mut Lua) -> Result<(), Error> {
    lua.push_once(MODULE, make_module)
}

/// `[-0, +1, e]` Pushes the https module table, made once per Lua state
/// by its chunk, run with the module.
pub fn push_https(lua: &mut Lua) -> Result<(), Error> {
    lua.push_once(HTTPS, |lua| {
        lua.load(HTTPS_SOURCE, c"=cothread.ssl.https")?;
        push_module(lua)?;
        lua.call(1, 1)
    })
}

/// `[-0, +1, e]` Runs the chunk with the core table and the class's
/// metatable; pushes the module table it returns.
fn make_module(lua: &mut Lua) -> Result<(), Error> {
    lua.load(SOURCE, c"=cothread.ssl")?;
    lua.push_functions(CORE);
    for (name, dir) in [(c"READ", READ), (c"WRITE", WRITE)] {
        lua.push_int(dir as lua_Integer);
        lua.set_field(-2, name);
    }
    lua.udata_metatable::<Tls>(|lua| {
        lua.push_fn(tostring);
        lua.set_field(-2, c"__tostring");
        lua.push_functions(METHODS);
        lua.set_field(-2, c"__index");
        engine::make_selectable(lua, &TLS_SELECT);
        Ok(())
    })?;
    lua.call(2, 1)
}

/// `module()`: the module table, as `require "cothread.ssl"` answers it
/// (the lazy `ssl` field of a scheduler table calls it).
fn module_body(lua: &mut Lua) -> Ret {
    push_module(lua)?;
    Ok(1)
}
cfn!(pub module = module_body);
