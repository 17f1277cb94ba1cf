//! `cot_promise` and `cot_future`: results settled once, from any thread,
//! awaited by callbacks, blocking waits, loop requests and tasks, and
//! stackful coroutines (`cot_coro_await`). Shared by the faces: a Lua
//! cothread, a C++ coroutine and C code may wait on one future.

use std::ffi::{CStr, c_void};
use std::os::raw::c_int;

use super::guard::{status, write_out};
use super::loop_::{cot_handle, cot_loop, lend, to_handle, with_loop};
use super::timeout::timeout;
use super::work::{cot_req, to_req};
use crate::error::{Error, Result};
use crate::future::{Future, Outcome, Payload, Promise};

/// The producing side of a future (opaque): settle it once with
/// `cot_promise_set` or `cot_promise_fail`. Made by `cot_promise_new`, copied
/// by `cot_promise_clone`, each handle freed by `cot_promise_free`; when the
/// last handle goes unsettled, the future settles as `COT_FUTURE_DROPPED`.
/// Every `cot_promise_*` function is safe from any thread.
pub struct cot_promise {
    promise: Promise,
}

/// The consuming side (opaque): read the result, wait for it. Made by
/// `cot_promise_new` or `cot_promise_future`, copied by `cot_future_clone`,
/// each handle freed by `cot_future_free`. Every `cot_future_*` function is
/// safe from any thread.
pub struct cot_future {
    pub(crate) future: Future,
}

impl cot_promise {
    /// A new C handle of `promise` (freed by `cot_promise_free`), for faces
    /// written in Rust that hand promises to C.
    pub fn into_raw(promise: Promise) -> *mut cot_promise {
        Box::into_raw(Box::new(cot_promise { promise }))
    }

    /// The promise behind a C handle; `None` for NULL.
    ///
    /// # Safety
    /// `p` is NULL or a live promise handle, which outlives the reference.
    pub unsafe fn get<'a>(p: *const cot_promise) -> Option<&'a Promise> {
        // SAFETY: `promise` needs `p` NULL or live, for as long as the reference is
        // used: this function's contract.
        unsafe { promise(p) }.ok()
    }
}

impl cot_future {
    /// A new C handle of `future` (freed by `cot_future_free`), for faces
    /// written in Rust that hand futures to C.
    pub fn into_raw(future: Future) -> *mut cot_future {
        new_future(future)
    }

    /// The future behind a C handle; `None` for NULL.
    ///
    /// # Safety
    /// `f` is NULL or a live future handle, which outlives the reference.
    pub unsafe fn get<'a>(f: *const cot_future) -> Option<&'a Future> {
        // SAFETY: `future` needs `f` NULL or live while the reference is used, which is
        // this function's contract.
        unsafe { future(f) }.ok()
    }
}

/// `cot_future_state`: not settled yet.
pub const COT_FUTURE_PENDING: c_int = 0;
/// `cot_future_state`: settled with a value (`cot_promise_set`).
pub const COT_FUTURE_VALUE: c_int = 1;
/// `cot_future_state`: settled with an error (`cot_promise_fail`).
pub const COT_FUTURE_ERROR: c_int = 2;
/// `cot_future_state`: every promise handle was freed unsettled.
pub const COT_FUTURE_DROPPED: c_int = 3;

/// Destroys a future's value when its last promise or future handle is freed,
/// on the thread that frees it.
pub type cot_value_dtor = Option<unsafe extern "C" fn(value: *mut c_void)>;

/// A waiter's callback: `future` is a handle lent for the call (clone it to
/// keep it).
pub type cot_future_cb = Option<unsafe extern "C" fn(future: *const cot_future, data: *mut c_void)>;

/// The callback of `cot_loop_future_wait`: `status` is 0 once the future is
/// settled, `COT_ECANCELED` if the request was cancelled.
pub type cot_future_wait_cb = Option<
    unsafe extern "C" fn(
        r#loop: *mut cot_loop,
        req: cot_req,
        future: *const cot_future,
        status: c_int,
        data: *mut c_void,
    ),
>;

/// A C value: the pointer and its destructor.
struct CValue {
    ptr: *mut c_void,
    dtor: cot_value_dtor,
}

// SAFETY: the pointer is opaque here; `cot_promise_set`'s caller allows it to
// be read and destroyed from any thread.
unsafe impl Send for CValue {}
// SAFETY: as above; only the pointer's value is shared.
unsafe impl Sync for CValue {}

impl Payload for CValue {
    fn as_ptr(&self) -> *mut c_void {
        self.ptr
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Drop for CValue {
    fn drop(&mut self) {
        if let Some(dtor) = self.dtor {
            // SAFETY: the setter gave the value and its destructor to the future.
            unsafe { dtor(self.ptr) }
        }
    }
}

/// The promise behind `p`.
///
/// # Safety
/// `p` is NULL or a live promise handle.
unsafe fn promise<'a>(p: *const cot_promise) -> Result<&'a Promise> {
    // SAFETY: NULL or live (caller's contract); `Promise` is thread-safe.
    unsafe { p.as_ref() }.map(|p| &p.promise).ok_or(Error::Inval)
}

/// The future behind `f`.
///
/// # Safety
/// `f` is NULL or a live future handle.
pub(crate) unsafe fn future<'a>(f: *const cot_future) -> Result<&'a Future> {
    // SAFETY: NULL or live (caller's contract); `Future` is thread-safe.
    unsafe { f.as_ref() }.map(|f| &f.future).ok_or(Error::Inval)
}

fn new_future(future: Future) -> *mut cot_future {
    Box::into_raw(Box::new(cot_future { future }))
}

/// Creates an unsettled promise and its future, stored in `*promise` and
/// `*future` (free each). Returns 0 or `COT_EINVAL` (a NULL out pointer).
///
/// # Safety
/// `promise` and `future` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_promise_new(promise: *mut *mut cot_promise, future: *mut *mut cot_future) -> c_int {
    if promise.is_null() || future.is_null() {
        return Error::Inval.code();
    }
    let (p, f) = Promise::new();
    // SAFETY: both writable (caller's contract).
    unsafe {
        promise.write(Box::into_raw(Box::new(cot_promise { promise: p })));
        future.write(new_future(f));
    }
    0
}

/// A new handle of the same promise (free it too). NULL for NULL.
///
/// # Safety
/// `p` is NULL or a live promise handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_promise_clone(p: *const cot_promise) -> *mut cot_promise {
    // SAFETY: `p` is NULL or a live promise handle (the contract): what `promise`
    // needs to clone it.
    match unsafe { promise(p) } {
        Ok(p) => Box::into_raw(Box::new(cot_promise { promise: p.clone() })),
        Err(_) => std::ptr::null_mut(),
    }
}

/// Frees a promise handle; NULL is ignored. When it was the last one and the
/// future is unsettled, the future settles as `COT_FUTURE_DROPPED`: its
/// waiters run, on this thread.
///
/// # Safety
/// `p` is NULL or a live promise handle, not used after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_promise_free(p: *mut cot_promise) {
    if !p.is_null() {
        // SAFETY: made by `Box::into_raw` here, freed once (caller's contract).
        drop(unsafe { Box::from_raw(p) });
    }
}

/// Settles the future with `value`: from now on it belongs to the future,
/// and `dtor(value)` (if not NULL) runs when the last promise or future
/// handle is freed, on that thread. The waiters run now, on this thread,
/// oldest first. Returns 0, `COT_EALREADY` if the future was settled already
/// (the value was not taken: it is still the caller's), `COT_EINVAL` for NULL.
///
/// # Safety
/// `p` is NULL or a live promise handle; `value` may be read, and `dtor`
/// called, on any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_promise_set(p: *const cot_promise, value: *mut c_void, dtor: cot_value_dtor) -> c_int {
    // SAFETY: `promise` gets `p`, NULL or live by the contract; `value` and `dtor` are
    // only stored, for any thread, as the contract allows.
    let Ok(p) = (unsafe { promise(p) }) else { return Error::Inval.code() };
    // Made only if taken: a refused value stays the caller's, undestroyed.
    status(p.set_with(|| Box::new(CValue { ptr: value, dtor })))
}

/// Settles the future with an error: `code` (negative, as `COT_E*` codes;
/// other values are refused) and a copy of `message` (NULL: empty). The
/// waiters run now, on this thread. Returns 0, `COT_EALREADY` if the future
/// was settled already, `COT_EINVAL` for NULL `p` or a code that is not
/// negative.
///
/// # Safety
/// `p` is NULL or a live promise handle; `message` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_promise_fail(
    p: *const cot_promise,
    code: c_int,
    message: *const std::ffi::c_char,
) -> c_int {
    // SAFETY: the contract makes `p` NULL or live, as `promise` needs; `message` is
    // read below, once known non-NULL.
    let Ok(p) = (unsafe { promise(p) }) else { return Error::Inval.code() };
    if code >= 0 {
        return Error::Inval.code();
    }
    // SAFETY: NULL or a C string (caller's contract).
    let message = if message.is_null() { c"" } else { unsafe { CStr::from_ptr(message) } };
    status(p.fail(code, message))
}

/// 1 if the future is settled, 0 if not, `COT_EINVAL` for NULL.
///
/// # Safety
/// `p` is NULL or a live promise handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_promise_settled(p: *const cot_promise) -> c_int {
    // SAFETY: `promise` on `p`, NULL or live by `cot_promise_settled`'s contract.
    unsafe { promise(p) }.map_or_else(Error::code, |p| c_int::from(p.is_settled()))
}

/// A new handle of the promise's future (free it). NULL for NULL.
///
/// # Safety
/// `p` is NULL or a live promise handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_promise_future(p: *const cot_promise) -> *mut cot_future {
    // SAFETY: `p` is NULL or live (the contract), `promise`'s requirement; the new
    // handle owns its own reference.
    unsafe { promise(p) }.map_or(std::ptr::null_mut(), |p| new_future(p.future()))
}

/// A new handle of the same future (free it too). NULL for NULL.
///
/// # Safety
/// `f` is NULL or a live future handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_future_clone(f: *const cot_future) -> *mut cot_future {
    // SAFETY: `future` on `f`, NULL or live by `cot_future_clone`'s contract.
    unsafe { future(f) }.map_or(std::ptr::null_mut(), |f| new_future(f.clone()))
}

/// Frees a future handle; NULL is ignored. Its waiters stay (a callback
/// registered through it still runs; cancel it first if it must not).
///
/// # Safety
/// `f` is NULL or a live future handle, not used after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_future_free(f: *mut cot_future) {
    if !f.is_null() {
        // SAFETY: made by `Box::into_raw` here, freed once (caller's contract).
        drop(unsafe { Box::from_raw(f) });
    }
}

/// What the future holds: `COT_FUTURE_PENDING`, `_VALUE`, `_ERROR` or
/// `_DROPPED`; `COT_EINVAL` for NULL.
///
/// # Safety
/// `f` is NULL or a live future handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_future_state(f: *const cot_future) -> c_int {
    // SAFETY: `f` is NULL or a live future handle, as `future` needs: the contract of
    // `cot_future_state`.
    unsafe { future(f) }.map_or_else(Error::code, |f| f.state() as c_int)
}

/// The result of a settled future. Returns 0 and stores the value in `*value`
/// (if not NULL); or returns the error's code and stores its message in
/// `*message` (if not NULL); or returns `COT_EDROPPED` (message: "promise
/// dropped without a result"). `COT_EBUSY` while pending, `COT_EINVAL` for
/// NULL. The value and the message stay valid while any handle of the future
/// or its promise lives.
///
/// # Safety
/// `f` is NULL or a live future handle; `value` and `message` are NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_future_result(
    f: *const cot_future,
    value: *mut *mut c_void,
    message: *mut *const std::ffi::c_char,
) -> c_int {
    // SAFETY: `future` needs `f` NULL or live: the contract. `value` and `message` are
    // written below, each after its NULL check.
    let Ok(f) = (unsafe { future(f) }) else { return Error::Inval.code() };
    let (code, v, m) = match f.outcome() {
        None => return Error::Busy.code(),
        Some(Outcome::Value(v)) => (0, v.as_ptr(), std::ptr::null()),
        Some(Outcome::Error { code, message, .. }) => (*code, std::ptr::null_mut(), message.as_ptr()),
        Some(Outcome::Dropped) => (Error::Dropped.code(), std::ptr::null_mut(), Error::Dropped.c_message().as_ptr()),
    };
    // SAFETY: NULL or writable (caller's contract).
    unsafe {
        if !value.is_null() {
            value.write(v);
        }
        if !message.is_null() {
            message.write(m);
        }
    }
    code
}

/// Blocks the calling thread until the future is settled, at most
/// `timeout_ns` nanoseconds (`COT_FOREVER`: no limit). Returns 0 once
/// settled, `COT_ETIMEDOUT`, or `COT_EINVAL` (NULL, a bad timeout). Never call it on a loop's
/// thread for a future that loop must settle.
///
/// # Safety
/// `f` is NULL or a live future handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_future_wait(f: *const cot_future, timeout_ns: u64) -> c_int {
    // SAFETY: `f` is NULL or live (the contract), `future`'s need; the wait blocks this
    // thread only, holding no loop.
    let Ok(f) = (unsafe { future(f) }) else { return Error::Inval.code() };
    status(timeout(timeout_ns).and_then(|t| f.wait(t)))
}

/// A C callback with its data, callable on any thread.
struct CCall<F> {
    cb: F,
    data: *mut c_void,
}

// SAFETY: the registering caller allows the callback, with its data, on any
// thread.
unsafe impl<F: Send> Send for CCall<F> {}

/// Calls `cb(future, data)` once the future is settled, on the thread that
/// settles it (inside `cot_promise_set`, `_fail` or the last
/// `cot_promise_free`). Returns 0 and stores a waiter id (never 0) in `*id`
/// (if not NULL) for `cot_future_cancel`; or, if the future is settled
/// already, calls `cb` now, stores 0 and returns 1. `COT_EINVAL` for NULL `f`
/// or `cb`.
///
/// # Safety
/// `f` is NULL or a live future handle; `id` is NULL or writable;
/// `cb(future, data)` may run on any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_future_on_ready(
    f: *const cot_future,
    cb: cot_future_cb,
    data: *mut c_void,
    id: *mut u64,
) -> c_int {
    // SAFETY: `future` on `f`, NULL or live as the contract says; `cb(future, data)`
    // may run on any thread, the contract allows it.
    let (Ok(fut), Some(cb)) = (unsafe { future(f) }, cb) else { return Error::Inval.code() };
    let call = CCall { cb, data };
    let lent = cot_future { future: fut.clone() };
    let waiter = fut.on_ready(Box::new(move |_| {
        let call = call;
        // SAFETY: the caller allowed this call on any thread; `lent` lives
        // through it.
        unsafe { (call.cb)(&lent, call.data) }
    }));
    // SAFETY: NULL or writable (caller's contract).
    unsafe { write_out(id, Ok(waiter.unwrap_or(0))) };
    c_int::from(waiter.is_none())
}

/// Removes a waiter of `cot_future_on_ready`: 0 if it had not run (it never
/// will), `COT_EBUSY` if it ran, is running, or was removed already,
/// `COT_EINVAL` for NULL or id 0.
///
/// # Safety
/// `f` is NULL or a live handle of the future the waiter was registered on.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_future_cancel(f: *const cot_future, id: u64) -> c_int {
    // SAFETY: `f` is NULL or a live handle of the waiter's future (the contract), which
    // `future` needs.
    let Ok(f) = (unsafe { future(f) }) else { return Error::Inval.code() };
    match id {
        0 => Error::Inval.code(),
        _ if f.cancel(id) => 0,
        _ => Error::Busy.code(),
    }
}

/// Waits, on the loop, for the future to settle: `cb(loop, req, future,
/// status, data)` then runs from `cot_loop_run` with status 0 (at the
/// earliest in the next iteration, also if it is settled already), or with
/// `COT_ECANCELED` after `cot_req_cancel`. The request keeps the loop alive
/// until `cb` ran, and holds its own handle of the future (`future` may be
/// freed meanwhile). Stores the request in `*req` (may be NULL). Returns 0 or
/// `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `f` is NULL or a live future handle; `cb`
/// may be called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_future_wait(
    r#loop: *mut cot_loop,
    f: *const cot_future,
    cb: cot_future_wait_cb,
    data: *mut c_void,
    req: *mut cot_req,
) -> c_int {
    // SAFETY: `f` is NULL or live, as `future` needs: `cot_loop_future_wait`'s
    // contract.
    let (Ok(fut), Some(cb)) = (unsafe { future(f) }, cb) else { return Error::Inval.code() };
    let me = r#loop;
    let lent = cot_future { future: fut.clone() };
    let after: crate::reactor::After = Box::new(move |lp, r, s| {
        let code = s.err().map_or(0, Error::code);
        // SAFETY: `me` wraps `lp` and outlives its requests; `cb` may be
        // called from the loop (the caller's contract).
        unsafe { lend(me, lp, || cb(me, r.to_raw(), &lent, code, data)) }
    });
    // SAFETY: `loop` is NULL or live (the contract), `with_loop`'s need; `after` calls
    // `cb`, which the contract lets the loop call.
    let r = unsafe { with_loop(r#loop, |l| Ok(l.future_wait(fut, after).to_raw())) };
    // SAFETY: NULL or writable (caller's contract).
    if req.is_null() { status(r.map(drop)) } else { unsafe { write_out(req, r) } }
}

/// Cancels a request that has not completed (a future wait, or work that has
/// not started: the same as `cot_work_cancel`): its callback still runs,
/// later, from `cot_loop_run`, with `COT_ECANCELED`. The future itself is
/// untouched. Returns 0, `COT_EBUSY` if it completed, started or was
/// cancelled already, `COT_EINVAL` for an unknown request.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_req_cancel(r#loop: *mut cot_loop, req: cot_req) -> c_int {
    // SAFETY: cancelling a request touches only `loop`, NULL or live by
    // `cot_req_cancel`'s contract, as `with_loop` needs.
    status(unsafe { with_loop(r#loop, |l| l.request_cancel(to_req(req)?)) })
}

/// The loop task awaits the future: its callback then runs with
/// `COT_WAKE_SETTLED` once it is settled, unless something else resumed the
/// task before (then it stops waiting; the future is untouched). Returns 0
/// or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `f` is NULL or a live future handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_task_future(r#loop: *mut cot_loop, task: cot_handle, f: *const cot_future) -> c_int {
    // SAFETY: `cot_loop_task_future`'s contract makes `f` NULL or live: `future`'s
    // need.
    let Ok(fut) = (unsafe { future(f) }) else { return Error::Inval.code() };
    // SAFETY: `with_loop` needs `loop` NULL or live, which the same contract gives;
    // `fut` is an owned reference.
    status(unsafe { with_loop(r#loop, |l| l.task_future(to_handle(task)?, fut)) })
}
