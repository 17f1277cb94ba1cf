//! The scheduler functions of an instance: `schedule`, `unschedule`,
//! `scheduled`, `current`, `running`, `iready`, `notify`, `step`, `run`.

use std::ffi::c_int;

use cothread::{Task, When};

use crate::engine::{self, Block, Finish, OPERATION_BIT};
use crate::lua::Thread;
use crate::lua::{Error, L, Lua, Ret, Status, Type, ffi};
use crate::ops::{self, Place, Turn, builtin_at};
use crate::signal::{self, is_no_signal};
use crate::state::{BUDGET, Quick, State, resuming, with_state};
use crate::{registry, time};

/// The thread argument `arg`, which must be schedulable: a suspended
/// coroutine, or this scheduler's running cothread.
fn check_schedulable(lua: &Lua, st: &State, arg: c_int) -> Result<L, Error> {
    lua.check_type(arg, Type::Thread)?;
    let co = lua.to_thread(arg).unwrap_or(std::ptr::null_mut());
    if co != st.running.get() {
        match lua.thread_status(arg) {
            Some(Status::Suspended) => {}
            Some(Status::Dead) => return Err(Error::arg(arg, c"cannot schedule a dead coroutine")),
            _ => return Err(Error::arg(arg, c"cannot schedule a running coroutine")),
        }
    }
    Ok(co)
}

/// `schedule(thread [, when, ...])`: registers `thread` unless it is already.
fn schedule(lua: &mut Lua) -> Ret {
    with_state(lua, |lua, st| {
        let co = check_schedulable(lua, st, 1)?;
        let registered = registry::task_of(lua, 1);
        if registered.is_some_and(|t| st.core().is_scheduled(t) == Ok(true)) {
            lua.push_bool(false);
            return Ok(1);
        }
        if registered.is_none() && registry::held_elsewhere(lua, 1) {
            return Err(Error::arg(1, c"coroutine scheduled by another scheduler"));
        }
        match ops::resolve_when(lua, st, 2)? {
            Place::Core(when) => {
                // The running cothread keeps its task even while it is out of every queue.
                let task = match registered {
                    Some(t) => t,
                    None => registry::register(lua, st, 1, co)?,
                };
                let _ = st.core().schedule(task, when);
                if let When::Wait(k) = when {
                    signal::hold(lua, st, 3, k);
                }
            }
            Place::Custom(k) => {
                let handler = lua.top();
                ops::call_when(lua, handler, 1, 3, k)?;
            }
        }
        lua.push_bool(true);
        Ok(1)
    })
}
crate::upvalue_fn!(pub SCHEDULE: State = schedule);

/// `unschedule(thread)`: takes `thread` out of its queue and forgets it.
fn unschedule(lua: &mut Lua) -> Ret {
    lua.check_type(1, Type::Thread)?;
    with_state(lua, |lua, st| {
        let co = lua.to_thread(1).unwrap_or(std::ptr::null_mut());
        let done = match registry::task_of(lua, 1) {
            None => false,
            // The running cothread stays known: its yield operation places it.
            Some(t) if co == st.running.get() => st.core().unschedule(t) == Ok(true),
            Some(t) => {
                // Closed by `coroutine.close` while parked: its operation is
                // found by its thread (its stack lost the engine's token).
                if registry::is_dead_at(lua, 1) {
                    registry::unregister_dead(lua, st, co, t);
                } else {
                    registry::unregister(lua, st, co, t);
                }
                true
            }
        };
        signal::settle_signals(lua, st);
        lua.push_bool(done);
        Ok(1)
    })
}
crate::upvalue_fn!(pub UNSCHEDULE: State = unschedule);

/// `scheduled(thread)`: is `thread` in a queue? (A cothread closed with
/// `coroutine.close` is forgotten here, and is not.)
fn scheduled(lua: &mut Lua) -> Ret {
    lua.check_type(1, Type::Thread)?;
    with_state(lua, |lua, st| {
        let co = lua.to_thread(1).unwrap_or(std::ptr::null_mut());
        let mut task = registry::task_of(lua, 1);
        if let Some(t) = task.filter(|_| registry::is_dead_at(lua, 1)) {
            registry::unregister_dead(lua, st, co, t);
            task = None;
        }
        let yes = task.is_some_and(|t| st.core().is_scheduled(t) == Ok(true));
        lua.push_bool(yes);
        Ok(1)
    })
}
crate::upvalue_fn!(pub SCHEDULED: State = scheduled);

/// `[-0, +1, -]` Pushes the thread of `task`, or nil.
fn push_task(lua: &Lua, st: &State, task: Option<Task>) {
    match task.and_then(|t| st.thread_of(t)) {
        // SAFETY: a task's data is its registered thread, held by the alive
        // table, so live.
        Some(co) => unsafe { lua.push_thread(co) },
        None => lua.push_nil(),
    }
}

/// `current()`: the head of the ready queue, or nil.
fn current(lua: &mut Lua) -> Ret {
    with_state(lua, |lua, st| {
        let head = st.core().ready_head();
        push_task(lua, st, head);
        Ok(1)
    })
}
crate::upvalue_fn!(pub CURRENT: State = current);

/// `running()`: the cothread this scheduler is resuming, or nil.
fn running(lua: &mut Lua) -> Ret {
    with_state(lua, |lua, st| {
        let co = st.running.get();
        if co.is_null() {
            lua.push_nil();
        } else {
            // SAFETY: `running` is null or the live thread being resumed (set
            // and cleared around `lua_resume`), which the resume holds.
            unsafe { lua.push_thread(co) };
        }
        Ok(1)
    })
}
crate::upvalue_fn!(pub RUNNING: State = running);

/// `iready()`: an iterator over the ready queue, head first.
fn iready(lua: &mut Lua) -> Ret {
    // Its upvalue 1 (the state) becomes the iterator's, as `with_state` needs.
    lua.push_upvalue_fn(IREADY_NEXT, Lua::upvalue(1), 0);
    Ok(1)
}
crate::upvalue_fn!(pub IREADY: State = iready);

/// The `iready` iterator: the thread after the control value (the head first).
fn iready_next(lua: &mut Lua) -> Ret {
    with_state(lua, |lua, st| {
        let next = if lua.kind(2) == Type::Thread {
            registry::task_of(lua, 2).and_then(|t| st.core().next(t).ok().flatten())
        } else {
            st.core().ready_head()
        };
        push_task(lua, st, next);
        Ok(1)
    })
}
crate::upvalue_fn!(IREADY_NEXT: State = iready_next);

/// `notify(signal [, when, ...])`: moves every waiter of `signal` as `when` says.
fn notify(lua: &mut Lua) -> Ret {
    with_state(lua, |lua, st| {
        if is_no_signal(lua, 1) {
            return Err(Error::arg(1, c"signal expected"));
        }
        let place = ops::resolve_when(lua, st, 2)?;
        let key = signal::signal_key(lua, st, 1, false);
        let done = match (place, key) {
            (Place::Core(when), Some(key)) => {
                // The core moves the waiters before any Lua code runs.
                let done = st.core().notify(key, when) == Ok(true);
                if let When::Wait(target) = when {
                    signal::hold(lua, st, 3, target);
                }
                done
            }
            (Place::Custom(k), Some(key)) => notify_custom(lua, st, key, k)?,
            (_, None) => false, // nobody ever waited on it
        };
        signal::settle_signals(lua, st);
        lua.push_bool(done);
        Ok(1)
    })
}
crate::upvalue_fn!(pub NOTIFY: State = notify);

/// Notify with a plugin `when` (its handler on the top of the stack, `k` fixed
/// arguments from index 3): each waiter, in order, is taken out and given to
/// `handler(thread, fixed...)`. Every waiter is handed over even if a handler
/// raises; the first error is raised afterwards. Each waiter is unregistered
/// before its handler runs, so a handler that raises leaves the core
/// consistent.
fn notify_custom(lua: &mut Lua, st: &State, key: usize, k: c_int) -> Result<bool, Error> {
    let handler = lua.top();
    // Move the waiters aside first: handlers may wait on `key` again.
    let aside = st.scratch_key();
    let done = st.core().notify(key, When::Wait(aside)) == Ok(true);
    let mut failed = false;
    let mut keep = handler; // the stack height between waiters
    loop {
        let Some(task) = st.core().signal_head(aside).ok().flatten() else { break };
        let co = st.thread_of(task).expect("a registered thread");
        lua.check_stack(2)?;
        // SAFETY: a waiter's task data is its registered thread, held by the
        // alive table until it is unregistered, after this push.
        unsafe { lua.push_thread(co) };
        registry::unregister(lua, st, co, task);
        if ops::call_when(lua, handler, keep + 1, 3, k).is_err() && !failed {
            failed = true;
            lua.replace(keep + 1); // the first error takes the thread's slot
            keep += 1;
        }
        lua.set_top(keep);
    }
    if failed { Err(Error::Value) } else { Ok(done) }
}

/// Unless called from outside this scheduler's cothreads, an error.
fn check_outside(st: &State) -> Result<(), Error> {
    if st.running.get().is_null() {
        Ok(())
    } else {
        Err(Error::msg(c"cannot step or run a scheduler from inside one of its own cothreads"))
    }
}

/// `step(...)`: resumes the ready head with `...`; returns what it produced.
fn step(lua: &mut Lua) -> Ret {
    with_state(lua, |lua, st| {
        check_outside(st)?;
        signal::settle_signals(lua, st);
        if st.io_armed() > 0 {
            st.poll_io(Block::No);
        }
        time::take_due(lua, st)?;
        resume_head(lua, st, 0)?;
        Ok(lua.top())
    })
}
crate::upvalue_fn!(pub STEP: State = step);

/// `run(...)`: steps until nothing is ready, postponed or waiting for I/O,
/// or a cothread halts.
///
/// Without I/O waits it steps one cothread at a time and calls `idle` when
/// only postponed cothreads are left. While cothreads wait for I/O it runs
/// as cosock does: one pass over the cothreads ready at its start, then the
/// event loop (without blocking if something is ready; else `idle` until the
/// earliest wake time if something is postponed; else blocking until an
/// event).
fn run(lua: &mut Lua) -> Ret {
    with_state(lua, |lua, st| {
        check_outside(st)?;
        signal::settle_signals(lua, st);
        loop {
            time::take_due(lua, st)?;
            if st.io_armed() == 0 {
                match resume_head(lua, st, 0)? {
                    Some(Turn::Halt) => break,
                    Some(Turn::Continue) => {}
                    None => {
                        let Some(wake) = st.core().next_wake() else { break };
                        call_idle(lua, st, wake)?;
                    }
                }
                continue;
            }
            // A pass: as many resumes as cothreads were ready when it began.
            let n = st.core().ready().count();
            if n > 0 {
                for _ in 0..n {
                    match resume_head(lua, st, 0)? {
                        Some(Turn::Halt) => return Ok(lua.top()),
                        Some(Turn::Continue) => {}
                        None => break,
                    }
                }
                st.poll_io(Block::No);
                continue;
            }
            // (The core is not borrowed across the call: a binding of its own.)
            let wake = st.core().next_wake();
            if let Some(wake) = wake {
                call_idle(lua, st, wake)?;
            } else if registry::forget_dead(lua, st) == 0 {
                st.poll_io(Block::Forever);
            }
        }
        Ok(lua.top())
    })
}
crate::upvalue_fn!(pub RUN: State = run);

/// `[-0, +0, e]` Calls the `idle` field with wake time `wake`. After a
/// replaced `idle`, the event loop is polled without blocking, so I/O goes on.
fn call_idle(lua: &mut Lua, st: &State, wake: u64) -> Result<(), Error> {
    crate::state::push_field(lua, c"idle");
    let default = lua.to_cfunction(-1).is_some_and(|f| time::IDLE_DEFAULT.is(f));
    time::push(lua, st, wake);
    lua.call(1, 0)?;
    if !default && st.io_armed() > 0 {
        st.poll_io(Block::No);
    }
    Ok(())
}

// ===== the resume loop =====
//
// The hot path: it keeps the C API calls that move values between two
// threads and resume one (`lua_xmove`, `lua_resume`), each argued here.

/// The engine's part before `co` (its task marked with `OPERATION_BIT`)
/// resumes: see `resume_head`. Out of line: the plain resume is the hot
/// path.
#[inline(never)]
fn finish_due(lua: &mut Lua, st: &State, co: L) -> Result<Finish, Error> {
    // SAFETY: `lua` runs a C function of the module (`run` or `step`): the
    // runner the step needs, unused while it runs; `co` is the live thread
    // of a task (registered: the alive table holds it).
    let (runner, co) = unsafe { (Lua::from_raw(lua.raw()), Thread::from_raw(co)) };
    engine::finish(runner, st.engine(), &co)
}

/// `[-n, +m, e]` Resumes the ready head with the values above `base`, leaving
/// the values it produced there. `None` (and nothing changed) if nothing is
/// ready.
///
/// A cothread parked by the engine whose operation is due (`OPERATION_BIT`
/// in its task's user value) is first finished by the engine: its step runs
/// here, on `lua`, and leaves the results on its stack (or it waits again
/// and is not resumed); it is resumed with them, and the values above
/// `base` are dropped (doc/lua.md: "the values it is resumed with are
/// ignored").
#[inline(always)]
fn resume_head(lua: &mut Lua, st: &State, base: c_int) -> Result<Option<Turn>, Error> {
    let l = lua.raw();
    let Some((task, data)) = st.core().ready_head_data() else { return Ok(None) };
    // A task's user value is its registered thread (live: the alive table
    // holds it), plus the operation bit.
    let co = (data & !OPERATION_BIT) as L;
    let nargs = if data & OPERATION_BIT != 0 {
        let _ = st.core().set_data(task, co as usize);
        lua.set_top(base);
        match finish_due(lua, st, co)? {
            Finish::Resume(n) => n,
            Finish::Parked => return Ok(Some(Turn::Continue)),
        }
    } else {
        let nargs = lua.top() - base;
        if nargs > 0 {
            // SAFETY: `co` is live (above); growing a stack raises nothing.
            if unsafe { ffi::lua_checkstack(co, nargs) } == 0 {
                return Err(Error::msg(c"too many values to resume a cothread with"));
            }
            // SAFETY: `co` is a suspended thread of this Lua state with room
            // for the `nargs` values on the top of `lua` (checked above).
            unsafe { ffi::lua_xmove(l, co, nargs) };
        }
        nargs
    };
    // SAFETY: `co` is live (above).
    if unsafe { registry::is_dead(co) } {
        // Closed by `coroutine.close` (or ended under `coroutine.resume`)
        // while registered: it ended.
        lua.set_top(base);
        registry::unregister_dead(lua, st, co, task);
        return Ok(Some(Turn::Continue));
    }
    st.running.set(co);
    st.running_task.set(Some(task));
    st.budget.set(BUDGET);
    let mut nres: c_int = 0;
    // SAFETY: `co` is live and resumable (not dead: checked; a new or
    // yielded coroutine), with its arguments on its stack; `lua_resume`
    // catches every error of the coroutine (it returns a status).
    // C functions of the module find the scheduler resuming them here.
    let status = resuming(st, || unsafe { ffi::lua_resume(co, l, nargs, &mut nres) });
    st.running.set(std::ptr::null_mut());
    let task = st.running_task.take();
    let quick = st.quick.take();
    if let (ffi::LUA_YIELD, Some(task)) = (status, task) {
        if let Some(q) = quick.filter(|_| nres == 0) {
            let (when, turn) = match q {
                Quick::Yield => (When::Later, Turn::Continue),
                Quick::Halt => (When::Next, Turn::Halt),
                Quick::Park => (When::Wait(st.engine_key()), Turn::Continue),
            };
            let _ = st.core().reschedule(task, when);
            return Ok(Some(turn));
        }
        if let Some(turn) = quick_turn(co, nres, st, task) {
            return Ok(Some(turn));
        }
    }
    let ended = status == ffi::LUA_YIELD || status == ffi::LUA_OK;
    // A C function has LUA_MINSTACK (20) free slots: check beyond that only.
    if ended && nres > 8 && lua.check_stack(nres + 8).is_err() {
        // SAFETY: `co` is live (a task's thread, or the resumed one: the
        // runner's `lua_resume` held it); its values are dropped.
        unsafe { ffi::lua_settop(co, 0) };
        return Err(Error::msg(c"too many values produced by a cothread"));
    }
    // SAFETY: `co` is live (as above) and has just stopped with `nres`
    // values (or its error object) on its top; `lua` has room for them.
    unsafe { ffi::lua_xmove(co, l, if ended { nres } else { 1 }) };
    Ok(Some(match (status, task) {
        (ffi::LUA_YIELD, Some(task)) => ops::dispatch(lua, st, base, co, task)?,
        (ffi::LUA_YIELD, None) => Turn::Continue, // forgotten while running
        _ => {
            // SAFETY: `co` is registered as `task`, or was until it ran (then
            // the runner's resume still holds it: it is `co`'s caller).
            unsafe { registry::finish(lua, st, base, co, task, status == ffi::LUA_OK)? };
            Turn::Continue
        }
    }))
}

/// The hot path: a cothread that yielded just `yield` or `halt` (no produced
/// values) is placed without moving anything off its stack. `None` for any
/// other yield.
#[inline]
fn quick_turn(co: L, nres: c_int, st: &State, task: Task) -> Option<Turn> {
    if nres != 1 {
        return None;
    }
    // SAFETY: the resume loop drives `co`, live (a task's thread) and just
    // yielded: what `from_raw` asks of a thread the caller runs.
    let mut co = unsafe { Lua::from_raw(co) };
    let (when, turn) = match builtin_at(&co, -1, st)? {
        crate::builtin::Builtin::Yield => (When::Later, Turn::Continue),
        crate::builtin::Builtin::Halt => (When::Next, Turn::Halt),
        _ => return None,
    };
    co.pop(1); // a resume ignores it anyway
    let _ = st.core().reschedule(task, when);
    Some(turn)
}
