//! Combined signals: `onall(...)` and `onany(...)`.
//!
//! A combined signal is a Lua function (calling it resets it) whose upvalues
//! are the state and a small handle userdata holding the core key. When the
//! function is collected, the handle's `__gc` queues the key; the core signal
//! is freed once nothing waits on it and no other combined signal includes it.

use std::ffi::c_int;

use cothread::Mode;

use crate::raw::{self, L, ffi};
use crate::state::{self, State, this};

/// `[-0, +0, -]` The core key of the value at `idx` if it is a combined signal
/// of state `p`: a C closure whose upvalues are `p` and a combined handle.
///
/// # Safety
/// `l` is valid.
pub unsafe fn combined_key(l: L, idx: c_int, p: *mut State) -> Option<usize> {
    // SAFETY: valid state; a `combined` closure has the state and the handle
    // (a userdata holding a usize) as upvalues 1 and 2.
    unsafe {
        if ffi::lua_iscfunction(l, idx) == 0 || ffi::lua_getupvalue(l, idx, 1).is_null() {
            return None;
        }
        let same = ffi::lua_touserdata(l, -1) as *mut State == p;
        ffi::lua_pop(l, 1);
        if !same || ffi::lua_getupvalue(l, idx, 2).is_null() {
            return None;
        }
        let handle = ffi::luaL_testudata(l, -1, c"cothread.combined".as_ptr()) as *const usize;
        let key = (!handle.is_null()).then(|| *handle);
        ffi::lua_pop(l, 1);
        key
    }
}

/// A combined signal, called: forgets the notifications counted so far.
unsafe extern "C-unwind" fn combined(l: L) -> c_int {
    // SAFETY: a closure made by `combine`.
    unsafe {
        let key = *(ffi::lua_touserdata(l, ffi::lua_upvalueindex(2)) as *const usize);
        let _ = (*this(l)).core.reset(key);
    }
    0
}

/// `__gc` of a combined signal's handle: queues its key for freeing.
unsafe extern "C-unwind" fn handle_gc(l: L) -> c_int {
    // SAFETY: the handle's user value 1 is its state userdata, alive at least
    // until this finalizer ran (finalizers run in reverse order of creation).
    unsafe {
        let key = *(ffi::lua_touserdata(l, 1) as *const usize);
        ffi::lua_getiuservalue(l, 1, 1);
        let p = ffi::lua_touserdata(l, -1) as *mut State;
        if key != 0 && !p.is_null() && !(*p).closed {
            (*p).unreferenced.push(key);
        }
    }
    0
}

unsafe fn combine(l: L, mode: Mode) -> c_int {
    // SAFETY: a closure of the module; no value with a destructor is alive
    // across the calls that may raise.
    unsafe {
        let p = this(l);
        let n = ffi::lua_gettop(l);
        raw::check_stack(l, 4);
        ffi::lua_createtable(l, n, 0); // parts: the handle holds them, so their keys stay
        for i in 1..=n {
            if raw::is_nil_or_nan(l, i) {
                raw::arg_error(l, i, c"signal expected");
            }
            state::signal_key(l, i, true);
            ffi::lua_pushvalue(l, i);
            ffi::lua_rawseti(l, -2, i as ffi::lua_Integer);
        }
        let handle = ffi::lua_newuserdatauv(l, std::mem::size_of::<usize>(), 2) as *mut usize;
        handle.write(0);
        ffi::lua_insert(l, -2);
        ffi::lua_setiuservalue(l, -2, 2);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_setiuservalue(l, -2, 1);
        raw::metatable_once(l, c"cothread.combined", |l| {
            ffi::lua_pushcfunction(l, handle_gc);
            ffi::lua_setfield(l, -2, c"__gc".as_ptr());
        });
        ffi::lua_setmetatable(l, -2);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_insert(l, -2);
        ffi::lua_pushcclosure(l, combined, 2);
        // Nothing raises from here on: the keys exist and the parts are held.
        let parts: Vec<usize> = (1..=n).map(|i| state::signal_key(l, i, false).expect("made above")).collect();
        let key = (*p).core.combine(mode, &parts).expect("parts are valid keys");
        drop(parts);
        handle.write(key);
        (*p).combined += 1;
        1
    }
}

/// `onall(...)`: a signal that fires once all of `...` were notified.
pub unsafe extern "C-unwind" fn onall(l: L) -> c_int {
    // SAFETY: a closure of the module.
    unsafe { combine(l, Mode::All) }
}

/// `onany(...)`: a signal that fires once any of `...` was notified.
pub unsafe extern "C-unwind" fn onany(l: L) -> c_int {
    // SAFETY: a closure of the module.
    unsafe { combine(l, Mode::Any) }
}

/// Frees the combined signals whose functions were collected and that nothing
/// needs any more (freeing one may make its parts free to go).
///
/// # Safety
/// `p` is a live state.
pub unsafe fn free_unreferenced(p: *mut State) {
    // SAFETY: live state; only Rust code runs here, so no finalizer can add to
    // the list meanwhile.
    unsafe {
        let mut pending = std::mem::take(&mut (*p).unreferenced);
        loop {
            let before = pending.len();
            pending.retain(|&key| match (*p).core.free_combined(key) {
                Err(cothread::Error::Busy) => true,
                _ => {
                    (*p).combined -= 1;
                    false
                }
            });
            if pending.len() == before || pending.is_empty() {
                break;
            }
        }
        (*p).unreferenced = pending;
    }
}
