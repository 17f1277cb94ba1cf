//! `socket.select` and `socket.sleep`, two engine operations: a select
//! waits on every source in its lists at once (sockets, and any object with
//! a `Selectable` in its metatable: a channel's receiver in the read list, a
//! TLS connection in both), a sleep on nothing but its deadline.

use std::ffi::c_int;
use std::os::fd::RawFd;

use super::object::{Sock, failure, push_deadline, to_sock};
use crate::cfn;
use crate::engine::{self, Frame, Next, Operation, READ, Source, WRITE, Why};
use crate::lua::{Error, Lua, Reg, Ret, Type, lua_Integer};
use crate::park::{drive, in_cothread};
use crate::sys;

/// An element of a select list.
#[derive(Clone, Copy)]
enum Item<'a> {
    Sock(&'a Sock),
    /// A selectable object: its source, its descriptor (-1: none), and
    /// whether a read would take something now.
    Other {
        src: &'a Source,
        fd: RawFd,
        pending: bool,
    },
}

/// `[-0, +0, -]` The select element at `idx`, if it is one (a socket, a
/// selectable object; in the write list only one that can be written).
fn item_at(lua: &Lua, idx: c_int, read: bool) -> Option<Item<'_>> {
    if let Some(s) = to_sock(lua, idx) {
        return Some(Item::Sock(s));
    }
    let sel = engine::selectable_at(lua, idx).filter(|sel| read || sel.write)?;
    let src = (sel.source)(lua, idx)?;
    Some(Item::Other { src, fd: (sel.fd)(lua, idx), pending: read && (sel.pending)(lua, idx) })
}

/// Calls `f` with each element of the list at `idx` (not a table: none),
/// in order, for direction `dir`. Raw reads only: nothing raises.
fn each_item(lua: &Lua, idx: c_int, dir: u32, mut f: impl FnMut(Item<'_>)) {
    if lua.kind(idx) != Type::Table {
        return;
    }
    let mut i = 1;
    while lua.with_index(idx, i, |lua, ty| {
        if ty == Type::Nil {
            return false;
        }
        if let Some(item) = item_at(lua, -1, dir == READ) {
            f(item);
        }
        true
    }) {
        i += 1;
    }
}

/// Every element of the list at argument `idx` is one, or the error.
fn check_list(lua: &Lua, idx: c_int) -> Result<(), Error> {
    let mut i = 1;
    loop {
        let more = lua.with_index(idx, i, |lua, ty| {
            if ty == Type::Nil {
                return Ok(false);
            }
            if item_at(lua, -1, idx == 1).is_none() {
                let got = lua.kind(-1).name().to_string_lossy();
                return Err(Error::arg_owned(idx, format!("socket expected at index {i}, got {got}")));
            }
            Ok(true)
        })?;
        if !more {
            return Ok(());
        }
        i += 1;
    }
}

/// `socket.select`. Frame: 1 receivers, 2 senders, 3 timeout, 4 deadline.
#[derive(Clone, Copy)]
struct Select;

impl Operation for Select {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        select_step(f, why)
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(&Source, RawFd, u32)) {
        for (idx, dir) in [(f.at(1), READ), (f.at(2), WRITE)] {
            each_item(&f.lua, idx, dir, |item| match item {
                Item::Sock(s) if s.fd.get() >= 0 => each(s.source(), s.fd.get(), dir),
                Item::Sock(_) => {}
                // No descriptor: a channel, which only its sends ready.
                Item::Other { src, fd, .. } if fd < 0 => {
                    if dir == READ {
                        each(src, -1, READ)
                    }
                }
                Item::Other { src, fd, .. } => each(src, fd, dir),
            });
        }
    }
}

cfn!(select = select_body);

/// `socket.select(recvt, sendt [, timeout])`: the sockets of `recvt` that
/// are readable (or hold buffered data) and those of `sendt` that are
/// writable, as lists that also map each socket to its index; with none
/// ready after `timeout` seconds (nil or negative: no limit),
/// `{}, {}, "timeout"`.
fn select_body(lua: &mut Lua) -> Ret {
    for idx in [1, 2] {
        if !lua.is_nil(idx) {
            lua.check_type(idx, Type::Table)?;
            check_list(lua, idx)?;
        }
    }
    let timeout = lua.opt_num(3, -1.0)?;
    lua.set_top(3);
    push_deadline(lua, timeout);
    drive(lua, Select)
}

/// The lists of a select's frame, with their directions.
fn lists(f: &Frame) -> [(c_int, u32); 2] {
    [(f.at(1), READ), (f.at(2), WRITE)]
}

/// Marks (`Source::sel`) the elements of the lists that are ready now;
/// returns whether any is. Two passes over the lists: the first clears the
/// marks and gathers the sockets' descriptors, `poll(2)` runs between, and
/// the second, over the same elements in the same order, marks them.
fn select_poll(f: &Frame) -> bool {
    let mut fds: Vec<libc::pollfd> = Vec::new();
    let mut any = false;
    for (idx, dir) in lists(f) {
        each_item(&f.lua, idx, dir, |item| match item {
            Item::Sock(s) => {
                s.src.sel.set(0);
                if s.fd.get() >= 0 {
                    fds.push(sys::pollfd(s.fd.get(), if dir == READ { sys::POLL_IN } else { sys::POLL_OUT }));
                }
            }
            Item::Other { src, fd, pending } => {
                // The read list comes first: its mark stays for the write list's.
                src.sel.set(if pending {
                    READ
                } else if dir == READ {
                    0
                } else {
                    src.sel.get() & READ
                });
                any |= pending;
                if fd >= 0 {
                    fds.push(sys::pollfd(fd, if dir == READ { sys::POLL_IN } else { sys::POLL_OUT }));
                }
            }
        });
    }
    let _ = sys::poll(&mut fds, 0);
    let mut polled = fds.iter();
    for (idx, dir) in lists(f) {
        each_item(&f.lua, idx, dir, |item| {
            let (src, fd, buffered) = match item {
                Item::Sock(s) => (&s.src, s.fd.get(), dir == READ && s.unread_len() > 0),
                Item::Other { src, fd, .. } => (src, fd, false),
            };
            if fd < 0 {
                return; // not polled
            }
            let Some(p) = polled.next() else { return };
            let failed = p.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0;
            if failed || p.revents & p.events != 0 || buffered {
                src.sel.set(src.sel.get() | dir);
                if let (Item::Sock(s), READ) = (item, dir) {
                    s.drained.set(false);
                }
                any = true;
            }
        });
    }
    any
}

/// `[-0, +1, m]` Pushes the list of the elements of the list at `idx`
/// marked for `dir`. It maps each element to its index too (`list[sock] ==
/// i`, as LuaSocket's), through its metatable: `pairs` and `next` see only
/// the list, as with cosock's `select`, whose results programs iterate with
/// `pairs`.
fn push_selected(lua: &mut Lua, idx: c_int, dir: u32) {
    lua.new_table(0, 0);
    let out = lua.top();
    if lua.kind(idx) != Type::Table {
        return;
    }
    let mut n: lua_Integer = 0;
    let mut i = 1;
    // Stack: out, then (once an element is ready) its metatable `map`.
    while lua.get_index(idx, i) != Type::Nil {
        let ready = match item_at(lua, -1, dir == READ) {
            Some(Item::Sock(s)) => s.fd.get() >= 0 && s.src.sel.get() & dir != 0,
            Some(Item::Other { src, .. }) => src.sel.get() & dir != 0,
            None => false,
        };
        if ready {
            if n == 0 {
                lua.new_table(0, 2); // out sock map
                lua.push_value(-1);
                lua.set_field(-2, c"__index"); // map.__index = map
                lua.insert(-2); // out map sock
            }
            n += 1;
            lua.push_value(-1);
            lua.set_index(out, n);
            lua.push_int(n);
            lua.set_table(out + 1); // map[sock] = n
        } else {
            lua.pop(1);
        }
        i += 1;
    }
    lua.pop(1);
    if n > 0 {
        lua.set_metatable_top(out);
    }
}

fn select_step(f: &mut Frame, why: Why) -> Next {
    // A socket of the lists closed while it waited: the select ends, with
    // the others that are ready, else with "closed" (doc/lua.md: a wait on
    // a socket another cothread closes ends).
    let closed = why == Why::Closed;
    let msg = if closed { None } else { failure(why) };
    if msg.is_none() && select_poll(f) {
        let [(r, _), (w, _)] = lists(f);
        push_selected(&mut f.lua, r, READ);
        push_selected(&mut f.lua, w, WRITE);
        return Next::Done(2);
    }
    let msg = match msg {
        Some(m) => m,
        None if closed => c"closed",
        None => match f.lua.to_int(f.at(4)).map(|d| d as u64) {
            Some(d) if d <= cothread::time::monotonic_ns() => c"timeout",
            d => return Next::Wait(d),
        },
    };
    f.lua.new_table(0, 0);
    f.lua.new_table(0, 0);
    f.lua.push_bytes(msg.to_bytes());
    Next::Done(3)
}

/// `socket.sleep`. Frame: 1 seconds, 2 deadline.
#[derive(Clone, Copy)]
struct Sleep;

impl Operation for Sleep {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        match why {
            Why::Start => Next::Wait(Some(f.lua.to_int(f.at(2)).unwrap_or(0) as u64)),
            _ => Next::Done(0),
        }
    }
}

cfn!(sleep = sleep_body);

/// `socket.sleep(seconds)`: suspends the calling cothread (blocks outside
/// cothreads) for `seconds`. `seconds <= 0` in a cothread yields once
/// through the event loop (cosock's `sleep(0)`).
fn sleep_body(lua: &mut Lua) -> Ret {
    let s = lua.check_num(1)?;
    lua.set_top(1);
    if s.is_nan() || (s <= 0.0 && !in_cothread(lua)) {
        return Ok(0);
    }
    push_deadline(lua, s.max(0.0));
    drive(lua, Sleep)
}

/// `select` and `sleep`.
pub(super) const FUNCTIONS: &[Reg] = &[(c"select", select), (c"sleep", sleep)];
