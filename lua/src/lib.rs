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
//! `tests/layers` checks): `lua` (a safe handle over the C API, and the
//! older raw helpers the engine uses); `buffer`, `reader` (read buffers and io's formats),
//! `sys` (the socket system calls) and `builtin` (the built-in operation
//! names); `engine` (the waiting engine: every call that may wait is an
//! operation it drives to its end); the
//! scheduler face: `state` (an instance), `signal` (signal values and
//! combined signals), `time` (`time`, `idle`), `registry` (registered
//! cothreads, and how one ends), `park` (driving an operation from a C
//! function), `pcall` (`pcall` and `xpcall` a cothread yields across), `ops` (yield operations, `when`s, plugins) and `sched` (the
//! scheduler functions and the resume loop); the libraries: `work` (jobs on
//! the thread pool), `dns` (`cothread.dns`), `socket` (`cothread.socket`),
//! `stream` (file objects and pipes), `file` (`cothread.file`), `ossignal`
//! (`cothread.signal`: OS signals), `process` (`cothread.process`),
//! `channel` (`cothread.channel`), `future` (`cothread.promise`: the core's
//! futures, shared with C and C++), `tls` (`cothread.ssl`: LuaSec on the engine), `cosock` (cosock's `spawn`,
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
mod lua;
mod ops;
mod ossignal;
mod park;
mod pcall;
mod process;
mod reader;
mod registry;
mod sched;
mod signal;
mod socket;
mod state;
mod stream;
mod sys;
mod time;
mod tls;
mod work;

use builtin::Builtin;
use lua::{Error, Lua, Reg, Ret, UpvalueFn};
use state::{State, UV_MODULE, UV_NAMES, UV_WHENS, UV_YIELDOPS};

/// Pushes a submodule's table.
type PushModule = fn(&mut Lua) -> Result<(), Error>;

/// The submodules each scheduler's table holds, by field name (`socket.dns`
/// is there too): each pushes its table, one per Lua state.
const SUBMODULES: &[(&CStr, PushModule)] = &[
    (c"socket", socket::push_module),
    (c"dns", push_dns),
    (c"file", file::push_module),
    (c"process", process::push_module),
    (c"signal", ossignal::push_module),
    (c"channel", channel::push_module),
];

/// The functions of an instance; each is a closure over the instance's state.
/// The scheduler's functions: closures over its state (upvalue 1).
const FUNCTIONS: &[(&CStr, UpvalueFn<State>)] = &[
    (c"schedule", sched::SCHEDULE),
    (c"unschedule", sched::UNSCHEDULE),
    (c"scheduled", sched::SCHEDULED),
    (c"current", sched::CURRENT),
    (c"running", sched::RUNNING),
    (c"iready", sched::IREADY),
    (c"notify", sched::NOTIFY),
    (c"step", sched::STEP),
    (c"run", sched::RUN),
    (c"onall", signal::ONALL),
    (c"onany", signal::ONANY),
    (c"idle", time::IDLE_DEFAULT),
    (c"attach", host::ATTACH),
    (c"loop_wait", host::LOOP_WAIT),
];

/// The scheduler's functions that need no state, or check it themselves
/// (they have it as upvalue 1 too).
const PLAIN_FUNCTIONS: &[Reg] = &[(c"plugin", ops::plugin_c), (c"new", new_c)];

crate::cfn!(
    /// Entry point of `require "cothread"`: the default scheduler.
    #[unsafe(no_mangle)]
    pub luaopen_cothread = new
);

/// The one table a submodule's `require` answers.
fn open(lua: &mut Lua, push: PushModule) -> Ret {
    push(lua)?;
    Ok(1)
}

/// `require "cothread.socket"` (Lua finds it in `cothread.so` with its
/// all-in-one loader): the socket module, the same table as the `socket`
/// field of every scheduler.
fn open_socket(lua: &mut Lua) -> Ret {
    open(lua, socket::push_module)
}
crate::cfn!(#[unsafe(no_mangle)] pub luaopen_cothread_socket = open_socket);

/// `require "cothread.dns"`: the name resolution module, the same table as
/// the `dns` field of the socket module and of every scheduler.
fn open_dns(lua: &mut Lua) -> Ret {
    open(lua, push_dns)
}
crate::cfn!(#[unsafe(no_mangle)] pub luaopen_cothread_dns = open_dns);

/// `require "cothread.channel"`: the channel module, the same table as the
/// `channel` field of every scheduler.
fn open_channel(lua: &mut Lua) -> Ret {
    open(lua, channel::push_module)
}
crate::cfn!(#[unsafe(no_mangle)] pub luaopen_cothread_channel = open_channel);

/// `require "cothread.ssl"`: LuaSec's TLS on cothread's sockets (needs
/// LuaSec; without it the `require` fails saying what to install).
fn open_ssl(lua: &mut Lua) -> Ret {
    open(lua, tls::push_module)
}
crate::cfn!(#[unsafe(no_mangle)] pub luaopen_cothread_ssl = open_ssl);

/// `require "cothread.ssl.https"`: LuaSec's `ssl.https` on cothread.ssl,
/// verifying the server by default.
fn open_https(lua: &mut Lua) -> Ret {
    open(lua, tls::push_https)
}
crate::cfn!(#[unsafe(no_mangle)] pub luaopen_cothread_ssl_https = open_https);

/// `[-0, +1, m]` Pushes the dns module.
fn push_dns(lua: &mut Lua) -> Result<(), Error> {
    dns::push(lua);
    Ok(())
}

/// `cothread.new()`: a new, independent scheduler table.
fn new(lua: &mut Lua) -> Ret {
    lua.new_table(0, 32); // M
    let m = lua.top();
    state::push_new(lua)?; // M S
    let s = lua.top();
    lua.push_value(m);
    lua.set_uservalue(s, UV_MODULE);
    for (name, f) in FUNCTIONS {
        lua.push_upvalue_fn(*f, s, 0);
        lua.set_field(m, name);
    }
    for (name, f) in PLAIN_FUNCTIONS {
        lua.push_value(s);
        lua.push_closure(*f, 1);
        lua.set_field(m, name);
    }
    add_builtins(lua, m, s);
    lua.push_fn(time::time_default_c);
    lua.push_value(-1);
    lua.set_uservalue(s, state::UV_TIME);
    lua.set_field(m, c"time");
    lua.push_fn(registry::default_error);
    lua.set_field(m, c"error");
    pcall::push(lua)?;
    lua.set_field(m, c"xpcall");
    lua.set_field(m, c"pcall");
    state::push_weak_table(lua); // trap
    lua.set_field(m, c"trap");
    lua.push_owned(format!("{COT_VERSION_MAJOR}.{COT_VERSION_MINOR}.{COT_VERSION_PATCH}"));
    lua.set_field(m, c"version");
    for (name, push) in SUBMODULES {
        push(lua)?;
        lua.set_field(m, name);
    }
    cosock::install(lua, m, s)?;
    lua.push_value(m);
    future::add_functions(lua);
    lua.pop(1);
    for (name, v) in [
        (c"version_major", COT_VERSION_MAJOR),
        (c"version_minor", COT_VERSION_MINOR),
        (c"version_patch", COT_VERSION_PATCH),
    ] {
        lua.push_int(v as lua::lua_Integer);
        lua.set_field(m, name);
    }
    lua.set_top(m);
    Ok(1)
}
crate::cfn!(new_c = new);

/// `[-0, +0, m]` Interns the built-in operation names (caching their addresses),
/// records the built-ins in the operation tables as plugins would be, and sets
/// the yield operation functions on the scheduler table at `m`. The name
/// strings stay referenced by UV_NAMES for the life of the state, so their
/// addresses stay valid.
fn add_builtins(lua: &mut Lua, m: c_int, s: c_int) {
    lua.get_uservalue(s, UV_NAMES);
    lua.get_uservalue(s, UV_YIELDOPS);
    lua.get_uservalue(s, UV_WHENS); // names yieldops whens
    let (names, yieldops, whens) = (s + 1, s + 2, s + 3);
    for (i, b) in Builtin::ALL.into_iter().enumerate() {
        lua.push_bytes(b.name().to_bytes());
        if let Some(st) = lua.test_udata::<state::State>(s) {
            st.names[i].set(lua.to_identity(-1));
        }
        lua.push_value(-1);
        lua.set_index(names, i as lua::lua_Integer + 1);
        for (table, yes) in [(yieldops, b.is_yield()), (whens, b.is_when())] {
            if yes {
                lua.push_value(-1);
                lua.new_table(2, 0);
                lua.push_int(b.nfixed() as lua::lua_Integer);
                lua.set_index(-2, 1);
                lua.push_bool(false);
                lua.set_index(-2, 2);
                lua.set_table(table);
            }
        }
        if b.is_yield() {
            ops::push_yield_op(lua, -1, ops::builtin_function(b));
            lua.set_field(m, b.name());
        }
        lua.pop(1);
    }
    lua.set_top(s);
}
