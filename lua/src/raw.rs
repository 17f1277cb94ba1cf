//! Thin helpers over the Lua C API (`lua::ffi`), in the style of lauxlib.
//!
//! Every function notes its stack effect as Lua's manual does: `[-pops, +pushes, errors]`
//! where errors is `-` (never raises), `m` (memory errors only) or `e` (any error).
//!
//! Functions that may raise (`m`, `e`) longjmp out through their callers, so the
//! callers keep no value with a destructor alive across such calls, and keep no
//! reference into Rust state across a call into Lua (see `state`).

use std::ffi::{CStr, c_char, c_int};

pub use crate::lua::ffi::{self, lua_State};

/// A Lua state pointer (a thread).
pub type L = *mut lua_State;

/// `[-0, +1, -]` Pushes the thread `co` onto `l`'s stack.
///
/// # Safety
/// `l` and `co` are threads of one Lua state; `l` has a free stack slot.
pub unsafe fn push_thread(l: L, co: L) {
    // SAFETY: both threads share the global state (caller's contract).
    unsafe {
        if co == l {
            ffi::lua_pushthread(l);
        } else {
            ffi::lua_pushthread(co);
            ffi::lua_xmove(co, l, 1);
        }
    }
}

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

/// `[-0, +0, -]` Is the value at `idx` nil, none or a float NaN?
///
/// # Safety
/// `l` is a valid state.
pub unsafe fn is_nil_or_nan(l: L, idx: c_int) -> bool {
    // SAFETY: valid state (caller's contract); reads only.
    unsafe { ffi::lua_isnoneornil(l, idx) != 0 || is_nan(l, idx) }
}

/// `[-0, +0, -]` Is the value at `idx` a float NaN?
///
/// # Safety
/// `l` is a valid state.
pub unsafe fn is_nan(l: L, idx: c_int) -> bool {
    // SAFETY: valid state (caller's contract); a number is read without conversion.
    unsafe { ffi::lua_type(l, idx) == ffi::LUA_TNUMBER && ffi::lua_tonumber(l, idx).is_nan() }
}

/// `[-0, +0, e]` The number at `idx`, raising `bad argument` unless it is a number other
/// than NaN. `arg` is the argument number reported.
///
/// # Safety
/// `l` is a valid state, in a C function (for the error message).
pub unsafe fn check_time(l: L, idx: c_int, arg: c_int) -> f64 {
    // SAFETY: a valid state in a C function (caller's contract), which
    // `luaL_argerror` needs to name the function; reads before raising.
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TNUMBER {
            let msg = ffi::lua_pushfstring(l, c"number expected, got %s".as_ptr(), ffi::luaL_typename(l, idx));
            ffi::luaL_argerror(l, arg, msg);
        }
        let t = ffi::lua_tonumber(l, idx);
        if t.is_nan() {
            ffi::luaL_argerror(l, arg, c"number expected, got NaN".as_ptr());
        }
        t
    }
}

/// `[-0, +0, e]` Raises `bad argument #arg to 'f' (msg)`.
///
/// # Safety
/// `l` is a valid state, in a C function.
pub unsafe fn arg_error(l: L, arg: c_int, msg: &CStr) -> ! {
    // SAFETY: valid state (caller's contract); luaL_argerror never returns.
    unsafe {
        ffi::luaL_argerror(l, arg, msg.as_ptr());
    }
    unreachable!("luaL_argerror returned")
}

/// `[-0, +0, e]` Raises the string `msg` as an error, with position information.
///
/// # Safety
/// `l` is a valid state.
pub unsafe fn error(l: L, msg: &CStr) -> ! {
    // SAFETY: valid state (caller's contract); "%s" keeps `msg` literal.
    unsafe {
        ffi::luaL_error(l, c"%s".as_ptr(), msg.as_ptr());
    }
    unreachable!("luaL_error returned")
}

/// `[-0, +0, -]` The string at `idx` if it is a string (never converts a number).
///
/// # Safety
/// `l` is a valid state.
pub unsafe fn to_str(l: L, idx: c_int) -> Option<*const c_char> {
    // SAFETY: valid state (caller's contract); a string value converts in place
    // to itself, so the stack is unchanged.
    unsafe { (ffi::lua_type(l, idx) == ffi::LUA_TSTRING).then(|| ffi::lua_tolstring(l, idx, std::ptr::null_mut())) }
}

/// `[-0, +0, -]` Grows the stack of `l` for `n` more values or raises.
///
/// # Safety
/// `l` is a valid state.
pub unsafe fn check_stack(l: L, n: c_int) {
    // SAFETY: a valid state (caller's contract); a stack that cannot grow
    // raises "too many values" from the caller's C function.
    unsafe { ffi::luaL_checkstack(l, n, c"too many values".as_ptr()) }
}

/// `[-0, +1, m]` Pushes the string at `idx` as a message shows a user's
/// value (`lua::shown`: at most 48 bytes, then "...") and returns Lua's
/// copy, anchored in the pushed slot, for a `%s`.
///
/// # Safety
/// `l` is a valid state with a free slot; `idx` holds a string.
pub unsafe fn push_shown(l: L, idx: c_int) -> *const c_char {
    // SAFETY: the string at `idx` is read while it sits there; the Rust copy
    // is pushed (Lua copies it) and dropped before anything can raise.
    unsafe {
        let mut len = 0;
        let p = ffi::lua_tolstring(l, idx, &mut len);
        let text = crate::lua::shown(std::slice::from_raw_parts(p.cast(), len));
        ffi::lua_pushlstring(l, text.as_ptr().cast(), text.len());
        drop(text);
        ffi::lua_tolstring(l, -1, std::ptr::null_mut())
    }
}

/// What `coroutine.status` would say of `co`, seen from `l`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    Running,
    Suspended,
    Normal,
    Dead,
}

/// `[-0, +0, -]` The status of the coroutine `co` (lcorolib's `auxstatus`).
///
/// # Safety
/// `l` and `co` are threads of one Lua state.
pub unsafe fn status(l: L, co: L) -> Status {
    if l == co {
        return Status::Running;
    }
    // SAFETY: valid threads (caller's contract); `lua_Debug` is plain data, and
    // lua_getstack only fills it.
    unsafe {
        match ffi::lua_status(co) {
            ffi::LUA_YIELD => Status::Suspended,
            ffi::LUA_OK => {
                let mut ar: ffi::lua_Debug = std::mem::zeroed();
                if ffi::lua_getstack(co, 0, &mut ar) != 0 {
                    Status::Normal
                } else if ffi::lua_gettop(co) == 0 {
                    Status::Dead
                } else {
                    Status::Suspended
                }
            }
            _ => Status::Dead,
        }
    }
}

/// `[-0, +1, e]` Pushes the Lua chunk `source` (text, shipped in the module),
/// compiled under the chunk name `name`; raises the compiler's message if it
/// does not compile.
///
/// # Safety
/// `l` is a valid state with a free stack slot.
pub unsafe fn load_chunk(l: L, source: &str, name: &CStr) {
    // SAFETY: valid state; `source` outlives the call; the load pushes one
    // value (the chunk or the message, raised at once).
    unsafe {
        let status = ffi::luaL_loadbufferx(l, source.as_ptr().cast(), source.len(), name.as_ptr(), c"t".as_ptr());
        if status != ffi::LUA_OK {
            ffi::lua_error(l);
        }
    }
}
