//! The socket object (`Tcp`, for TCP and UDP alike): its kinds, pending
//! options, checks, closing, its metamethods, and LuaSocket's timeouts as
//! deadlines. The module's other files use it; `mod.rs` assembles them.

use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;

use crate::buffer::Buffer;
use crate::engine::{self, Source, SourceKind, Why};
use crate::raw::{self, L, ffi};
use crate::sys;

/// The key that marks the metatables of socket objects (its address).
pub(super) static MARK: u8 = 0;

// ===== objects =====

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    Master,
    Client,
    Server,
    /// UDP objects (see `udp`).
    Unconnected,
    Connected,
}

impl Kind {
    pub(super) fn name(self) -> &'static CStr {
        match self {
            Kind::Master => c"tcp{master}",
            Kind::Client => c"tcp{client}",
            Kind::Server => c"tcp{server}",
            Kind::Unconnected => c"udp{unconnected}",
            Kind::Connected => c"udp{connected}",
        }
    }

    /// The registry name of the class's metatable.
    pub(super) fn registry(self) -> &'static CStr {
        match self {
            Kind::Master => c"cothread.tcp{master}",
            Kind::Client => c"cothread.tcp{client}",
            Kind::Server => c"cothread.tcp{server}",
            Kind::Unconnected => c"cothread.udp{unconnected}",
            Kind::Connected => c"cothread.udp{connected}",
        }
    }

    pub(super) fn is_udp(self) -> bool {
        matches!(self, Kind::Unconnected | Kind::Connected)
    }

    pub(super) fn socktype(self) -> c_int {
        if self.is_udp() { libc::SOCK_DGRAM } else { libc::SOCK_STREAM }
    }
}

/// Bytes of the largest option value (an `ipv6_mreq`).
pub(super) const MAX_VALUE: usize = 20;

/// An option set before the descriptor exists (`tcp()` makes it lazily).
#[derive(Clone, Copy)]
pub(super) struct PendingOpt {
    pub(super) level: c_int,
    pub(super) name: c_int,
    pub(super) value: [u8; MAX_VALUE],
    pub(super) len: usize,
}

/// A socket object: TCP (kinds master, client, server), or UDP (kinds
/// unconnected and connected: the read buffer is then only scratch space
/// for a datagram).
pub(super) struct Tcp {
    /// The descriptor, or -1 (not made yet, or closed).
    pub(super) fd: RawFd,
    /// `AF_INET`, `AF_INET6`, or `AF_UNSPEC` until the first bind/connect.
    pub(super) family: c_int,
    /// Made by `tcp()`: the family follows the first address used.
    pub(super) lazy: bool,
    pub(super) closed: bool,
    pub(super) kind: Kind,
    /// LuaSocket's timeouts (seconds; negative: none): per wait, per call.
    pub(super) block: f64,
    pub(super) total: f64,
    /// Read buffer.
    pub(super) rb: Buffer,
    /// The longest line `receive("*l")` takes, in bytes (0: no limit; the
    /// `maxline` option).
    pub(super) maxline: usize,
    /// The last `recv` came back short: the socket is most likely empty, so
    /// a read that needs more data waits for readiness before trying again
    /// (as libuv reads only on readiness). Cleared when a wait or `select`
    /// finds it readable.
    pub(super) drained: bool,
    pub(super) pending: Vec<PendingOpt>,
    /// Its side in the waiting engine.
    pub(super) src: Source,
    /// Dropped by `__gc`.
    pub(super) gone: bool,
    /// LuaSocket's statistics (`getstats`): bytes taken by `receive`, bytes
    /// sent, and the wall-clock time the object was made (seconds).
    pub(super) received: u64,
    pub(super) sent: u64,
    pub(super) birthday: f64,
}

impl Tcp {
    pub(super) fn unread(&self) -> &[u8] {
        self.rb.unread()
    }

    pub(super) fn consume(&mut self, n: usize) {
        self.rb.consume(n)
    }
}

/// `[-0, +1, m]` Pushes a new socket object over `fd` (-1: none yet), which
/// it owns from now on: should the allocation fail, `fd` is closed before
/// the memory error goes on.
pub(super) unsafe fn push_tcp(l: L, fd: RawFd, family: c_int, kind: Kind, lazy: bool) -> *mut Tcp {
    // SAFETY: the block is fresh, sized for a `Tcp` and aligned for any C
    // type (Lua's userdata alignment; `Tcp` needs 8); it is written before
    // the metatable makes `__gc` reach it. A failed allocation left its
    // error on the top, raised once the descriptor is closed.
    unsafe {
        raw::check_stack(l, 4);
        let t = crate::lua::alloc_block(l, std::mem::size_of::<Tcp>(), 0) as *mut Tcp;
        if t.is_null() {
            if fd >= 0 {
                sys::close(fd);
            }
            ffi::lua_error(l);
        }
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
pub(super) unsafe fn set_kind(l: L, idx: c_int, t: *mut Tcp, kind: Kind) {
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
pub(super) unsafe fn to_sock(l: L, idx: c_int) -> *mut Tcp {
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
pub(super) unsafe fn check_tcp(l: L, idx: c_int, kinds: &[Kind]) -> *mut Tcp {
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
pub(super) const ANY: &[Kind] = &[Kind::Master, Kind::Client, Kind::Server, Kind::Unconnected, Kind::Connected];

/// `[-0, +1, -]` Pushes LuaSocket's success value, 1.
pub(super) unsafe fn ok(l: L) -> c_int {
    // SAFETY: callers are C functions or steps, with a free slot.
    unsafe { ffi::lua_pushinteger(l, 1) };
    1
}

/// Applies the pending options to the new descriptor of `t`.
pub(super) unsafe fn apply_pending(t: *mut Tcp) -> sys::SysResult<()> {
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
pub(super) unsafe fn ensure_fd(t: *mut Tcp, family: c_int) -> sys::SysResult<()> {
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
pub(super) unsafe fn close_tcp(t: *mut Tcp) {
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

pub(super) unsafe extern "C-unwind" fn tcp_gc(l: L) -> c_int {
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
pub(super) unsafe extern "C-unwind" fn tcp_close(l: L) -> c_int {
    // SAFETY: `check_tcp` returns a live socket or raises.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        close_tcp(t);
        ok(l)
    }
}

pub(super) unsafe extern "C-unwind" fn tcp_tostring(l: L) -> c_int {
    // SAFETY: `check_tcp` returns a live socket or raises.
    unsafe {
        let t = check_tcp(l, 1, ANY);
        ffi::lua_pushfstring(l, c"%s: %p".as_ptr(), (*t).kind.name().as_ptr(), t as *const std::ffi::c_void);
        1
    }
}

// ===== timeouts =====

pub(super) fn now_ns() -> u64 {
    cothread::time::monotonic_ns()
}

/// LuaSocket's timeout in seconds as nanoseconds: nil, NaN or negative
/// means no limit.
pub(super) fn timeout_ns(secs: f64) -> Option<u64> {
    (secs >= 0.0).then(|| engine::ns_of(secs))
}

/// `[-0, +1, -]` Pushes the deadline of a call with total timeout `total`
/// (nil: none).
pub(super) unsafe fn push_deadline(l: L, total: f64) {
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
pub(super) unsafe fn wait_deadline(l: L, t: *mut Tcp, slot: c_int) -> Result<Option<u64>, ()> {
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
pub(super) fn failure(why: Why) -> Option<&'static CStr> {
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
pub(super) unsafe fn one_source(l: L, base: c_int, dir: u32, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
    // SAFETY: slot 1 of a socket operation's frame holds its live `Tcp`.
    unsafe {
        let t = ffi::lua_touserdata(l, base + 1) as *mut Tcp;
        if (*t).fd >= 0 {
            each(&raw mut (*t).src, (*t).fd, dir);
        }
    }
}
