//! cosock compatibility: `spawn` and its handles, `get_thread_metadata`,
//! `asyncify` (the channels are in `channel`).
//!
//! They are written in Lua (`cosock.lua`, embedded): they only combine the
//! scheduler's functions, and are not on a hot path. The chunk is compiled
//! once per Lua state (cached in the registry) and run once per scheduler
//! with the scheduler table, `waitinfo`, a closure over the scheduler that
//! reads what a cothread waits for from its event loop, and `tls::module`,
//! which loads `cothread.ssl` (the table's lazy `ssl` field).

use std::ffi::{CStr, c_int};

use crate::lua::{Error, Lua, REGISTRY, Ret, Type};
use crate::registry;
use crate::state::{State, with_state};
use crate::tls;

/// The Lua side.
const SOURCE: &str = include_str!("cosock.lua");
/// Registry field caching the compiled chunk.
const CHUNK: &CStr = c"cothread.cosock";

/// `[-0, +0, e]` Adds the cosock functions to the scheduler table at `m`,
/// whose state userdata is at `s`.
pub fn install(lua: &mut Lua, m: c_int, s: c_int) -> Result<(), Error> {
    if lua.get_field(REGISTRY, CHUNK) != Type::Function {
        lua.pop(1);
        lua.load(SOURCE, c"=cothread.cosock")?;
        lua.push_value(-1);
        lua.set_field(REGISTRY, CHUNK);
    }
    lua.push_value(m); // chunk M
    lua.push_upvalue_fn(WAITINFO, s, 0); // chunk M waitinfo
    lua.push_fn(tls::module); // chunk M waitinfo ssl
    lua.call(3, 0)
}

/// `recvt, sendt, timeout, last_wake = waitinfo(thread)`: how many sources
/// the cothread waits on for reading and for writing, the seconds left until
/// its wait's deadline (nil: none), and the wall-clock second of its last
/// wake by the event loop (nil: never woken by it).
fn waitinfo(lua: &mut Lua) -> Ret {
    lua.check_type(1, Type::Thread)?;
    with_state(lua, |lua, st| {
        let task = registry::task_of(lua, 1);
        let info = task.zip(st.engine()).and_then(|(t, e)| lua.with_thread_at(1, |co| e.wait_info(co, t)).flatten());
        let woke = task.zip(st.engine()).and_then(|(t, e)| e.last_wake(t));
        lua.push_int(info.map_or(0, |i| i.readers) as i64);
        lua.push_int(info.map_or(0, |i| i.writers) as i64);
        match info.and_then(|i| i.deadline) {
            Some(d) => lua.push_num(d.saturating_sub(cothread::time::monotonic_ns()) as f64 / 1e9),
            None => lua.push_nil(),
        }
        match woke {
            Some(t) => lua.push_int(t),
            None => lua.push_nil(),
        }
        Ok(4)
    })
}
crate::upvalue_fn!(WAITINFO: State = waitinfo);
