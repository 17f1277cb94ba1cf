//! The scheduler functions of an instance: `schedule`, `unschedule`,
//! `scheduled`, `current`, `running`, `iready`, `notify`, `step`, `run`.

use std::ffi::c_int;

use cothread::{Task, When};

use crate::engine::{self, Block, Finish, OPERATION_BIT};
use crate::ops::{self, Place, Turn};
use crate::raw::{self, L, Status, ffi};
use crate::state::{self, CURRENT, Quick, State, this};
use crate::{registry, signal, time};

/// `[-0, +0, e]` The thread argument `arg`, which must be schedulable: a
/// suspended coroutine, or this scheduler's running cothread.
unsafe fn check_schedulable(l: L, arg: c_int) -> L {
    // SAFETY: called by `schedule`, a closure whose upvalue 1 is its state
    // (`this`); the thread is checked before it is read.
    unsafe {
        ffi::luaL_checktype(l, arg, ffi::LUA_TTHREAD);
        let co = ffi::lua_tothread(l, arg);
        if co != (*this(l)).running {
            match raw::status(l, co) {
                Status::Suspended => {}
                Status::Dead => raw::arg_error(l, arg, c"cannot schedule a dead coroutine"),
                Status::Running | Status::Normal => raw::arg_error(l, arg, c"cannot schedule a running coroutine"),
            }
        }
        co
    }
}

/// `schedule(thread [, when, ...])`: registers `thread` unless it is already.
pub unsafe extern "C-unwind" fn schedule(l: L) -> c_int {
    // SAFETY: Lua calls this closure (upvalue 1: its state); the state is
    // read in short expressions, none across `resolve_when` or a handler.
    unsafe {
        let p = this(l);
        let co = check_schedulable(l, 1);
        let registered = registry::task_of(l, 1);
        if registered.is_some_and(|t| (*p).core.is_scheduled(t) == Ok(true)) {
            ffi::lua_pushboolean(l, 0);
            return 1;
        }
        if registered.is_none() && registry::held_elsewhere(l, 1) {
            raw::arg_error(l, 1, c"coroutine scheduled by another scheduler");
        }
        match ops::resolve_when(l, 2) {
            Place::Core(when) => {
                // The running cothread keeps its task even while it is out of every queue.
                let task = match registered {
                    Some(t) => t,
                    None => registry::register(l, 1, co),
                };
                let _ = (*p).core.schedule(task, when);
                if let When::Wait(k) = when {
                    signal::hold(l, 3, k);
                }
            }
            Place::Custom(k) => {
                let handler = ffi::lua_gettop(l);
                ops::call_when(l, handler, 1, 3, k, false);
            }
        }
        ffi::lua_pushboolean(l, 1);
        1
    }
}

/// `unschedule(thread)`: takes `thread` out of its queue and forgets it.
pub unsafe extern "C-unwind" fn unschedule(l: L) -> c_int {
    // SAFETY: Lua calls this closure (upvalue 1: its state) with its
    // arguments; the thread argument is checked first, and the running
    // cothread keeps its task while its yield places it.
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTHREAD);
        let p = this(l);
        let co = ffi::lua_tothread(l, 1);
        let done = match registry::task_of(l, 1) {
            None => false,
            // The running cothread stays known: its yield operation places it.
            Some(t) if co == (*p).running => (*p).core.unschedule(t) == Ok(true),
            Some(t) => {
                registry::unregister(l, co, t);
                true
            }
        };
        signal::settle_signals(l);
        ffi::lua_pushboolean(l, done as c_int);
        1
    }
}

/// `scheduled(thread)`: is `thread` in a queue? (A cothread closed with
/// `coroutine.close` is forgotten here, and is not.)
pub unsafe extern "C-unwind" fn scheduled(l: L) -> c_int {
    // SAFETY: Lua calls this closure (upvalue 1: its state); the argument is
    // checked to be a thread before `lua_tothread` reads it.
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTHREAD);
        let p = this(l);
        let co = ffi::lua_tothread(l, 1);
        let mut task = registry::task_of(l, 1);
        if let Some(t) = task.filter(|_| registry::is_dead(co)) {
            registry::unregister_dead(l, co, t);
            task = None;
        }
        let yes = task.is_some_and(|t| (*p).core.is_scheduled(t) == Ok(true));
        ffi::lua_pushboolean(l, yes as c_int);
        1
    }
}

/// `[-0, +1, -]` Pushes the thread of `task`, or nil.
unsafe fn push_task(l: L, task: Option<Task>) {
    // SAFETY: a closure of the module; a task's data is its live thread.
    unsafe {
        match task.and_then(|t| state::thread_of(this(l), t)) {
            Some(co) => raw::push_thread(l, co),
            None => ffi::lua_pushnil(l),
        }
    }
}

/// `current()`: the head of the ready queue, or nil.
pub unsafe extern "C-unwind" fn current(l: L) -> c_int {
    // SAFETY: Lua calls this closure (upvalue 1: its state); `push_task`
    // pushes into the slot a C function always has.
    unsafe {
        push_task(l, (*this(l)).core.ready_head());
        1
    }
}

/// `running()`: the cothread this scheduler is resuming, or nil.
pub unsafe extern "C-unwind" fn running(l: L) -> c_int {
    // SAFETY: Lua calls this closure; `running` is null or the live thread
    // being resumed (set and cleared around `lua_resume`).
    unsafe {
        let co = (*this(l)).running;
        if co.is_null() {
            ffi::lua_pushnil(l)
        } else {
            raw::push_thread(l, co)
        }
        1
    }
}

/// `iready()`: an iterator over the ready queue, head first.
pub unsafe extern "C-unwind" fn iready(l: L) -> c_int {
    // SAFETY: Lua calls this closure; its upvalue 1 (the state) becomes the
    // iterator's, as `this` needs.
    unsafe {
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_pushcclosure(l, iready_next, 1);
        1
    }
}

/// The `iready` iterator: the thread after the control value (the head first).
unsafe extern "C-unwind" fn iready_next(l: L) -> c_int {
    // SAFETY: the iterator closure made by `iready` (upvalue 1: the state);
    // the control value is read only if it is a thread.
    unsafe {
        let p = this(l);
        let next = if ffi::lua_type(l, 2) == ffi::LUA_TTHREAD {
            registry::task_of(l, 2).and_then(|t| (*p).core.next(t).ok().flatten())
        } else {
            (*p).core.ready_head()
        };
        push_task(l, next);
        1
    }
}

/// `notify(signal [, when, ...])`: moves every waiter of `signal` as `when` says.
pub unsafe extern "C-unwind" fn notify(l: L) -> c_int {
    // SAFETY: Lua calls this closure; the core moves the waiters before any
    // Lua code (a plugin handler) runs.
    unsafe {
        let p = this(l);
        if raw::is_nil_or_nan(l, 1) {
            raw::arg_error(l, 1, c"signal expected");
        }
        let place = ops::resolve_when(l, 2);
        let key = signal::signal_key(l, 1, false);
        let done = match (place, key) {
            (Place::Core(when), Some(key)) => {
                let done = (*p).core.notify(key, when) == Ok(true);
                if let When::Wait(target) = when {
                    signal::hold(l, 3, target);
                }
                done
            }
            (Place::Custom(k), Some(key)) => notify_custom(l, key, k),
            (_, None) => false, // nobody ever waited on it
        };
        signal::settle_signals(l);
        ffi::lua_pushboolean(l, done as c_int);
        1
    }
}

/// Notify with a plugin `when` (its handler on the top of the stack, `k` fixed
/// arguments from index 3): each waiter, in order, is taken out and given to
/// `handler(thread, fixed...)`. Every waiter is handed over even if a handler
/// raises; the first error is raised afterwards.
unsafe fn notify_custom(l: L, key: usize, k: c_int) -> bool {
    // SAFETY: called by `notify` (a closure over the state); each waiter is
    // unregistered before its handler runs, so a handler that raises leaves
    // the core consistent.
    unsafe {
        let p = this(l);
        let handler = ffi::lua_gettop(l);
        // Move the waiters aside first: handlers may wait on `key` again.
        let aside = (*p).scratch_key();
        let done = (*p).core.notify(key, When::Wait(aside)) == Ok(true);
        let mut failed = false;
        let mut keep = handler; // the stack height between waiters
        while let Some(task) = (*p).core.signal_head(aside).ok().flatten() {
            let co = state::thread_of(p, task).expect("a registered thread");
            raw::check_stack(l, 2);
            raw::push_thread(l, co);
            registry::unregister(l, co, task);
            if ops::call_when(l, handler, keep + 1, 3, k, true) != ffi::LUA_OK && !failed {
                failed = true;
                ffi::lua_replace(l, keep + 1); // the first error takes the thread's slot
                keep += 1;
            }
            ffi::lua_settop(l, keep);
        }
        if failed {
            ffi::lua_error(l);
        }
        done
    }
}

/// `[-0, +0, e]` Raises unless called from outside this scheduler's cothreads.
unsafe fn check_outside(l: L) {
    // SAFETY: called by `step` and `run`, closures whose upvalue 1 is their
    // state (`this`).
    unsafe {
        if !(*this(l)).running.is_null() {
            raw::error(l, c"cannot step or run a scheduler from inside one of its own cothreads");
        }
    }
}

/// `step(...)`: resumes the ready head with `...`; returns what it produced.
pub unsafe extern "C-unwind" fn step(l: L) -> c_int {
    // SAFETY: Lua calls this closure (upvalue 1: its state), from outside
    // the scheduler's cothreads (checked first); the state is reached in
    // short expressions, never across a resume.
    unsafe {
        check_outside(l);
        signal::settle_signals(l);
        let p = this(l);
        if state::io_armed(p) > 0 {
            state::poll_io(p, Block::No);
        }
        time::take_due(l, p);
        resume_head(l, p, 0);
        ffi::lua_gettop(l)
    }
}

/// `run(...)`: steps until nothing is ready, postponed or waiting for I/O,
/// or a cothread halts.
///
/// Without I/O waits it steps one cothread at a time and calls `idle` when
/// only postponed cothreads are left. While cothreads wait for I/O it runs
/// as cosock does: one pass over the cothreads ready at its start, then the
/// event loop (without blocking if something is ready; else `idle` until the
/// earliest wake time if something is postponed; else blocking until an
/// event).
pub unsafe extern "C-unwind" fn run(l: L) -> c_int {
    // SAFETY: Lua calls this closure (upvalue 1: its state), from outside
    // its cothreads (checked); nothing of the state is held across a resume.
    unsafe {
        check_outside(l);
        signal::settle_signals(l);
        let p = this(l);
        loop {
            time::take_due(l, p);
            if state::io_armed(p) == 0 {
                match resume_head(l, p, 0) {
                    Some(Turn::Halt) => break,
                    Some(Turn::Continue) => {}
                    None => match (*p).core.next_wake() {
                        Some(wake) => call_idle(l, p, wake),
                        None => break,
                    },
                }
                continue;
            }
            // A pass: as many resumes as cothreads were ready when it began.
            let n = (*p).core.ready().count();
            if n > 0 {
                for _ in 0..n {
                    match resume_head(l, p, 0) {
                        Some(Turn::Halt) => return ffi::lua_gettop(l),
                        Some(Turn::Continue) => {}
                        None => break,
                    }
                }
                state::poll_io(p, Block::No);
            } else if let Some(wake) = (*p).core.next_wake() {
                call_idle(l, p, wake);
            } else if registry::forget_dead(l) == 0 {
                state::poll_io(p, Block::Forever);
            }
        }
        ffi::lua_gettop(l)
    }
}

/// `[-0, +0, e]` Calls the `idle` field with wake time `wake`. After a
/// replaced `idle`, the event loop is polled without blocking, so I/O goes on.
unsafe fn call_idle(l: L, p: *mut State, wake: u64) {
    // SAFETY: a closure of the module whose state is `p`.
    unsafe {
        state::push_field(l, c"idle");
        let default = ffi::lua_tocfunction(l, -1)
            .is_some_and(|f| std::ptr::fn_addr_eq(f, time::idle_default as ffi::lua_CFunction));
        time::push(l, p, wake);
        ffi::lua_call(l, 1, 0);
        if !default && state::io_armed(p) > 0 {
            state::poll_io(p, Block::No);
        }
    }
}

/// `[-n, +m, e]` Resumes the ready head with the values above `base`, leaving
/// the values it produced there. `None` (and nothing changed) if nothing is
/// ready. `p` is the state of the running closure (passed down: this is the
/// hot path).
///
/// A cothread parked by the engine whose operation is due (`OPERATION_BIT`
/// in its task's user value) is first finished by the engine: its step runs
/// here, on `l`, and leaves the results on its stack (or it waits again and
/// is not resumed); it is resumed with them, and the values above `base` are
/// dropped (doc/lua.md: "the values it is resumed with are ignored").
#[inline(always)]
unsafe fn resume_head(l: L, p: *mut State, base: c_int) -> Option<Turn> {
    // SAFETY: a closure of the module; the state is reached in short
    // expressions and never across `lua_resume`. A task's user value is its
    // live thread (registered), plus the operation bit.
    unsafe {
        let (task, data) = (*p).core.ready_head_data()?;
        let co = (data & !OPERATION_BIT) as L;
        let nargs = if data & OPERATION_BIT != 0 {
            let _ = (*p).core.set_data(task, co as usize);
            ffi::lua_settop(l, base);
            let (runner, co_) = (crate::lua::Lua::from_raw(l), crate::lua::Thread::from_raw(co));
            match crate::lua::or_raise(engine::finish(runner, (*p).engine.as_ref(), &co_), l) {
                Finish::Resume(n) => n,
                Finish::Parked => return Some(Turn::Continue),
            }
        } else {
            let nargs = ffi::lua_gettop(l) - base;
            if nargs > 0 {
                if ffi::lua_checkstack(co, nargs) == 0 {
                    raw::error(l, c"too many values to resume a cothread with");
                }
                ffi::lua_xmove(l, co, nargs);
            }
            nargs
        };
        if registry::is_dead(co) {
            // Closed by `coroutine.close` (or ended under `coroutine.resume`)
            // while registered: it ended.
            ffi::lua_settop(l, base);
            registry::unregister_dead(l, co, task);
            return Some(Turn::Continue);
        }
        (*p).running = co;
        (*p).running_task = Some(task);
        let mut nres: c_int = 0;
        // C functions of the module find the scheduler resuming them here.
        let status = CURRENT.with(|c| {
            let outer = c.replace(p);
            let status = ffi::lua_resume(co, l, nargs, &mut nres);
            c.set(outer);
            status
        });
        (*p).running = std::ptr::null_mut();
        let task = (*p).running_task.take();
        let quick = (*p).quick.take();
        if let (ffi::LUA_YIELD, Some(task)) = (status, task) {
            if let Some(q) = quick.filter(|_| nres == 0) {
                let (when, turn) = match q {
                    Quick::Yield => (When::Later, Turn::Continue),
                    Quick::Halt => (When::Next, Turn::Halt),
                    Quick::Park => (When::Wait((*(*p).engine).key()), Turn::Continue),
                };
                let _ = (*p).core.reschedule(task, when);
                return Some(turn);
            }
            if let Some(turn) = ops::quick_turn(co, nres, p, task) {
                return Some(turn);
            }
        }
        if status == ffi::LUA_YIELD || status == ffi::LUA_OK {
            // A C function has LUA_MINSTACK (20) free slots: check beyond that only.
            if nres > 8 && ffi::lua_checkstack(l, nres + 8) == 0 {
                ffi::lua_settop(co, 0);
                raw::error(l, c"too many values produced by a cothread");
            }
            ffi::lua_xmove(co, l, nres);
        } else {
            ffi::lua_xmove(co, l, 1); // the error object
        }
        Some(match (status, task) {
            (ffi::LUA_YIELD, Some(task)) => ops::dispatch(l, p, base, co, task),
            (ffi::LUA_YIELD, None) => Turn::Continue, // forgotten while running
            _ => {
                registry::finish(l, base, co, task, status == ffi::LUA_OK);
                Turn::Continue
            }
        })
    }
}
