//! What a host that embeds Lua uses: `cothread.attach`, to run a scheduler
//! on the host's event loop, and `cothread.loop_wait`, to wait in a cothread
//! for a signal the host's C code notifies on that loop.

use std::ffi::CStr;

use cothread::When;
use cothread::reactor::Loop;

use crate::engine::{self, Engine, Fire, Frame, HostLoop, LoopRef, Next, OnEnd, Operation, Why};
use crate::lua::{Error, Lua, Ret, Type};
use crate::park::{drive, in_cothread};
use crate::state::{State, with_state};

/// `true = cothread.attach(loop)`: this scheduler's I/O, timers and waits use
/// `loop`, a `cot_loop*` (light userdata) the host made, instead of a loop of
/// its own; `run` then drives the host's loop, so what the host placed on it
/// (handles, loop tasks, stackful coroutines) runs meanwhile. Only before the
/// scheduler first needs its loop. The host keeps the loop alive, and uses
/// it on this thread, until the scheduler is collected (its handles are
/// closed on the loop then).
fn attach(lua: &mut Lua) -> Ret {
    with_state(lua, |lua, st| {
        lua.check_type(1, Type::LightUserdata)?;
        let lp = lua.to_pointer(1) as *mut cothread::ffi::cot_loop;
        if lp.is_null() {
            return Err(Error::arg(1, c"NULL loop"));
        }
        if st.engine().is_some() {
            return Err(Error::msg(c"cothread.attach: this scheduler uses its event loop already"));
        }
        // SAFETY: the host keeps the loop alive and uses it on this thread
        // (the documented contract).
        let lp = unsafe { HostLoop::new(lp) };
        st.set_engine(|core, key| Engine::new(core, key, LoopRef::Host(lp)));
        lua.push_bool(true);
        Ok(1)
    })
}
crate::upvalue_fn!(pub ATTACH: State = attach);

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
fn loop_wait(lua: &mut Lua) -> Ret {
    with_state(lua, |lua, _| {
        lua.check_type(1, Type::LightUserdata)?;
        if lua.to_pointer(1).is_null() {
            return Err(Error::arg(1, c"NULL signal"));
        }
        let deadline = if lua.is_nil(2) { None } else { Some(engine::deadline_in(engine::ns_of(lua.check_time(2)?))) };
        lua.set_top(1);
        if !in_cothread(lua) {
            return Err(Error::msg(c"cothread.loop_wait: only a cothread can wait for a loop signal"));
        }
        drive(lua, LoopWait { deadline })
    })
}
crate::upvalue_fn!(pub LOOP_WAIT: State = loop_wait);
