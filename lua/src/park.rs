//! Parking the calling cothread on its scheduler's event loop, for the
//! operations of files, pipes, processes and OS signals.
//!
//! An operation keeps its state in a frame of stack slots. To wait, it calls
//! `park` with a function that records the wait on the loop (`Io::begin`,
//! `begin_job`, `begin_external`); `park` pushes the scheduler's userdata (it
//! keeps the scheduler alive) and the wait's id above the frame and yields the
//! hidden operation `cothread.io` with a continuation. The continuation calls
//! `unpark`, which restores the frame and gives the wait's outcome and its
//! job's result; the operation then steps again. The context of the
//! continuation packs the operation's tag with the frame's height.

use std::ffi::{CStr, c_int};

use crate::io::{self, Io, JobResult, Outcome};
use crate::raw::{self, L, ffi};
use crate::state::{self, State};

/// The scheduler resuming the calling coroutine and its task, if the caller
/// is a cothread that may yield.
///
/// # Safety
/// `l` is the running thread of a C function.
pub unsafe fn cothread_of(l: L) -> Option<(*mut State, cothread::Task)> {
    let p = io::CURRENT.get();
    // SAFETY: CURRENT is set only around a resume by a live state.
    unsafe {
        if p.is_null() || (*p).closed || (*p).running != l || ffi::lua_isyieldable(l) == 0 {
            return None;
        }
        Some((p, (*p).running_task?))
    }
}

/// Parks the running cothread of `p` (its frame is the whole stack): `begin`
/// records the wait on the loop, with the scheduler's userdata on the stack
/// top (to store it where the wait needs it). Yields with continuation `k`
/// and never returns, unless `begin` fails: then its message, with the stack
/// as it was.
///
/// # Safety
/// `l` is the running thread of a C function.
pub unsafe fn park(
    l: L,
    p: *mut State,
    tag: u8,
    k: ffi::lua_KFunction,
    begin: impl FnOnce(&mut Io) -> Result<u64, &'static CStr>,
) -> &'static CStr {
    // SAFETY: a C function in a cothread of `p`; `io_of` and the pushes may
    // raise before `begin` runs (nothing with a destructor is alive then);
    // `begin` is consumed before the yield.
    unsafe {
        let io = state::io_of(l, p);
        raw::check_stack(l, 4);
        let height = ffi::lua_gettop(l);
        state::push_state(l, p);
        let id = match begin(&mut *io) {
            Ok(id) => id,
            Err(m) => {
                ffi::lua_settop(l, height);
                return m;
            }
        };
        ffi::lua_pushinteger(l, id as ffi::lua_Integer);
        ffi::lua_pushstring(l, c"cothread.io".as_ptr());
        let ctx = tag as ffi::lua_KContext | (height as ffi::lua_KContext) << 8;
        ffi::lua_yieldk(l, 1, ctx, Some(k));
        unreachable!("lua_yieldk returned")
    }
}

/// In a continuation of `park`: restores the frame and returns the tag, how
/// the wait ended and its job's result.
///
/// # Safety
/// `l` is the running thread, in a continuation of `park` (its `ctx`).
pub unsafe fn unpark(l: L, ctx: ffi::lua_KContext) -> (u8, Outcome, Option<JobResult>) {
    // SAFETY: the stack holds the frame, then the state and the id pushed by
    // `park`, then the values the cothread was resumed with.
    unsafe {
        let tag = (ctx & 0xff) as u8;
        let height = (ctx >> 8) as c_int;
        let p = ffi::lua_touserdata(l, height + 1) as *mut State;
        let id = ffi::lua_tointegerx(l, height + 2, std::ptr::null_mut()) as u64;
        ffi::lua_settop(l, height);
        match p.as_mut().filter(|p| !p.closed).and_then(|p| p.io.as_mut()) {
            Some(io) => {
                let outcome = io.end(id);
                (tag, outcome, io.take_result(id))
            }
            None => (tag, Outcome::Cancelled, None),
        }
    }
}

/// `[-0, +3, m]` Pushes `nil, message, errno` (Lua's `luaL_fileresult`
/// failure); returns 3.
///
/// # Safety
/// `l` is a valid state, in a C function.
pub unsafe fn push_errno(l: L, errno: i32, prefix: Option<&CStr>) -> c_int {
    // SAFETY: valid state; three free slots (callers are C functions that
    // checked the stack).
    unsafe {
        raw::check_stack(l, 3);
        ffi::lua_pushnil(l);
        // The C library's text, as Lua's io library gives (strerror's buffer
        // is copied by the push before any other call).
        let msg = CStr::from_ptr(libc::strerror(errno));
        match prefix {
            Some(p) => ffi::lua_pushfstring(l, c"%s: %s".as_ptr(), p.as_ptr(), msg.as_ptr()),
            None => ffi::lua_pushstring(l, msg.as_ptr()),
        };
        ffi::lua_pushinteger(l, errno as ffi::lua_Integer);
    }
    3
}

/// `[-0, +2, m]` Pushes `nil, message`; returns 2.
///
/// # Safety
/// `l` is a valid state, in a C function.
pub unsafe fn push_fail(l: L, msg: &CStr) -> c_int {
    // SAFETY: valid state.
    unsafe {
        raw::check_stack(l, 2);
        ffi::lua_pushnil(l);
        ffi::lua_pushstring(l, msg.as_ptr());
    }
    2
}

/// `[-0, +2, m]` Pushes `false, message` (a `pcall`-style failure); returns 2.
///
/// # Safety
/// `l` is a valid state, in a C function.
pub unsafe fn push_fail_false(l: L, msg: &CStr) -> c_int {
    // SAFETY: valid state.
    unsafe {
        raw::check_stack(l, 2);
        ffi::lua_pushboolean(l, 0);
        ffi::lua_pushstring(l, msg.as_ptr());
    }
    2
}

/// Nanoseconds from seconds (negative or NaN: None; huge: None too).
pub fn ns_of(secs: f64) -> Option<u64> {
    (0.0..1.0e9).contains(&secs).then(|| (secs * 1e9).ceil() as u64)
}
