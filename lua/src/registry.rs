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
use crate::state::{SHRINK_AFTER, UV_ALIVE, push_field, push_schedulers, push_uv, this};

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
        let t = ffi::to_id(l, -1);
        ffi::lua_pop(l, 2);
        Task::from_raw(t)
    }
}

/// Is the registered thread `co` dead behind the scheduler's back (closed
/// by `coroutine.close`, or ended or failed under `coroutine.resume`)? A
/// registered thread is a new coroutine (its function on its stack) or one
/// suspended in a yield; a dead one is neither: status OK with nothing on
/// its stack, or an error status.
///
/// # Safety
/// `co` is a live thread.
#[inline]
pub unsafe fn is_dead(co: L) -> bool {
    // SAFETY: reads of a live thread's status and stack top.
    unsafe {
        match ffi::lua_status(co) {
            ffi::LUA_OK => ffi::lua_gettop(co) == 0,
            ffi::LUA_YIELD => false,
            _ => true,
        }
    }
}

/// `[-0, +0, m]` Forgets the registered thread `co` (task `task`), dead
/// (`is_dead`): with its parked operation, if any, which `unregister` alone
/// cannot find on an emptied stack.
///
/// # Safety
/// As `this`; `task` is the task of `co`.
pub unsafe fn unregister_dead(l: L, co: L, task: Task) {
    // SAFETY: as `this`; the engine, if any, is live.
    unsafe {
        let e = (*this(l)).engine;
        if !e.is_null() {
            engine::drop_parked(e, co);
        }
        unregister(l, co, task);
    }
}

/// `[-0, +0, m]` Forgets every registered thread that is dead (`is_dead`);
/// the number forgotten. `run` calls it before it would block with nothing
/// but I/O waits left, which a closed cothread would keep forever.
///
/// # Safety
/// As `this`.
pub unsafe fn forget_dead(l: L) -> usize {
    // SAFETY: as `this`: the alive table maps live threads to task handles;
    // it is read whole before any entry goes.
    unsafe {
        ffi::luaL_checkstack(l, 4, std::ptr::null());
        push_uv(l, UV_ALIVE);
        let mut dead = Vec::new();
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            let co = ffi::lua_tothread(l, -2);
            if !co.is_null() && is_dead(co) {
                let t = Task::from_raw(ffi::to_id(l, -1));
                dead.extend(t.map(|t| (co, t)));
            }
            ffi::lua_pop(l, 1);
        }
        // The threads stay reachable from the alive table (on the stack)
        // until each is unregistered.
        for &(co, t) in &dead {
            unregister_dead(l, co, t);
        }
        ffi::lua_pop(l, 1);
        dead.len()
    }
}

/// `[-0, +0, m]` Is the thread at `idx` registered with another scheduler
/// of this Lua state? (It looks in each one's table of registered threads:
/// a program has few schedulers.)
///
/// # Safety
/// As `this`; `idx` is a valid index.
pub unsafe fn held_elsewhere(l: L, idx: c_int) -> bool {
    // SAFETY: as `this`; the set holds only state userdata (`push_new`),
    // whose user value `UV_ALIVE` is its table of registered threads, and
    // whose `closed` stays readable after its `__gc` (a collected scheduler
    // may stay a key until the next cycle: it holds nothing any more); the
    // traversal reads and pops only what it pushed.
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        let top = ffi::lua_gettop(l);
        ffi::luaL_checkstack(l, 6, std::ptr::null());
        push_schedulers(l);
        let set = ffi::lua_gettop(l);
        let mut held = false;
        ffi::lua_pushnil(l);
        while !held && ffi::lua_next(l, set) != 0 {
            ffi::lua_pop(l, 1); // the value: true
            let other = ffi::lua_touserdata(l, -1) as *const crate::state::State;
            if ffi::lua_rawequal(l, -1, ffi::lua_upvalueindex(1)) == 0 && !(*other).closed {
                if ffi::lua_getiuservalue(l, -1, UV_ALIVE) == ffi::LUA_TTABLE {
                    ffi::lua_pushvalue(l, idx);
                    held = ffi::lua_rawget(l, -2) != ffi::LUA_TNIL;
                    ffi::lua_pop(l, 1);
                }
                ffi::lua_pop(l, 1); // the alive table
            }
        }
        ffi::lua_settop(l, top);
        held
    }
}

/// `[-0, +0, m]` Registers the thread `co` (at `idx`) as a new task in no queue.
///
/// # Safety
/// As `this`; `idx` holds `co`, which is not registered.
pub unsafe fn register(l: L, idx: c_int, co: L) -> Task {
    // SAFETY: a closure of the module (caller's contract).
    let p = unsafe { this(l) };
    // SAFETY: as `this`; the counters change after the table writes, which
    // may only fail for memory.
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        // A thread unregistered after its operation ended still holds the
        // results: its next resume gets them.
        let delivered = ffi::lua_status(co) == ffi::LUA_YIELD && (engine::is_delivered(co) || engine::settle(l, co));
        let task = (*p).core.task_new(co as usize | if delivered { OPERATION_BIT } else { 0 });
        push_uv(l, UV_ALIVE);
        ffi::lua_pushvalue(l, idx);
        ffi::push_id(l, task.to_raw());
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
    // SAFETY: as `this`; the engine, if any, is live while its state is,
    // and the task is freed before its table entry goes.
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
