//! Driving an operation from the C function that starts it: the first step
//! runs in the function; when it must wait, a cothread is parked on its
//! scheduler's engine (a plain `lua_yield(l, 0)`: the engine resumes it
//! once, with the results), and any other caller blocks its thread.

use std::ffi::c_int;

use cothread::Task;

use crate::engine::{self, Frame, Next, Operation, STEP_SLOTS, Why};
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

/// Runs `op` for the C function whose whole stack is the operation's frame,
/// and returns what the function returns: the results, or, for a parked
/// cothread, its yield (the function returns the results it is resumed
/// with).
///
/// # Safety
/// `l` is the running thread of a C function of the module; the stack is
/// `op`'s frame.
pub unsafe fn drive<O: Operation + Copy + 'static>(l: L, mut op: O) -> c_int {
    // No value with a destructor lives here: a step may raise, and the yield
    // longjmps (`op` is plain data; the payload slot is never filled here).
    // SAFETY: the contract (`l` runs this C function).
    let mut f = unsafe { Frame::new(l, 0) };
    let mut why = Why::Start;
    // SAFETY: as the contract says; `park` hands `op` over to the engine.
    unsafe {
        loop {
            raw::check_stack(l, STEP_SLOTS);
            let next = op.step(&mut f, why);
            if let Next::Done(n) = next {
                return n;
            }
            why = match cothread_of(l) {
                Some((p, task)) => match park(l, p, task, op, next) {
                    Ok(()) => return ffi::lua_yield(l, 0),
                    Err(m) => Why::Failed(m),
                },
                None => op.block(&mut f, next),
            };
        }
    }
}

/// Parks `op` of the running cothread (task `task` of `p`) on the engine.
unsafe fn park<O: Operation + 'static>(
    l: L,
    p: *mut State,
    task: Task,
    op: O,
    next: Next,
) -> Result<(), &'static std::ffi::CStr> {
    // SAFETY: `l` is `p`'s running cothread (checked by `cothread_of`);
    // `engine_of` may raise before the operation is boxed.
    unsafe {
        let e = state::engine_of(l, p);
        raw::check_stack(l, 1);
        engine::park(l, e, task, Box::new(op), next)?;
        (*p).quick = Some(Quick::Park);
        Ok(())
    }
}
