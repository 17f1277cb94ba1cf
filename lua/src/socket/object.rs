//! The socket object (`Sock`, for TCP and UDP alike): its kinds, pending
//! options, checks, closing, its metamethods, and LuaSocket's timeouts as
//! deadlines. The module's other files use it; `mod.rs` assembles them.
//!
//! Each kind is a class of the layer's userdata (`Udata::CLASSES`): a
//! metatable of its own, so a change of kind is a change of metatable
//! (`set_kind`), and one check finds a `Sock` under any of them.

use std::cell::{Cell, RefCell};
use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;

use crate::buffer::Buffer;
use crate::cfn;
use crate::engine::{self, Frame, Source, SourceKind, Why};
use crate::lua::{Classes, Error, Lua, Ret, Type, Udata, lua_Integer};
use crate::sys;

// ===== objects =====

/// The kinds of socket objects, in the order of `CLASSES`.
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

    /// Its class, an index of `CLASSES`.
    pub(super) fn class(self) -> usize {
        self as usize
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
/// for a datagram). No borrow of a `RefCell` here spans a call into Lua.
pub(super) struct Sock {
    /// The descriptor, or -1 (not made yet, or closed).
    pub(super) fd: Cell<RawFd>,
    /// `AF_INET`, `AF_INET6`, or `AF_UNSPEC` until the first bind/connect.
    pub(super) family: Cell<c_int>,
    /// Made by `tcp()`: the family follows the first address used.
    pub(super) lazy: Cell<bool>,
    pub(super) closed: Cell<bool>,
    /// Its kind; its metatable is the kind's class.
    pub(super) kind: Cell<Kind>,
    /// LuaSocket's timeouts (seconds; negative: none): per wait, per call.
    pub(super) block: Cell<f64>,
    pub(super) total: Cell<f64>,
    /// Read buffer.
    pub(super) rb: RefCell<Buffer>,
    /// The longest line `receive("*l")` takes, in bytes (0: no limit; the
    /// `maxline` option).
    pub(super) maxline: Cell<usize>,
    /// The last `recv` came back short: the socket is most likely empty, so
    /// a read that needs more data waits for readiness before trying again
    /// (as libuv reads only on readiness). Cleared when a wait or `select`
    /// finds it readable.
    pub(super) drained: Cell<bool>,
    pub(super) pending: RefCell<Vec<PendingOpt>>,
    /// Its side in the waiting engine.
    pub(super) src: Source,
    /// LuaSocket's statistics (`getstats`): bytes taken by `receive`, bytes
    /// sent, and the wall-clock time the object was made (seconds).
    pub(super) received: Cell<u64>,
    pub(super) sent: Cell<u64>,
    pub(super) birthday: Cell<f64>,
}

/// The classes of socket objects, in the order of `Kind`.
static CLASSES: Classes = Classes(&[
    c"cothread.tcp{master}",
    c"cothread.tcp{client}",
    c"cothread.tcp{server}",
    c"cothread.udp{unconnected}",
    c"cothread.udp{connected}",
]);

// SAFETY: c"cothread.socket.object", `CLASSES` and the five class names
// are this type's only (no other `Udata`, no other registry field).
unsafe impl Udata for Sock {
    const NAME: &'static CStr = c"cothread.socket.object";
    const CLASSES: Option<&'static Classes> = Some(&CLASSES);
}

impl Drop for Sock {
    fn drop(&mut self) {
        self.close();
    }
}

impl Sock {
    fn new(fd: RawFd, family: c_int, kind: Kind, lazy: bool) -> Sock {
        Sock {
            fd: Cell::new(fd),
            family: Cell::new(family),
            lazy: Cell::new(lazy),
            closed: Cell::new(false),
            kind: Cell::new(kind),
            block: Cell::new(-1.0),
            total: Cell::new(-1.0),
            rb: RefCell::new(Buffer::default()),
            maxline: Cell::new(0),
            drained: Cell::new(false),
            pending: RefCell::new(Vec::new()),
            src: Source::new(SourceKind::Socket),
            received: Cell::new(0),
            sent: Cell::new(0),
            birthday: Cell::new(sys::wall_time()),
        }
    }

    /// How many received bytes are buffered.
    pub(super) fn unread_len(&self) -> usize {
        self.rb.borrow().unread().len()
    }

    /// Counts `n` more bytes taken by `receive`.
    pub(super) fn count_received(&self, n: usize) {
        self.received.set(self.received.get() + n as u64);
    }

    /// Its source, for the engine.
    pub(super) fn source(&self) -> &Source {
        &self.src
    }

    /// Applies the pending options to the new descriptor.
    fn apply_pending(&self) -> sys::SysResult<()> {
        let fd = self.fd.get();
        if self.family.get() == libc::AF_INET6 {
            let one = 1i32.to_ne_bytes();
            sys::setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, &one)?;
        }
        for o in self.pending.borrow().iter() {
            sys::setsockopt(fd, o.level, o.name, &o.value[..o.len])?;
        }
        self.pending.borrow_mut().clear();
        Ok(())
    }

    /// Makes the descriptor for `family` if it has none yet.
    pub(super) fn ensure_fd(&self, family: c_int) -> sys::SysResult<()> {
        if self.fd.get() >= 0 {
            return Ok(());
        }
        let fd = sys::socket(family, self.kind.get().socktype())?;
        self.fd.set(fd);
        self.family.set(family);
        if let Err(e) = self.apply_pending() {
            sys::close(fd);
            self.fd.set(-1);
            return Err(e);
        }
        Ok(())
    }

    /// Closes the descriptor (the operations waiting on it end with
    /// "closed") and empties the buffer.
    pub(super) fn close(&self) {
        self.src.detach(); // before the descriptor its poll handle watches
        if self.fd.get() >= 0 {
            sys::close(self.fd.get());
            self.fd.set(-1);
        }
        self.closed.set(true);
        // Bytes received but not read stay: a receive that waited on the
        // socket (or comes later) gets them as its partial, as LuaSocket's
        // buffer gives them after a close. Read out, the buffer is freed.
        if self.unread_len() == 0 {
            self.rb.borrow_mut().release();
        }
    }
}

/// `[-0, +1, m]` Pushes a new socket object.
pub(super) fn push_sock(lua: &Lua, fd: RawFd, family: c_int, kind: Kind, lazy: bool) -> &Sock {
    lua.new_udata_class(Sock::new(fd, family, kind, lazy), kind.class(), 0)
}

/// `[-0, +0, m]` Makes `s`, the object at `idx`, of kind `kind`.
pub(super) fn set_kind(lua: &Lua, idx: c_int, s: &Sock, kind: Kind) {
    s.kind.set(kind);
    lua.set_class::<Sock>(idx, kind.class());
}

/// `[-0, +0, -]` The socket object (TCP or UDP) at `idx`, if it is one.
#[inline]
pub(super) fn to_sock(lua: &Lua, idx: c_int) -> Option<&Sock> {
    lua.test_udata::<Sock>(idx)
}

/// `[-0, +0, -]` The socket in slot 1 of an operation's frame (its method
/// checked it; a collected one is none).
pub(super) fn sock_of(f: &Frame) -> Option<&Sock> {
    to_sock(&f.lua, f.at(1))
}

/// `[-0, +0, -]` Argument `arg` as a socket of one of `kinds`, with
/// LuaSocket's messages ("tcp{client} expected, got tcp{master}").
#[inline]
pub(super) fn check<'a>(lua: &'a Lua, arg: c_int, kinds: &[Kind]) -> Result<&'a Sock, Error> {
    match to_sock(lua, arg) {
        Some(s) if kinds.contains(&s.kind.get()) => Ok(s),
        s => Err(wrong_kind(lua, arg, kinds, s)),
    }
}

/// The error of `check`: `s` (the socket at `arg`, if one) is none of
/// `kinds`.
#[cold]
fn wrong_kind(lua: &Lua, arg: c_int, kinds: &[Kind], s: Option<&Sock>) -> Error {
    let expected = match kinds {
        [k] => k.name(),
        [k, ..] if k.is_udp() => c"udp{any}",
        _ => c"tcp{any}",
    };
    let got = match s {
        Some(s) => s.kind.get().name(),
        None => lua.kind(arg).name(),
    };
    Error::arg_owned(arg, format!("{} expected, got {}", expected.to_string_lossy(), got.to_string_lossy()))
}

/// Any socket object: the methods every class has, TCP or UDP.
pub(super) const ANY: &[Kind] = &[Kind::Master, Kind::Client, Kind::Server, Kind::Unconnected, Kind::Connected];

/// UDP objects of either kind.
pub(super) const UDP_ANY: &[Kind] = &[Kind::Unconnected, Kind::Connected];

/// The kinds a method that TCP and UDP share takes: any, or for UDP's copy
/// (`UDP` true) UDP's, so that its message says "udp{any} expected".
pub(super) const fn shared<const UDP: bool>() -> &'static [Kind] {
    if UDP { UDP_ANY } else { ANY }
}

/// `[-0, +1, -]` Pushes LuaSocket's success value, 1.
pub(super) fn ok(lua: &Lua) -> c_int {
    lua.push_int(1);
    1
}

cfn!(pub(super) close = close_body::<false>);

/// `sock:close()`, also `__close`: closes the socket; a cothread waiting on
/// it gets "closed". Closing again does nothing.
pub(super) fn close_body<const UDP: bool>(lua: &mut Lua) -> Ret {
    check(lua, 1, shared::<UDP>())?.close();
    Ok(ok(lua))
}

cfn!(pub(super) tostring = tostring_body);

/// `__tostring`: `tcp{client}: 0x...`.
fn tostring_body(lua: &mut Lua) -> Ret {
    let kind = check(lua, 1, ANY)?.kind.get();
    lua.push_owned(format!("{}: {:p}", kind.name().to_string_lossy(), lua.to_pointer(1)));
    Ok(1)
}

// ===== timeouts =====

pub(super) use crate::engine::call_deadline;

/// `[-0, +1, -]` Pushes the deadline of a call with total timeout `total`
/// (nil: none), for its frame.
pub(super) fn push_deadline(lua: &Lua, total: f64) {
    match call_deadline(total) {
        Some(d) => lua.push_int(d as lua_Integer),
        None => lua.push_nil(),
    }
}

/// The call deadline in frame slot `slot` (`push_deadline`'s).
pub(super) fn deadline_at(lua: &Lua, slot: c_int) -> Option<u64> {
    (lua.kind(slot) == Type::Number).then(|| lua.to_int(slot).unwrap_or(0) as u64)
}

/// The deadline of the next wait of an operation on `s` whose call deadline
/// is `call`: `Err` if it has passed already.
pub(super) fn wait_deadline(s: &Sock, call: Option<u64>) -> Result<Option<u64>, ()> {
    engine::next_deadline(s.block.get(), call)
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

/// Calls `each` with the source of the socket in slot 1 of the frame (if
/// it has a descriptor), for direction `dir`.
pub(super) fn one_source(f: &Frame, dir: u32, each: &mut dyn FnMut(&Source, RawFd, u32)) {
    if let Some(s) = sock_of(f).filter(|s| s.fd.get() >= 0) {
        each(s.source(), s.fd.get(), dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_the_class_of_its_name() {
        for k in ANY {
            let registry = CLASSES.0[k.class()].to_bytes();
            assert_eq!(registry.strip_prefix(b"cothread."), Some(k.name().to_bytes()));
        }
        assert_eq!(ANY.len(), CLASSES.0.len());
    }
}
