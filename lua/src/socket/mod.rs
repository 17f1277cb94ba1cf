//! `cothread.socket`: LuaSocket's TCP and UDP surface on the waiting engine.
//!
//! Sockets are full userdata (`Tcp`) holding a non-blocking descriptor,
//! LuaSocket's timeouts, a read buffer and the engine's `Source`. As in
//! LuaSocket, each class has its own metatable (registry `cothread.tcp{master}`,
//! ...), whose `__index` holds the protocol's methods and the field `class`
//! (`"tcp{master}"`, ...): a change of class (`listen`, `connect`,
//! `setpeername`) changes the object's metatable (`set_kind`).
//!
//! Files: this one (objects, closing, the module table), `methods` (what
//! never waits: options, names, timeouts, constructors), `tcp` (receive,
//! send, accept, connect), `select` (`select`, `sleep`), `udp`, `options`,
//! `protect`. Each call that may wait is an engine operation (`park::drive`):
//! in a cothread it parks the cothread on its scheduler's engine; anywhere
//! else (the main chunk, a plain coroutine, a metamethod) it blocks the
//! caller in `poll(2)`, as LuaSocket does.
//!
//! Failures follow LuaSocket: misuse raises (`bad argument`), failed I/O
//! returns `nil, message` (`"timeout"`, `"closed"`, an `errno` text), with the
//! partial data or the last byte sent as third result where LuaSocket gives
//! one. A wait the cothread left (unscheduled, then scheduled again) gives
//! `"cancelled"`.

use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;

mod methods;
mod options;
mod protect;
mod select;
mod tcp;
mod udp;

use crate::buffer::Buffer;
use crate::engine::{self, Source, SourceKind, Why};
use crate::raw::{self, L, ffi};
use crate::sys;

/// The key that marks the metatables of socket objects (its address).
static MARK: u8 = 0;
/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.socket";

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
    /// The longest line `receive("*l")` takes, in bytes (0: no limit; the
    /// `maxline` option).
    maxline: usize,
    /// The last `recv` came back short: the socket is most likely empty, so
    /// a read that needs more data waits for readiness before trying again
    /// (as libuv reads only on readiness). Cleared when a wait or `select`
    /// finds it readable.
    drained: bool,
    pending: Vec<PendingOpt>,
    /// Its side in the waiting engine.
    src: Source,
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

/// `[-0, +1, m]` Pushes a new socket object.
unsafe fn push_tcp(l: L, fd: RawFd, family: c_int, kind: Kind, lazy: bool) -> *mut Tcp {
    // SAFETY: the block is fresh, sized for a `Tcp` and aligned for any C
    // type (Lua's userdata alignment; `Tcp` needs 8); it is written before
    // the metatable makes `__gc` reach it.
    unsafe {
        raw::check_stack(l, 4);
        let t = ffi::lua_newuserdatauv(l, std::mem::size_of::<Tcp>(), 0) as *mut Tcp;
        t.write(Tcp {
            fd,
            family,
            lazy,
            closed: false,
            kind,
            block: -1.0,
            total: -1.0,
            rb: Buffer::default(),
            maxline: 0,
            drained: false,
            pending: Vec::new(),
            src: Source::new(SourceKind::Socket),
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
    // SAFETY: `t` is the userdata at `idx` (caller's contract); the registry
    // holds every class's metatable once the module is made.
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
    // SAFETY: two free slots (every caller is a C function or a step, which
    // have at least that); an upvalue index past a function's upvalues reads
    // as nil (not equal). Only this module puts `MARK`'s address in a
    // metatable, and only on userdata holding a `Tcp`.
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

/// `[-0, +0, e]` The socket at `idx`, raising unless it is one of `kinds`.
unsafe fn check_tcp(l: L, idx: c_int, kinds: &[Kind]) -> *mut Tcp {
    // SAFETY: `to_sock` returns a live `Tcp` or null; the messages are
    // pushed before `luaL_argerror` raises them.
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

/// `[-0, +1, -]` Pushes LuaSocket's success value, 1.
unsafe fn ok(l: L) -> c_int {
    // SAFETY: callers are C functions or steps, with a free slot.
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

/// Closes the descriptor of `t` (the operations waiting on it end with
/// "closed") and empties its buffer.
unsafe fn close_tcp(t: *mut Tcp) {
    // SAFETY: `t` is live; its source is detached before the descriptor
    // closes (the engine's poll handle watches it).
    unsafe {
        engine::detach(&raw mut (*t).src);
        if (*t).fd >= 0 {
            sys::close((*t).fd);
            (*t).fd = -1;
        }
        (*t).closed = true;
        (*t).rb.release();
    }
}

unsafe extern "C-unwind" fn tcp_gc(l: L) -> c_int {
    // SAFETY: Lua calls this with a `Tcp` userdata (a class metatable's
    // `__gc`); `gone` makes the drop happen once, though `__close` or a
    // resurrection may reach the object again.
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
    // SAFETY: `check_tcp` returns a live socket or raises.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        close_tcp(t);
        ok(l)
    }
}

unsafe extern "C-unwind" fn tcp_tostring(l: L) -> c_int {
    // SAFETY: `check_tcp` returns a live socket or raises.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        ffi::lua_pushfstring(l, c"%s: %p".as_ptr(), (*t).kind.name().as_ptr(), t as *const std::ffi::c_void);
        1
    }
}

// ===== timeouts =====

fn now_ns() -> u64 {
    cothread::time::monotonic_ns()
}

/// LuaSocket's timeout in seconds as nanoseconds: nil, NaN or negative
/// means no limit.
fn timeout_ns(secs: f64) -> Option<u64> {
    (secs >= 0.0).then(|| engine::ns_of(secs))
}

/// `[-0, +1, -]` Pushes the deadline of a call with total timeout `total`
/// (nil: none).
unsafe fn push_deadline(l: L, total: f64) {
    // SAFETY: callers are C functions with a free slot.
    unsafe {
        match timeout_ns(total) {
            Some(ns) => ffi::lua_pushinteger(l, engine::deadline_in(ns) as ffi::lua_Integer),
            None => ffi::lua_pushnil(l),
        }
    }
}

/// The deadline of the next wait of an operation on `t` whose call deadline
/// is at index `slot` of `l`: `Err` if it has passed already.
unsafe fn wait_deadline(l: L, t: *mut Tcp, slot: c_int) -> Result<Option<u64>, ()> {
    // SAFETY: `slot` is a valid index of the operation's frame; `t` is live.
    unsafe {
        let call = (ffi::lua_type(l, slot) == ffi::LUA_TNUMBER)
            .then(|| ffi::lua_tointegerx(l, slot, std::ptr::null_mut()) as u64);
        let block = timeout_ns((*t).block);
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

/// The message a step answers for a wait that ended without readiness (its
/// socket closed: "closed", whatever its descriptor says by now).
fn failure(why: Why) -> Option<&'static CStr> {
    match why {
        Why::Timeout => Some(c"timeout"),
        Why::Cancelled => Some(c"cancelled"),
        Why::Closed => Some(c"closed"),
        Why::Failed(m) => Some(m),
        Why::Start | Why::Ready | Why::Done => None,
    }
}

/// Calls `each` with the source of the socket in slot 1 of the frame at
/// `base` of `l` (if it has a descriptor), for direction `dir`.
unsafe fn one_source(l: L, base: c_int, dir: u32, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
    // SAFETY: slot 1 of a socket operation's frame holds its live `Tcp`.
    unsafe {
        let t = ffi::lua_touserdata(l, base + 1) as *mut Tcp;
        if (*t).fd >= 0 {
            each(&raw mut (*t).src, (*t).fd, dir);
        }
    }
}

// ===== the module =====

/// `[-0, +1, m]` Pushes the module table, made once per Lua state.
///
/// # Safety
/// `l` is a valid state.
pub unsafe fn push_module(l: L) {
    // SAFETY: valid state (contract); `make_module` pushes one table.
    unsafe { raw::push_module_once(l, MODULE, |l| make_module(l)) }
}

/// `[-0, +0, m]` Registers the metatable of class `kind` (once per Lua
/// state): marked with `MARK`, its metamethods, and an `__index` with the
/// protocol's `methods` and `class`. Methods and metamethods get the
/// metatable as upvalue 1 (`to_sock`).
unsafe fn new_class(l: L, kind: Kind, methods: &[&[raw::Reg]]) {
    // SAFETY: valid state with the slots checked first; pushes are balanced
    // as the comments show.
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
            ffi::lua_createtable(l, 0, 32); // mt index
            for (name, f) in methods.iter().flat_map(|m| m.iter()) {
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
const HELPERS: &str = include_str!("helpers.lua");

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
            new_class(l, kind, &[methods::METHODS, tcp::METHODS]);
        }
        for kind in [Kind::Unconnected, Kind::Connected] {
            new_class(l, kind, &[udp::METHODS]);
        }
        let functions = [methods::FUNCTIONS, tcp::FUNCTIONS, select::FUNCTIONS, udp::FUNCTIONS];
        ffi::lua_createtable(l, 0, 32);
        for (name, f) in functions.iter().flat_map(|f| f.iter()) {
            ffi::lua_pushcfunction(l, *f);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
        // LuaSocket's constants: select takes any descriptor this process
        // may have (epoll and poll(2), no FD_SETSIZE); an invalid descriptor
        // is -1; receive and receivefrom take 8192 bytes by default.
        for (name, v) in
            [(c"_SETSIZE", sys::max_descriptors()), (c"_SOCKETINVALID", -1), (c"_DATAGRAMSIZE", udp::DEFAULT_SIZE)]
        {
            ffi::lua_pushinteger(l, v as ffi::lua_Integer);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
        if let Err(e) = protect::add_functions(&mut crate::lua::Lua::from_raw(l)) {
            e.raise(l);
        }
        add_helpers(l);
        crate::dns::push_module(l);
        ffi::lua_setfield(l, -2, c"dns".as_ptr());
        ffi::lua_pushfstring(l, c"cothread.socket %s".as_ptr(), cothread::ffi::cot_version_string());
        ffi::lua_setfield(l, -2, c"_VERSION".as_ptr());
    }
}
