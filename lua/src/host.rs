//! What a host that embeds Lua uses: `cothread.attach`, to run a scheduler
//! on the host's event loop, and `cothread.loop_wait`, to wait in a cothread
//! for a signal the host's C code notifies on that loop.

use std::ffi::c_int;

use cothread::When;

use crate::io::{Io, LoopRef, Outcome};
use crate::park::{self, cothread_of};
use crate::raw::{self, L, ffi};
use crate::state::this;

/// `true = cothread.attach(loop)`: this scheduler's I/O, timers and waits use
/// `loop`, a `cot_loop*` (light userdata) the host made, instead of a loop of
/// its own; `run` then drives the host's loop, so what the host placed on it
/// (handles, loop tasks, stackful coroutines) runs meanwhile. Only before the
/// scheduler first needs its loop. The host keeps the loop alive, and uses
/// it on this thread, until the scheduler is collected (its handles are
/// closed on the loop then).
pub unsafe extern "C-unwind" fn attach(l: L) -> c_int {
    // SAFETY: a closure of the module (upvalue 1: the state); the light
    // userdata is a live `cot_loop*` (the documented contract).
    unsafe {
        let p = this(l);
        ffi::luaL_checktype(l, 1, ffi::LUA_TLIGHTUSERDATA);
        let lp = ffi::lua_touserdata(l, 1) as *mut cothread::ffi::cot_loop;
        if lp.is_null() {
            raw::arg_error(l, 1, c"NULL loop");
        }
        if (*p).io.is_some() {
            raw::error(l, c"cothread.attach: this scheduler uses its event loop already");
        }
        let key = (*p).new_key();
        (*p).io = Some(Box::new(Io::on(key, LoopRef::Host(lp))));
        ffi::lua_pushboolean(l, 1);
        1
    }
}

/// `ok, err = cothread.loop_wait(signal [, timeout])`: suspends the calling
/// cothread until C code notifies `signal` (a light userdata, the key) on the
/// scheduler's event loop (`cot_loop_notify(loop, signal, when)`, from a
/// callback, a loop task or a stackful coroutine of an attached loop), at
/// most `timeout` seconds. `true`, or `false, "timeout"` / `"cancelled"`.
pub unsafe extern "C-unwind" fn loop_wait(l: L) -> c_int {
    // SAFETY: a closure of the module; the frame (the arguments) stays below
    // the park; nothing with a destructor is alive across the yield.
    unsafe {
        this(l);
        ffi::luaL_checktype(l, 1, ffi::LUA_TLIGHTUSERDATA);
        let key = ffi::lua_touserdata(l, 1) as usize;
        if key == 0 {
            raw::arg_error(l, 1, c"NULL signal");
        }
        let timeout = if raw::is_nil_or_nan(l, 2) { None } else { park::ns_of(ffi::luaL_checknumber(l, 2).max(0.0)) };
        ffi::lua_settop(l, 1);
        let Some((p, task)) = cothread_of(l) else {
            raw::error(l, c"cothread.loop_wait: only a cothread can wait for a loop signal");
        };
        let deadline = timeout.map(|ns| cothread::time::monotonic_ns().saturating_add(ns));
        let m = park::park(l, p, 0, loop_wait_k, move |io| {
            let id = io.begin_external(task, deadline);
            let notifier = io.notifier();
            let lp = io.lp();
            // A loop task waiting on the key stands in for the cothread.
            let h = lp.task_init(0, Box::new(move |_, _, _| notifier.done(id)));
            let placed = lp.task_schedule(h, When::Wait(key));
            io.on_end(
                id,
                Box::new(move |lp| {
                    let _ = lp.close(h, None);
                }),
            );
            placed.map(|_| id).map_err(|_| c"cannot wait on the event loop")
        });
        park::push_fail_false(l, m)
    }
}

unsafe extern "C-unwind" fn loop_wait_k(l: L, _status: c_int, ctx: ffi::lua_KContext) -> c_int {
    // SAFETY: in the continuation of `park`.
    unsafe {
        match park::unpark(l, ctx).1 {
            Outcome::Ready => {
                ffi::lua_pushboolean(l, 1);
                1
            }
            Outcome::Timeout => park::push_fail_false(l, c"timeout"),
            _ => park::push_fail_false(l, c"cancelled"),
        }
    }
}
