//! The older helpers over the raw C API, for the code that still drives
//! threads by pointer (the engine) until it moves onto the safe handle.
//! Each notes its stack effect: `[-pops, +pushes, errors]`, errors `-`,
//! `m` (memory) or `e` (any); one that may raise longjmps through its
//! callers, which keep no value with a destructor alive across it.

use std::ffi::{CStr, c_int};

pub use mlua::ffi::{self, lua_State};

/// A Lua state pointer (a thread).
pub type L = *mut lua_State;

/// `[-0, +1, m]` Pushes the metatable registered under `name`; with none,
/// first makes it: a table with `__name`, filled by `fill` (which finds it
/// on the top and leaves it there), registered only once complete. A
/// memory error in between registers nothing (the next call makes it
/// again), where a table registered first would stay without its `__gc`
/// (objects under it never finalized) or its methods. True if made now.
///
/// # Safety
/// `l` is a valid state with three free slots; `fill` pushes and pops
/// evenly.
pub unsafe fn metatable_once(l: L, name: &CStr, fill: impl FnOnce(L)) -> bool {
    // SAFETY: valid state with the slots (caller's contract); the table is
    // set in the registry last.
    unsafe {
        if ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, name.as_ptr()) != ffi::LUA_TNIL {
            return false;
        }
        ffi::lua_pop(l, 1);
        ffi::lua_createtable(l, 0, 4);
        ffi::lua_pushstring(l, name.as_ptr());
        ffi::lua_setfield(l, -2, c"__name".as_ptr());
        fill(l);
        ffi::lua_pushvalue(l, -1);
        ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, name.as_ptr());
        true
    }
}

/// `[-0, +0, e]` Grows the stack of `l` for `n` more values or raises.
///
/// # Safety
/// `l` is a valid state, in a C function (which raises the error).
pub unsafe fn check_stack(l: L, n: c_int) {
    // SAFETY: the contract; a stack that cannot grow raises "too many
    // values" from the caller's C function.
    unsafe { ffi::luaL_checkstack(l, n, c"too many values".as_ptr()) }
}
