//! `cothread.socket`: LuaSocket's TCP and UDP surface on the waiting engine.
//!
//! Sockets are full userdata (`Sock`) holding a non-blocking descriptor,
//! LuaSocket's timeouts, a read buffer and the engine's `Source`. As in
//! LuaSocket, each class has its own metatable (registry `cothread.tcp{master}`,
//! ...), whose `__index` holds the protocol's methods and the field `class`
//! (`"tcp{master}"`, ...): a change of class (`listen`, `connect`,
//! `setpeername`) changes the object's metatable (`set_kind`). The classes
//! are the layer's (`Udata::CLASSES`), which checks that an object is a
//! `Sock` under any of them.
//!
//! Files: this one (the module table, its classes), `object` (the socket
//! object: kinds, checks, closing, timeouts), `methods` (what never waits:
//! options, names, timeouts, constructors), `tcp` (receive, send, accept,
//! connect), `select` (`select`, `sleep`), `udp`, `options`, `protect`.
//! Each call that may wait is an engine operation (`park::drive`): in a
//! cothread it parks the cothread on its scheduler's engine; anywhere else
//! (the main chunk, a plain coroutine, a metamethod) it blocks the caller
//! in `poll(2)`, as LuaSocket does.
//!
//! Failures follow LuaSocket: misuse raises (`bad argument`), failed I/O
//! returns `nil, message` (`"timeout"`, `"closed"`, an `errno` text), with the
//! partial data or the last byte sent as third result where LuaSocket gives
//! one. A wait the cothread left (unscheduled, then scheduled again) gives
//! `"cancelled"`.

use std::ffi::CStr;

mod methods;
mod object;
mod options;
mod protect;
mod select;
mod tcp;
mod udp;

use object::{Kind, Sock, close, tostring};

use crate::lua::{Error, Lua, Reg, lua_Integer};
use crate::sys;

/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.socket";

/// `[-0, +1, m]` Pushes the module table, made once per Lua state.
pub fn push_module(lua: &mut Lua) -> Result<(), Error> {
    lua.push_once(MODULE, make_module)
}

/// `[-0, +0, m]` Registers the metatable of class `kind` (once per Lua
/// state): its metamethods, and an `__index` with the protocol's `methods`
/// and `class`.
fn new_class(lua: &mut Lua, kind: Kind, methods: &[&[Reg]]) {
    let made = lua.udata_class::<Sock>(kind.class(), |lua| {
        lua.push_fn(close);
        lua.set_field(-2, c"__close");
        lua.push_fn(tostring);
        lua.set_field(-2, c"__tostring");
        lua.new_table(0, 32); // mt index
        for (name, f) in methods.iter().flat_map(|m| m.iter()) {
            lua.push_fn(*f);
            lua.set_field(-2, name);
        }
        lua.push_bytes(kind.name().to_bytes());
        lua.set_field(-2, c"class");
        lua.set_field(-2, c"__index");
        Ok(())
    });
    // The filling never fails (a memory error raises): the table is pushed.
    if made.is_ok() {
        lua.pop(1);
    }
}

/// LuaSocket's helpers written in Lua (`helpers.lua`, embedded).
const HELPERS: &str = include_str!("helpers.lua");

/// `[-0, +0, e]` Runs the helpers' chunk with the module table on the top.
fn add_helpers(lua: &mut Lua) -> Result<(), Error> {
    lua.load(HELPERS, c"=cothread.socket")?;
    lua.push_value(-2); // M chunk M
    lua.call(1, 0)
}

/// `[-0, +1, m]` Registers the metatables and pushes a new module table.
fn make_module(lua: &mut Lua) -> Result<(), Error> {
    for kind in [Kind::Master, Kind::Client, Kind::Server] {
        new_class(lua, kind, &[methods::METHODS, tcp::METHODS]);
    }
    for kind in [Kind::Unconnected, Kind::Connected] {
        new_class(lua, kind, &[udp::METHODS]);
    }
    let functions = [methods::FUNCTIONS, tcp::FUNCTIONS, select::FUNCTIONS, udp::FUNCTIONS];
    lua.new_table(0, 32);
    for (name, f) in functions.iter().flat_map(|f| f.iter()) {
        lua.push_fn(*f);
        lua.set_field(-2, name);
    }
    // LuaSocket's constants: select takes any descriptor this process
    // may have (epoll and poll(2), no FD_SETSIZE); an invalid descriptor
    // is -1; receive and receivefrom take 8192 bytes by default.
    for (name, v) in
        [(c"_SETSIZE", sys::max_descriptors()), (c"_SOCKETINVALID", -1), (c"_DATAGRAMSIZE", udp::DEFAULT_SIZE)]
    {
        lua.push_int(v as lua_Integer);
        lua.set_field(-2, name);
    }
    protect::add_functions(lua)?;
    add_helpers(lua)?;
    crate::dns::push(lua);
    lua.set_field(-2, c"dns");
    lua.push_owned(format!("cothread.socket {}", cothread::VERSION));
    lua.set_field(-2, c"_VERSION");
    Ok(())
}
