//! `socket.protect`, `socket.try`, `socket.newtry`: LuaSocket's exceptions.
//!
//! A `try` function raises a *wrapped* error: a table `{message}` whose
//! metatable is the module's marker (an upvalue of each of these closures).
//! A `protect`ed function calls its function with `lua_pcallk`, so the
//! function may yield (suspend its cothread in a socket call): the
//! continuation finishes the call when the coroutine is resumed. A wrapped
//! error becomes `nil, message`; any other error is raised again unchanged.

use std::ffi::c_int;

use crate::raw::{self, L, ffi};

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

/// Ends a protected call with `status`: the function's results, or `nil,
/// message` for a wrapped error; another error is raised again.
unsafe extern "C-unwind" fn finish(l: L, status: c_int, _ctx: ffi::lua_KContext) -> c_int {
    // SAFETY: the frame of `protected` (the error object on the top after a
    // failure); the marker is upvalue 1.
    unsafe {
        if status == ffi::LUA_OK || status == ffi::LUA_YIELD {
            return ffi::lua_gettop(l);
        }
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE && ffi::lua_getmetatable(l, -1) != 0 {
            let wrapped = ffi::lua_rawequal(l, -1, ffi::lua_upvalueindex(1)) != 0;
            ffi::lua_pop(l, 1);
            if wrapped {
                ffi::lua_pushnil(l);
                ffi::lua_rawgeti(l, -2, 1);
                return 2;
            }
        }
        ffi::lua_error(l)
    }
}

/// A function made by `protect`: calls upvalue 2 with its arguments.
unsafe extern "C-unwind" fn protected(l: L) -> c_int {
    // SAFETY: a closure made by `protect` (upvalues: marker, function).
    unsafe {
        raw::check_stack(l, 2);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(2));
        ffi::lua_rotate(l, 1, 1);
        let status = ffi::lua_pcallk(l, ffi::lua_gettop(l) - 1, ffi::LUA_MULTRET, 0, 0, Some(finish));
        finish(l, status, 0)
    }
}

/// `socket.protect(f)`: a function calling `f` that returns `nil, message`
/// where `f` raised through a `try`.
unsafe extern "C-unwind" fn protect(l: L) -> c_int {
    // SAFETY: a closure of the module (upvalue 1: the marker).
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TFUNCTION);
        ffi::lua_settop(l, 1);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_rotate(l, 1, 1); // marker f
        ffi::lua_pushcclosure(l, protected, 2);
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
        for (name, f) in [(c"protect", protect as ffi::lua_CFunction), (c"newtry", newtry)] {
            ffi::lua_pushvalue(l, -1);
            ffi::lua_pushcclosure(l, f, 1);
            ffi::lua_setfield(l, -3, name.as_ptr());
        }
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
