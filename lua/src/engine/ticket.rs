//! Tickets: what a cancelled operation leaves on its cothread's stack.
//!
//! When a parked cothread is taken out from outside (`unschedule`, a
//! plugin's yield) or its scheduler goes (collected), its operation leaves
//! the engine at once: no registration, timer, job or handle of it remains,
//! and nothing can resume the cothread. The operation itself moves into a
//! *ticket*, a userdata put on top of its frame in place of the sentinel. If
//! the cothread is scheduled again (by any scheduler), `settle` runs the
//! operation's last step (`Why::Cancelled`) there and then, on the
//! scheduling thread (an operation that had not begun, its cothread having
//! yielded over its budget, begins there instead, and is cancelled only if
//! it must wait): the call's results (`nil, "cancelled"`, or what it can
//! still tell, as a child's exit) wait on the stack for its resume. A
//! cothread never scheduled again is collected with its ticket.

use std::cell::Cell;
use std::ffi::CStr;

use super::frame::{Frame, Next, STEP_SLOTS, Why};
use super::op::Operation;
use super::records::{Engine, delivered_marker, parked_here};
use crate::lua::{Error, Lua, Thread, Udata};

/// A ticket: the operation, until its last step.
#[derive(Default)]
struct Ticket {
    op: Cell<Option<Box<dyn Operation>>>,
    /// It never stepped (a cothread over its budget yielded before it
    /// began): it begins at `settle`, and is cancelled only if it must wait.
    fresh: Cell<bool>,
}

// SAFETY: c"cothread.ticket" names only this type (no other `Udata`, no
// registry field).
unsafe impl Udata for Ticket {
    const NAME: &'static CStr = c"cothread.ticket";
}

/// Moves parked operation `id` of `e` into a ticket on its cothread's stack
/// (the caller checked `parked_here`). Runs on `lua`, which may raise (a
/// memory error) before anything changed.
pub(super) fn make(lua: &mut Lua, e: &Engine, id: u64) {
    if lua.udata_metatable::<Ticket>(|_| Ok(())).is_ok() {
        lua.pop(1);
    }
    let t = lua.new_udata(Ticket::default(), 0);
    // From here on nothing raises: the operation changes owner, and the
    // ticket moves into the slot the sentinel leaves.
    let mut s = e.inner();
    let s = &mut *s;
    let Some(op) = s.records.get_mut(id).map(|r| r.op.take()) else {
        lua.pop(1);
        return;
    };
    t.op.set(op);
    t.fresh.set(s.records.get(id).is_some_and(|r| r.why == Some(Why::Start)));
    s.disarm(id);
    let r = s.records.get(id).expect("still there");
    r.co.pop(1); // the sentinel
    lua.give_to(&r.co, 1);
    s.remove(id);
}

/// If `co` (a suspended coroutine being scheduled) holds a ticket, runs its
/// operation's last step on `runner` and leaves the results on `co`'s
/// stack under the `DELIVERED` marker. Whether it did. An error (the step
/// raised, no room on `runner`) is the caller's to raise.
pub fn settle(mut runner: Lua, co: &Thread) -> Result<bool, Error> {
    if !co.is_suspended() || !co.udata_on_top() {
        return Ok(false);
    }
    runner.take_from(co, 1, 0)?; // the candidate ticket, on top of the runner
    let Some(t) = runner.test_udata::<Ticket>(-1) else {
        runner.give_to(co, 1); // not ours: back where it was
        return Ok(false);
    };
    let Some(mut op) = t.op.take() else {
        runner.pop(1); // spent: the thread resumes with nothing
        return Ok(false);
    };
    let begin = if t.fresh.get() { Why::Start } else { Why::Cancelled };
    let h = co.top();
    runner.take_from(co, h, STEP_SLOTS)?; // or the ticket stays on the runner, spent
    let base = runner.top() - h;
    let mut f = Frame::new(runner, base);
    // Protected: a raised error leaves nothing of ours behind but `op`,
    // dropped on the way out.
    let mut last = super::guard::protected(&mut *op, &mut f, begin);
    if begin == Why::Start && matches!(last, Ok(ref next) if !matches!(next, Next::Done(_))) {
        last = super::guard::protected(&mut *op, &mut f, Why::Cancelled);
    }
    let n = match last {
        Ok(Next::Done(n)) => n,
        Ok(_) => 0,
        Err(()) => return Err(Error::Value),
    };
    drop(op);
    if co.reserve(n + 1) {
        f.lua.give_to(co, n);
    }
    co.push_light(delivered_marker());
    f.lua.set_top(base - 1); // the frame and the ticket
    Ok(true)
}

/// Moves every parked operation of `e` into a ticket (its scheduler is
/// collected), so that a cothread scheduled again elsewhere ends its call.
/// Call it protected: should making a ticket raise, the rest are dropped
/// with the engine.
pub fn abandon_all(lua: &mut Lua, e: &Engine) {
    // The ids wait in the engine (not on the Rust stack, which a raise
    // would skip) while tickets are made; each is checked again before use.
    {
        let mut s = e.inner();
        s.abandoning = s.records.ids();
    }
    loop {
        let Some(id) = e.inner().abandoning.pop() else { break };
        let here = e.inner().records.get(id).is_some_and(|r| !r.stepping && parked_here(r, id));
        if here {
            make(lua, e, id);
        }
    }
}
