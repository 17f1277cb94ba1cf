//! Steps that hold a payload run in a protected call.
//!
//! A memory error while a step pushes longjmps past the Rust frames between
//! it and the nearest protected call, skipping their destructors. A step
//! that reads a pool job's payload (a lookup's names, a file's metadata)
//! keeps it in its frame (`Frame::parts`), and runs here: an error then
//! stops at this call, and the frame's owner (the driver or the engine)
//! drops the payload before raising the error on.

use super::frame::{Frame, Next, Why};
use super::op::Operation;
use crate::lua::{Error, Lua};

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
    if !f.has_payload() {
        return Ok(op.step(f, why));
    }
    protected(op, f, why)
}

/// Steps `op` with `why` in a protected call, whatever its frame holds
/// (unprotected if the stack has no room for the call).
pub(super) fn protected(op: &mut dyn Operation, f: &mut Frame, why: Why) -> Result<Next, ()> {
    let base = f.base;
    let h = f.lua.top() - base;
    let mut call = Call { op, f, why, next: None };
    // The frame becomes the call's stack: inside, it starts at slot 1.
    let ran = Lua::protected_over(
        &mut call,
        |c| &mut c.f.lua,
        h,
        |c| {
            c.f.base = 0;
            c.next = Some(c.op.step(c.f, c.why));
        },
    );
    call.f.base = base;
    match (ran, call.next) {
        (Ok(_), Some(next)) => Ok(next),
        (Ok(_), None) => unreachable!("a call that returned ran the step"),
        (Err(Error::Value), _) => Err(()),
        (Err(_), _) => Ok(call.op.step(call.f, why)), // no room for the call
    }
}
