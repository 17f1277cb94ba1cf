//! Driving an operation from the C function that starts it: the first step
//! runs in the function; when it must wait, a cothread is parked on its
//! scheduler's engine (a plain `lua_yield(l, 0)`: the engine resumes it
//! once, with the results), and any other caller blocks its thread.

use std::ffi::c_int;

use cothread::Task;

use crate::engine::{self, Frame, Next, Operation, STEP_SLOTS, Why};
use crate::lua::{Error, Lua, Ret, Thread, YIELD};
use crate::raw::{self, L, ffi};
use crate::state::{self, CURRENT, Quick, State};

/// The scheduler resuming the calling coroutine and its task, if the caller
/// is a cothread that may yield.
///
/// # Safety
/// `l` is the running thread of a C function.
pub unsafe fn cothread_of(l: L) -> Option<(*mut State, Task)> {
    let p = CURRENT.get();
    // SAFETY: CURRENT is set only around a resume by a live state, and
    // restored after it (a resume does not raise).
    unsafe {
        if p.is_null() || (*p).closed || (*p).running != l || ffi::lua_isyieldable(l) == 0 {
            return None;
        }
        Some((p, (*p).running_task?))
    }
}

/// Whether the caller of the running C function is a cothread that may
/// park (an operation it drives waits on the engine, not in `poll(2)`).
pub fn in_cothread(lua: &Lua) -> bool {
    // SAFETY: a `Lua` is a thread running a C function of the module (rule
    // 1 of `lua`); `cothread_of` only compares it and asks if it may yield.
    unsafe { cothread_of(lua.raw()) }.is_some()
}

/// Runs `op` for the C function whose whole stack is the operation's
/// frame: its results, or `YIELD` when the calling cothread parked (its
/// trampoline yields; the function then returns the results it is resumed
/// with). Outside cothreads the wait blocks this thread.
pub fn drive<O: Operation + Copy + 'static>(lua: &mut Lua, op: O) -> Ret {
    drive_from(lua, op, None)
}

/// `drive` for a C function that made the first step of `op` itself (with
/// what it had checked, sparing the step a second look) and must wait as
/// `first` says.
pub fn drive_waiting<O: Operation + Copy + 'static>(lua: &mut Lua, op: O, first: Next) -> Ret {
    drive_from(lua, op, Some(first))
}

/// `drive`, the first step's answer given or not.
fn drive_from<O: Operation + Copy + 'static>(lua: &mut Lua, mut op: O, mut first: Option<Next>) -> Ret {
    let l = lua.raw();
    // SAFETY: `lua` runs this C function (a body's handle); `lua` itself is
    // not used while the frame's handle is.
    let mut f = Frame::new(unsafe { Lua::from_raw(l) }, 0);
    let mut why = Why::Start;
    loop {
        f.lua.check_stack(STEP_SLOTS)?;
        let next = match first.take() {
            Some(next) => next,
            // A step that raised holding a payload left its error on the top.
            None => engine::step_guarded(&mut op, &mut f, why).map_err(|()| Error::Value)?,
        };
        if let Next::Done(n) = next {
            return Ok(n);
        }
        // SAFETY: `l` is the running thread of a C function of the module.
        let caller = unsafe { cothread_of(l) };
        why = match caller {
            // SAFETY: `l` is `p`'s running cothread (`cothread_of` says so);
            // `park` hands `op` (plain data) over to the engine.
            Some((p, task)) => match unsafe { park(&mut f, p, task, op, next) } {
                Ok(()) => return Ok(YIELD),
                Err(m) => Why::Failed(m),
            },
            None => op.block(&mut f, next),
        };
    }
}

/// `drive` for a C function not yet written as a body: returns what the
/// function returns (or yields).
///
/// # Safety
/// `l` is the running thread of a C function of the module, which returns
/// what this returns; the stack is `op`'s frame.
pub unsafe fn drive_raw<O: Operation + Copy + 'static>(l: L, op: O) -> c_int {
    // SAFETY: the contract: `l` runs the C function that returns (or
    // yields) what this returns, over `op`'s frame.
    unsafe { crate::lua::ret(l, drive(&mut Lua::from_raw(l), op)) }
}

/// Parks `op` of the running cothread (task `task` of `p`) on the engine.
unsafe fn park<O: Operation + 'static>(
    f: &mut Frame,
    p: *mut State,
    task: Task,
    op: O,
    next: Next,
) -> Result<(), &'static std::ffi::CStr> {
    let l = f.lua.raw();
    // SAFETY: `l` is `p`'s running cothread (checked by `cothread_of`), a
    // registered one: its scheduler keeps it alive while the engine holds
    // its record (unregistering it takes the record out: `cancel`).
    // `engine_of` may raise before the operation is boxed.
    unsafe {
        let e = state::engine_of(l, p);
        raw::check_stack(l, 1);
        engine::park(f, &*e, Thread::from_raw(l), task, Box::new(op), next)?;
        (*p).quick = Some(Quick::Park);
        Ok(())
    }
}
