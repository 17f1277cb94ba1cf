//! Timer handles of a loop.

use std::ffi::c_void;
use std::os::raw::c_int;

use super::guard::{status, write_out};
use super::loop_::{cot_handle, cot_handle_cb, cot_loop, handle_callback, to_handle, with_loop};
use super::timeout::checked;

/// A timer callback. `data` is the handle's user pointer.
pub type cot_timer_cb = cot_handle_cb;

/// Creates a stopped timer carrying `data`; stores it in `*timer`. Close it
/// with `cot_close`. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `timer` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_timer_init(r#loop: *mut cot_loop, data: *mut c_void, timer: *mut cot_handle) -> c_int {
    if timer.is_null() {
        return crate::Error::Inval.code();
    }
    // SAFETY: the contract makes `loop` NULL or live (for `with_loop`) and
    // `timer` NULL or writable (for `write_out`, which refuses NULL).
    unsafe { write_out(timer, with_loop(r#loop, |l| Ok(l.timer_init(data as usize).to_raw()))) }
}

/// Starts a timer, or restarts it if active: `cb` runs `timeout` ns after the
/// loop's cached time (`cot_loop_now`), then every `repeat` ns if `repeat` >
/// 0 (re-armed before the callback runs). A timer started from a timer
/// callback fires on a later iteration, even with timeout 0. Returns 0 or
/// `COT_EINVAL` (bad handle, NULL `cb`, a bad duration: see `COT_FOREVER`).
///
/// # Safety
/// `loop` is NULL or a live loop; `cb` may be called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_timer_start(
    r#loop: *mut cot_loop,
    timer: cot_handle,
    cb: cot_timer_cb,
    timeout: u64,
    repeat: u64,
) -> c_int {
    let Some(cb) = cb else { return crate::Error::Inval.code() };
    let me = r#loop;
    // The C function is the callback's identity: a restart with the same one
    // (from the callback, typically) reuses the wrapper instead of a new box.
    let tag = cb as usize;
    // SAFETY: `loop` is NULL or live (`with_loop`'s need); `handle_callback`
    // relies on `cb` being callable from the loop: both this contract's.
    status(unsafe {
        with_loop(r#loop, |l| {
            l.timer_start_with(to_handle(timer)?, checked(timeout)?, checked(repeat)?, tag, || handle_callback(me, cb))
        })
    })
}

/// Stops a timer; stopping a stopped timer is fine. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_timer_stop(r#loop: *mut cot_loop, timer: cot_handle) -> c_int {
    // SAFETY: stopping needs only the loop, NULL or live by the contract,
    // which is what `with_loop` asks.
    status(unsafe { with_loop(r#loop, |l| l.timer_stop(to_handle(timer)?)) })
}

/// Restarts a repeating timer with its repeat as timeout (nothing if the
/// repeat is 0). Returns 0, or `COT_EINVAL` if it was never started.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_timer_again(r#loop: *mut cot_loop, timer: cot_handle) -> c_int {
    // SAFETY: `with_loop` asks `loop` to be NULL or live: this function's
    // contract. The restart registers no new callback.
    status(unsafe { with_loop(r#loop, |l| l.timer_again(to_handle(timer)?)) })
}

/// Sets the repeat (ns) used from the next expiry on. Returns 0 or `COT_EINVAL`
/// (bad handle, a bad duration: see `COT_FOREVER`).
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_timer_set_repeat(r#loop: *mut cot_loop, timer: cot_handle, repeat: u64) -> c_int {
    // SAFETY: `loop` NULL or live is the contract; `with_loop` needs no
    // more to store a number in the timer.
    status(unsafe { with_loop(r#loop, |l| l.timer_set_repeat(to_handle(timer)?, checked(repeat)?)) })
}
