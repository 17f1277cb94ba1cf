//! `cothread.channel`: cosock's channels, unbounded queues from any number of
//! senders to one receiver.
//!
//! `channel.new()` makes a *link* (full userdata `Link`, metatable
//! `cothread.channel`) and its two ends (`End`, metatables `cothread.sender`
//! and `cothread.receiver`), each holding the link as user value 1. The link
//! holds the queued values in a table (its user value 1, indices `head` to
//! `tail - 1`, so nil is a value like any other) and, once a cothread waited
//! on it, the scheduler whose event loop it is attached to (user value 2).
//!
//! A receive that finds the queue empty waits in `socket.select({receiver})`:
//! the receiver is a *virtual source* of the event loop (`io::Io::
//! attach_virtual`), and `send`/`close` end the waits on it (`Io::fire`). So a
//! receive suspends only its cothread, a receiver mixes with sockets in
//! `select`, and a cothread that leaves its wait (unscheduled, cancelled,
//! timed out) is taken off the link at once: a later send resumes nobody.

use std::ffi::{CStr, c_int};

use crate::io::{self, READ};
use crate::raw::{self, L, ffi};
use crate::socket;
use crate::state::State;

const LINK: &CStr = c"cothread.channel";
const SENDER: &CStr = c"cothread.sender";
const RECEIVER: &CStr = c"cothread.receiver";
/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.channel.module";

struct Link {
    /// Index of the next value to receive, and of the next value sent.
    head: ffi::lua_Integer,
    tail: ffi::lua_Integer,
    closed: bool,
    /// Identifier on the event loop of `owner` (0: never attached).
    id: u64,
    /// The scheduler whose loop it is attached to (kept by user value 2).
    owner: *mut State,
    /// Readiness found by `select` (between its passes).
    sel: bool,
}

impl Link {
    fn is_empty(&self) -> bool {
        self.head >= self.tail
    }
}

/// A sender or a receiver.
struct End {
    link: *mut Link,
    /// The receiver's timeout, seconds (negative: none).
    timeout: f64,
}

// ===== links =====

/// `[-0, +1, m]` Pushes a new link.
unsafe fn push_link(l: L) -> *mut Link {
    // SAFETY: valid state; the block is fresh and sized for a `Link` (no
    // destructor: `__gc` only detaches it).
    unsafe {
        let k = ffi::lua_newuserdatauv(l, std::mem::size_of::<Link>(), 2) as *mut Link;
        k.write(Link { head: 1, tail: 1, closed: false, id: 0, owner: std::ptr::null_mut(), sel: false });
        ffi::lua_newtable(l);
        ffi::lua_setiuservalue(l, -2, 1);
        ffi::luaL_setmetatable(l, LINK.as_ptr());
        k
    }
}

/// Ends the waits on `k` (a value came, or it closed): their cothreads
/// become ready.
unsafe fn wake(k: *mut Link) {
    // SAFETY: `k` is live; its owner's memory is kept by user value 2 and
    // `closed` says whether it still holds a loop. Only Rust code runs.
    unsafe {
        crate::state::source_event((*k).owner, (*k).id, crate::state::SourceEvent::Fire);
    }
}

/// Closes `k`: sends fail from now on; a waiting receive sees the close.
unsafe fn close_link(k: *mut Link) {
    // SAFETY: `k` is live.
    unsafe {
        if !(*k).closed {
            (*k).closed = true;
            wake(k);
        }
    }
}

/// `__gc` of a link: leaves its event loop.
unsafe extern "C-unwind" fn link_gc(l: L) -> c_int {
    // SAFETY: called by Lua on a `Link` userdata; the owner is alive or `closed`.
    unsafe {
        let k = ffi::lua_touserdata(l, 1) as *mut Link;
        if k.is_null() {
            return 0;
        }
        let p = std::mem::replace(&mut (*k).owner, std::ptr::null_mut());
        if !p.is_null() && !(*p).closed {
            if let Some(io) = (*p).io.as_mut() {
                let _ = io.detach((*k).id);
            }
        }
    }
    0
}

// ===== ends =====

/// `[-0, +0, e]` The end at `idx` of metatable `kind`, and its link.
unsafe fn check_end(l: L, idx: c_int, kind: &CStr) -> (*mut End, *mut Link) {
    // SAFETY: valid state; a userdata with this metatable holds an `End`
    // whose link is kept alive by its user value 1.
    unsafe {
        let e = ffi::luaL_checkudata(l, idx, kind.as_ptr()) as *mut End;
        (e, (*e).link)
    }
}

/// `[-0, +1, m]` Pushes a new end of `kind` for the link at `link_idx`.
unsafe fn push_end(l: L, link_idx: c_int, kind: &CStr) {
    // SAFETY: valid state; the block is fresh and sized for an `End`.
    unsafe {
        let k = ffi::lua_touserdata(l, link_idx) as *mut Link;
        let e = ffi::lua_newuserdatauv(l, std::mem::size_of::<End>(), 1) as *mut End;
        e.write(End { link: k, timeout: -1.0 });
        ffi::lua_pushvalue(l, link_idx);
        ffi::lua_setiuservalue(l, -2, 1);
        ffi::luaL_setmetatable(l, kind.as_ptr());
    }
}

/// `channel.new()`, also `channel()`: a sender and its receiver.
unsafe extern "C-unwind" fn new(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        raw::check_stack(l, 4);
        push_link(l);
        let k = ffi::lua_gettop(l);
        push_end(l, k, SENDER);
        push_end(l, k, RECEIVER);
        2
    }
}

/// `sender:send(value)`: queues `value` (nil too); `true`, or `false,
/// "closed"` once the channel is closed.
unsafe extern "C-unwind" fn send(l: L) -> c_int {
    // SAFETY: a method of the module; the queue is user value 1 of the link.
    unsafe {
        let (_, k) = check_end(l, 1, SENDER);
        ffi::lua_settop(l, 2);
        if (*k).closed {
            ffi::lua_pushboolean(l, 0);
            ffi::lua_pushliteral(l, c"closed");
            return 2;
        }
        ffi::lua_getiuservalue(l, 1, 1); // value link
        ffi::lua_getiuservalue(l, -1, 1); // value link queue
        ffi::lua_pushvalue(l, 2);
        ffi::lua_rawseti(l, -2, (*k).tail);
        (*k).tail += 1;
        wake(k);
        ffi::lua_pushboolean(l, 1);
        1
    }
}

/// `end:close()`: closes the channel (from either end). A waiting receive
/// returns what is queued, then `nil, "closed"`.
unsafe extern "C-unwind" fn close(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let k = if ffi::luaL_testudata(l, 1, SENDER.as_ptr()).is_null() {
            check_end(l, 1, RECEIVER).1
        } else {
            check_end(l, 1, SENDER).1
        };
        close_link(k);
        ffi::lua_pushinteger(l, 1);
        1
    }
}

/// `__gc` of a receiver: nobody can receive any more, so sends fail.
unsafe extern "C-unwind" fn receiver_gc(l: L) -> c_int {
    // SAFETY: called by Lua on an `End`; its link is alive (user value 1).
    unsafe {
        let e = ffi::lua_touserdata(l, 1) as *mut End;
        if !e.is_null() && !(*e).link.is_null() {
            (*(*e).link).closed = true;
        }
    }
    0
}

unsafe extern "C-unwind" fn tostring(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let name = if ffi::luaL_testudata(l, 1, SENDER.as_ptr()).is_null() {
            check_end(l, 1, RECEIVER);
            c"channel.receiver"
        } else {
            c"channel.sender"
        };
        ffi::lua_pushfstring(l, c"%s: %p".as_ptr(), name.as_ptr(), ffi::lua_touserdata(l, 1));
        1
    }
}

/// `receiver:settimeout(seconds)`: limits each `receive` (nil or negative:
/// no limit, the default).
unsafe extern "C-unwind" fn settimeout(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let (e, _) = check_end(l, 1, RECEIVER);
        let v = if ffi::lua_isnoneornil(l, 2) != 0 { -1.0 } else { ffi::luaL_checknumber(l, 2) };
        (*e).timeout = if v.is_nan() { -1.0 } else { v };
        ffi::lua_pushinteger(l, 1);
        1
    }
}

/// `receiver:receive()`: the next value, waiting for one (suspending the
/// calling cothread) until the receiver's timeout: `nil, "timeout"`; on a
/// closed channel with nothing queued, `nil, "closed"`.
unsafe extern "C-unwind" fn receive(l: L) -> c_int {
    // SAFETY: a method of the module. Frame: 1 receiver, 2 deadline (ns) or nil.
    unsafe {
        let (e, _) = check_end(l, 1, RECEIVER);
        ffi::lua_settop(l, 1);
        let timeout = (*e).timeout;
        if timeout >= 0.0 {
            let ns = (timeout * 1e9).ceil() as u64; // saturates: huge means never
            ffi::lua_pushinteger(l, cothread::time::monotonic_ns().saturating_add(ns) as ffi::lua_Integer);
        } else {
            ffi::lua_pushnil(l);
        }
        receive_k(l, ffi::LUA_OK, 0)
    }
}

/// The loop of `receive`, also its continuation after `select` yielded (the
/// results of `select` are then above the frame).
unsafe extern "C-unwind" fn receive_k(l: L, _status: c_int, _ctx: ffi::lua_KContext) -> c_int {
    // SAFETY: the frame of `receive`; the link is alive (the receiver holds it).
    unsafe {
        loop {
            if ffi::lua_gettop(l) > 2 {
                // select returned: a failure other than a timeout ends the call.
                if let Some(m) = raw::to_str(l, 5).map(|s| CStr::from_ptr(s)) {
                    if m != c"timeout" {
                        ffi::lua_pushnil(l);
                        ffi::lua_pushvalue(l, 5);
                        return 2;
                    }
                }
                ffi::lua_settop(l, 2);
            }
            let k = (*(ffi::lua_touserdata(l, 1) as *mut End)).link;
            if !(*k).is_empty() {
                ffi::lua_getiuservalue(l, 1, 1);
                ffi::lua_getiuservalue(l, -1, 1); // link queue
                ffi::lua_rawgeti(l, -1, (*k).head); // link queue value
                ffi::lua_pushnil(l);
                ffi::lua_rawseti(l, -3, (*k).head);
                (*k).head += 1;
                if (*k).is_empty() {
                    (*k).head = 1;
                    (*k).tail = 1;
                }
                return 1;
            }
            if (*k).closed {
                ffi::lua_pushnil(l);
                ffi::lua_pushliteral(l, c"closed");
                return 2;
            }
            let deadline = (ffi::lua_type(l, 2) == ffi::LUA_TNUMBER)
                .then(|| ffi::lua_tointegerx(l, 2, std::ptr::null_mut()) as u64);
            let now = cothread::time::monotonic_ns();
            match deadline {
                Some(d) if d <= now => {
                    ffi::lua_pushnil(l);
                    ffi::lua_pushliteral(l, c"timeout");
                    return 2;
                }
                None if socket::cothread_of(l).is_none() => {
                    raw::error(l, c"receive on an empty channel would wait forever outside a cothread")
                }
                _ => {}
            }
            // select({receiver}, nil, remaining seconds)
            ffi::lua_pushcfunction(l, socket::select);
            ffi::lua_createtable(l, 1, 0);
            ffi::lua_pushvalue(l, 1);
            ffi::lua_rawseti(l, -2, 1);
            ffi::lua_pushnil(l);
            match deadline {
                Some(d) => ffi::lua_pushnumber(l, (d - now) as f64 / 1e9),
                None => ffi::lua_pushnil(l),
            }
            ffi::lua_callk(l, 3, 3, 0, Some(receive_k));
        }
    }
}

// ===== select =====

/// `[-0, +0, -]` Is the value at `idx` a receiver?
///
/// # Safety
/// `l` is a valid state.
pub unsafe fn is_receiver(l: L, idx: c_int) -> bool {
    // SAFETY: valid state; testudata does not raise.
    unsafe { !ffi::luaL_testudata(l, idx, RECEIVER.as_ptr()).is_null() }
}

/// The link of the receiver at `idx`, if it is one.
unsafe fn link_at(l: L, idx: c_int) -> Option<*mut Link> {
    // SAFETY: valid state; a receiver's link is kept by its user value.
    unsafe {
        let e = ffi::luaL_testudata(l, idx, RECEIVER.as_ptr()) as *mut End;
        (!e.is_null()).then(|| (*e).link)
    }
}

/// `[-0, +0, -]` Marks the receivers in the list at `idx` that a receive
/// would not wait on (a value queued, or closed); returns whether any is.
///
/// # Safety
/// `l` is valid with two free slots; `idx` is absolute.
pub unsafe fn select_poll(l: L, idx: c_int) -> bool {
    // SAFETY: raw reads only (nothing raises).
    unsafe {
        let mut any = false;
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
            return false;
        }
        let mut i = 1;
        while ffi::lua_rawgeti(l, idx, i) != ffi::LUA_TNIL {
            if let Some(k) = link_at(l, -1) {
                (*k).sel = !(*k).is_empty() || (*k).closed;
                any |= (*k).sel;
            }
            ffi::lua_pop(l, 1);
            i += 1;
        }
        ffi::lua_pop(l, 1);
        any
    }
}

/// `[-0, +0, -]` Is the value at `idx` a receiver marked by `select_poll`?
///
/// # Safety
/// `l` is a valid state.
pub unsafe fn selected(l: L, idx: c_int) -> bool {
    // SAFETY: as `link_at`.
    unsafe { link_at(l, idx).is_some_and(|k| (*k).sel) }
}

/// `[-0, +0, -]` Attaches the receivers in the list at `idx` to the loop `io`
/// of `p` and adds them to `regs` as sources to wait on for reading. The
/// userdata of `p` is on the top of the stack.
///
/// # Safety
/// `l` is valid with three free slots; `idx` is absolute; `p` is live and
/// `io` is its loop.
pub unsafe fn select_waits(
    l: L,
    idx: c_int,
    p: *mut State,
    io: &mut io::Io,
    regs: &mut Vec<(u64, u32)>,
) -> Result<(), &'static CStr> {
    // SAFETY: raw reads and writes only (nothing raises); the owner's memory
    // is kept by the link's user value 2.
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
            return Ok(());
        }
        let state = ffi::lua_gettop(l);
        let mut i = 1;
        while ffi::lua_rawgeti(l, idx, i) != ffi::LUA_TNIL {
            if let Some(k) = link_at(l, -1) {
                if (*k).owner != p || !io.attached((*k).id) {
                    let old = (*k).owner;
                    if !old.is_null() && !(*old).closed && (*old).io.as_ref().is_some_and(|o| o.busy((*k).id)) {
                        ffi::lua_settop(l, state);
                        return Err(c"channel in use by another scheduler");
                    }
                    if !old.is_null() && !(*old).closed {
                        if let Some(o) = (*old).io.as_mut() {
                            let _ = o.detach((*k).id);
                        }
                    }
                    if (*k).id == 0 {
                        (*k).id = io::new_id();
                    }
                    io.attach_virtual((*k).id);
                    (*k).owner = p;
                    ffi::lua_getiuservalue(l, -1, 1); // receiver link
                    ffi::lua_pushvalue(l, state);
                    ffi::lua_setiuservalue(l, -2, 2);
                    ffi::lua_pop(l, 1);
                }
                regs.push(((*k).id, READ));
            }
            ffi::lua_pop(l, 1);
            i += 1;
        }
        ffi::lua_settop(l, state);
        Ok(())
    }
}

// ===== the module =====

/// `[-0, +1, m]` Pushes the module table, made once per Lua state.
///
/// # Safety
/// `l` is a valid state.
pub unsafe fn push_module(l: L) {
    // SAFETY: valid state.
    unsafe { raw::push_module_once(l, MODULE, |l| make_module(l)) }
}

/// `[-0, +1, m]` Registers the metatables and pushes a new module table.
unsafe fn make_module(l: L) {
    // SAFETY: valid state; pushes are balanced as the comments show.
    unsafe {
        raw::check_stack(l, 6);
        if ffi::luaL_newmetatable(l, LINK.as_ptr()) != 0 {
            ffi::lua_pushcfunction(l, link_gc);
            ffi::lua_setfield(l, -2, c"__gc".as_ptr());
        }
        ffi::lua_pop(l, 1);
        let ends: [(&CStr, &[(&CStr, ffi::lua_CFunction)]); 2] = [
            (SENDER, &[(c"send", send), (c"close", close)]),
            (RECEIVER, &[(c"receive", receive), (c"settimeout", settimeout), (c"close", close)]),
        ];
        for (kind, methods) in ends {
            if ffi::luaL_newmetatable(l, kind.as_ptr()) != 0 {
                ffi::lua_pushcfunction(l, tostring);
                ffi::lua_setfield(l, -2, c"__tostring".as_ptr());
                if kind == RECEIVER {
                    ffi::lua_pushcfunction(l, receiver_gc);
                    ffi::lua_setfield(l, -2, c"__gc".as_ptr());
                }
                raw::push_functions(l, methods);
                ffi::lua_setfield(l, -2, c"__index".as_ptr());
            }
            ffi::lua_pop(l, 1);
        }
        ffi::lua_createtable(l, 0, 1); // module
        ffi::lua_pushcfunction(l, new);
        ffi::lua_setfield(l, -2, c"new".as_ptr());
        ffi::lua_createtable(l, 0, 1); // its metatable: channel() is channel.new()
        ffi::lua_pushcfunction(l, call);
        ffi::lua_setfield(l, -2, c"__call".as_ptr());
        ffi::lua_setmetatable(l, -2);
    }
}

/// `channel()`: `channel.new()` (the module table is the first argument).
unsafe extern "C-unwind" fn call(l: L) -> c_int {
    // SAFETY: a metamethod of the module.
    unsafe {
        ffi::lua_settop(l, 0);
        new(l)
    }
}
