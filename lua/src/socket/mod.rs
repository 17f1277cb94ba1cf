//! `cothread.socket`: LuaSocket's TCP and UDP surface on the waiting engine.
//!
//! Sockets are full userdata (`Tcp`) holding a non-blocking descriptor,
//! LuaSocket's timeouts, a read buffer and the engine's `Source`. As in
//! LuaSocket, each class has its own metatable (registry `cothread.tcp{master}`,
//! ...), whose `__index` holds the protocol's methods and the field `class`
//! (`"tcp{master}"`, ...): a change of class (`listen`, `connect`,
//! `setpeername`) changes the object's metatable (`set_kind`).
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

use object::{Kind, MARK, tcp_close, tcp_gc, tcp_tostring};

use crate::raw::{self, L, ffi};
use crate::sys;

/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.socket";

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
        raw::metatable_once(l, kind.registry(), |l| {
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
        });
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
