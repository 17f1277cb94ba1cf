//! What a host that embeds Lua uses: `cothread.attach`, to run a scheduler
//! on the host's event loop, and `cothread.loop_wait`, to wait in a cothread
//! for a signal the host's C code notifies on that loop.

use std::ffi::{CStr, c_int};

use cothread::When;
use cothread::reactor::Loop;

use crate::engine::{self, Engine, Fire, Frame, HostLoop, LoopRef, Next, OnEnd, Operation, Why};
use crate::park::{cothread_of, drive_raw};
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
        if !(*p).engine.is_null() {
            raw::error(l, c"cothread.attach: this scheduler uses its event loop already");
        }
        let key = (*p).new_key();
        (*p).engine = Box::into_raw(Box::new(Engine::new(
            engine::CoreRef::new(&raw mut (*p).core),
            key,
            LoopRef::Host(HostLoop::new(lp)),
        )));
        ffi::lua_pushboolean(l, 1);
        1
    }
}

/// `cothread.loop_wait`. Frame: 1 the key (a light userdata).
#[derive(Clone, Copy)]
struct LoopWait {
    deadline: Option<u64>,
}

impl Operation for LoopWait {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        let lua = &f.lua;
        Next::Done(match why {
            Why::Start | Why::Ready | Why::Closed => return Next::Event(self.deadline),
            Why::Done => {
                lua.push_bool(true);
                1
            }
            Why::Timeout => lua.fail_false(c"timeout"),
            Why::Cancelled => lua.fail_false(c"cancelled"),
            Why::Failed(m) => lua.fail_false(m),
        })
    }

    fn start(&mut self, f: &Frame, lp: &mut Loop, fire: Fire) -> Result<OnEnd, &'static CStr> {
        // Slot 1 holds the key, a checked light userdata.
        let key = f.lua.to_pointer(f.at(1)) as usize;
        // A loop task waiting on the key stands in for the cothread.
        let h = lp.task_init(0, Box::new(move |_, _, _| fire.fire()));
        let close: OnEnd = Box::new(move |lp| {
            let _ = lp.close(h, None);
        });
        match lp.task_schedule(h, When::Wait(key)) {
            Ok(_) => Ok(close),
            Err(_) => {
                close(lp);
                Err(c"cannot wait on the event loop")
            }
        }
    }
}

/// `ok, err = cothread.loop_wait(signal [, timeout])`: suspends the calling
/// cothread until C code notifies `signal` (a light userdata, the key) on the
/// scheduler's event loop (`cot_loop_notify(loop, signal, when)`, from a
/// callback, a loop task or a stackful coroutine of an attached loop), at
/// most `timeout` seconds. `true`, or `false, "timeout"` / `"cancelled"`.
pub unsafe extern "C-unwind" fn loop_wait(l: L) -> c_int {
    // SAFETY: a closure of the module (upvalue 1: the state); the arguments
    // are checked, then the frame (the key) is the function's own stack.
    unsafe {
        this(l);
        ffi::luaL_checktype(l, 1, ffi::LUA_TLIGHTUSERDATA);
        if ffi::lua_touserdata(l, 1).is_null() {
            raw::arg_error(l, 1, c"NULL signal");
        }
        let deadline = if ffi::lua_isnoneornil(l, 2) != 0 {
            None
        } else {
            Some(engine::deadline_in(engine::ns_of(raw::check_time(l, 2, 2))))
        };
        ffi::lua_settop(l, 1);
        if cothread_of(l).is_none() {
            raw::error(l, c"cothread.loop_wait: only a cothread can wait for a loop signal");
        }
        drive_raw(l, LoopWait { deadline })
    }
}
