//! The registered cothreads: a registered thread is a core task whose user
//! value is its `lua_State*`; the `alive` table (`UV_ALIVE`) maps the thread
//! to the task handle and keeps the thread alive. Registering, forgetting
//! (which also leaves a parked operation and lets go of signal values), and
//! the end of a cothread (`finish`: its values go through `trap` or `error`).

use std::ffi::c_int;

use cothread::Task;

use crate::engine::{self, OPERATION_BIT};
use crate::raw::{self, L, ffi};
use crate::signal::settle_signals;
use crate::state::{SHRINK_AFTER, UV_ALIVE, push_field, push_uv, this};

/// `[-0, +0, m]` The task of the thread at `idx`, if registered.
///
/// # Safety
/// As `this`; `idx` is a valid index.
pub unsafe fn task_of(l: L, idx: c_int) -> Option<Task> {
    // SAFETY: as `this`.
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        push_uv(l, UV_ALIVE);
        ffi::lua_pushvalue(l, idx);
        ffi::lua_rawget(l, -2);
        let t = ffi::lua_tointegerx(l, -1, std::ptr::null_mut());
        ffi::lua_pop(l, 2);
        Task::from_raw(t as u64)
    }
}

/// `[-0, +0, m]` Registers the thread `co` (at `idx`) as a new task in no queue.
///
/// # Safety
/// As `this`; `idx` holds `co`, which is not registered.
pub unsafe fn register(l: L, idx: c_int, co: L) -> Task {
    // SAFETY: a closure of the module (caller's contract).
    let p = unsafe { this(l) };
    // SAFETY: as `this`; no reference into the state outlives its expression.
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        // A thread unregistered after its operation ended still holds the
        // results: its next resume gets them.
        let delivered = ffi::lua_status(co) == ffi::LUA_YIELD && (engine::is_delivered(co) || engine::settle(l, co));
        let task = (*p).core.task_new(co as usize | if delivered { OPERATION_BIT } else { 0 });
        push_uv(l, UV_ALIVE);
        ffi::lua_pushvalue(l, idx);
        ffi::lua_pushinteger(l, task.to_raw() as ffi::lua_Integer);
        ffi::lua_rawset(l, -3);
        ffi::lua_pop(l, 1);
        (*p).registered += 1;
        (*p).registered_peak = (*p).registered_peak.max((*p).registered);
        task
    }
}

/// `[-0, +0, m]` Forgets the registered thread `co`: frees its task (taking it
/// out of its queue) and lets the thread be collected.
///
/// # Safety
/// As `this`; `task` is the task of `co`.
pub unsafe fn unregister(l: L, co: L, task: Task) {
    // SAFETY: a closure of the module (caller's contract).
    let p = unsafe { this(l) };
    // SAFETY: as `this`; no reference into the state outlives its expression.
    unsafe {
        if (*p).running_task == Some(task) {
            (*p).running_task = None;
        }
        let e = (*p).engine;
        if !e.is_null() {
            engine::cancel(l, e, co); // left while parked: nothing resumes it later
            (*e).forget(task);
        }
        if (*p).core.task_free(task).is_err() {
            return;
        }
        push_uv(l, UV_ALIVE);
        raw::push_thread(l, co);
        ffi::lua_pushnil(l);
        ffi::lua_rawset(l, -3);
        ffi::lua_pop(l, 1);
        (*p).registered -= 1;
        if (*p).registered == 0 && (*p).registered_peak > SHRINK_AFTER {
            // A table keeps its size after its entries go: start a fresh one.
            ffi::lua_newtable(l);
            ffi::lua_setiuservalue(l, ffi::lua_upvalueindex(1), UV_ALIVE);
            (*p).registered_peak = 0;
        }
        settle_signals(l);
    }
}

/// `[-?, +?, e]` A cothread ended (`ok`) or failed: forgets it, then its values
/// above `base` (results, or the error object) go through `trap[co]` or, for an
/// error without a trap, through `error`. What they return is what it produced.
pub unsafe fn finish(l: L, base: c_int, co: L, task: Option<Task>, ok: bool) {
    // SAFETY: a closure of the module. The scheduler is consistent before any
    // Lua function is called, so an error raised there leaves it usable.
    unsafe {
        if let Some(task) = task {
            unregister(l, co, task);
        }
        raw::check_stack(l, 4);
        push_field(l, c"trap");
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            raw::push_thread(l, co);
            ffi::lua_gettable(l, -2);
            ffi::lua_remove(l, -2);
        } else {
            ffi::lua_pop(l, 1);
            ffi::lua_pushnil(l);
        }
        let n = ffi::lua_gettop(l) - 1 - base;
        if ffi::lua_isnoneornil(l, -1) == 0 {
            ffi::lua_insert(l, base + 1); // trap values...
            raw::push_thread(l, co);
            ffi::lua_insert(l, base + 2);
            ffi::lua_pushboolean(l, ok as c_int);
            ffi::lua_insert(l, base + 3); // trap co ok values...
            ffi::lua_call(l, n + 2, ffi::LUA_MULTRET);
        } else if ok {
            ffi::lua_pop(l, 1);
        } else {
            ffi::lua_pop(l, 1);
            push_field(l, c"error");
            ffi::lua_insert(l, base + 1); // error err
            ffi::lua_call(l, n, ffi::LUA_MULTRET);
        }
    }
}
