//! `socket.select` and `socket.sleep`, two engine operations: a select
//! waits on every source in its lists at once (sockets, and in the read list
//! any object with a `Selectable` in its metatable, a channel's receiver),
//! a sleep on nothing but its deadline.

use std::ffi::c_int;
use std::os::fd::RawFd;

use super::object::{Tcp, failure, push_deadline, to_sock};
use crate::engine::{self, Frame, Next, Operation, READ, Source, WRITE, Why};
use crate::park::{cothread_of, drive_raw};
use crate::raw::{self, L, ffi};
use crate::sys;

/// An element of a select list.
enum Item {
    Sock(*mut Tcp),
    Other(&'static engine::Selectable, *mut std::ffi::c_void),
}

/// `[-0, +0, -]` The select element at `idx`, if it is one (a socket; in the
/// read list, a selectable object).
unsafe fn item_at(l: L, idx: c_int, read: bool) -> Option<Item> {
    // SAFETY: callers have two free slots (C functions, steps).
    unsafe {
        let t = to_sock(l, idx);
        if !t.is_null() {
            return Some(Item::Sock(t));
        }
        if !read {
            return None;
        }
        engine::selectable_at(l, idx).map(|(s, ud)| Item::Other(s, ud))
    }
}

/// Calls `f` with each element of the list at `idx` (nil: none), and its
/// direction. Raw reads only: nothing raises.
unsafe fn each_item(l: L, idx: c_int, dir: u32, mut f: impl FnMut(Item)) {
    // SAFETY: the lists were checked by `select` to hold only elements; an
    // element stays alive while its list holds it (the frame holds the list).
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
            return;
        }
        let mut i = 1;
        while ffi::lua_rawgeti(l, idx, i) != ffi::LUA_TNIL {
            if let Some(item) = item_at(l, -1, dir == READ) {
                f(item);
            }
            ffi::lua_pop(l, 1);
            i += 1;
        }
        ffi::lua_pop(l, 1);
    }
}

/// `socket.select`. Frame: 1 receivers, 2 senders, 3 timeout, 4 deadline.
#[derive(Clone, Copy)]
struct Select;

impl Operation for Select {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        // SAFETY: the frame `select` built.
        unsafe { select_step(f, why) }
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        // SAFETY: as `step`; the sockets and selectables are live (their
        // lists hold them).
        unsafe {
            for (idx, dir) in [(f.at(1), READ), (f.at(2), WRITE)] {
                each_item(f.l(), idx, dir, |item| match item {
                    Item::Sock(t) if (*t).fd >= 0 => each(&raw mut (*t).src, (*t).fd, dir),
                    Item::Sock(_) => {}
                    Item::Other(s, ud) => each((s.source)(ud), -1, READ),
                });
            }
        }
    }
}

/// `socket.select(recvt, sendt [, timeout])`: the sockets of `recvt` that
/// are readable (or hold buffered data) and those of `sendt` that are
/// writable, as lists that also map each socket to its index; with none
/// ready after `timeout` seconds (nil or negative: no limit),
/// `{}, {}, "timeout"`.
unsafe extern "C-unwind" fn select(l: L) -> c_int {
    // SAFETY: a module function: the lists are checked (raising on a bad
    // element) before the frame is built in the function's own stack.
    unsafe {
        for idx in [1, 2] {
            if ffi::lua_isnoneornil(l, idx) != 0 {
                continue;
            }
            ffi::luaL_checktype(l, idx, ffi::LUA_TTABLE);
            let mut i = 1;
            while ffi::lua_rawgeti(l, idx, i) != ffi::LUA_TNIL {
                if item_at(l, -1, idx == 1).is_none() {
                    let msg = ffi::lua_pushfstring(
                        l,
                        c"socket expected at index %d, got %s".as_ptr(),
                        i as c_int,
                        ffi::luaL_typename(l, -1),
                    );
                    ffi::luaL_argerror(l, idx, msg);
                }
                ffi::lua_pop(l, 1);
                i += 1;
            }
            ffi::lua_pop(l, 1);
        }
        let timeout = if ffi::lua_isnoneornil(l, 3) != 0 { -1.0 } else { ffi::luaL_checknumber(l, 3) };
        ffi::lua_settop(l, 3);
        push_deadline(l, timeout);
        drive_raw(l, Select)
    }
}

/// Marks (`Source::sel`) the elements of the lists that are ready now;
/// returns whether any is.
unsafe fn select_poll(f: &Frame) -> bool {
    // SAFETY: the frame of `Select`; raw reads only, so nothing raises while
    // the vectors live.
    unsafe {
        let mut socks: Vec<(*mut Tcp, u32)> = Vec::new();
        let mut any = false;
        for (idx, dir) in [(f.at(1), READ), (f.at(2), WRITE)] {
            each_item(f.l(), idx, dir, |item| match item {
                Item::Sock(t) => {
                    (*t).src.sel.set(0);
                    if (*t).fd >= 0 {
                        socks.push((t, dir));
                    }
                }
                Item::Other(s, ud) => {
                    let pending = (s.pending)(ud);
                    (*(s.source)(ud)).sel.set(if pending { READ } else { 0 });
                    any |= pending;
                }
            });
        }
        let mut fds: Vec<libc::pollfd> = socks
            .iter()
            .map(|&(t, dir)| sys::pollfd((*t).fd, if dir == READ { sys::POLL_IN } else { sys::POLL_OUT }))
            .collect();
        let _ = sys::poll(&mut fds, 0);
        for (&(t, dir), fd) in socks.iter().zip(&fds) {
            let failed = fd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0;
            let ready = failed || fd.revents & fd.events != 0 || (dir == READ && !(*t).unread().is_empty());
            if ready {
                (*t).src.sel.set((*t).src.sel.get() | dir);
                if dir == READ {
                    (*t).drained = false;
                }
                any = true;
            }
        }
        any
    }
}

/// `[-0, +1, m]` Pushes the list of the elements of the list at `idx`
/// marked for `dir`. It maps each element to its index too (`list[sock] ==
/// i`, as LuaSocket's), through its metatable: `pairs` and `next` see only
/// the list, as with cosock's `select`, whose results programs iterate with
/// `pairs`.
unsafe fn push_selected(f: &Frame, idx: c_int, dir: u32) {
    // SAFETY: the frame of `Select`; the elements stay in their lists.
    // Stack: out, then (once an element is ready) its metatable `map`.
    unsafe {
        let l = f.l();
        raw::check_stack(l, 4);
        ffi::lua_newtable(l);
        let out = ffi::lua_gettop(l);
        let mut n = 0;
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
            return;
        }
        let mut i = 1;
        while ffi::lua_rawgeti(l, idx, i) != ffi::LUA_TNIL {
            let ready = match item_at(l, -1, dir == READ) {
                Some(Item::Sock(t)) => (*t).fd >= 0 && (*t).src.sel.get() & dir != 0,
                Some(Item::Other(s, ud)) => (*(s.source)(ud)).sel.get() & dir != 0,
                None => false,
            };
            if ready {
                if n == 0 {
                    ffi::lua_createtable(l, 0, 2); // out sock map
                    ffi::lua_pushvalue(l, -1);
                    ffi::lua_setfield(l, -2, c"__index".as_ptr()); // map.__index = map
                    ffi::lua_rotate(l, -2, 1); // out map sock
                }
                n += 1;
                ffi::lua_pushvalue(l, -1);
                ffi::lua_rawseti(l, out, n);
                ffi::lua_pushinteger(l, n);
                ffi::lua_rawset(l, out + 1); // map[sock] = n
            } else {
                ffi::lua_pop(l, 1);
            }
            i += 1;
        }
        ffi::lua_pop(l, 1);
        if n > 0 {
            ffi::lua_setmetatable(l, out);
        }
    }
}

unsafe fn select_step(f: &mut Frame, why: Why) -> Next {
    // SAFETY: the frame of `Select`.
    unsafe {
        // A socket of the lists closed: the others may still be ready.
        let msg = if why == Why::Closed { None } else { failure(why) };
        if msg.is_none() && select_poll(f) {
            push_selected(f, f.at(1), READ);
            push_selected(f, f.at(2), WRITE);
            return Next::Done(2);
        }
        let msg = match msg {
            Some(m) => m,
            None => {
                let d = (ffi::lua_type(f.l(), f.at(4)) == ffi::LUA_TNUMBER)
                    .then(|| ffi::lua_tointegerx(f.l(), f.at(4), std::ptr::null_mut()) as u64);
                match d {
                    Some(d) if d <= cothread::time::monotonic_ns() => c"timeout",
                    d => return Next::Wait(d),
                }
            }
        };
        ffi::lua_newtable(f.l());
        ffi::lua_newtable(f.l());
        ffi::lua_pushstring(f.l(), msg.as_ptr());
        Next::Done(3)
    }
}

/// `socket.sleep`. Frame: 1 seconds, 2 deadline.
#[derive(Clone, Copy)]
struct Sleep;

impl Operation for Sleep {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        // SAFETY: the frame `sleep` built (slot 2: the deadline, an integer).
        unsafe {
            match why {
                Why::Start => Next::Wait(Some(ffi::lua_tointegerx(f.l(), f.at(2), std::ptr::null_mut()) as u64)),
                _ => Next::Done(0),
            }
        }
    }
}

/// `socket.sleep(seconds)`: suspends the calling cothread (blocks outside
/// cothreads) for `seconds`. `seconds <= 0` in a cothread yields once
/// through the event loop (cosock's `sleep(0)`).
unsafe extern "C-unwind" fn sleep(l: L) -> c_int {
    // SAFETY: a module function; the frame is built in its own stack.
    unsafe {
        let s = ffi::luaL_checknumber(l, 1);
        ffi::lua_settop(l, 1);
        if s.is_nan() || (s <= 0.0 && cothread_of(l).is_none()) {
            return 0;
        }
        push_deadline(l, s.max(0.0));
        drive_raw(l, Sleep)
    }
}

/// `select` and `sleep`.
pub(super) const FUNCTIONS: &[raw::Reg] = &[(c"select", select), (c"sleep", sleep)];
