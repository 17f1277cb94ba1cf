//! Signals: signal values mapped onto core keys, and the combined signals
//! `onall(...)` and `onany(...)`.
//!
//! A signal value is a core key: an odd integer from a counter. `keyof`
//! (weak keys) maps a value to its key for as long as the value lives, so a
//! combined signal, which holds its parts, always sees the same keys; `held`
//! references the value only while its key has waiters. Combined signals use
//! the core's keys (addresses, even), so the two kinds never collide.
//!
//! A combined signal is a Lua function (calling it resets it) whose upvalues
//! are the state and a small handle userdata holding the core key. When the
//! function is collected, the handle's `__gc` queues the key; the core signal
//! is freed once nothing waits on it and no other combined signal includes it.

use std::ffi::c_int;

use cothread::Mode;

use crate::raw::{self, L, ffi};
use crate::state::{SHRINK_AFTER, State, UV_HELD, UV_KEYOF, push_uv, push_weak_table, this};

// ===== signal values and their keys =====

/// `[-0, +0, m]` The core key of the signal value at `idx`: a combined signal of
/// this scheduler answers its own key; another value its key, made now if
/// `make` (otherwise `None` when it has none: nobody ever waited on it).
///
/// # Safety
/// As `this`; the value at `idx` is not nil or NaN.
pub unsafe fn signal_key(l: L, idx: c_int, make: bool) -> Option<usize> {
    // SAFETY: as `this`; the key maps are read and written in short
    // expressions, none across a Lua call.
    unsafe {
        let p = this(l);
        let idx = ffi::lua_absindex(l, idx);
        if let Some(k) = combined_key(l, idx, p) {
            return Some(k);
        }
        push_uv(l, UV_KEYOF);
        ffi::lua_pushvalue(l, idx);
        ffi::lua_rawget(l, -2);
        let k = ffi::lua_tointegerx(l, -1, std::ptr::null_mut()) as usize;
        ffi::lua_pop(l, 1);
        if k != 0 || !make {
            ffi::lua_pop(l, 1);
            return (k != 0).then_some(k);
        }
        let k = (*p).new_key();
        ffi::lua_pushvalue(l, idx);
        ffi::lua_pushinteger(l, k as ffi::lua_Integer);
        ffi::lua_rawset(l, -3);
        ffi::lua_pop(l, 1);
        Some(k)
    }
}

/// `[-0, +0, m]` References the signal value at `idx` (of key `k`, combined
/// signals included) while `k` has waiters. Call after placing a waiter on `k`.
///
/// # Safety
/// As `this`.
pub unsafe fn hold(l: L, idx: c_int, k: usize) {
    // SAFETY: as `this`; the hold count changes before the table write
    // (which may only fail for memory).
    unsafe {
        let p = this(l);
        if (*p).core.waiting(k) != Ok(true) {
            return; // nobody waits
        }
        let idx = ffi::lua_absindex(l, idx);
        push_uv(l, UV_HELD);
        if ffi::lua_rawgeti(l, -1, k as ffi::lua_Integer) == ffi::LUA_TNIL {
            ffi::lua_pushvalue(l, idx);
            ffi::lua_rawseti(l, -3, k as ffi::lua_Integer);
            (*p).held += 1;
        }
        ffi::lua_pop(l, 2);
    }
}

/// `[-0, +0, m]` Stops referencing the value of key `k` once it has no waiters.
///
/// # Safety
/// As `this`.
unsafe fn release(l: L, k: usize) {
    // SAFETY: as `this`; the count is read and written with no Lua call in
    // between.
    unsafe {
        let p = this(l);
        if (*p).core.waiting(k) != Ok(false) {
            return;
        }
        push_uv(l, UV_HELD);
        if ffi::lua_rawgeti(l, -1, k as ffi::lua_Integer) != ffi::LUA_TNIL {
            ffi::lua_pushnil(l);
            ffi::lua_rawseti(l, -3, k as ffi::lua_Integer);
            (*p).held -= 1;
        }
        ffi::lua_pop(l, 2);
    }
}

/// `[-0, +0, m]` Releases the values of the keys whose queues emptied, and
/// frees the combined signals whose functions were collected.
///
/// # Safety
/// As `this`.
pub unsafe fn settle_signals(l: L) {
    // SAFETY: as `this`; `pop_emptied` returns a copy, no borrow is held.
    unsafe {
        let p = this(l);
        if !(*p).unreferenced.is_empty() {
            free_unreferenced(p);
        }
        while let Some(k) = (*p).pop_emptied() {
            release(l, k);
        }
        // Tables keep their size when emptied: start afresh once nothing needs a
        // key (no waiter, no combined signal, and no key in use by a caller:
        // this runs only between operations).
        if (*p).held == 0 && (*p).combined == 0 && (*p).made > SHRINK_AFTER {
            push_weak_table(l);
            ffi::lua_setiuservalue(l, ffi::lua_upvalueindex(1), UV_KEYOF);
            ffi::lua_newtable(l);
            ffi::lua_setiuservalue(l, ffi::lua_upvalueindex(1), UV_HELD);
            (*p).made = 0;
        }
    }
}

// ===== combined signals =====

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
            signal_key(l, i, true);
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
        let parts: Vec<usize> = (1..=n).map(|i| signal_key(l, i, false).expect("made above")).collect();
        let key = (*p).core.combine(mode, &parts).expect("parts are valid keys");
        drop(parts);
        handle.write(key);
        (*p).combined += 1;
        1
    }
}

/// `onall(...)`: a signal that fires once all of `...` were notified.
pub unsafe extern "C-unwind" fn onall(l: L) -> c_int {
    // SAFETY: Lua calls this closure (upvalue 1: its state), which `combine`
    // needs.
    unsafe { combine(l, Mode::All) }
}

/// `onany(...)`: a signal that fires once any of `...` was notified.
pub unsafe extern "C-unwind" fn onany(l: L) -> c_int {
    // SAFETY: as `onall`, with the other mode.
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
