//! Poll handles of a loop: descriptor readiness, level-triggered.

use std::ffi::c_void;
use std::os::raw::c_int;

use super::guard::{status, write_out};
use super::loop_::{cot_handle, cot_loop, lent_callback, to_handle, with_loop};

/// `cot_poll_start` event: readable.
pub const COT_READABLE: c_int = 1;
/// `cot_poll_start` event: writable.
pub const COT_WRITABLE: c_int = 2;
/// `cot_poll_start` event: the peer closed its end.
pub const COT_DISCONNECT: c_int = 4;

/// A poll callback: `events` are the ready ones among those watched. Errors
/// and hang-ups make the descriptor readable and writable, so the next read
/// or write reports them.
pub type cot_poll_cb =
    Option<unsafe extern "C" fn(r#loop: *mut cot_loop, poll: cot_handle, events: c_int, data: *mut c_void)>;

/// Creates a stopped poll handle for `fd` (which stays the caller's: keep it
/// open until the handle is closed) carrying `data`; stores it in `*poll`.
/// Returns 0, `COT_EBADF` for a negative `fd`, or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `poll` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_poll_init(
    r#loop: *mut cot_loop,
    fd: c_int,
    data: *mut c_void,
    poll: *mut cot_handle,
) -> c_int {
    if poll.is_null() {
        return crate::Error::Inval.code();
    }
    // SAFETY: `loop` is NULL or live and `poll` NULL or writable, as the
    // contract says: all `with_loop` and `write_out` require.
    unsafe { write_out(poll, with_loop(r#loop, |l| l.poll_init(fd, data as usize).map(|h| h.to_raw()))) }
}

/// Starts watching for `events` (`COT_READABLE | COT_WRITABLE |
/// COT_DISCONNECT`), or changes them; `cb` runs at each iteration while some
/// are ready (level-triggered). Returns 0, `COT_EINVAL` (bad handle or
/// events, NULL `cb`), or the system's refusal: `COT_EBADF` (closed
/// descriptor), `COT_EPERM` (a regular file), `COT_EEXIST` (another handle
/// polls it).
///
/// # Safety
/// `loop` is NULL or a live loop; `cb` may be called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_poll_start(
    r#loop: *mut cot_loop,
    poll: cot_handle,
    events: c_int,
    cb: cot_poll_cb,
) -> c_int {
    let Some(cb) = cb else { return crate::Error::Inval.code() };
    let Ok(events) = u32::try_from(events) else { return crate::Error::Inval.code() };
    let f = lent_callback(r#loop, move |me, h, ready: u32, data| {
        // SAFETY: `cb` was given to `cot_poll_start`, whose contract lets the loop call
        // it with the ready events.
        unsafe { cb(me, h, ready as c_int, data) }
    });
    // SAFETY: `loop` is NULL or live for `with_loop`; `f` wraps `cb`, which
    // the contract lets the loop call.
    status(unsafe { with_loop(r#loop, |l| l.poll_start(to_handle(poll)?, events, f)) })
}

/// Stops watching; stopping a stopped handle is fine. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_poll_stop(r#loop: *mut cot_loop, poll: cot_handle) -> c_int {
    // SAFETY: `with_loop` gets `loop` NULL or live from the contract; the
    // stop only deregisters the descriptor.
    status(unsafe { with_loop(r#loop, |l| l.poll_stop(to_handle(poll)?)) })
}
