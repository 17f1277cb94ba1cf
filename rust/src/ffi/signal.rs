//! Signals: waiting on a key, notifying its waiters, combined signals.
//!
//! A signal is any non-NULL `const void *` key: the address of something the
//! program owns, typically. Its queue exists only while it has waiters.

use std::ffi::c_void;
use std::os::raw::c_int;

use super::guard::{boolean, cot_sched, status, with_sched, write_out};
use super::sched::ready_when;
use super::task::{cot_task, task_raw, to_task};
use super::timeout::checked;
use crate::error::{Error, Result};
use crate::sched::{Mode, When};

/// Told when a signal queue gets its first waiter (`active` = 1) or loses its
/// last one (`active` = 0), e.g. to hold a reference to the key only while it
/// is waited on. Runs inside the call that changed the queue; it must not call
/// the scheduler (such calls fail with `COT_EBUSY`).
pub type cot_signal_hook_cb = Option<unsafe extern "C" fn(data: *mut c_void, signal: *const c_void, active: c_int)>;

fn key(signal: *const c_void) -> Result<usize> {
    if signal.is_null() { Err(Error::Inval) } else { Ok(signal as usize) }
}

/// Puts `task`, which must be in no queue, at the tail of the queue of
/// `signal`. Returns 1, 0 if the task is already in a queue, or `COT_EINVAL`
/// (bad task, NULL signal).
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_wait(sched: *mut cot_sched, task: cot_task, signal: *const c_void) -> c_int {
    // SAFETY: `sched` is NULL or live (this function's contract), as `with_sched`
    // needs; `signal` is a key, never read through.
    boolean(unsafe { with_sched(sched, |s| s.schedule(to_task(task)?, When::Wait(key(signal)?))) })
}

/// Moves all waiters of `signal`, in their order, to the head (`COT_NEXT`) or
/// the tail (`COT_LATER`) of the ready queue, in O(1) whatever their number.
/// The notification also counts for the combined signals that include
/// `signal`. Returns 1 if a task moved or a combined signal counted it, 0 if
/// nothing happened, or `COT_EINVAL`.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_notify(sched: *mut cot_sched, signal: *const c_void, when: c_int) -> c_int {
    // SAFETY: notifying moves waiters between the queues of `sched`, NULL or live
    // by the contract: what `with_sched` asks.
    boolean(unsafe { with_sched(sched, |s| s.notify(key(signal)?, ready_when(when)?)) })
}

/// Like `cot_sched_notify`, but moves the waiters to the tail of the queue of
/// `target` (O(1)). `target` may equal `signal`.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_notify_wait(
    sched: *mut cot_sched,
    signal: *const c_void,
    target: *const c_void,
) -> c_int {
    // SAFETY: `with_sched` gets `sched` NULL or live from the contract; `signal` and
    // `target` are both plain keys.
    boolean(unsafe { with_sched(sched, |s| s.notify(key(signal)?, When::Wait(key(target)?))) })
}

/// Like `cot_sched_notify`, but postpones the waiters, together, until the
/// clock reaches `time` (ns). O(log n) in the number of postponed groups.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_notify_postpone(sched: *mut cot_sched, signal: *const c_void, time: u64) -> c_int {
    // SAFETY: the contract makes `sched` NULL or live, `with_sched`'s need; the
    // waiters are postponed as keys.
    boolean(unsafe { with_sched(sched, |s| s.notify(key(signal)?, When::Postpone(time))) })
}

/// Like `cot_sched_notify_postpone`, for `ns` nanoseconds from now.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_notify_delay(sched: *mut cot_sched, signal: *const c_void, ns: u64) -> c_int {
    // SAFETY: `sched` is NULL or live by the contract; a delay may call the clock,
    // which `with_sched`'s busy flag guards.
    boolean(unsafe { with_sched(sched, |s| s.notify(key(signal)?, When::Delay(checked(ns)?))) })
}

/// Returns 1 if `signal` has waiters, 0 if not, or `COT_EINVAL`.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_waiting(sched: *mut cot_sched, signal: *const c_void) -> c_int {
    // SAFETY: a read of the waiters of a key on `sched`, NULL or live (the contract),
    // through `with_sched`.
    boolean(unsafe { with_sched(sched, |s| s.waiting(key(signal)?)) })
}

/// The first waiter of `signal`, or 0 when it has none (or on bad input).
/// Iterate with `cot_task_next`.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_signal_head(sched: *mut cot_sched, signal: *const c_void) -> cot_task {
    // SAFETY: `with_sched` needs `sched` NULL or live, given by this function's
    // contract; the head comes back as a key.
    task_raw(unsafe { with_sched(sched, |s| s.signal_head(key(signal)?)) })
}

/// Sets (or, with NULL, clears) the hook told when signal queues start and
/// stop having waiters. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `sched` is NULL or a live scheduler; `hook`, if set, may be called with
/// `data` during any later call on this scheduler, until it is replaced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_set_signal_hook(
    sched: *mut cot_sched,
    hook: cot_signal_hook_cb,
    data: *mut c_void,
) -> c_int {
    let hook = hook.map(|f| -> crate::sched::SignalHook {
        // SAFETY: the caller guarantees `f(data, ...)` may be called.
        Box::new(move |k, active| unsafe { f(data, k as *const c_void, active as c_int) })
    });
    // SAFETY: `sched` is NULL or live (for `with_sched`); the contract lets `hook` be
    // called with `data` during later calls, until replaced.
    status(unsafe {
        with_sched(sched, |s| {
            s.set_signal_hook(hook);
            Ok(())
        })
    })
}

/// Reads `n` keys from `parts` (which may be NULL when `n` is 0).
///
/// # Safety
/// `parts` is NULL or valid for reading `n` pointers.
unsafe fn read_parts<'a>(parts: *const *const c_void, n: usize) -> Result<&'a [usize]> {
    if n == 0 {
        return Ok(&[]);
    }
    if parts.is_null() {
        return Err(Error::Inval);
    }
    // SAFETY: `parts` is non-null and readable for `n` pointers (caller's
    // contract); a pointer has the size and alignment of a `usize`.
    Ok(unsafe { std::slice::from_raw_parts(parts.cast::<usize>(), n) })
}

/// Makes a combined signal of `parts` and stores it in `*out`.
///
/// # Safety
/// As `cot_sched_onall`.
unsafe fn combine(
    sched: *mut cot_sched,
    mode: Mode,
    parts: *const *const c_void,
    n: usize,
    out: *mut *const c_void,
) -> c_int {
    if out.is_null() {
        return Error::Inval.code(); // before anything is made
    }
    // SAFETY: by `cot_sched_onall`'s contract `parts` is NULL or readable for
    // `n` pointers (what `read_parts` needs), `sched` NULL or live (what
    // `with_sched` needs) and `out`, non-NULL here, writable.
    unsafe {
        let r = read_parts(parts, n).and_then(|parts| with_sched(sched, |s| s.combine(mode, parts)));
        write_out(out, r.map(|k| k as *const c_void))
    }
}

/// Makes a combined signal that fires once **all** of the `n` signals in
/// `parts` (plain keys or combined signals of this scheduler) were notified
/// while it had waiters; its waiters then move to the ready tail. Stores its
/// key in `*signal`: wait on it, notify it, reset it, and free it with
/// `cot_sched_combined_free`. With `n` = 0 it fires as soon as it has a
/// waiter. Returns 0 or `COT_EINVAL` (NULL part, NULL `parts` with `n` > 0).
///
/// # Safety
/// `sched` is NULL or a live scheduler; `parts` is NULL or readable for `n`
/// pointers; `signal` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_onall(
    sched: *mut cot_sched,
    parts: *const *const c_void,
    n: usize,
    signal: *mut *const c_void,
) -> c_int {
    // SAFETY: `cot_sched_onall`'s contract is `combine`'s, word for word.
    unsafe { combine(sched, Mode::All, parts, n, signal) }
}

/// Like `cot_sched_onall`, but fires once **any** of the parts was notified
/// while it had waiters. With `n` = 0 it never fires.
///
/// # Safety
/// As `cot_sched_onall`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_onany(
    sched: *mut cot_sched,
    parts: *const *const c_void,
    n: usize,
    signal: *mut *const c_void,
) -> c_int {
    // SAFETY: the contract is `cot_sched_onall`'s, which is `combine`'s.
    unsafe { combine(sched, Mode::Any, parts, n, signal) }
}

/// Forgets the notifications the combined signal has counted so far. Returns
/// 1 if it had waiters (and so was counting), 0 if not, or `COT_EINVAL` when
/// `signal` is not a combined signal of this scheduler.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_reset(sched: *mut cot_sched, signal: *const c_void) -> c_int {
    // SAFETY: `with_sched` asks `sched` to be NULL or live: the contract. A reset
    // only clears counts of the combined signal.
    boolean(unsafe { with_sched(sched, |s| s.reset(signal as usize)) })
}

/// Frees a combined signal. Returns 0, `COT_EBUSY` while it has waiters or is
/// a part of another combined signal (free that one first), or `COT_EINVAL`
/// when `signal` is not a combined signal of this scheduler.
///
/// # Safety
/// `sched` is NULL or a live scheduler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_sched_combined_free(sched: *mut cot_sched, signal: *const c_void) -> c_int {
    // SAFETY: freeing a combined signal needs only its scheduler, NULL or live by the
    // contract, as `with_sched` asks.
    status(unsafe { with_sched(sched, |s| s.free_combined(signal as usize)) })
}
