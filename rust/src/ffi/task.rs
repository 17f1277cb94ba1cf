//! `cot_task`: a task of a scheduler, with a user pointer.

use std::ffi::c_void;
use std::os::raw::c_int;

use super::guard::{cot_sched, status, with_sched, write_out};
use crate::error::{Error, Result};
use crate::sched::Task;

/// A task handle: a plain value, never 0, valid until `cot_task_free`. The
/// core stores a user pointer per task and never runs tasks itself: the
/// program takes the ready head and resumes it however it likes. A handle of
/// a freed task or of another scheduler is refused with `COT_EINVAL`.
pub type cot_task = u64;

pub(crate) fn to_task(raw: cot_task) -> Result<Task> {
    Task::from_raw(raw).ok_or(Error::Inval)
}

/// A task option as a `cot_task` (0 for none or an error).
pub(crate) fn task_raw(r: Result<Option<Task>>) -> cot_task {
    r.ok().flatten().map_or(0, Task::to_raw)
}

/// Creates a task carrying `data`, in no queue, and stores it in `*task`.
/// Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `sched` is NULL or a live scheduler; `task` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_task_new(sched: *mut cot_sched, data: *mut c_void, task: *mut cot_task) -> c_int {
    if task.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: `sched` is NULL or live (for `with_sched`) and `task` NULL or
    // writable (for `write_out`): this function's contract.
    unsafe { write_out(task, with_sched(sched, |s| Ok(s.task_new(data as usize).to_raw()))) }
}

/// Takes the task out of its queue and frees it; the handle becomes invalid
/// (the user pointer is not touched). Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_task_free(sched: *mut cot_sched, task: cot_task) -> c_int {
    // SAFETY: `with_sched` needs `sched` NULL or live, as the contract says;
    // the task is a key, checked by the scheduler.
    status(unsafe { with_sched(sched, |s| s.task_free(to_task(task)?)) })
}

/// Stores the task's user pointer in `*data`. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `sched` is NULL or a live scheduler; `data` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_task_data(sched: *mut cot_sched, task: cot_task, data: *mut *mut c_void) -> c_int {
    // SAFETY: the contract gives `sched` NULL or live and `data` NULL or
    // writable, which `with_sched` and `write_out` need.
    unsafe { write_out(data, with_sched(sched, |s| Ok(s.data(to_task(task)?)? as *mut c_void))) }
}

/// Replaces the task's user pointer. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_task_set_data(sched: *mut cot_sched, task: cot_task, data: *mut c_void) -> c_int {
    // SAFETY: `sched` is NULL or live (the contract); `data` is only stored,
    // never read through.
    status(unsafe { with_sched(sched, |s| s.set_data(to_task(task)?, data as usize)) })
}

/// The task after `task` in the queue it is in (the ready queue or a
/// signal's), or 0 at the end, when `task` is in no queue, or on bad input.
/// With `cot_sched_ready_head` or `cot_sched_signal_head`:
/// `for (t = cot_sched_ready_head(s); t; t = cot_task_next(s, t))`.
/// Do not change the queue while iterating it.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_task_next(sched: *mut cot_sched, task: cot_task) -> cot_task {
    // SAFETY: `with_sched` relies on `sched` being NULL or live, which is
    // this function's contract.
    task_raw(unsafe { with_sched(sched, |s| s.next(to_task(task)?)) })
}
