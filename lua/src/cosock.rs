//! cosock compatibility: `spawn` and its handles, `get_thread_metadata`,
//! `asyncify` (the channels are in `channel`).
//!
//! They are written in Lua (`cosock.lua`, embedded): they only combine the
//! scheduler's functions, and are not on a hot path. The chunk is compiled
//! once per Lua state (cached in the registry) and run once per scheduler
//! with the scheduler table and `waitinfo`, a closure over the scheduler that
//! reads what a cothread waits for from its event loop.

use std::ffi::{CStr, c_int};

use crate::raw::{self, L, ffi};
use crate::registry;
use crate::state::this;

/// The Lua side.
const SOURCE: &str = include_str!("cosock.lua");
/// Registry field caching the compiled chunk.
const CHUNK: &CStr = c"cothread.cosock";

/// `[-0, +0, e]` Adds the cosock functions to the scheduler table at `m`,
/// whose state userdata is at `s`.
///
/// # Safety
/// `l` is a valid state; `m` and `s` are absolute indices.
pub unsafe fn install(l: L, m: c_int, s: c_int) {
    // SAFETY: valid state; pushes are balanced as the comments show.
    unsafe {
        raw::check_stack(l, 4);
        if ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, CHUNK.as_ptr()) != ffi::LUA_TFUNCTION {
            ffi::lua_pop(l, 1);
            raw::load_chunk(l, SOURCE, c"=cothread.cosock");
            ffi::lua_pushvalue(l, -1);
            ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, CHUNK.as_ptr());
        }
        ffi::lua_pushvalue(l, m); // chunk M
        ffi::lua_pushvalue(l, s);
        ffi::lua_pushcclosure(l, waitinfo, 1); // chunk M waitinfo
        ffi::lua_call(l, 2, 0);
    }
}

/// `recvt, sendt, timeout, last_wake = waitinfo(thread)`: how many sources
/// the cothread waits on for reading and for writing, the seconds left until
/// its wait's deadline (nil: none), and the wall-clock second of its last
/// wake by the event loop (nil: never woken by it).
unsafe extern "C-unwind" fn waitinfo(l: L) -> c_int {
    // SAFETY: a closure of the module (upvalue 1: the state).
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTHREAD);
        let p = this(l);
        let task = registry::task_of(l, 1);
        let co = ffi::lua_tothread(l, 1);
        let e = (*p).engine;
        let info =
            task.and_then(|t| (!e.is_null()).then(|| (*e).wait_info(&crate::lua::Thread::from_raw(co), t)).flatten());
        let woke = task.and_then(|t| (!e.is_null()).then(|| (*e).last_wake(t)).flatten());
        ffi::lua_pushinteger(l, info.map_or(0, |i| i.readers) as ffi::lua_Integer);
        ffi::lua_pushinteger(l, info.map_or(0, |i| i.writers) as ffi::lua_Integer);
        match info.and_then(|i| i.deadline) {
            Some(d) => ffi::lua_pushnumber(l, d.saturating_sub(cothread::time::monotonic_ns()) as f64 / 1e9),
            None => ffi::lua_pushnil(l),
        }
        match woke {
            Some(t) => ffi::lua_pushinteger(l, t as ffi::lua_Integer),
            None => ffi::lua_pushnil(l),
        }
        4
    }
}
