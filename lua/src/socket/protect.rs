//! `socket.protect`, `socket.try`, `socket.newtry`: LuaSocket's exceptions.
//!
//! A `try` function raises a *wrapped* error: a table `{message}` whose
//! metatable is the module's marker (an upvalue of each of these closures).
//! A `protect`ed function is a Lua closure (`PROTECT`, a chunk the module
//! ships) that calls its function through Lua's own `pcall`, which lets the
//! function yield (suspend its cothread in a socket call) with no C
//! continuation. A wrapped error becomes `nil, message`; any other error is
//! raised again unchanged.

use std::ffi::c_int;

use crate::raw::{self, L, ffi};

/// The maker of protected functions: run once with the marker, it returns
/// `make(f)`, which returns the protected function of `f`.
const PROTECT: &str = r#"
local marker = ...
local pcall, error, type, getmetatable, rawequal = pcall, error, type, getmetatable, rawequal
local function unwrap(ok, ...)
  if ok then return ... end
  local e = ...
  if type(e) == "table" and rawequal(getmetatable(e), marker) then return nil, e[1] end
  error(e, 0)
end
return function(f)
  return function(...) return unwrap(pcall(f, ...)) end
end
"#;

/// `[-1, +1, m]` Wraps the value on the top as `{value}` with the marker
/// metatable at `marker`.
unsafe fn wrap(l: L, marker: c_int) {
    // SAFETY: valid state with free slots (C functions get 20).
    unsafe {
        ffi::lua_createtable(l, 1, 0);
        ffi::lua_rotate(l, -2, 1); // table value
        ffi::lua_rawseti(l, -2, 1);
        ffi::lua_pushvalue(l, marker);
        ffi::lua_setmetatable(l, -2);
    }
}

/// The `try` functions: returns its arguments if the first is true;
/// otherwise calls the finalizer (upvalue 1, if any) and raises the second
/// argument wrapped.
unsafe extern "C-unwind" fn finalize(l: L) -> c_int {
    // SAFETY: a closure made by `newtry` (upvalues: finalizer, marker).
    unsafe {
        if ffi::lua_toboolean(l, 1) != 0 {
            return ffi::lua_gettop(l);
        }
        if ffi::lua_isnoneornil(l, ffi::lua_upvalueindex(1)) == 0 {
            ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
            ffi::lua_call(l, 0, 0);
        }
        ffi::lua_settop(l, 2);
        wrap(l, ffi::lua_upvalueindex(2));
        ffi::lua_error(l)
    }
}

/// `socket.newtry([finalizer])`: a `try` function calling `finalizer` (with
/// no arguments) before it raises.
unsafe extern "C-unwind" fn newtry(l: L) -> c_int {
    // SAFETY: a closure of the module (upvalue 1: the marker).
    unsafe {
        if ffi::lua_isnoneornil(l, 1) == 0 {
            ffi::luaL_checktype(l, 1, ffi::LUA_TFUNCTION);
        }
        ffi::lua_settop(l, 1);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_pushcclosure(l, finalize, 2);
        1
    }
}

/// `socket.protect(f)`: a function calling `f` that returns `nil, message`
/// where `f` raised through a `try`.
unsafe extern "C-unwind" fn protect(l: L) -> c_int {
    // SAFETY: a closure made by `add_functions` (upvalue 1: the maker of
    // protected functions); the argument is checked first.
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TFUNCTION);
        ffi::lua_settop(l, 1);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_rotate(l, 1, 1); // make f
        ffi::lua_call(l, 1, 1);
        1
    }
}

/// `[-0, +0, m]` Sets `protect`, `newtry` and `try` on the table on the top.
pub(super) unsafe fn add_functions(l: L) {
    // SAFETY: valid state; pushes are balanced as the comments show.
    unsafe {
        raw::check_stack(l, 4);
        ffi::lua_createtable(l, 0, 1); // M marker
        ffi::lua_pushliteral(l, c"cothread.socket.error");
        ffi::lua_setfield(l, -2, c"__name".as_ptr());
        ffi::lua_pushcfunction(l, error_tostring);
        ffi::lua_setfield(l, -2, c"__tostring".as_ptr());
        ffi::lua_pushvalue(l, -1);
        ffi::lua_pushcclosure(l, newtry, 1);
        ffi::lua_setfield(l, -3, c"newtry".as_ptr());
        raw::load_chunk(l, PROTECT, c"=cothread.socket.protect");
        ffi::lua_pushvalue(l, -2); // M marker chunk marker
        ffi::lua_call(l, 1, 1); // M marker make
        ffi::lua_pushcclosure(l, protect, 1);
        ffi::lua_setfield(l, -3, c"protect".as_ptr());
        ffi::lua_pushnil(l); // M marker nil
        ffi::lua_rotate(l, -2, 1); // M nil marker
        ffi::lua_pushcclosure(l, finalize, 2);
        ffi::lua_setfield(l, -2, c"try".as_ptr());
    }
}

/// `__tostring` of a wrapped error that escaped every `protect`: its message.
unsafe extern "C-unwind" fn error_tostring(l: L) -> c_int {
    // SAFETY: called by Lua with the wrapped table.
    unsafe {
        ffi::lua_rawgeti(l, 1, 1);
        ffi::luaL_tolstring(l, -1, std::ptr::null_mut());
        1
    }
}
