//! `cot_coro_invoke`: a coroutine calls a function on another loop of its
//! group and parks, its own loop running on, until the answer comes back:
//! a post there, and a post back that wakes it.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::coro::wait_if;
use super::group::{Shared, check, cot_group};
use super::loop_::{cot_loop, lend, running};
use crate::error::Error;
use crate::reactor::{Loop, Remote};
use crate::sched::When;
use crate::stack::State;
use crate::stack::coro;

/// A function `cot_coro_invoke` calls on another loop: its result goes back
/// to the waiting coroutine.
pub type cot_invoke_cb = Option<unsafe extern "C" fn(r#loop: *mut cot_loop, data: *mut c_void) -> *mut c_void>;

/// An answer from another loop, where its asker waits for it.
#[derive(Default)]
struct Answer {
    /// 0: none yet; 1: `value` holds it; 2: the call was never made.
    state: std::sync::atomic::AtomicU8,
    value: AtomicUsize,
}

/// The call, on its way to the other loop; dropped unrun, it answers that
/// it was never made.
struct Call {
    f: unsafe extern "C" fn(*mut cot_loop, *mut c_void) -> *mut c_void,
    data: Shared,
    back: Option<(Remote, Arc<Answer>)>,
}

impl Call {
    fn run(mut self, lp: &mut Loop) {
        let p = running();
        // SAFETY: `p` is this loop's live wrapper, lent as `lp`; `f` may run
        // on it with `data` (`cot_coro_invoke`'s contract).
        let v = unsafe { lend(p, lp, || (self.f)(p, self.data.0)) };
        self.answer(1, v as usize);
    }

    fn answer(&mut self, state: u8, value: usize) {
        if let Some((remote, answer)) = self.back.take() {
            let key = Arc::as_ptr(&answer) as usize;
            answer.value.store(value, Ordering::Relaxed);
            answer.state.store(state, Ordering::Release);
            // The asker's loop gone: nobody waits any more.
            let _ = remote.post(move |lp| {
                let _ = lp.task_notify(key, When::Later);
            });
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.answer(2, 0);
    }
}

/// Calls `fn(loop, data)` on loop `index` of the group and parks the
/// running coroutine (its loop runs on) until the answer comes; stores
/// what `fn` returned in `*result` (if not NULL). Returns 0, `COT_EPIPE`
/// (that loop is shutting down or gone: `fn` did not run), `COT_ECANCELED`
/// (woken by `cot_coro_wake`: `fn` may still run, its answer is dropped),
/// `COT_EINVAL` (NULL group or `fn`, an index out of range) or `COT_EPERM`
/// outside coroutines. The coroutine's own loop is allowed: `fn` runs in a
/// later iteration.
///
/// # Safety
/// `group` is NULL or a live group; `fn` may be called on that loop's
/// thread with `data`; `result` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_invoke(
    group: *const cot_group,
    index: usize,
    r#fn: cot_invoke_cb,
    data: *mut c_void,
    result: *mut *mut c_void,
) -> c_int {
    // SAFETY: `group` is NULL or a live group: `cot_coro_invoke`'s contract.
    let g = match unsafe { check(group) } {
        Ok(g) => g,
        Err(e) => return e.code(),
    };
    let Some(f) = r#fn else { return Error::Inval.code() };
    let answer = Arc::new(Answer::default());
    let key = Arc::as_ptr(&answer) as usize;
    let mut posted = false;
    // Parks until the answer is there: woken by it (or by a stray notify of
    // its key, then parks again), or by `cot_coro_wake`.
    loop {
        let asked = wait_if(State::Waiting, |l, co| {
            if !posted {
                let call = Call { f, data: Shared(data), back: Some((l.remote(), answer.clone())) };
                g.post(index, move |lp| call.run(lp))?;
                posted = true;
            }
            if answer.state.load(Ordering::Acquire) != 0 {
                return Ok(((), false));
            }
            coro::arm_wait(l, co, key, None).map(|()| ((), true))
        });
        match asked.and_then(|(_, wake)| wake.map_or(Ok(()), coro::wait_result)) {
            Err(e) => return e.code(),
            Ok(()) => match answer.state.load(Ordering::Acquire) {
                0 => continue,
                1 => break,
                _ => return Error::Pipe.code(),
            },
        }
    }
    if !result.is_null() {
        // SAFETY: non-NULL and writable (the contract).
        unsafe { *result = answer.value.load(Ordering::Relaxed) as *mut c_void };
    }
    0
}
