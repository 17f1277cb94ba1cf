//! Blocking work (name resolution, file I/O) on a scheduler's thread pool,
//! from a Lua C function.
//!
//! `call` runs a job and finishes the calling function with the job's
//! result. In a cothread, the job runs on the thread pool of the cothread's
//! scheduler while only that cothread waits (`io::Io::begin_job`, then the
//! hidden yield `cothread.io`, as a socket wait); elsewhere it runs in the
//! calling thread. The job, then its result, is owned by a userdata on the
//! stack (`Slot`), so nothing leaks when Lua raises or the cothread is
//! collected; a cothread unscheduled meanwhile leaves its wait (the late
//! completion resumes nobody) and, if scheduled again, finishes with
//! `"cancelled"`.

use std::ffi::{CStr, c_int, c_void};

use crate::io::{Job, JobResult, Outcome};
use crate::raw::{self, L, ffi};
use crate::state::{self, State};

/// Metatable name of a slot.
const SLOT: &CStr = c"cothread.job";

/// Finishes a call: pushes its results for the job's result (or the message
/// of a wait that ended without one); returns how many.
pub type Finish = unsafe fn(L, Result<&mut JobResult, &'static CStr>) -> c_int;

/// What the userdata of a call holds.
enum Slot {
    Job(Job),
    Done(JobResult),
    Empty,
}

unsafe extern "C-unwind" fn slot_gc(l: L) -> c_int {
    // SAFETY: called by Lua on a slot userdata; it is emptied, never dropped
    // twice (`Empty` holds nothing).
    unsafe {
        let s = ffi::lua_touserdata(l, 1) as *mut Slot;
        if !s.is_null() {
            let _ = std::mem::replace(&mut *s, Slot::Empty);
        }
    }
    0
}

/// `[-0, +1, m]` Pushes an empty slot (made before the job, so that a memory
/// error here leaks nothing).
unsafe fn push_slot(l: L) -> *mut Slot {
    // SAFETY: valid state; the block is fresh, sized and aligned for a
    // `Slot`, written before the metatable makes `__gc` reach it.
    unsafe {
        raw::check_stack(l, 3);
        let s = ffi::lua_newuserdatauv(l, std::mem::size_of::<Slot>(), 0) as *mut Slot;
        s.write(Slot::Empty);
        if ffi::luaL_newmetatable(l, SLOT.as_ptr()) != 0 {
            ffi::lua_pushcfunction(l, slot_gc);
            ffi::lua_setfield(l, -2, c"__gc".as_ptr());
        }
        ffi::lua_setmetatable(l, -2);
        s
    }
}

/// Runs `make()`'s job and finishes the calling C function with `finish`
/// (its results are the function's). In a cothread this yields (the
/// function must return what `call` returns).
///
/// # Safety
/// Called from a C function of the module with a valid state.
pub unsafe fn call(l: L, make: impl FnOnce() -> Job, finish: Finish) -> c_int {
    // SAFETY: the slot owns the job before anything may raise; no Rust value
    // with a destructor is alive across the raising calls or the yield.
    unsafe {
        let s = push_slot(l);
        s.write(Slot::Job(make()));
        let Some((p, task)) = crate::socket::cothread_of(l) else {
            // Outside cothreads: run it here.
            let Slot::Job(job) = std::mem::replace(&mut *s, Slot::Empty) else { unreachable!() };
            *s = Slot::Done(job());
            return finish_with(l, s, Ok(()), finish);
        };
        let io = state::io_of(l, p);
        raw::check_stack(l, 6);
        let base = ffi::lua_gettop(l); // the slot
        ffi::lua_pushlightuserdata(l, finish as usize as *mut c_void);
        state::push_state(l, p); // keeps `p` alive until the continuation
        let Slot::Job(job) = std::mem::replace(&mut *s, Slot::Empty) else { unreachable!() };
        let id = (*io).begin_job(task, job);
        ffi::lua_pushinteger(l, id as ffi::lua_Integer);
        ffi::lua_pushstring(l, c"cothread.io".as_ptr());
        ffi::lua_yieldk(l, 1, base as ffi::lua_KContext, Some(resume));
        unreachable!("lua_yieldk returned")
    }
}

/// The continuation of a job wait: takes the result and finishes the call.
unsafe extern "C-unwind" fn resume(l: L, _status: c_int, ctx: ffi::lua_KContext) -> c_int {
    // SAFETY: the stack `call` left: the slot at `ctx`, then the finish
    // function, the state userdata and the wait id, then the values the
    // cothread was resumed with.
    unsafe {
        let base = ctx as c_int;
        let s = ffi::lua_touserdata(l, base) as *mut Slot;
        let finish: Finish = std::mem::transmute::<*mut c_void, Finish>(ffi::lua_touserdata(l, base + 1));
        let p = ffi::lua_touserdata(l, base + 2) as *mut State;
        let id = ffi::lua_tointegerx(l, base + 3, std::ptr::null_mut()) as u64;
        ffi::lua_settop(l, base);
        let ended = match p.as_mut().filter(|p| !p.closed).and_then(|p| p.io.as_mut()) {
            Some(io) => match io.end(id) {
                Outcome::Ready => io.take_result(id).ok_or(Outcome::Cancelled),
                o => Err(o),
            },
            None => Err(Outcome::Cancelled),
        };
        let ended = match ended {
            Ok(r) => {
                *s = Slot::Done(r);
                Ok(())
            }
            Err(Outcome::Timeout) => Err(c"timeout"),
            Err(Outcome::Closed) => Err(c"closed"),
            Err(_) => Err(c"cancelled"),
        };
        finish_with(l, s, ended, finish)
    }
}

unsafe fn finish_with(l: L, s: *mut Slot, ended: Result<(), &'static CStr>, finish: Finish) -> c_int {
    // SAFETY: the slot stays on the stack (owned by Lua) while `finish` runs.
    unsafe {
        match (ended, &mut *s) {
            (Ok(()), Slot::Done(r)) => finish(l, Ok(r)),
            (Err(m), _) => finish(l, Err(m)),
            _ => finish(l, Err(c"cancelled")),
        }
    }
}
