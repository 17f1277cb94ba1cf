//! Signal handles (operating-system signals, not scheduler signals) and
//! child handles of a loop.

use std::ffi::c_void;
use std::os::raw::c_int;

use super::guard::{status, write_out};
use super::loop_::{cot_handle, cot_loop, lent_callback, to_handle, with_loop};
use crate::error::Error;

/// A signal callback: `signum` is the signal received.
pub type cot_signal_cb =
    Option<unsafe extern "C" fn(r#loop: *mut cot_loop, handle: cot_handle, signum: c_int, data: *mut c_void)>;

/// A child callback: the child exited with `exit_status` (`term_signal` 0) or
/// was ended by `term_signal` (`exit_status` 0); a negative `exit_status` is
/// the error met reaping it (`COT_ECHILD`: someone else reaped it).
pub type cot_child_cb = Option<
    unsafe extern "C" fn(
        r#loop: *mut cot_loop,
        handle: cot_handle,
        exit_status: c_int,
        term_signal: c_int,
        data: *mut c_void,
    ),
>;

/// Creates a stopped signal handle carrying `data`; stores it in `*handle`.
/// Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `handle` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_signal_init(r#loop: *mut cot_loop, data: *mut c_void, handle: *mut cot_handle) -> c_int {
    if handle.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: `loop` is NULL or live (the contract), as `with_loop` needs.
    let r = unsafe { with_loop(r#loop, |l| Ok(l.signal_init(data as usize).to_raw())) };
    // SAFETY: `handle` is NULL or writable by the contract; `write_out` refuses
    // NULL.
    unsafe { write_out(handle, r) }
}

/// Watches signal `signum` (not SIGKILL or SIGSTOP): `cb` runs on the loop each
/// time the process receives it, for every handle watching it. The signal is
/// blocked in the calling thread while watched (threads created later inherit
/// that; block it yourself in threads created before). Restarting with
/// another signal stops watching the first. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `cb` may be called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_signal_start(
    r#loop: *mut cot_loop,
    handle: cot_handle,
    cb: cot_signal_cb,
    signum: c_int,
) -> c_int {
    let Some(cb) = cb else { return Error::Inval.code() };
    let f = lent_callback(r#loop, move |me, h, signo: i32, data| {
        // SAFETY: `cb` came from `cot_signal_start`, whose contract lets the loop call it.
        unsafe { cb(me, h, signo, data) }
    });
    // SAFETY: `with_loop` needs `loop` NULL or live, and `f` wraps `cb`, which the
    // contract lets the loop call: both given.
    status(unsafe { with_loop(r#loop, |l| l.signal_start(to_handle(handle)?, signum, f)) })
}

/// Stops watching; stopping a stopped handle is fine. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_signal_stop(r#loop: *mut cot_loop, handle: cot_handle) -> c_int {
    // SAFETY: stopping a signal watch needs only the loop, NULL or live by the
    // contract: what `with_loop` asks.
    status(unsafe { with_loop(r#loop, |l| l.signal_stop(to_handle(handle)?)) })
}

/// Creates a stopped handle for child process `pid` (a child of this process)
/// carrying `data`; stores it in `*handle`. Returns 0, `COT_EINVAL` (pid <= 0),
/// `COT_ESRCH` (no such process), or `COT_ECHILD` (not a child of this
/// process, or reaped already: its end could never be reported).
///
/// # Safety
/// `loop` is NULL or a live loop; `handle` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_child_init(
    r#loop: *mut cot_loop,
    pid: c_int,
    data: *mut c_void,
    handle: *mut cot_handle,
) -> c_int {
    if handle.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: the child's loop is NULL or live (this function's contract), all that
    // `with_loop` requires.
    let r = unsafe { with_loop(r#loop, |l| l.child_init(pid, data as usize).map(|h| h.to_raw())) };
    // SAFETY: `write_out` gets `handle`, NULL or writable as the contract says.
    unsafe { write_out(handle, r) }
}

/// Waits for the child to end: `cb` runs once, after the loop reaped it (no
/// SIGCHLD handler is used); the handle is stopped then. Returns 0 or
/// `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `cb` may be called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_child_start(r#loop: *mut cot_loop, handle: cot_handle, cb: cot_child_cb) -> c_int {
    let Some(cb) = cb else { return Error::Inval.code() };
    let f = lent_callback(r#loop, move |me, h, exit: crate::error::Result<crate::reactor::Exit>, data| {
        let (code, signal) = match exit {
            Ok(e) => (e.status, e.signal),
            Err(e) => (e.code(), 0),
        };
        // SAFETY: `cot_child_start`'s contract lets the loop call `cb` once the child ends.
        unsafe { cb(me, h, code, signal, data) }
    });
    // SAFETY: `f` wraps `cb`, callable from the loop by the contract; `loop` is NULL
    // or live, as `with_loop` asks.
    status(unsafe { with_loop(r#loop, |l| l.child_start(to_handle(handle)?, f)) })
}

/// Stops waiting; stopping a stopped handle is fine. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_child_stop(r#loop: *mut cot_loop, handle: cot_handle) -> c_int {
    // SAFETY: `with_loop` asks `loop` to be NULL or live (the contract); the stop
    // drops the child's watch, no C code runs.
    status(unsafe { with_loop(r#loop, |l| l.child_stop(to_handle(handle)?)) })
}
