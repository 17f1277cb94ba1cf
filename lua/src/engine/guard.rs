//! Steps that hold a payload run in a protected call.
//!
//! A memory error while a step pushes longjmps past the Rust frames between
//! it and the nearest protected call, skipping their destructors. A step
//! that reads a pool job's payload (a lookup's names, a file's metadata)
//! keeps it in its frame (`Frame::parts`), and runs here: an error then
//! stops at this call, and the frame's owner (the driver or the engine)
//! drops the payload before raising the error on.

use std::ffi::c_int;

use super::frame::{Frame, Next, Why};
use super::op::Operation;
use crate::lua::raw::{L, ffi};

/// What the protected call reads and writes.
struct Call<'a> {
    op: &'a mut dyn Operation,
    f: &'a mut Frame,
    why: Why,
    next: Option<Next>,
}

/// Steps `op` with `why` (protected if `f` holds a payload). `Err`: the
/// step raised; its error value is on the top, in place of the frame.
pub fn step(op: &mut dyn Operation, f: &mut Frame, why: Why) -> Result<Next, ()> {
    let l = f.lua.raw();
    let base = f.base;
    // SAFETY: `f`'s thread runs a C function (a `Frame`'s contract), so it
    // may call a function protected. Its frame is the top `h` values above
    // `base`; the call takes them as arguments after `run` and the
    // pointer (two slots, checked), and `run` answers every value it
    // leaves, so the stack after a successful call is as if the step had
    // run here. Inside, the frame starts at slot 1 of `run`'s stack: base 0.
    unsafe {
        if !f.has_payload() || ffi::lua_checkstack(l, 2) == 0 {
            return Ok(op.step(f, why));
        }
        let h = ffi::lua_gettop(l) - base;
        ffi::lua_pushcfunction(l, run);
        ffi::lua_rotate(l, base + 1, 1);
        f.base = 0;
        let mut call = Call { op, f, why, next: None };
        ffi::lua_pushlightuserdata(l, (&raw mut call).cast());
        let status = ffi::lua_pcall(l, h + 1, ffi::LUA_MULTRET, 0);
        call.f.base = base;
        match (status, call.next) {
            (ffi::LUA_OK, Some(next)) => Ok(next),
            _ => Err(()),
        }
    }
}

/// `run(frame..., call)`: the step, on the frame at the bottom of this
/// function's stack.
unsafe extern "C-unwind" fn run(l: L) -> c_int {
    // SAFETY: `step` calls this with its `Call` (alive for the call) as the
    // last argument, the frame below it; an error of the step unwinds to
    // `step`'s `lua_pcall`, past no frame with a destructor but the step's
    // own (which hold no payload: it is in the frame).
    unsafe {
        let call = &mut *(ffi::lua_touserdata(l, -1) as *mut Call);
        ffi::lua_settop(l, -2);
        call.next = Some(call.op.step(call.f, call.why));
        ffi::lua_gettop(l)
    }
}
