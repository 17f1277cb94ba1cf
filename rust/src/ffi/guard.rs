//! From a C pointer to a `&mut Sched`, safely against re-entry.
//!
//! A callback the scheduler runs (the clock, the signal hook) may call back
//! into the C API with the same `cot_sched*`. A second `&mut Sched` would be
//! undefined behaviour, so each object carries a `busy` flag, checked through
//! a shared reference before the exclusive one is made: re-entrant calls get
//! `COT_EBUSY`.

use std::cell::{Cell, UnsafeCell};
use std::os::raw::c_int;

use crate::error::{Error, Result};
use crate::sched::Sched;

/// A scheduler (opaque). Made by `cot_sched_new`, freed by `cot_sched_free`.
pub struct cot_sched {
    busy: Cell<bool>,
    inner: UnsafeCell<Sched>,
}

impl cot_sched {
    pub(crate) fn new(s: Sched) -> cot_sched {
        cot_sched { busy: Cell::new(false), inner: UnsafeCell::new(s) }
    }

    pub(crate) fn is_busy(&self) -> bool {
        self.busy.get()
    }
}

/// Clears the busy flag however `with_sched` exits.
struct Busy<'a>(&'a Cell<bool>);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// Runs `f` on the scheduler behind `p`: `Error::Inval` for NULL,
/// `Error::Busy` when called from inside one of its callbacks.
///
/// # Safety
/// `p` is NULL or a pointer from `cot_sched_new` not yet freed, used on one
/// thread at a time.
pub(crate) unsafe fn with_sched<R>(p: *mut cot_sched, f: impl FnOnce(&mut Sched) -> Result<R>) -> Result<R> {
    // SAFETY: by the caller's contract `p` is NULL or valid; a shared
    // reference only reads the `Cell`.
    let Some(s) = (unsafe { p.as_ref() }) else {
        return Err(Error::Inval);
    };
    if s.busy.replace(true) {
        return Err(Error::Busy);
    }
    let _busy = Busy(&s.busy);
    // SAFETY: the busy flag was clear, so no other reference to `inner` exists
    // on this thread, and the object is used on one thread at a time.
    f(unsafe { &mut *s.inner.get() })
}

/// 0, or the error's code.
pub(crate) fn status(r: Result<()>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.code(),
    }
}

/// 1 for true, 0 for false, or the error's code.
pub(crate) fn boolean(r: Result<bool>) -> c_int {
    match r {
        Ok(b) => b as c_int,
        Err(e) => e.code(),
    }
}

/// Writes `v` through `out` (which must not be NULL) and returns 0.
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, r: Result<T>) -> c_int {
    if out.is_null() {
        return Error::Inval.code();
    }
    match r {
        Ok(v) => {
            // SAFETY: `out` is non-null and, by the caller's contract, writable.
            unsafe { out.write(v) };
            0
        }
        Err(e) => e.code(),
    }
}
