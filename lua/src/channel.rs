//! `cothread.channel`: cosock's channels, unbounded queues from any number of
//! senders to one receiver.
//!
//! `channel.new()` makes a *link* (full userdata `Link`, metatable
//! `cothread.channel`) and its two ends (`End`, metatables `cothread.sender`
//! and `cothread.receiver`), each holding the link as user value 1. The link
//! holds the queued values in a table (its user value 1, indices `head` to
//! `tail - 1`, so nil is a value like any other).
//!
//! A receive that finds the queue empty is an engine operation (`Receive`)
//! waiting on the link's `Source`, which has no descriptor: `send` and
//! `close` step its waiters at once (`engine::fire`). So a receive suspends
//! only its cothread, and a cothread that leaves its wait (unscheduled,
//! timed out) is taken off the link at once: a later send resumes nobody.
//! A receiver's metatable holds a `Selectable`, so it mixes with sockets in
//! `socket.select` (which knows nothing else of channels).

use std::ffi::{CStr, c_int, c_void};
use std::os::fd::RawFd;

use crate::engine::{self, Frame, Next, Operation, READ, SELECTABLE, Selectable, Source, SourceKind, Why};
use crate::park::{cothread_of, drive};
use crate::raw::{self, L, ffi};

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
    /// Its side in the waiting engine (receives wait on it).
    src: Source,
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
    // SAFETY: the block is fresh, sized and aligned for a `Link` (Lua aligns
    // userdata for any C type); it has no destructor (`__gc` only detaches
    // its source).
    unsafe {
        let k = ffi::lua_newuserdatauv(l, std::mem::size_of::<Link>(), 1) as *mut Link;
        k.write(Link { head: 1, tail: 1, closed: false, src: Source::new(SourceKind::Channel) });
        ffi::lua_newtable(l);
        ffi::lua_setiuservalue(l, -2, 1);
        ffi::luaL_setmetatable(l, LINK.as_ptr());
        k
    }
}

/// A value came to `k`, or it closed: its waiting receives become due.
unsafe fn wake(k: *mut Link) {
    // SAFETY: `k` is live (its caller holds an end, which holds the link).
    unsafe { engine::fire(&raw mut (*k).src) }
}

/// Closes `k`: sends fail from now on; a waiting receive sees the close.
unsafe fn close_link(k: *mut Link) {
    // SAFETY: `k` is live (as `wake`).
    unsafe {
        if !(*k).closed {
            (*k).closed = true;
            wake(k);
        }
    }
}

/// `__gc` of a link: leaves the engine it is attached to.
unsafe extern "C-unwind" fn link_gc(l: L) -> c_int {
    // SAFETY: Lua calls this once with a `Link` userdata (its metatable's
    // `__gc`); nothing waits on a link being collected (a receive holds its
    // receiver, which holds the link).
    unsafe {
        let k = ffi::lua_touserdata(l, 1) as *mut Link;
        if !k.is_null() {
            engine::detach(&raw mut (*k).src);
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

/// `receiver:receive`. Frame: 1 receiver, 2 deadline (ns) or nil.
#[derive(Clone, Copy)]
struct Receive;

impl Operation for Receive {
    unsafe fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        // SAFETY: the frame `receive` built; the receiver holds its link.
        unsafe {
            let l = f.l;
            if let Why::Cancelled | Why::Failed(_) = why {
                let m = if let Why::Failed(m) = why { m } else { c"cancelled" };
                return Next::Done(raw::push_fail(l, m));
            }
            let k = (*(ffi::lua_touserdata(l, f.at(1)) as *mut End)).link;
            if !(*k).is_empty() {
                ffi::lua_getiuservalue(l, f.at(1), 1);
                ffi::lua_getiuservalue(l, -1, 1); // link queue
                ffi::lua_rawgeti(l, -1, (*k).head); // link queue value
                ffi::lua_pushnil(l);
                ffi::lua_rawseti(l, -3, (*k).head);
                (*k).head += 1;
                if (*k).is_empty() {
                    (*k).head = 1;
                    (*k).tail = 1;
                }
                return Next::Done(1);
            }
            if (*k).closed {
                return Next::Done(raw::push_fail(l, c"closed"));
            }
            let deadline = (ffi::lua_type(l, f.at(2)) == ffi::LUA_TNUMBER)
                .then(|| ffi::lua_tointegerx(l, f.at(2), std::ptr::null_mut()) as u64);
            match deadline {
                Some(d) if why == Why::Timeout || d <= cothread::time::monotonic_ns() => {
                    Next::Done(raw::push_fail(l, c"timeout"))
                }
                d => Next::Wait(d),
            }
        }
    }

    unsafe fn sources(&self, f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        // SAFETY: as `step`.
        unsafe { each(receiver_source(ffi::lua_touserdata(f.l, f.at(1))), -1, READ) }
    }
}

/// `receiver:receive()`: the next value, waiting for one (suspending the
/// calling cothread) until the receiver's timeout: `nil, "timeout"`; on a
/// closed channel with nothing queued, `nil, "closed"`.
unsafe extern "C-unwind" fn receive(l: L) -> c_int {
    // SAFETY: `check_end` returns a live receiver or raises; the frame is
    // built in the function's own stack.
    unsafe {
        let (e, k) = check_end(l, 1, RECEIVER);
        ffi::lua_settop(l, 1);
        let timeout = (*e).timeout;
        if timeout >= 0.0 {
            ffi::lua_pushinteger(l, engine::deadline_in(engine::ns_of(timeout)) as ffi::lua_Integer);
        } else {
            if (*k).is_empty() && !(*k).closed && cothread_of(l).is_none() {
                raw::error(l, c"receive on an empty channel would wait forever outside a cothread");
            }
            ffi::lua_pushnil(l);
        }
        drive(l, Receive)
    }
}

// ===== select =====

/// The source of the receiver whose block is `ud`.
unsafe fn receiver_source(ud: *mut c_void) -> *mut Source {
    // SAFETY: `ud` is a receiver's `End` (its metatable says so), whose link
    // its user value keeps alive.
    unsafe { &raw mut (*(*(ud as *mut End)).link).src }
}

/// Would a receive on the receiver `ud` take something without waiting?
unsafe fn receiver_pending(ud: *mut c_void) -> bool {
    // SAFETY: as `receiver_source`.
    unsafe {
        let k = (*(ud as *mut End)).link;
        !(*k).is_empty() || (*k).closed
    }
}

/// What `socket.select` needs of a receiver.
static RECEIVER_SELECT: Selectable = Selectable { source: receiver_source, pending: receiver_pending };

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
                    ffi::lua_pushlightuserdata(l, (&raw const RECEIVER_SELECT).cast_mut().cast());
                    ffi::lua_rawsetp(l, -2, (&raw const SELECTABLE).cast());
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
