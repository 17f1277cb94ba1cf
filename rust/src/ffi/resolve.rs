//! Name lookups with a deadline and a cancel (`cot_resolve_start`):
//! `getaddrinfo(3)` on the loop's pool, as `cot_getaddrinfo` runs it, ended
//! by whichever comes first: its result, its deadline, or a cancel. A lookup
//! on a pool thread cannot be stopped: ended early, it finishes there and
//! its list is freed.

use std::ffi::{c_char, c_void};
use std::os::raw::c_int;

use super::fs::{cot_getaddrinfo_cb, lookup_job};
use super::guard::{status, write_out};
use super::loop_::{CResolve, cot_loop, lend, tables, with_loop};
use super::timeout::deadline;
use crate::error::{Error, Result};
use crate::reactor::Loop;
use crate::util::slab::Key;

/// A name lookup started by `cot_resolve_start`: a key of its loop's table, valid
/// until its callback ran. 0 is never a lookup.
pub type cot_resolve = u64;

/// Looks `node` and/or `service` up as `cot_getaddrinfo` does, waiting at
/// most `timeout_ns` (`COT_FOREVER`: no limit). `cb` runs once, from
/// `cot_loop_run`, with the lookup's id (stored in `*id`) as its `req`, and
/// 0 and a list to free with `freeaddrinfo`, or a negative code and NULL:
/// `COT_EAI_*`, `COT_ETIMEDOUT` (the deadline came first), `COT_ECANCELED`
/// (`cot_resolve_cancel`). Returns 0 or `COT_EINVAL` (NULL `cb` or `id`,
/// both strings NULL, a timeout above `INT64_MAX`).
///
/// # Safety
/// `loop` is NULL or a live loop; `node`, `service` are NULL or C strings;
/// `hints` is NULL or valid; `id` is NULL or writable; `cb` may be called
/// from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_resolve_start(
    r#loop: *mut cot_loop,
    node: *const c_char,
    service: *const c_char,
    hints: *const libc::addrinfo,
    timeout_ns: u64,
    cb: cot_getaddrinfo_cb,
    data: *mut c_void,
    id: *mut cot_resolve,
) -> c_int {
    let (Some(cb), false) = (cb, id.is_null()) else { return Error::Inval.code() };
    // SAFETY: `lookup_job` reads `node`, `service` (NULL or C strings) and
    // `hints` (NULL or valid): this contract's clauses.
    let Ok((run, found)) = (unsafe { lookup_job(node, service, hints) }) else { return Error::Inval.code() };
    let me = r#loop;
    // SAFETY: `loop` is NULL or live (the contract), as `with_loop` asks;
    // inside it `me` is live, as `tables` and `arm` ask. The completion and the
    // timer call `cb` from the loop, which the contract allows.
    let r = unsafe {
        with_loop(r#loop, |l| {
            let due = deadline(l, timeout_ns)?;
            let t = tables(me).ok_or(Error::Inval)?;
            let key = t.resolves.borrow_mut().insert(CResolve { timer: None, cancelled: false, cb, data });
            let id = key.to_raw();
            let after: crate::reactor::After = Box::new(move |lp, _, s| {
                let (code, res) = match s {
                    Ok(()) => found.with(|v| *v),
                    Err(e) => (e.code(), std::ptr::null_mut()),
                };
                end(me, lp, id, Some(code), res);
            });
            l.work_submit(
                Box::new(move || {
                    run();
                }),
                after,
            );
            if let Some(d) = due {
                let left = d.saturating_sub(l.now_fresh());
                arm(me, l, id, left)?;
            }
            Ok(id)
        })
    };
    // SAFETY: `id` is non-NULL (checked above) and writable by the contract, as
    // `write_out` asks.
    unsafe { write_out(id, r) }
}

/// Ends the lookup `id` now (its callback gets `COT_ECANCELED`) at the
/// loop's next turn, never inside this call. Returns 0, `COT_EBUSY` if it
/// was cancelled already, `COT_EINVAL` if it ended (or never was).
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_resolve_cancel(r#loop: *mut cot_loop, id: cot_resolve) -> c_int {
    let me = r#loop;
    // SAFETY: `with_loop` asks `loop` NULL or live (the contract); inside it
    // `me` is live and wraps `l`, as `tables` and `arm` ask.
    status(unsafe {
        with_loop(r#loop, |l| {
            let t = tables(me).ok_or(Error::Inval)?;
            {
                let mut resolves = t.resolves.borrow_mut();
                let r = Key::from_raw(id).and_then(|k| resolves.get_mut(k)).ok_or(Error::Inval)?;
                if r.cancelled {
                    return Err(Error::Busy);
                }
                r.cancelled = true;
            }
            arm(me, l, id, 0)
        })
    })
}

/// Starts (or restarts) the timer of lookup `id`: its deadline, or a
/// cancel due now.
///
/// # Safety
/// `me` is the live wrapper of `l`.
unsafe fn arm(me: *mut cot_loop, l: &mut Loop, id: u64, timeout: u64) -> Result<()> {
    // SAFETY: `me` is live (`arm`'s contract), more than `tables` asks (NULL or
    // live).
    let t = unsafe { tables(me) }.ok_or(Error::Inval)?;
    let timer = {
        let mut resolves = t.resolves.borrow_mut();
        let r = Key::from_raw(id).and_then(|k| resolves.get_mut(k)).ok_or(Error::Inval)?;
        match r.timer {
            Some(h) => h,
            None => *r.timer.insert(l.timer_init(0)),
        }
    };
    l.timer_start(timer, timeout, 0, Box::new(move |lp, _| end(me, lp, id, None, std::ptr::null_mut())))
}

/// The first ending of lookup `id`: `code` and `res` from the pool, or
/// (`None`) its timer: `COT_ETIMEDOUT`. A cancelled lookup ends with
/// `COT_ECANCELED` whatever comes; a later ending finds the lookup gone and
/// only frees its list.
fn end(me: *mut cot_loop, lp: &mut Loop, id: u64, code: Option<c_int>, res: *mut libc::addrinfo) {
    // SAFETY: `me` wraps `lp`, which runs this ending, so it is live.
    let entry = unsafe { tables(me) }.and_then(|t| Key::from_raw(id).and_then(|k| t.resolves.borrow_mut().remove(k)));
    // A cancel wins over a result that came before its turn.
    if entry.as_ref().is_none_or(|r| r.cancelled) && !res.is_null() {
        // SAFETY: a list getaddrinfo made, which no callback was given: the
        // lookup ended before, or was cancelled.
        unsafe { libc::freeaddrinfo(res) };
    }
    let Some(r) = entry else { return };
    if let Some(t) = r.timer {
        let _ = lp.close(t, None); // this lookup's own timer, open: cannot fail
    }
    let (code, res) = match code {
        _ if r.cancelled => (Error::Canceled.code(), std::ptr::null_mut()),
        Some(c) => (c, res),
        None => (Error::TimedOut.code(), res),
    };
    // SAFETY: `me` wraps `lp`; `cb` may be called from the loop (the caller
    // of `cot_resolve_start` promised it).
    unsafe { lend(me, lp, || (r.cb)(me, id, code, res, r.data)) }
}
