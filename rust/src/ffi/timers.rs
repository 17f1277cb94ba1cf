//! `cot_timers`: a thread-safe timer service, and the monotonic clock.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::ptr;

use crate::error::{Error, Result};
use crate::sync::Timers;

/// A thread-safe timer service (opaque): entries with a deadline, an
/// identifier and a user pointer, added and cancelled from any thread, and
/// threads waiting for the next one to fall due. Made by `cot_timers_new`,
/// freed by `cot_timers_free`. Every `cot_timers_*` function is safe from any
/// thread.
pub struct cot_timers {
    inner: Timers,
}

/// The timers behind `t`.
///
/// # Safety
/// `t` is NULL or live.
unsafe fn timers<'a>(t: *const cot_timers) -> Result<&'a Timers> {
    // SAFETY: NULL or live (the caller's contract); `Timers` is thread-safe
    // and only shared references are made.
    unsafe { t.as_ref() }.map(|t| &t.inner).ok_or(Error::Inval)
}

/// The current time of `CLOCK_MONOTONIC` in nanoseconds: the clock of every
/// time in this API (on Linux, the clock of C++'s `std::chrono::steady_clock`
/// too). Safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn cot_monotonic_ns() -> u64 {
    crate::time::monotonic_ns()
}

/// Creates an empty timer service. Returns NULL on failure.
#[unsafe(no_mangle)]
pub extern "C" fn cot_timers_new() -> *mut cot_timers {
    Box::into_raw(Box::new(cot_timers { inner: Timers::new() }))
}

/// Frees the timer service. Returns 0, `COT_EBUSY` (freeing nothing) while
/// entries remain (cancel or wait them out first) or a thread waits in
/// `cot_timers_wait`, `COT_EINVAL` for NULL.
///
/// # Safety
/// `t` is NULL or live; on success nobody uses it any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_timers_free(t: *mut cot_timers) -> c_int {
    // SAFETY: `timers` needs `t` NULL or live (the contract); on success nobody uses
    // it after, so the box may be freed below.
    match unsafe { timers(t) } {
        Err(e) => e.code(),
        Ok(inner) if !inner.is_idle() => Error::Busy.code(),
        Ok(_) => {
            // SAFETY: made by `cot_timers_new`, unused from now on (the
            // caller's contract).
            drop(unsafe { Box::from_raw(t) });
            0
        }
    }
}

/// Adds an entry due at `deadline_ns` (`CLOCK_MONOTONIC` ns, see
/// `cot_monotonic_ns`; a past deadline is due at once) carrying `data`, which
/// `cot_timers_wait` or `cot_timers_cancel` returns. `ident` (may be NULL:
/// then not cancellable) lets `cot_timers_cancel` find it; several entries
/// may share one. Wakes a thread waiting in `cot_timers_wait` if the entry is
/// now the earliest. Returns 0, or `COT_EINVAL` for NULL `t` or `data`.
/// O(log n).
///
/// # Safety
/// `t` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_timers_add(
    t: *mut cot_timers,
    deadline_ns: u64,
    ident: *const c_void,
    data: *mut c_void,
) -> c_int {
    if data.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: `t` is NULL or live by `cot_timers_add`'s contract, as `timers` asks.
    match unsafe { timers(t) } {
        Ok(inner) => {
            inner.add(deadline_ns, ident as usize, data as usize);
            0
        }
        Err(e) => e.code(),
    }
}

/// Removes the entry with identifier `ident` that is due first (of those due
/// together, the first added) and returns its `data`; NULL if there is none
/// (or `ident` or `t` is NULL). Call it in a loop to cancel every entry of an
/// identifier. O(log n).
///
/// # Safety
/// `t` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_timers_cancel(t: *mut cot_timers, ident: *const c_void) -> *mut c_void {
    // SAFETY: `timers` on `t`, NULL or live as the contract of `cot_timers_cancel`
    // says.
    let found = unsafe { timers(t) }.ok().and_then(|inner| inner.cancel(ident as usize));
    found.map_or(ptr::null_mut(), |d| d as *mut c_void)
}

/// Blocks until an entry is due, removes it and returns its `data`; entries
/// due together come out in the order they were added. Returns NULL instead
/// when `cot_timers_interrupt` was called (consuming that interrupt; a
/// pending interrupt goes before due entries) or once the clock passes
/// `until_ns` (`CLOCK_MONOTONIC` ns; 0: never block, just take a due entry
/// if any; `UINT64_MAX`: no limit), and for NULL `t`. Several threads may
/// wait at once; each entry is returned to one of them.
///
/// # Safety
/// `t` is NULL or live, and not freed while threads wait.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_timers_wait(t: *mut cot_timers, until_ns: u64) -> *mut c_void {
    // SAFETY: `t` is NULL or live and not freed while threads wait in it (the
    // contract): what `timers` needs for a blocking wait.
    let got = unsafe { timers(t) }.ok().and_then(|inner| inner.wait(until_ns));
    got.map_or(ptr::null_mut(), |d| d as *mut c_void)
}

/// Makes the current `cot_timers_wait` (or, if no thread waits, the next one)
/// return NULL, once; interrupts not yet consumed do not add up. Returns 0 or
/// `COT_EINVAL` for NULL.
///
/// # Safety
/// `t` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_timers_interrupt(t: *mut cot_timers) -> c_int {
    // SAFETY: the contract makes `t` NULL or live, `timers`'s need; interrupting is
    // safe from any thread.
    match unsafe { timers(t) } {
        Ok(inner) => {
            inner.interrupt();
            0
        }
        Err(e) => e.code(),
    }
}

/// The earliest deadline of the entries (`CLOCK_MONOTONIC` ns), `UINT64_MAX`
/// if there is none or `t` is NULL.
///
/// # Safety
/// `t` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_timers_next(t: *mut cot_timers) -> u64 {
    // SAFETY: `timers` on `t`, NULL or live by the contract, for a read of the next
    // deadline.
    unsafe { timers(t) }.ok().and_then(Timers::next).unwrap_or(u64::MAX)
}

/// The number of entries (0 for NULL).
///
/// # Safety
/// `t` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_timers_len(t: *mut cot_timers) -> usize {
    // SAFETY: `t` is NULL or live (`cot_timers_len`'s contract), as `timers` needs.
    unsafe { timers(t) }.map_or(0, Timers::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: usize) -> *mut c_void {
        n as *mut c_void
    }

    #[test]
    fn the_c_functions_add_wait_cancel_and_check_input() {
        let t = cot_timers_new();
        let now = cot_monotonic_ns();
        // SAFETY: (every call) `t` is live until freed.
        unsafe {
            assert_eq!(cot_timers_next(t), u64::MAX);
            assert_eq!(cot_timers_add(t, now - 1, ptr::null(), p(1)), 0);
            assert_eq!(cot_timers_add(t, now + 3_600_000_000_000, p(0x100), p(2)), 0);
            assert_eq!(cot_timers_add(t, now, ptr::null(), ptr::null_mut()), Error::Inval.code());
            assert_eq!(cot_timers_add(ptr::null_mut(), now, ptr::null(), p(3)), Error::Inval.code());
            assert_eq!(cot_timers_len(t), 2);
            assert_eq!(cot_timers_next(t), now - 1);
            assert_eq!(cot_timers_free(t), Error::Busy.code());
            assert_eq!(cot_timers_wait(t, 0), p(1));
            assert!(cot_timers_wait(t, 0).is_null());
            assert!(cot_timers_cancel(t, ptr::null()).is_null());
            assert_eq!(cot_timers_cancel(t, p(0x100)), p(2));
            assert!(cot_timers_cancel(t, p(0x100)).is_null());
            assert_eq!(cot_timers_interrupt(t), 0);
            assert!(cot_timers_wait(t, u64::MAX).is_null(), "interrupted");
            assert_eq!(cot_timers_interrupt(ptr::null_mut()), Error::Inval.code());
            assert!(cot_timers_wait(ptr::null_mut(), 0).is_null());
            assert!(cot_timers_cancel(ptr::null_mut(), p(1)).is_null());
            assert_eq!(cot_timers_next(ptr::null_mut()), u64::MAX);
            assert_eq!(cot_timers_len(ptr::null_mut()), 0);
            assert_eq!(cot_timers_free(ptr::null_mut()), Error::Inval.code());
            assert_eq!(cot_timers_free(t), 0);
        }
    }
}
