//! Loop tasks: tasks of a loop's scheduler that await operations (a sleep,
//! work on the pool, a future: `cot_loop_task_future`) and can be scheduled, postponed or made to wait on a
//! signal meanwhile; the first reason to run wins.

use std::ffi::c_void;
use std::os::raw::c_int;

use super::guard::{boolean, status, write_out};
use super::loop_::{cot_handle, cot_loop, lent_callback, to_handle, with_loop};
use super::sched::ready_when;
use super::timeout::checked;
use super::work::{cot_work_cb, pool_work};
use crate::error::Error;
use crate::reactor::{Outcome, Wake};
use crate::sched::When;

/// A loop task's callback wake: scheduled for another reason than its
/// operation (it left the operation it awaited, if any).
pub const COT_WAKE_RESUMED: c_int = 0;
/// A loop task's callback wake: the sleep it awaited ended.
pub const COT_WAKE_SLEPT: c_int = 1;
/// A loop task's callback wake: the work it awaited ran.
pub const COT_WAKE_WORKED: c_int = 2;
/// A loop task's callback wake: the descriptor it polled is ready (`events`
/// says for what).
pub const COT_WAKE_READY: c_int = 3;
/// A loop task's callback wake: the poll handle it awaited was closed.
pub const COT_WAKE_CLOSED: c_int = 4;
/// A loop task's callback wake: the future it awaited (`cot_loop_task_future`)
/// is settled.
pub const COT_WAKE_SETTLED: c_int = 5;
/// A loop task's callback wake: the operation it awaited could not run;
/// `events` is the error: `COT_ENOMEM` (work, and no pool thread could
/// start) or `COT_ECANCELED` (the pool was stopped).
pub const COT_WAKE_FAILED: c_int = 6;

/// A loop task's callback: `wake` says why it runs (`COT_WAKE_*`); `events`
/// are the ready events for `COT_WAKE_READY`, 0 otherwise.
pub type cot_loop_task_cb = Option<
    unsafe extern "C" fn(r#loop: *mut cot_loop, task: cot_handle, wake: c_int, events: c_int, data: *mut c_void),
>;

/// The C codes of a wake: `(wake, events)`.
fn wake_code(w: Wake) -> (c_int, c_int) {
    match w {
        // Watches are not part of this ABI: a task placed none.
        Wake::Resumed | Wake::Watch(_) => (COT_WAKE_RESUMED, 0),
        Wake::Done(Outcome::Slept) => (COT_WAKE_SLEPT, 0),
        Wake::Done(Outcome::Worked) => (COT_WAKE_WORKED, 0),
        Wake::Done(Outcome::Ready(events)) => (COT_WAKE_READY, events as c_int),
        Wake::Done(Outcome::Closed) => (COT_WAKE_CLOSED, 0),
        Wake::Done(Outcome::Settled) => (COT_WAKE_SETTLED, 0),
        Wake::Done(Outcome::Failed(e)) => (COT_WAKE_FAILED, e.code()),
    }
}

/// Creates a loop task (a handle: close it with `cot_close`) in no queue;
/// `cb` runs each time it is resumed. Stores it in `*task`. Returns 0 or
/// `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `task` is NULL or writable; `cb` may be
/// called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_task_init(
    r#loop: *mut cot_loop,
    cb: cot_loop_task_cb,
    data: *mut c_void,
    task: *mut cot_handle,
) -> c_int {
    let (Some(cb), false) = (cb, task.is_null()) else { return Error::Inval.code() };
    let f = lent_callback(r#loop, move |me, h, wake: Wake, data| {
        let (wake, events) = wake_code(wake);
        // SAFETY: `cot_loop_task_init`'s contract lets the loop call `cb` on each wake.
        unsafe { cb(me, h, wake, events, data) }
    });
    // SAFETY: `loop` is NULL or live by the contract, which is what `with_loop` needs;
    // `f` wraps `cb`, callable from the loop (the contract too).
    let r = unsafe { with_loop(r#loop, |l| Ok(l.task_init(data as usize, f).to_raw())) };
    // SAFETY: `task` is NULL or writable (the contract); `write_out` checks NULL.
    unsafe { write_out(task, r) }
}

/// Puts the task at the head (`COT_NEXT`) or tail (`COT_LATER`) of the loop's
/// ready queue; it runs in the next iteration. A task awaiting an operation
/// leaves it when it runs (unless the operation completed first). Returns 1,
/// 0 if it is already in a queue, or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_task_schedule(r#loop: *mut cot_loop, task: cot_handle, when: c_int) -> c_int {
    // SAFETY: queueing a loop task needs only `loop` NULL or live (the contract), as
    // `with_loop` asks.
    boolean(unsafe { with_loop(r#loop, |l| l.task_schedule(to_handle(task)?, ready_when(when)?)) })
}

/// Makes the task wait on `signal` (any non-NULL key) until
/// `cot_loop_notify`, or until the operation it awaits completes. Returns 1,
/// 0 if it is already in a queue, or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_task_wait(r#loop: *mut cot_loop, task: cot_handle, signal: *const c_void) -> c_int {
    if signal.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: `signal` is only a key, never read through; `loop` is NULL or live by
    // the contract, as `with_loop` needs.
    boolean(unsafe { with_loop(r#loop, |l| l.task_schedule(to_handle(task)?, When::Wait(signal as usize))) })
}

/// Postpones the task for `ns` nanoseconds: a timeout for the operation it
/// awaits, or a plain delay. Returns 1, 0 if it is already in a queue, or
/// `COT_EINVAL` (also for a bad `ns`: see `COT_FOREVER`).
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_task_delay(r#loop: *mut cot_loop, task: cot_handle, ns: u64) -> c_int {
    // SAFETY: `with_loop` needs `loop` NULL or live: the contract. The delay arms a
    // timer of the loop, no C code runs here.
    boolean(unsafe { with_loop(r#loop, |l| l.task_schedule(to_handle(task)?, When::Delay(checked(ns)?))) })
}

/// Takes the task out of its queue (it keeps awaiting its operation, if
/// any). Returns 1, 0 if it was in none, or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_task_unschedule(r#loop: *mut cot_loop, task: cot_handle) -> c_int {
    // SAFETY: taking a task out of its queue touches only the loop, NULL or live by
    // this function's contract.
    boolean(unsafe { with_loop(r#loop, |l| l.task_unschedule(to_handle(task)?)) })
}

/// Moves every loop task waiting on `signal` to the head (`COT_NEXT`) or tail
/// (`COT_LATER`) of the ready queue, in order, O(1). Returns 1 if any moved,
/// 0 if none, or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_notify(r#loop: *mut cot_loop, signal: *const c_void, when: c_int) -> c_int {
    if signal.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: `loop` is NULL or live (the contract) for `with_loop`; notifying only
    // moves queued tasks, their callbacks run later from the loop.
    boolean(unsafe { with_loop(r#loop, |l| l.task_notify(signal as usize, ready_when(when)?)) })
}

/// The task awaits a sleep of `ns` nanoseconds: its callback then runs with
/// `COT_WAKE_SLEPT`, unless something else resumed it before. Call it from
/// the task's callback (or on a task in no queue). Returns 0 or `COT_EINVAL`
/// (bad task, one already awaiting, a bad `ns`: see `COT_FOREVER`).
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_task_sleep(r#loop: *mut cot_loop, task: cot_handle, ns: u64) -> c_int {
    // SAFETY: `with_loop` on `loop`, NULL or live as the contract says; the sleep's
    // callback is the task's, registered at its init.
    status(unsafe { with_loop(r#loop, |l| l.task_sleep(to_handle(task)?, checked(ns)?)) })
}

/// The task awaits `work(data)` on the pool: its callback then runs with
/// `COT_WAKE_WORKED`, unless something else resumed it before (then the work
/// is cancelled if it has not started), or with `COT_WAKE_FAILED` and the
/// error in `events` if the work could not run (`COT_ENOMEM`: no pool thread
/// could start; `COT_ECANCELED`: the pool was stopped). Returns 0 or
/// `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `work(data)` may run on another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_task_work(
    r#loop: *mut cot_loop,
    task: cot_handle,
    work: cot_work_cb,
    data: *mut c_void,
) -> c_int {
    let Some(work) = work else { return Error::Inval.code() };
    // SAFETY: the caller allowed `work(data)` on a pool thread.
    let run = unsafe { pool_work(work, data) };
    // SAFETY: `loop` is NULL or live (for `with_loop`); `run` calls `work(data)` on
    // a pool thread, which the contract allows.
    status(unsafe { with_loop(r#loop, |l| l.task_work(to_handle(task)?, run)) })
}

/// The task awaits readiness of poll handle `poll` (see `cot_poll_init`) for
/// `events`: its callback then runs with `COT_WAKE_READY` and the ready
/// events, or `COT_WAKE_CLOSED` if the handle is closed meanwhile, unless
/// something else resumed it before (then it stops waiting). One task waits on
/// a poll handle at a time (`COT_EBUSY` for a second); while tasks await it,
/// the handle's own callback is not used. Returns 0, `COT_EBUSY`, or
/// `COT_EINVAL` (bad task or handle, bad events); the system's refusal of
/// the descriptor as `cot_poll_start`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_task_poll(
    r#loop: *mut cot_loop,
    task: cot_handle,
    poll: cot_handle,
    events: c_int,
) -> c_int {
    let Ok(events) = u32::try_from(events) else { return Error::Inval.code() };
    // SAFETY: both handles are keys checked by the loop; `loop` itself is NULL or live
    // by the contract, `with_loop`'s need.
    status(unsafe { with_loop(r#loop, |l| l.task_poll(to_handle(task)?, to_handle(poll)?, events)) })
}
