//! `cothread.pcall` and `cothread.xpcall`: `pcall` and `xpcall` that a
//! cothread may yield across, as coxpcall gives copas users.
//!
//! Lua 5.2 on and LuaJIT yield across their own: there these are the
//! standard functions. Lua 5.1 cannot: there `f` runs in a coroutine of its
//! own (`PCALL`, a chunk the module ships), whose yields the caller passes
//! on to whoever resumes it, resuming the coroutine with what comes back.
//! In a cothread the coroutine stands in for it while it runs
//! (`park::resume_standing_in`): a call that waits parks the cothread.

use std::ffi::CStr;

use crate::cfn;
use crate::lua::{Error, Lua, REGISTRY, Resumed, Ret, Type, ffi};
use crate::park;

/// Lua 5.1's pair, made from `resume` (below) and the standard functions.
/// Where nothing can yield (the main thread) the standard `pcall` serves.
/// `xpcall`'s handler runs once `f`'s coroutine has ended: a traceback it
/// takes shows the caller's stack, not the error's.
const PCALL: &str = r#"
local resume, pcall = ...
local create, yield, running = coroutine.create, coroutine.yield, coroutine.running

local function pass(co, how, ...)
  if how == "yield" then return pass(co, resume(co, yield(...))) end
  return how == "return", ...
end

local function cpcall(f, ...)
  if running() == nil then return pcall(f, ...) end
  local co = create(function(...) return f(...) end) -- 5.1 makes no coroutine of a C function
  return pass(co, resume(co, ...))
end

local function handled(handler, ok, ...)
  if ok then return true, ... end
  local _, r = pcall(handler, (...))
  return false, r
end

local function cxpcall(f, handler, ...)
  return handled(handler, cpcall(f, ...))
end

return cpcall, cxpcall
"#;

/// Registry field caching the pair: `{pcall, xpcall}`.
const CACHE: &CStr = c"cothread.pcall";

/// `[-0, +2, e]` Pushes `pcall` and `xpcall`, made once per Lua state.
pub fn push(lua: &mut Lua) -> Result<(), Error> {
    if lua.get_field(REGISTRY, CACHE) != Type::Table {
        lua.pop(1);
        make(lua)?;
        lua.new_table(2, 0);
        lua.insert(-3); // pair pcall xpcall
        lua.set_index(-3, 2);
        lua.set_index(-2, 1);
        lua.push_value(-1);
        lua.set_field(REGISTRY, CACHE);
    }
    lua.get_index(-1, 1);
    lua.get_index(-2, 2);
    lua.remove(-3);
    Ok(())
}

/// `[-0, +2, e]` Pushes the pair for this Lua: the standard functions if
/// they yield, else `PCALL`'s.
fn make(lua: &mut Lua) -> Result<(), Error> {
    lua.push_globals();
    let g = lua.top();
    if ffi::pcall_yields() {
        lua.get_field(g, c"pcall");
        lua.get_field(g, c"xpcall");
    } else {
        lua.load(PCALL, c"=cothread.pcall")?;
        lua.push_fn(resume);
        lua.get_field(g, c"pcall");
        lua.call(2, 2)?;
    }
    lua.remove(g);
    Ok(())
}

cfn!(resume = resume_body);

/// `how, ... = resume(co, ...)`: resumes `co` (`park::resume_standing_in`);
/// `how` is "yield", "return" or "error", then what it yielded or returned,
/// or its error object.
fn resume_body(lua: &mut Lua) -> Ret {
    let nargs = lua.top() - 1;
    let (how, n) = park::resume_standing_in(lua, 1, nargs)?;
    lua.push_bytes(match how {
        Resumed::Yielded => b"yield".as_slice(),
        Resumed::Returned => b"return",
        Resumed::Raised => b"error",
    });
    lua.insert(-n - 1);
    Ok(n + 1)
}
