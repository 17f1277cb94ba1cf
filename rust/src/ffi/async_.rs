//! Async handles of a loop: wakeups sent from any thread.

use std::ffi::c_void;
use std::os::raw::c_int;

use super::guard::{status, write_out};
use super::loop_::{cot_handle, cot_handle_cb, cot_loop, handle_callback, inbox, with_loop};

/// An async callback. `data` is the handle's user pointer.
pub type cot_async_cb = cot_handle_cb;

/// Creates an async handle: after `cot_async_send`, `cb` runs on the loop's
/// thread. It is active (keeps `cot_loop_run` going) until closed. Stores it
/// in `*async_`. Returns 0 or `COT_EINVAL` (NULL `cb` or `async_`).
///
/// # Safety
/// `loop` is NULL or a live loop; `async_` is NULL or writable; `cb` may be
/// called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_async_init(
    r#loop: *mut cot_loop,
    cb: cot_async_cb,
    data: *mut c_void,
    async_: *mut cot_handle,
) -> c_int {
    let (Some(cb), false) = (cb, async_.is_null()) else { return crate::Error::Inval.code() };
    let f = handle_callback(r#loop, cb);
    // SAFETY: `loop` is NULL or live and `async_` non-NULL and writable (the
    // contract, checked above): what `with_loop` and `write_out` ask.
    unsafe { write_out(async_, with_loop(r#loop, |l| Ok(l.async_init(data as usize, f).to_raw()))) }
}

/// Wakes the loop and runs the handle's callback there: once for all the
/// sends made before it runs, and again for any send made after it started,
/// so no send goes unanswered. **Safe from any thread** (the loop must stay
/// alive meanwhile). Returns 0, or `COT_EINVAL` for a bad or closed handle.
///
/// # Safety
/// `loop` is NULL or a live loop (possibly running on another thread).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_async_send(r#loop: *mut cot_loop, async_: cot_handle) -> c_int {
    // SAFETY: `inbox` needs `loop` NULL or live, which the contract gives even
    // from another thread: it reads only the thread-safe inbox field.
    match unsafe { inbox(r#loop) } {
        Some(inbox) => status(inbox.send(async_)),
        None => crate::Error::Inval.code(),
    }
}
