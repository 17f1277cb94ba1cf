//! The registered cothreads: a registered thread is a core task whose user
//! value is its `lua_State*`; the `alive` table (`UV_ALIVE`) maps the thread
//! to the task handle and keeps the thread alive. Registering, forgetting
//! (which also leaves a parked operation and lets go of signal values), and
//! the end of a cothread (`finish`: its values go through `trap` or `error`).

use std::ffi::c_int;

use cothread::Task;

use crate::engine::{self, OPERATION_BIT};
use crate::lua::ffi::LUA_MULTRET;
use crate::lua::{Error, L, Lua, Ret, Thread, Type};
use crate::signal::settle_signals;
use crate::state::{SHRINK_AFTER, State, UV_ALIVE, push_field, push_schedulers, push_uv, set_uv};

/// `[-0, +0, m]` The task of the thread at `idx`, if registered.
pub fn task_of(lua: &mut Lua, idx: c_int) -> Option<Task> {
    let idx = lua.abs(idx);
    push_uv(lua, UV_ALIVE);
    lua.push_value(idx);
    lua.get_table(-2);
    let t = lua.to_id(-1);
    lua.pop(2);
    Task::from_raw(t)
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
    use crate::lua::ffi;
    // SAFETY: the contract; reads of its status and stack top.
    unsafe {
        match ffi::lua_status(co) {
            ffi::LUA_OK => ffi::lua_gettop(co) == 0,
            ffi::LUA_YIELD => false,
            _ => true,
        }
    }
}

/// Is the thread at `idx` dead (`is_dead`)?
pub fn is_dead_at(lua: &Lua, idx: c_int) -> bool {
    // SAFETY: the thread is held by its slot while `lua` is borrowed.
    lua.to_thread(idx).is_some_and(|co| unsafe { is_dead(co) })
}

/// `[-0, +0, m]` Forgets the registered thread `co` (task `task`), dead
/// (`is_dead`): with its parked operation, if any, which `unregister` alone
/// cannot find on an emptied stack.
pub fn unregister_dead(lua: &mut Lua, st: &State, co: L, task: Task) {
    if let Some(e) = st.engine() {
        engine::drop_parked(e, co);
    }
    unregister(lua, st, co, task)
}

/// `[-0, +0, m]` Forgets every registered thread that is dead (`is_dead`);
/// the number forgotten. `run` calls it before it would block with nothing
/// but I/O waits left, which a closed cothread would keep forever.
pub fn forget_dead(lua: &mut Lua, st: &State) -> usize {
    push_uv(lua, UV_ALIVE);
    let mut dead = Vec::new();
    lua.each(-1, |lua| {
        if is_dead_at(lua, -2) {
            let t = Task::from_raw(lua.to_id(-1));
            dead.extend(t.zip(lua.to_thread(-2)));
        }
        true
    });
    // The threads stay reachable from the alive table (on the stack)
    // until each is unregistered.
    for &(t, co) in &dead {
        unregister_dead(lua, st, co, t);
    }
    lua.pop(1);
    dead.len()
}

/// `[-0, +0, m]` Is the thread at `idx` registered with another scheduler
/// of this Lua state? (It looks in each one's table of registered threads:
/// a program has few schedulers.)
pub fn held_elsewhere(lua: &mut Lua, idx: c_int) -> bool {
    let idx = lua.abs(idx);
    push_schedulers(lua);
    let mut held = false;
    lua.each(-1, |lua| {
        // A collected scheduler may stay a key until the next cycle: it
        // holds nothing any more.
        let other = !lua.raw_equal(-2, Lua::upvalue(1)) && lua.test_udata::<State>(-2).is_some();
        if other && lua.get_uservalue(-2, UV_ALIVE) == Type::Table {
            held = lua.with_key(-1, idx, |_, t| t != Type::Nil);
        }
        !held
    });
    lua.pop(1);
    held
}

/// `[-0, +0, m]` Registers the thread `co` (at `idx`) as a new task in no
/// queue; `idx` holds `co`, which is not registered. An error if the last
/// step of a ticket it holds raised (`engine::settle`).
pub fn register(lua: &mut Lua, st: &State, idx: c_int, co: L) -> Result<Task, Error> {
    let idx = lua.abs(idx);
    // A thread unregistered after its operation ended still holds the
    // results: its next resume gets them.
    // SAFETY: `co` is the thread at `idx`, held there; `lua` runs a C
    // function of the module, the runner `settle` needs (`lua` unused while
    // it runs).
    let (t, runner) = unsafe { (Thread::from_raw(co), Lua::from_raw(lua.raw())) };
    let delivered = lua.thread_status(idx) == Some(crate::lua::Status::Suspended)
        && (engine::is_delivered(&t) || engine::settle(runner, &t)?);
    let task = st.core().task_new(co as usize | if delivered { OPERATION_BIT } else { 0 });
    push_uv(lua, UV_ALIVE);
    lua.push_value(idx);
    lua.push_id(task.to_raw());
    lua.set_table(-3);
    lua.pop(1);
    st.registered.set(st.registered.get() + 1);
    st.registered_peak.set(st.registered_peak.get().max(st.registered.get()));
    Ok(task)
}

/// `[-0, +0, m]` Forgets the registered thread `co`: frees its task (taking it
/// out of its queue) and lets the thread be collected. `task` is the task
/// of `co`.
pub fn unregister(lua: &mut Lua, st: &State, co: L, task: Task) {
    if st.running_task.get() == Some(task) {
        st.running_task.set(None);
    }
    if let Some(e) = st.engine() {
        // SAFETY: `co` is the live thread of `task` (registered: held by the
        // alive table).
        let co = unsafe { Thread::from_raw(co) };
        engine::cancel(lua, e, &co); // left while parked: nothing resumes it later
        e.forget(task);
    }
    if st.core().task_free(task).is_err() {
        return;
    }
    push_uv(lua, UV_ALIVE);
    // SAFETY: `co` is still in the alive table, so live.
    unsafe { lua.push_thread(co) };
    lua.push_nil();
    lua.set_table(-3);
    lua.pop(1);
    st.registered.set(st.registered.get() - 1);
    if st.registered.get() == 0 && st.registered_peak.get() > SHRINK_AFTER {
        // A table keeps its size after its entries go: start a fresh one.
        lua.new_table(0, 0);
        set_uv(lua, UV_ALIVE);
        st.registered_peak.set(0);
    }
    settle_signals(lua, st);
}

/// `[-?, +?, e]` A cothread ended (`ok`) or failed: forgets it, then its values
/// above `base` (results, or the error object) go through `trap[co]` (a dead
/// thread's entry is removed first) or, for an error without a trap, through
/// `error(err, co)`. What they return is what it produced.
///
/// # Safety
/// `co` is live: registered as `task`, or held elsewhere.
pub unsafe fn finish(lua: &mut Lua, st: &State, base: c_int, co: L, task: Option<Task>, ok: bool) -> Result<(), Error> {
    // Pushed before it is unregistered, which lets it go.
    // SAFETY: the contract.
    unsafe { lua.push_thread(co) };
    let thread = lua.top();
    if let Some(task) = task {
        unregister(lua, st, co, task);
    }
    // The scheduler is consistent before any Lua function is called, so an
    // error raised there leaves it usable.
    push_field(lua, c"trap");
    let trapped = lua.kind(-1) == Type::Table && {
        lua.push_value(thread);
        lua.get_table(-2);
        lua.remove(-2);
        !lua.is_nil(-1)
    };
    if !trapped {
        if ok {
            lua.pop(2); // the trap and the thread
            return Ok(());
        }
        lua.pop(1); // the trap
        push_field(lua, c"error");
        if is_lua_error(lua, -1) {
            lua.remove(-2); // its second parameter is a level, not the thread
        }
        let n = lua.top() - base - 1;
        lua.insert(base + 1); // error err [thread]
        return lua.call(n, LUA_MULTRET);
    }
    // SAFETY: the contract (`co` is live: the slot `thread` holds it too).
    if unsafe { is_dead(co) } {
        // It will not be trapped again: forget the entry, which on Lua 5.1
        // (no ephemerons) would keep a trap that refers to its thread, and
        // so the thread, alive for good.
        push_field(lua, c"trap");
        if lua.kind(-1) == Type::Table {
            lua.push_value(thread);
            lua.push_nil();
            lua.set_table(-3);
        }
        lua.pop(1);
    }
    let n = lua.top() - 2 - base;
    lua.insert(base + 1); // trap values... co
    lua.insert(base + 2); // trap co values...
    lua.push_bool(ok);
    lua.insert(base + 3); // trap co ok values...
    lua.call(n + 2, LUA_MULTRET)
}

/// `[-0, +0, m]` Is the value at `idx` the global `error`, Lua's own?
fn is_lua_error(lua: &mut Lua, idx: c_int) -> bool {
    let idx = lua.abs(idx);
    lua.push_globals();
    lua.get_field(-1, c"error");
    let same = lua.raw_equal(-1, idx);
    lua.pop(2);
    same
}

crate::cfn!(pub default_error = default_error_body);

/// The default `cothread.error(message, thread)`: raises `message`. A string
/// or a number gets the failed thread's traceback appended (as
/// `debug.traceback(thread, message)` writes it), so that the uncaught error
/// shows where the cothread failed, not only where `run` was called. Any
/// other error object is raised unchanged (the same table).
fn default_error_body(lua: &mut Lua) -> Ret {
    lua.set_top(2);
    if lua.kind(2) == Type::Thread && matches!(lua.kind(1), Type::String | Type::Number) && push_traceback(lua) {
        lua.push_value(2);
        lua.push_value(1);
        if lua.call(2, 1).is_ok() && lua.kind(-1) == Type::String {
            return Err(Error::Value);
        }
        lua.set_top(2);
    }
    lua.set_top(1);
    Err(Error::Value)
}

/// `[-0, +(0|1), m]` Pushes `debug.traceback` if the program left it there.
fn push_traceback(lua: &mut Lua) -> bool {
    lua.push_globals();
    let found = lua.get_field(-1, c"debug") == Type::Table && lua.get_field(-1, c"traceback") == Type::Function;
    if found {
        lua.replace(-3);
        lua.pop(1);
    } else {
        lua.set_top(2);
    }
    found
}
