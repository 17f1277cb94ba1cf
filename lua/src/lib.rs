//! The Lua 5.4 module `cothread`: cooperative threads on the cothread core.
//!
//! `require "cothread"` returns a scheduler table; `cothread.new()` makes more.
//! The API is documented in doc/lua.md. The module is written against the Lua
//! C API (`mlua::ffi`), like Lua's own `lcorolib.c`, for two reasons: resuming
//! is the hot path (a loop over `lua_resume` in Rust beats a Lua loop over
//! `coroutine.resume`), and errors must keep Lua's semantics exactly (an error
//! object crosses `step`/`run` unchanged; misuse raises `bad argument`), which
//! a conversion into Rust errors would not.
//!
//! Files, by layer (each names only files before it: no import circle, as
//! `tests/layers` checks): `lua` (a safe handle over the C API) and `raw`
//! (helpers over it); `buffer`, `reader` (read buffers and io's formats),
//! `sys` (the socket system calls) and `builtin` (the built-in operation
//! names); `engine` (the waiting engine: every call that may wait is an
//! operation it drives to its end); the
//! scheduler face: `state` (an instance), `signal` (signal values and
//! combined signals), `time` (`time`, `idle`), `registry` (registered
//! cothreads, and how one ends), `park` (driving an operation from a C
//! function), `ops` (yield operations, `when`s, plugins) and `sched` (the
//! scheduler functions and the resume loop); the libraries: `work` (jobs on
//! the thread pool), `dns` (`cothread.dns`), `socket` (`cothread.socket`),
//! `stream` (file objects and pipes), `file` (`cothread.file`), `ossignal`
//! (`cothread.signal`: OS signals), `process` (`cothread.process`),
//! `channel` (`cothread.channel`), `future` (`cothread.promise`: the core's
//! futures, shared with C and C++), `cosock` (cosock's `spawn`,
//! `get_thread_metadata`, `asyncify`) and `host` (`attach`, `loop_wait`: for
//! hosts that embed Lua). This file only assembles the module table.

#![warn(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

use std::ffi::{CStr, c_int};

use cothread::ffi::{COT_VERSION_MAJOR, COT_VERSION_MINOR, COT_VERSION_PATCH};

mod buffer;
mod builtin;
mod channel;
mod cosock;
mod dns;
mod engine;
mod file;
mod future;
mod host;
// Parts of the layer stay unused until every file has moved onto it.
#[allow(dead_code, unused_imports)]
mod lua;
mod ops;
mod ossignal;
mod park;
mod process;
mod raw;
mod reader;
mod registry;
mod sched;
mod signal;
mod socket;
mod state;
mod stream;
mod sys;
mod time;
mod work;

use builtin::Builtin;
use raw::{L, ffi};
use state::{State, UV_MODULE, UV_NAMES, UV_WHENS, UV_YIELDOPS};

/// Pushes a submodule's table (`L`: a valid state with a free slot).
type PushModule = unsafe fn(L);

/// The submodules each scheduler's table holds, by field name (`socket.dns`
/// is there too): each pushes its table, one per Lua state.
const SUBMODULES: &[(&CStr, PushModule)] = &[
    (c"socket", push_socket),
    (c"dns", dns::push_module),
    (c"file", file::push_module),
    (c"process", process::push_module),
    (c"signal", ossignal::push_module),
    (c"channel", channel::push_module),
];

/// The functions of an instance; each is a closure over the instance's state.
const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"schedule", sched::schedule),
    (c"unschedule", sched::unschedule),
    (c"scheduled", sched::scheduled),
    (c"current", sched::current),
    (c"running", sched::running),
    (c"iready", sched::iready),
    (c"notify", sched::notify),
    (c"step", sched::step),
    (c"run", sched::run),
    (c"onall", signal::onall),
    (c"onany", signal::onany),
    (c"plugin", ops::plugin),
    (c"idle", time::idle_default),
    (c"attach", host::attach),
    (c"loop_wait", host::loop_wait),
    (c"new", new),
];

/// Entry point of `require "cothread"`: the default scheduler.
///
/// # Safety
/// Called by Lua 5.4 with a valid state.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn luaopen_cothread(l: L) -> c_int {
    // SAFETY: `require` calls this as a C function with its running thread,
    // which is what `new` (a C function of ours too) expects.
    unsafe { new(l) }
}

/// Entry point of `require "cothread.socket"` (Lua finds it in `cothread.so`
/// with its all-in-one loader): the socket module, the same table as the
/// `socket` field of every scheduler.
///
/// # Safety
/// Called by Lua 5.4 with a valid state.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn luaopen_cothread_socket(l: L) -> c_int {
    // SAFETY: `require` runs this C function on its thread: a valid state
    // in a C function, what `push_socket` asks; it leaves the one table.
    unsafe { push_socket(l) };
    1
}

/// `[-0, +1, e]` Pushes the socket module (made once per Lua state).
///
/// # Safety
/// `l` is the running thread of a C function, which raises the error.
unsafe fn push_socket(l: L) {
    // SAFETY: the contract; the error is raised with no owned value left
    // in this frame.
    unsafe {
        let made = socket::push_module(&mut lua::Lua::from_raw(l));
        lua::or_raise(made, l);
    }
}

/// Entry point of `require "cothread.dns"`: the name resolution module, the
/// same table as the `dns` field of the socket module and of every scheduler.
///
/// # Safety
/// Called by Lua 5.4 with a valid state.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn luaopen_cothread_dns(l: L) -> c_int {
    // SAFETY: as `luaopen_cothread_socket`, for the dns table.
    unsafe { dns::push_module(l) };
    1
}

/// Entry point of `require "cothread.channel"`: the channel module, the same
/// table as the `channel` field of every scheduler.
///
/// # Safety
/// Called by Lua 5.4 with a valid state.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn luaopen_cothread_channel(l: L) -> c_int {
    // SAFETY: as `luaopen_cothread_socket`, for the channel table.
    unsafe { channel::push_module(l) };
    1
}

/// `cothread.new()`: a new, independent scheduler table.
unsafe extern "C-unwind" fn new(l: L) -> c_int {
    // SAFETY: valid state; pushes are balanced as the comments show.
    unsafe {
        raw::check_stack(l, 8);
        ffi::lua_createtable(l, 0, 32); // M
        let m = ffi::lua_gettop(l);
        let p = state::push_new(l); // M S
        let s = ffi::lua_gettop(l);
        ffi::lua_pushvalue(l, m);
        ffi::lua_setiuservalue(l, s, UV_MODULE);
        for (name, f) in FUNCTIONS {
            ffi::lua_pushvalue(l, s);
            ffi::lua_pushcclosure(l, *f, 1);
            ffi::lua_setfield(l, m, name.as_ptr());
        }
        add_builtins(l, m, s, p);
        ffi::lua_pushcfunction(l, time::time_default);
        ffi::lua_pushvalue(l, -1);
        ffi::lua_setiuservalue(l, s, state::UV_TIME);
        ffi::lua_setfield(l, m, c"time".as_ptr());
        ffi::lua_getglobal(l, c"error".as_ptr());
        ffi::lua_setfield(l, m, c"error".as_ptr());
        ffi::lua_newtable(l); // trap, with weak keys
        ffi::lua_createtable(l, 0, 1);
        ffi::lua_pushliteral(l, c"k");
        ffi::lua_setfield(l, -2, c"__mode".as_ptr());
        ffi::lua_setmetatable(l, -2);
        ffi::lua_setfield(l, m, c"trap".as_ptr());
        ffi::lua_pushstring(l, cothread::ffi::cot_version_string());
        ffi::lua_setfield(l, m, c"version".as_ptr());
        for (name, push) in SUBMODULES {
            push(l);
            ffi::lua_setfield(l, m, name.as_ptr());
        }
        cosock::install(l, m, s);
        ffi::lua_pushvalue(l, m);
        future::add_functions(&mut lua::Lua::from_raw(l));
        ffi::lua_pop(l, 1);
        for (name, v) in [
            (c"version_major", COT_VERSION_MAJOR),
            (c"version_minor", COT_VERSION_MINOR),
            (c"version_patch", COT_VERSION_PATCH),
        ] {
            ffi::lua_pushinteger(l, v as ffi::lua_Integer);
            ffi::lua_setfield(l, m, name.as_ptr());
        }
        ffi::lua_settop(l, m);
        1
    }
}

/// `[-0, +0, m]` Interns the built-in operation names (caching their addresses),
/// records the built-ins in the operation tables as plugins would be, and sets
/// the yield operation functions on the scheduler table at `m`.
unsafe fn add_builtins(l: L, m: c_int, s: c_int, p: *mut State) {
    // SAFETY: valid state and indices; the name strings stay referenced by
    // UV_NAMES for the life of the state, so their addresses stay valid.
    unsafe {
        ffi::lua_getiuservalue(l, s, UV_NAMES);
        ffi::lua_getiuservalue(l, s, UV_YIELDOPS);
        ffi::lua_getiuservalue(l, s, UV_WHENS); // names yieldops whens
        let (names, yieldops, whens) = (s + 1, s + 2, s + 3);
        for (i, b) in Builtin::ALL.into_iter().enumerate() {
            ffi::lua_pushstring(l, b.name().as_ptr());
            (*p).names[i] = ffi::lua_topointer(l, -1);
            ffi::lua_pushvalue(l, -1);
            ffi::lua_rawseti(l, names, i as ffi::lua_Integer + 1);
            for (table, yes) in [(yieldops, b.is_yield()), (whens, b.is_when())] {
                if yes {
                    ffi::lua_pushvalue(l, -1);
                    ffi::lua_createtable(l, 2, 0);
                    ffi::lua_pushinteger(l, b.nfixed() as ffi::lua_Integer);
                    ffi::lua_rawseti(l, -2, 1);
                    ffi::lua_pushboolean(l, 0);
                    ffi::lua_rawseti(l, -2, 2);
                    ffi::lua_rawset(l, table);
                }
            }
            if b.is_yield() {
                ops::push_yield_op(l, -1, ops::builtin_function(b));
                ffi::lua_setfield(l, m, b.name().as_ptr());
            }
            ffi::lua_pop(l, 1);
        }
        ffi::lua_settop(l, s);
    }
}
