//! Work requests: blocking work on the loop's thread pool.

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use super::guard::{status, write_out};
use super::loop_::{cot_loop, lend, with_loop};
use super::pool::cot_pool;
use crate::error::{Error, Result};
use crate::reactor::{Pool, Request};

/// A request of a loop (work on the pool): a plain value, never 0, valid until
/// its callback ran.
pub type cot_req = u64;

/// Work run on a pool thread.
pub type cot_work_cb = Option<unsafe extern "C" fn(data: *mut c_void)>;

/// Runs on the loop once the work ran (`status` 0) or was cancelled
/// (`COT_ECANCELED`); exactly once per request.
pub type cot_after_work_cb =
    Option<unsafe extern "C" fn(r#loop: *mut cot_loop, req: cot_req, status: c_int, data: *mut c_void)>;

/// The user's work function and pointer, sent to a pool thread.
struct SendWork(unsafe extern "C" fn(*mut c_void), *mut c_void);

// SAFETY: the callers of `pool_work` promise that `work(data)` may run on
// another thread (documented on the C functions); nothing else touches these.
unsafe impl Send for SendWork {}

/// `work(data)` as pool work.
///
/// # Safety
/// `work(data)` may run on another thread, concurrently with the caller.
pub(crate) unsafe fn pool_work(work: unsafe extern "C" fn(*mut c_void), data: *mut c_void) -> crate::reactor::Work {
    let job = SendWork(work, data);
    Box::new(move || {
        let job = job;
        // SAFETY: allowed by the caller of `pool_work`.
        unsafe { (job.0)(job.1) }
    })
}

pub(crate) fn to_req(raw: cot_req) -> Result<Request> {
    Request::from_raw(raw).ok_or(Error::Inval)
}

/// Sets the number of threads of the loop's pool (default: the number of
/// cores). Only before the first `cot_work_submit`; `COT_EBUSY` after,
/// `COT_EINVAL` for 0.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_set_pool_size(r#loop: *mut cot_loop, threads: c_uint) -> c_int {
    if threads == 0 {
        return Error::Inval.code();
    }
    // SAFETY: `loop` is NULL or live (the contract), as `with_loop` needs;
    // the new pool is owned by the loop from here.
    status(unsafe { with_loop(r#loop, |l| l.set_pool(Pool::new(threads as usize))) })
}

/// Makes the loop run its work requests on `pool`, a pool made by
/// `cot_pool_new` that other loops and plain jobs may share, instead of a
/// pool of its own. Only before the loop's first `cot_work_submit` (or any
/// function that submits work): `COT_EBUSY` after, or if a pool was set
/// already (`cot_loop_set_pool_size` too). `COT_EINVAL` for NULL.
///
/// The loop takes its own reference to the pool's state: `cot_pool_free(pool)`
/// while the loop uses it is safe (the state lives until the loop is closed
/// too). Once the pool is stopped (`cot_pool_stop` or `cot_pool_free`), the
/// loop's queued and later work requests complete, on the loop, with
/// `COT_ECANCELED`; running ones complete normally.
///
/// # Safety
/// `loop` is NULL or a live loop; `pool` is NULL or a live pool.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_set_pool(r#loop: *mut cot_loop, pool: *mut cot_pool) -> c_int {
    // SAFETY: NULL or a live pool (the caller's contract); only its reference
    // count is touched.
    let Some(pool) = (unsafe { pool.as_ref() }) else { return Error::Inval.code() };
    let shared = pool.pool.clone();
    // SAFETY: `loop` is NULL or live by the contract; `shared` is an owned
    // reference, so nothing of `pool` is borrowed into the loop.
    status(unsafe { with_loop(r#loop, |l| l.set_pool(shared)) })
}

/// Runs `work(data)` on a thread of the loop's pool (started at the first
/// request), then `after(loop, req, status, data)` on the loop. `status` is
/// 0, `COT_ECANCELED` (cancelled, or the pool was stopped) or `COT_ENOMEM`
/// (no pool thread could start); `work` ran only with 0. The request keeps
/// the loop alive until `after` ran. Stores the request in `*req` (may be
/// NULL). Returns 0 or `COT_EINVAL` (NULL `work` or `after`).
///
/// # Safety
/// `loop` is NULL or a live loop; `work(data)` may run on another thread,
/// concurrently with the caller; `after` may be called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_work_submit(
    r#loop: *mut cot_loop,
    work: cot_work_cb,
    after: cot_after_work_cb,
    data: *mut c_void,
    req: *mut cot_req,
) -> c_int {
    let (Some(work), Some(after)) = (work, after) else { return Error::Inval.code() };
    let me = r#loop;
    // SAFETY: the submitter allowed `work(data)` on a pool thread.
    let run = unsafe { pool_work(work, data) };
    let done: crate::reactor::After = Box::new(move |lp, r, s| {
        let code = match s {
            Ok(()) => 0,
            Err(e) => e.code(),
        };
        // SAFETY: `me` wraps `lp` and outlives its requests; `after` may be
        // called from the loop (the submitter's contract).
        unsafe { lend(me, lp, || after(me, r.to_raw(), code, data)) }
    });
    // SAFETY: `loop` is NULL or live (the contract): what `with_loop` needs.
    let r = unsafe { with_loop(r#loop, |l| Ok(l.work_submit(run, done).to_raw())) };
    if req.is_null() {
        return status(r.map(drop));
    }
    // SAFETY: `req` is non-NULL (checked just above) and, by the contract,
    // writable.
    unsafe { write_out(req, r) }
}

/// Cancels a request whose work has not started: its `after` callback still
/// runs, later, from `cot_loop_run`, with `COT_ECANCELED`. Returns 0,
/// `COT_EBUSY` if the work started (or the request was cancelled already),
/// `COT_EINVAL` for an unknown request.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_work_cancel(r#loop: *mut cot_loop, req: cot_req) -> c_int {
    // SAFETY: cancelling touches only the loop, NULL or live by the
    // contract: `with_loop`'s whole requirement.
    status(unsafe { with_loop(r#loop, |l| l.request_cancel(to_req(req)?)) })
}
