//! `cothread.channel`: cosock's channels, unbounded queues from any number of
//! senders to one receiver.
//!
//! `channel.new()` makes a *link* (`Rc<Link>`) shared by its two ends, a
//! `Sender` and a `Receiver` (userdata). Both ends hold the queue, a table
//! (their user value 1, indices `head` to `tail - 1`, so nil is a value like
//! any other); the link is freed with the last end.
//!
//! A receive that finds the queue empty is an engine operation (`Receive`)
//! waiting on the link's `Source`, which has no descriptor: `send` and
//! `close` step its waiters at once (`engine::fire`). So a receive suspends
//! only its cothread, and a cothread that leaves its wait (unscheduled,
//! timed out) is taken off the link at once: a later send resumes nobody.
//! A receiver's metatable holds a `Selectable`, so it mixes with sockets in
//! `socket.select` (which knows nothing else of channels).

use std::cell::Cell;
use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;
use std::rc::Rc;

use crate::cfn;
use crate::engine::{self, Frame, Next, Operation, READ, Selectable, Source, SourceKind, Why};
use crate::lua::{Error, Lua, Ret, Udata, lua_Integer};
use crate::park::{drive, in_cothread};

/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.channel.module";

/// What both ends share.
struct Link {
    /// Index of the next value to receive, and of the next value sent.
    head: Cell<lua_Integer>,
    tail: Cell<lua_Integer>,
    closed: Cell<bool>,
    /// Its side in the waiting engine (receives wait on it).
    src: Source,
}

impl Link {
    fn is_empty(&self) -> bool {
        self.head.get() >= self.tail.get()
    }

    /// A value came, or the link closed: its waiting receives become due.
    fn wake(&self) {
        self.src.fire();
    }

    /// Closes the link: sends fail from now on; a waiting receive sees it.
    fn close(&self) {
        if !self.closed.replace(true) {
            self.wake();
        }
    }
}

impl Drop for Link {
    /// The last end went: the link leaves the engine it is attached to
    /// (nothing waits on it: a receive holds its receiver).
    fn drop(&mut self) {
        self.src.detach();
    }
}

struct Sender {
    link: Rc<Link>,
}

// SAFETY: c"cothread.sender" names only this type (no other `Udata`, no registry field).
unsafe impl Udata for Sender {
    const NAME: &'static CStr = c"cothread.sender";
}

struct Receiver {
    link: Rc<Link>,
    /// The timeout of each receive, seconds (negative: none).
    timeout: Cell<f64>,
}

// SAFETY: c"cothread.receiver" names only this type (no other `Udata`, no registry field).
unsafe impl Udata for Receiver {
    const NAME: &'static CStr = c"cothread.receiver";
}

impl Drop for Receiver {
    /// Nobody can receive any more, so sends fail.
    fn drop(&mut self) {
        self.link.closed.set(true);
    }
}

/// The link of the end at `arg`, a sender (or either end if `either`).
/// Borrowed, not shared: a reference count held while Lua allocates would
/// leak if a memory error longjmped past it.
fn link_of(lua: &Lua, arg: c_int, either: bool) -> Result<&Link, Error> {
    if let Some(r) = either.then(|| lua.test_udata::<Receiver>(arg)).flatten() {
        return Ok(&r.link);
    }
    Ok(&lua.udata::<Sender>(arg)?.link)
}

cfn!(new = new_body);

/// `channel.new()`, also `channel()`: a sender and its receiver.
fn new_body(lua: &mut Lua) -> Ret {
    let link = Link {
        head: Cell::new(1),
        tail: Cell::new(1),
        closed: Cell::new(false),
        src: Source::new(SourceKind::Channel),
    };
    lua.new_table(0, 0); // queue
    // The link is Lua's (in the sender) before it is shared: no reference
    // of ours is held while Lua allocates.
    let link = lua.new_udata(Sender { link: Rc::new(link) }, 1).link.clone();
    lua.push_value(-2);
    lua.set_uservalue(-2, 1); // queue sender
    lua.new_udata(Receiver { link, timeout: Cell::new(-1.0) }, 1);
    lua.push_value(-3);
    lua.set_uservalue(-2, 1); // queue sender receiver
    Ok(2)
}

cfn!(send = send_body);

/// `sender:send(value)`: queues `value` (nil too); `true`, or `false,
/// "closed"` once the channel is closed.
fn send_body(lua: &mut Lua) -> Ret {
    let (closed, tail) = link_of(lua, 1, false).map(|k| (k.closed.get(), k.tail.get()))?;
    lua.set_top(2);
    if closed {
        return Ok(lua.fail_false(c"closed"));
    }
    lua.get_uservalue(1, 1); // value queue
    lua.push_value(2);
    lua.set_index(-2, tail);
    let link = link_of(lua, 1, false)?;
    link.tail.set(tail + 1);
    link.wake();
    lua.push_bool(true);
    Ok(1)
}

cfn!(close = close_body);

/// `end:close()`: closes the channel (from either end). A waiting receive
/// returns what is queued, then `nil, "closed"`.
fn close_body(lua: &mut Lua) -> Ret {
    link_of(lua, 1, true)?.close();
    lua.push_int(1);
    Ok(1)
}

cfn!(tostring = tostring_body);

/// `__tostring` of both ends: `channel.sender: 0x...`.
fn tostring_body(lua: &mut Lua) -> Ret {
    let name = if lua.test_udata::<Receiver>(1).is_some() { "receiver" } else { "sender" };
    link_of(lua, 1, true)?;
    lua.push_owned(format!("channel.{name}: {:p}", lua.to_pointer(1)));
    Ok(1)
}

cfn!(settimeout = settimeout_body);

/// `receiver:settimeout(seconds)`: limits each `receive` (nil or negative:
/// no limit, the default).
fn settimeout_body(lua: &mut Lua) -> Ret {
    let r = lua.udata::<Receiver>(1)?;
    let v = if lua.is_nil(2) { -1.0 } else { lua.check_num(2)? };
    r.timeout.set(if v.is_nan() { -1.0 } else { v });
    lua.push_int(1);
    Ok(1)
}

/// `receiver:receive`. Frame: 1 receiver, 2 deadline (ns) or nil.
#[derive(Clone, Copy)]
struct Receive;

impl Operation for Receive {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        let (rx, deadline) = (f.at(1), f.at(2));
        let lua = &mut f.lua;
        if let Why::Cancelled | Why::Failed(_) = why {
            let m = if let Why::Failed(m) = why { m } else { c"cancelled" };
            return Next::Done(lua.fail(m));
        }
        // The link is read in its receiver, never shared (see `link_of`);
        // the value at `head` is taken off it first: reading and clearing
        // a queue slot that exists allocates nothing.
        let Some((empty, closed, head)) = lua.test_udata::<Receiver>(rx).map(|r| {
            let (empty, closed, head) = (r.link.is_empty(), r.link.closed.get(), r.link.head.get());
            if !empty {
                r.link.head.set(head + 1);
                if r.link.is_empty() {
                    r.link.head.set(1);
                    r.link.tail.set(1);
                }
            }
            (empty, closed, head)
        }) else {
            return Next::Done(lua.fail(c"closed")); // `receive` checked it: unreachable
        };
        if !empty {
            lua.get_uservalue(rx, 1); // queue
            lua.get_index(-1, head); // queue value
            lua.push_nil();
            lua.set_index(-3, head);
            return Next::Done(1);
        }
        if closed {
            return Next::Done(lua.fail(c"closed"));
        }
        match lua.to_int(deadline).map(|d| d as u64) {
            Some(d) if why == Why::Timeout || d <= cothread::time::monotonic_ns() => Next::Done(lua.fail(c"timeout")),
            d => Next::Wait(d),
        }
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(&Source, RawFd, u32)) {
        if let Some(r) = f.lua.test_udata::<Receiver>(f.at(1)) {
            each(&r.link.src, -1, READ);
        }
    }
}

cfn!(receive = receive_body);

/// `receiver:receive()`: the next value, waiting for one (suspending the
/// calling cothread) until the receiver's timeout: `nil, "timeout"`; on a
/// closed channel with nothing queued, `nil, "closed"`.
fn receive_body(lua: &mut Lua) -> Ret {
    let r = lua.udata::<Receiver>(1)?;
    let (timeout, waits) = (r.timeout.get(), r.link.is_empty() && !r.link.closed.get());
    lua.set_top(1);
    if timeout >= 0.0 {
        lua.push_int(engine::deadline_in(engine::ns_of(timeout)) as lua_Integer);
    } else {
        if waits && !in_cothread(lua) {
            return Err(Error::msg(c"receive on an empty channel would wait forever outside a cothread"));
        }
        lua.push_nil();
    }
    drive(lua, Receive)
}

// ===== select =====

/// The source of the receiver at `idx`.
fn receiver_source(lua: &Lua, idx: c_int) -> Option<&Source> {
    lua.test_udata::<Receiver>(idx).map(|r| &r.link.src)
}

/// Would a receive on the receiver at `idx` take something without waiting?
fn receiver_pending(lua: &Lua, idx: c_int) -> bool {
    lua.test_udata::<Receiver>(idx).is_some_and(|r| !r.link.is_empty() || r.link.closed.get())
}

/// What `socket.select` needs of a receiver.
static RECEIVER_SELECT: Selectable =
    Selectable { source: receiver_source, fd: |_, _| -1, pending: receiver_pending, write: false };

// ===== the module =====

/// `[-0, +1, m]` Pushes the module table, made once per Lua state.
pub fn push_module(lua: &mut Lua) -> Result<(), Error> {
    lua.push_once(MODULE, make_module)
}

/// `[-0, +1, m]` Registers the metatables and pushes a new module table.
fn make_module(lua: &mut Lua) -> Result<(), Error> {
    lua.udata_metatable::<Sender>(|lua| {
        add_methods(lua, &[(c"send", send), (c"close", close)]);
        Ok(())
    })?;
    lua.pop(1);
    lua.udata_metatable::<Receiver>(|lua| {
        add_methods(lua, &[(c"receive", receive), (c"settimeout", settimeout), (c"close", close)]);
        engine::make_selectable(lua, &RECEIVER_SELECT);
        Ok(())
    })?;
    lua.pop(1);
    lua.new_table(0, 1); // module
    lua.push_fn(new);
    lua.set_field(-2, c"new");
    lua.new_table(0, 1); // its metatable: channel() is channel.new()
    lua.push_fn(call);
    lua.set_field(-2, c"__call");
    lua.set_metatable_top(-2);
    Ok(())
}

/// Sets `__tostring` and the `__index` table of `methods` on the metatable
/// on the top.
fn add_methods(lua: &mut Lua, methods: &[crate::lua::Reg]) {
    lua.push_fn(tostring);
    lua.set_field(-2, c"__tostring");
    lua.push_functions(methods);
    lua.set_field(-2, c"__index");
}

cfn!(call = call_body);

/// `channel()`: `channel.new()` (the module table is the first argument).
fn call_body(lua: &mut Lua) -> Ret {
    lua.set_top(0);
    new_body(lua)
}
