//! `cot_sched`: a scheduler, its ready queue and its postponed queue.

use std::ffi::c_void;
use std::os::raw::c_int;

use super::guard::{boolean, cot_sched, status, with_sched};
use super::task::{cot_task, task_raw, to_task};
use super::timeout::checked;
use crate::error::Error;
use crate::sched::{Sched, When};
use crate::time::Clock;

/// `when` for `cot_sched_schedule` and `cot_sched_notify`: the tail of the
/// ready queue.
pub const COT_LATER: c_int = 0;
/// `when` for `cot_sched_schedule` and `cot_sched_notify`: the head of the
/// ready queue.
pub const COT_NEXT: c_int = 1;

/// A clock: returns the current time in nanoseconds, never less than before.
pub type cot_clock_cb = Option<unsafe extern "C" fn(data: *mut c_void) -> u64>;

/// The `when` codes of the C ABI.
pub(crate) fn ready_when(when: c_int) -> Result<When, Error> {
    match when {
        COT_LATER => Ok(When::Later),
        COT_NEXT => Ok(When::Next),
        _ => Err(Error::Inval),
    }
}

/// Creates a scheduler on the monotonic clock (`CLOCK_MONOTONIC`, in
/// nanoseconds). Free it with `cot_sched_free`. A scheduler is not
/// thread-safe: use it from one thread at a time. Never returns NULL (it
/// aborts on out-of-memory, like the rest of the library).
#[unsafe(no_mangle)]
pub extern "C" fn cot_sched_new() -> *mut cot_sched {
    Box::into_raw(Box::new(cot_sched::new(Sched::new())))
}

/// Frees a scheduler and all its tasks, signals and combined signals; their
/// handles become invalid. NULL is accepted (returns 0). Returns `COT_EBUSY`
/// (freeing nothing) when called from one of the scheduler's callbacks.
///
/// # Safety
/// `sched` is NULL or from `cot_sched_new` and not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_free(sched: *mut cot_sched) -> c_int {
    if sched.is_null() {
        return 0;
    }
    // SAFETY: non-null and, by the caller's contract, valid.
    if unsafe { &*sched }.is_busy() {
        return Error::Busy.code();
    }
    // SAFETY: made by `Box::into_raw` in `cot_sched_new`, not yet freed, and
    // not in use (the busy flag is clear).
    drop(unsafe { Box::from_raw(sched) });
    0
}

/// Puts `task`, which must be in no queue, at the head (`COT_NEXT`) or tail
/// (`COT_LATER`) of the ready queue. Returns 1 when scheduled, 0 (and does
/// nothing) when the task is already in a queue, `COT_EINVAL` for a bad
/// scheduler, task or `when`.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_schedule(sched: *mut cot_sched, task: cot_task, when: c_int) -> c_int {
    // SAFETY: `sched` is NULL or live (the contract), which `with_sched` needs; the
    // task and its queue are checked keys.
    boolean(unsafe { with_sched(sched, |s| s.schedule(to_task(task)?, ready_when(when)?)) })
}

/// Postpones `task`, which must be in no queue, until the clock reaches
/// `time` (nanoseconds; a time already past makes it due at once). Returns 1,
/// 0 if it is already in a queue, or `COT_EINVAL`.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_postpone(sched: *mut cot_sched, task: cot_task, time: u64) -> c_int {
    // SAFETY: postponing only queues a key in the scheduler behind `sched`, NULL or
    // live by the contract: `with_sched`'s need.
    boolean(unsafe { with_sched(sched, |s| s.schedule(to_task(task)?, When::Postpone(time))) })
}

/// Postpones `task`, which must be in no queue, for `ns` nanoseconds from now
/// (0: due at once). Returns 1, 0 if it is already in a queue, or `COT_EINVAL`
/// (also for a bad `ns`: see `COT_FOREVER`).
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_delay(sched: *mut cot_sched, task: cot_task, ns: u64) -> c_int {
    // SAFETY: `with_sched` needs `sched` NULL or live; the contract says so. A delay
    // may read the clock, which runs under the busy flag.
    boolean(unsafe { with_sched(sched, |s| s.schedule(to_task(task)?, When::Delay(checked(ns)?))) })
}

/// Takes `task` out of the queue it is in. Returns 1, 0 if it was in none,
/// or `COT_EINVAL`.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_unschedule(sched: *mut cot_sched, task: cot_task) -> c_int {
    // SAFETY: the contract makes `sched` NULL or live, all `with_sched` asks to take
    // a task out of its queue.
    boolean(unsafe { with_sched(sched, |s| s.unschedule(to_task(task)?)) })
}

/// Returns 1 if `task` is in a queue (ready, a signal's, postponed), 0 if
/// not, or `COT_EINVAL`.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_is_scheduled(sched: *mut cot_sched, task: cot_task) -> c_int {
    // SAFETY: a read-only question to the scheduler behind `sched`, NULL or live as
    // this function's contract says.
    boolean(unsafe { with_sched(sched, |s| s.is_scheduled(to_task(task)?)) })
}

/// The head of the ready queue, or 0 when it is empty (or `sched` is bad).
/// Iterate with `cot_task_next`.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_ready_head(sched: *mut cot_sched) -> cot_task {
    // SAFETY: `with_sched` on `sched`, NULL or live by the contract; the head is
    // returned as a plain key.
    task_raw(unsafe { with_sched(sched, |s| Ok(s.ready_head())) })
}

/// Moves every postponed task whose wake time has come (clock >= wake time)
/// to the tail of the ready queue, in order of wake time, then of postponing.
/// Returns 1 if any moved, 0 if none, or `COT_EINVAL`.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_take_due(sched: *mut cot_sched) -> c_int {
    // SAFETY: `sched` is NULL or live (this function's contract); taking due tasks may
    // call the clock, which `with_sched`'s busy flag guards.
    boolean(unsafe { with_sched(sched, |s| Ok(s.take_due())) })
}

/// Stores the earliest wake time of the postponed queue in `*time` and
/// returns 1; returns 0 (leaving `*time` alone) when nothing is postponed, or
/// `COT_EINVAL`.
///
/// # Safety
/// `sched` is NULL or a live scheduler; `time` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_next_wake(sched: *mut cot_sched, time: *mut u64) -> c_int {
    if time.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: `with_sched` gets `sched` NULL or live from the contract; `time` is
    // written below, only once known non-NULL.
    match unsafe { with_sched(sched, |s| Ok(s.next_wake())) } {
        Ok(Some(t)) => {
            // SAFETY: `time` is non-null and writable by the caller's contract.
            unsafe { time.write(t) };
            1
        }
        Ok(None) => 0,
        Err(e) => e.code(),
    }
}

/// The scheduler's current time in nanoseconds (its clock), or 0 for a bad
/// `sched` or a call from inside the clock.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_now(sched: *mut cot_sched) -> u64 {
    // SAFETY: `cot_sched_now` may call the clock hook, under `with_sched`'s busy flag;
    // `sched` is NULL or live (the contract).
    unsafe { with_sched(sched, |s| Ok(s.now())) }.unwrap_or(0)
}

/// Makes the scheduler read the time from `clock(data)` (nanoseconds, never
/// decreasing); NULL restores `CLOCK_MONOTONIC`. Wake times already set are
/// kept as they are. The clock must not call the scheduler (such calls fail
/// with `COT_EBUSY`). Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `sched` is NULL or a live scheduler; `clock`, if set, may be called with
/// `data` whenever the scheduler needs the time, until it is replaced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_set_clock(sched: *mut cot_sched, clock: cot_clock_cb, data: *mut c_void) -> c_int {
    let clock = match clock {
        // SAFETY: the caller guarantees `f(data)` may be called.
        Some(f) => Clock::Custom(Box::new(move || unsafe { f(data) })),
        None => Clock::Monotonic,
    };
    // SAFETY: `sched` is NULL or live (for `with_sched`); the contract lets `clock`
    // be called with `data` until it is replaced.
    status(unsafe {
        with_sched(sched, |s| {
            s.set_clock(clock);
            Ok(())
        })
    })
}
